//! Variable-length arrays (strings, bytes) as files: `A` is text, one element per line in C
//! order (newline and backslash escaped as `\n` and `\\`); `A.npy` is fixed width (`<U<n>` or
//! `|S<n>`, n the longest element). Both sizes are known once the chunks have been read: the
//! first `stat` or `open` reads them and keeps a small index (one entry per run of elements).

use super::{npy_header, Layout, ViewError};
use crate::cache::{ChunkCache, ChunkData, ChunkId, ChunkReader};
use crate::codec::vlen;
use crate::meta::DataType;
use std::sync::{Arc, Mutex};

/// Where each run of elements starts in the text, and the sizes derived from a full scan.
struct TextIndex {
    /// (first element, first text byte) of every run, in order.
    runs: Vec<(u64, u64)>,
    text_size: u64,
    /// Longest element, in code points (text) or bytes.
    width: usize,
    header: Vec<u8>,
}

/// A variable-length array served as text and as a fixed-width NPY file.
pub struct VlenFile {
    id: u32,
    path: String,
    reader: ChunkReader,
    layout: Layout,
    utf8: bool,
    shape: Vec<u64>,
    index: Mutex<Option<Arc<TextIndex>>>,
}

/// Appends `item` escaped, plus its newline.
fn escape_into(out: &mut Vec<u8>, item: &[u8]) {
    for &b in item {
        match b {
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\\' => out.extend_from_slice(b"\\\\"),
            _ => out.push(b),
        }
    }
    out.push(b'\n');
}

fn escaped_len(item: &[u8]) -> u64 {
    1 + item.len() as u64 + item.iter().filter(|&&b| b == b'\n' || b == b'\\').count() as u64
}

impl VlenFile {
    /// The files of the variable-length array at `path` (number `id` among them).
    pub fn new(id: u32, path: &str, reader: ChunkReader) -> Self {
        let meta = reader.meta();
        let layout = Layout::new(&meta.shape, &meta.chunk_shape);
        let (utf8, shape) = (meta.dtype == DataType::String, meta.shape.clone());
        VlenFile {
            id,
            path: path.to_string(),
            reader,
            layout,
            utf8,
            shape,
            index: Mutex::new(None),
        }
    }

    fn shown(&self) -> &str {
        if self.path.is_empty() {
            "/"
        } else {
            &self.path
        }
    }

    fn chunk(&self, cache: &ChunkCache, chunk: u64) -> Result<ChunkData, ViewError> {
        let id = ChunkId {
            array: self.id,
            index: chunk,
        };
        cache
            .get_or_load(id, || {
                self.reader
                    .load(&self.layout.chunk_coords(chunk), cache.pool())
            })
            .map_err(|e| {
                log::error!("{e}");
                ViewError::Io
            })
    }

    /// Element `k` of a decoded chunk, or the fill value when the chunk is absent.
    fn item<'a>(&'a self, data: &'a ChunkData, k: u64) -> Result<&'a [u8], ViewError> {
        match data {
            None => Ok(&self.reader.meta().fill_value),
            Some(buf) => vlen::item(buf, k as usize).ok_or_else(|| {
                log::error!("{}: decoded chunk lacks element {k}", self.shown());
                ViewError::Io
            }),
        }
    }

    fn width_of(&self, item: &[u8]) -> usize {
        if self.utf8 {
            String::from_utf8_lossy(item).chars().count()
        } else {
            item.len()
        }
    }

    /// The index, reading every chunk the first time.
    fn index(&self, cache: &ChunkCache) -> Result<Arc<TextIndex>, ViewError> {
        let mut slot = self.index.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(index) = slot.as_ref() {
            return Ok(index.clone());
        }
        let (mut runs, mut bytes, mut width) = (Vec::new(), 0u64, 0usize);
        for run in self.layout.runs(0, self.layout.len()) {
            runs.push((run.start, bytes));
            let data = self.chunk(cache, run.chunk)?;
            for k in 0..run.len {
                let item = self.item(&data, run.chunk_offset + k)?;
                bytes += escaped_len(item);
                width = width.max(self.width_of(item));
            }
        }
        let width = width.max(1);
        let dtype = if self.utf8 {
            DataType::Unicode(width)
        } else {
            DataType::Bytes(width)
        };
        let index = Arc::new(TextIndex {
            runs,
            text_size: bytes,
            width,
            header: npy_header(&dtype, &self.shape),
        });
        *slot = Some(index.clone());
        Ok(index)
    }

    /// Size of the text file `A` (reads the chunks the first time).
    pub fn text_size(&self, cache: &ChunkCache) -> Result<u64, ViewError> {
        Ok(self.index(cache)?.text_size)
    }

    /// Size of `A.npy` (reads the chunks the first time).
    pub fn npy_size(&self, cache: &ChunkCache) -> Result<u64, ViewError> {
        let index = self.index(cache)?;
        Ok(index.header.len() as u64 + self.layout.len() * self.npy_width(&index) as u64)
    }

    fn npy_width(&self, index: &TextIndex) -> usize {
        if self.utf8 {
            4 * index.width
        } else {
            index.width
        }
    }

    /// Bytes `offset..offset+len` of the text file.
    pub fn read_text(
        &self,
        cache: &ChunkCache,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>, ViewError> {
        let index = self.index(cache)?;
        let end = offset.saturating_add(len).min(index.text_size);
        let mut out = Vec::new();
        if offset >= end {
            return Ok(out);
        }
        let first = index
            .runs
            .partition_point(|&(_, b)| b <= offset)
            .saturating_sub(1);
        let mut line = Vec::new();
        for &(start, mut at) in &index.runs[first..] {
            if at >= end {
                break;
            }
            let Some(run) = self.layout.runs(start, self.layout.len()).next() else {
                break;
            };
            let data = self.chunk(cache, run.chunk)?;
            for k in 0..run.len {
                let item = self.item(&data, run.chunk_offset + k)?;
                let n = escaped_len(item);
                if at + n > offset && at < end {
                    line.clear();
                    escape_into(&mut line, item);
                    let from = offset.saturating_sub(at) as usize;
                    let to = ((end - at) as usize).min(line.len());
                    out.extend_from_slice(&line[from..to]);
                }
                at += n;
                if at >= end {
                    break;
                }
            }
        }
        Ok(out)
    }

    /// Bytes `offset..offset+len` of `A.npy`.
    pub fn read_npy(
        &self,
        cache: &ChunkCache,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>, ViewError> {
        let index = self.index(cache)?;
        let total = index.header.len() as u64 + self.layout.len() * self.npy_width(&index) as u64;
        let end = offset.saturating_add(len).min(total);
        let mut out = Vec::new();
        if offset >= end {
            return Ok(out);
        }
        let hlen = index.header.len() as u64;
        if offset < hlen {
            out.extend_from_slice(&index.header[offset as usize..end.min(hlen) as usize]);
        }
        let w = self.npy_width(&index) as u64;
        let (from, to) = (offset.max(hlen) - hlen, end.saturating_sub(hlen));
        if from >= to {
            return Ok(out);
        }
        let mut cell = Vec::with_capacity(w as usize);
        for run in self.layout.runs(from / w, to.div_ceil(w)) {
            let data = self.chunk(cache, run.chunk)?;
            for k in 0..run.len {
                let item = self.item(&data, run.chunk_offset + k)?;
                cell.clear();
                if self.utf8 {
                    cell.extend(
                        String::from_utf8_lossy(item)
                            .chars()
                            .flat_map(|c| (c as u32).to_le_bytes()),
                    );
                } else {
                    cell.extend_from_slice(item);
                }
                cell.resize(w as usize, 0);
                let at = (run.start + k) * w;
                let (a, b) = (from.max(at) - at, to.min(at + w) - at);
                out.extend_from_slice(&cell[a as usize..b as usize]);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_newlines_and_backslashes() {
        let mut out = Vec::new();
        escape_into(&mut out, b"a\nb\\c");
        assert_eq!(out, b"a\\nb\\\\c\n");
        assert_eq!(escaped_len(b"a\nb\\c"), out.len() as u64);
    }
}
