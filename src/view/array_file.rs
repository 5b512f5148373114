//! Reading an array's elements (`A`) and its NPY file (`A.npy`) by byte range.

use super::{npy_header, Layout, ViewError};
use crate::cache::{ChunkCache, ChunkData, ChunkId, ChunkReader};

/// One array as files: its chunk reader, geometry and NPY header.
pub struct ArrayFile {
    id: u32,
    path: String,
    /// `Err` holds why the data cannot be read (unsupported codec or data type, bad metadata).
    reader: Result<ChunkReader, String>,
    layout: Layout,
    elem_size: u64,
    data_size: u64,
    header: Vec<u8>,
}

impl ArrayFile {
    /// The files of the array at `path` (number `id` in the view), readable when `reader` is Ok.
    pub fn new(id: u32, path: &str, reader: Result<ChunkReader, String>) -> Self {
        let (layout, elem_size, data_size, header) = match &reader {
            Ok(r) => {
                let meta = r.meta();
                let size = meta.byte_size().unwrap_or(0);
                (
                    Layout::new(&meta.shape, r.read_chunk_shape()),
                    meta.dtype.size() as u64,
                    size,
                    npy_header(&meta.dtype, &meta.shape),
                )
            }
            Err(_) => (Layout::new(&[], &[]), 1, 0, Vec::new()),
        };
        ArrayFile {
            id,
            path: path.to_string(),
            reader,
            layout,
            elem_size,
            data_size,
            header,
        }
    }

    /// The node path (for logs).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Why the data cannot be read, if it cannot.
    pub fn unreadable(&self) -> Option<&str> {
        self.reader.as_ref().err().map(String::as_str)
    }

    /// Size of `A`.
    pub fn data_size(&self) -> u64 {
        self.data_size
    }

    /// Size of `A.npy`.
    pub fn npy_size(&self) -> u64 {
        self.header.len() as u64 + self.data_size
    }

    /// Ok when the data can be read; else logs why and fails with EIO.
    pub fn check_readable(&self) -> Result<(), ViewError> {
        match &self.reader {
            Ok(_) => Ok(()),
            Err(reason) => {
                log::error!("{}: data cannot be read: {reason}", self.display_path());
                Err(ViewError::Io)
            }
        }
    }

    fn display_path(&self) -> &str {
        if self.path.is_empty() {
            "/"
        } else {
            &self.path
        }
    }

    /// Bytes `offset..offset+len` of `A.npy`.
    pub fn read_npy(
        &self,
        cache: &ChunkCache,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>, ViewError> {
        let hlen = self.header.len() as u64;
        if offset >= hlen {
            return self.read_data(cache, offset - hlen, len);
        }
        let head_end = offset.saturating_add(len).min(hlen);
        let mut out = self.header[offset as usize..head_end as usize].to_vec();
        let rest = len - (head_end - offset);
        if rest > 0 {
            out.extend(self.read_data(cache, 0, rest)?);
        }
        Ok(out)
    }

    /// Bytes `offset..offset+len` of `A` (fewer at the end of the file).
    pub fn read_data(
        &self,
        cache: &ChunkCache,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>, ViewError> {
        let reader = self
            .reader
            .as_ref()
            .map_err(|_| self.check_readable().unwrap_err())?;
        let end = offset.saturating_add(len).min(self.data_size);
        if offset >= end {
            return Ok(Vec::new());
        }
        let es = self.elem_size;
        let fill = &reader.meta().fill_value;
        let mut out = Vec::with_capacity((end - offset) as usize);
        let mut current: Option<(u64, ChunkData)> = None;
        for run in self.layout.runs(offset / es, end.div_ceil(es)) {
            let run_start = run.start * es;
            let (from, to) = (run_start.max(offset), ((run.start + run.len) * es).min(end));
            if current.as_ref().is_none_or(|(c, _)| *c != run.chunk) {
                current = Some((run.chunk, self.chunk(cache, reader, run.chunk)?));
            }
            match current.as_ref().and_then(|(_, data)| data.as_ref()) {
                Some(data) => {
                    let at = (run.chunk_offset * es + (from - run_start)) as usize;
                    let bytes = data.get(at..at + (to - from) as usize).ok_or_else(|| {
                        log::error!(
                            "{}: chunk {} decoded to {} bytes, too few",
                            self.display_path(),
                            run.chunk,
                            data.len()
                        );
                        ViewError::Io
                    })?;
                    out.extend_from_slice(bytes);
                }
                None => extend_with_fill(&mut out, fill, from, to - from),
            }
        }
        Ok(out)
    }

    fn chunk(
        &self,
        cache: &ChunkCache,
        reader: &ChunkReader,
        chunk: u64,
    ) -> Result<ChunkData, ViewError> {
        let id = ChunkId {
            array: self.id,
            index: chunk,
        };
        cache
            .get_or_load(id, || reader.load(&self.layout.chunk_coords(chunk)))
            .map_err(|e| {
                log::error!("{e}");
                ViewError::Io
            })
    }
}

/// Appends `len` bytes of the repeated element `fill`, starting at file byte `at`.
fn extend_with_fill(out: &mut Vec<u8>, fill: &[u8], at: u64, len: u64) {
    if fill.iter().all(|&b| b == fill[0]) {
        out.resize(out.len() + len as usize, fill[0]);
        return;
    }
    let es = fill.len() as u64;
    out.extend((0..len).map(|i| fill[((at + i) % es) as usize]));
}
