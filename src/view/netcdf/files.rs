//! The `.header.cdl` and `.ncstream` files of every group. netCDF's model of a group depends
//! on the whole tree (a pure Zarr store's anonymous dimensions live in the root group), so the
//! whole tree is loaded and its dataset made at the first use of one; each group's files are
//! made when first asked for (`stat` or read), and kept in a budget of bytes, the least
//! recently used dropped first (their sizes are kept).

use super::cdl::{CdlHeader, LongLine};
use super::model::{Dataset, NcType};
use super::ncstream::{MeasuredStrings, NcStreamLayout, Source, Strings};
use crate::meta::{ArrayMeta, DataType, NodeKind};
use crate::view::vlen_file::Part;
use crate::view::{ArrayPart, Content, TextFile, View, ViewError, Wait, ROOT_INO};
use lru::LruCache;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// Bytes of made headers (their checkpoints) kept, and of made stream layouts.
const KEPT_BYTES: usize = 32 << 20;

/// The netCDF files of every group directory.
#[derive(Default)]
pub struct NetcdfFiles {
    dataset: Dataset,
    /// The name of the root group's header.
    root_name: String,
    /// The group each group directory shows, by the directory's inode.
    groups: HashMap<u64, usize>,
    /// Where each variable's values are read, by its group and its number there.
    sources: HashMap<(usize, usize), Source>,
    strings: MeasuredStrings,
    cdl: Mutex<Kept<CdlHeader>>,
    long_line: LongLine,
    streams: Mutex<Kept<NcStreamLayout>>,
}

/// Files made, by directory: the least recently used dropped past [`KEPT_BYTES`] (the last
/// one made stays, whatever its size); and their sizes, once known, all kept.
struct Kept<T> {
    files: LruCache<u64, (Arc<T>, usize)>,
    bytes: usize,
    sizes: HashMap<u64, u64>,
}

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Kept {
            files: LruCache::unbounded(),
            bytes: 0,
            sizes: HashMap::new(),
        }
    }
}

impl<T> Kept<T> {
    /// Keeps `file`, holding about `held` bytes, for directory `dir`.
    fn keep(&mut self, dir: u64, file: Arc<T>, held: usize) {
        if let Some((_, (_, old))) = self.files.push(dir, (file, held)) {
            self.bytes -= old;
        }
        self.bytes += held;
        while self.bytes > KEPT_BYTES && self.files.len() > 1 {
            if let Some((_, (_, dropped))) = self.files.pop_lru() {
                self.bytes -= dropped;
            }
        }
    }
}

impl NetcdfFiles {
    /// The dataset of `view` (whose tree is loaded) and where its groups and values are.
    pub(in crate::view) fn new(view: &View) -> NetcdfFiles {
        let hierarchy = view.zoms.hierarchy();
        let root_name = view.root_name.as_str();
        let Some(dataset) = super::model::dataset(&hierarchy, root_name) else {
            return NetcdfFiles::default();
        };
        let groups = group_dirs(view, &dataset);
        let mut dirs = vec![None; dataset.groups.len()];
        for (&dir, &g) in &groups {
            dirs[g] = Some(dir);
        }
        let metas: HashMap<&str, &ArrayMeta> = hierarchy
            .nodes
            .iter()
            .filter_map(|n| match &n.kind {
                NodeKind::Array(Ok(meta)) => Some((n.path.as_str(), meta.as_ref())),
                _ => None,
            })
            .collect();
        let mut sources = HashMap::new();
        for (g, i, var) in dataset.vars(0) {
            let Some(dir) = dirs[g] else {
                continue;
            };
            // The array at the store root is shown as `root_name`.
            let name = match var.path.rsplit_once('/') {
                Some((_, name)) => name,
                None if var.path.is_empty() => root_name,
                None => var.path.as_str(),
            };
            let file = view.dir(dir, Wait::Yes).ok().and_then(|d| d.get(name));
            let (Some(ino), Some(meta)) = (file, metas.get(var.path.as_str())) else {
                continue;
            };
            // An array whose element count overflows cannot be read: left out of the stream.
            let Some(count) = meta.element_count() else {
                continue;
            };
            let source = match view.known(ino).content {
                Content::Array(ArrayPart {
                    array: k,
                    npy: false,
                }) if view.arrays[k as usize].check_readable().is_ok() => {
                    match (var.ty, &meta.dtype) {
                        (NcType::String, DataType::Bytes(_) | DataType::Unicode(_)) => {
                            Source::Strings {
                                strings: Strings::Fixed {
                                    array: k,
                                    width: meta.dtype.size(),
                                    utf32: matches!(meta.dtype, DataType::Unicode(_)),
                                },
                                count,
                            }
                        }
                        _ => Source::Values {
                            array: k,
                            bytes: view.arrays[k as usize].data_size(),
                        },
                    }
                }
                Content::Text(TextFile {
                    vlen: k,
                    part: Part::Text,
                }) => Source::Strings {
                    strings: Strings::Vlen(k),
                    count,
                },
                // An array that cannot be read is declared in the stream, its values left out.
                _ => continue,
            };
            sources.insert((g, i), source);
        }
        NetcdfFiles {
            dataset,
            root_name: root_name.to_string(),
            groups,
            sources,
            ..NetcdfFiles::default()
        }
    }

    /// The size of the `.header.cdl` of directory `dir`: 0 when it shows no group; made now
    /// if not known and `measure`, else `None`.
    pub(in crate::view) fn cdl_size(&self, dir: u64, measure: bool) -> Option<u64> {
        if !self.groups.contains_key(&dir) {
            return Some(0);
        }
        if let Some(&size) = self.cdl.lock().sizes.get(&dir) {
            return Some(size);
        }
        measure.then(|| self.header(dir).map_or(0, |h| h.size()))
    }

    /// Appends bytes `offset..offset+len` of the `.header.cdl` of directory `dir` to `out`.
    pub(in crate::view) fn read_cdl(&self, dir: u64, offset: u64, len: u64, out: &mut Vec<u8>) {
        if let Some(header) = self.header(dir) {
            header.read(&self.dataset, &self.long_line, offset, len, out);
        }
    }

    /// The size of the `.ncstream` of directory `dir` (0 when it shows no group or cannot be
    /// measured); measured now if not known and `measure`, else `None`.
    pub(in crate::view) fn stream_size(&self, view: &View, dir: u64, measure: bool) -> Option<u64> {
        if !self.groups.contains_key(&dir) {
            return Some(0);
        }
        if let Some(&size) = self.streams.lock().sizes.get(&dir) {
            return Some(size);
        }
        if !measure {
            return None;
        }
        let size = self
            .stream(dir)
            .and_then(|s| s.size(view, &self.strings).ok());
        if let Some(size) = size {
            self.streams.lock().sizes.insert(dir, size);
        }
        Some(size.unwrap_or(0))
    }

    /// Appends bytes `offset..offset+len` of the `.ncstream` of directory `dir` to `out`.
    pub(in crate::view) fn read_stream(
        &self,
        view: &View,
        dir: u64,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<(), ViewError> {
        match self.stream(dir) {
            Some(stream) => stream.read(view, &self.strings, offset, len, out),
            None => Ok(()),
        }
    }

    /// The header of the group directory `dir` shows, made now if not kept.
    fn header(&self, dir: u64) -> Option<Arc<CdlHeader>> {
        let g = *self.groups.get(&dir)?;
        if let Some((header, _)) = self.cdl.lock().files.get(&dir) {
            return Some(header.clone());
        }
        let group = &self.dataset.groups[g];
        let name = match group.path.is_empty() {
            true => self.root_name.as_str(),
            false => group.name.as_str(),
        };
        let header = Arc::new(CdlHeader::new(&self.dataset, g, name));
        let mut cdl = self.cdl.lock();
        cdl.sizes.insert(dir, header.size());
        cdl.keep(dir, header.clone(), header.held());
        Some(header)
    }

    /// The stream layout of the group directory `dir` shows, made now if not kept.
    fn stream(&self, dir: u64) -> Option<Arc<NcStreamLayout>> {
        let g = *self.groups.get(&dir)?;
        if let Some((stream, _)) = self.streams.lock().files.get(&dir) {
            return Some(stream.clone());
        }
        let stream = Arc::new(NcStreamLayout::new(&self.dataset, g, &self.sources));
        self.streams.lock().keep(dir, stream.clone(), stream.held());
        Some(stream)
    }
}

/// The group each group directory of `view` (whose tree is loaded) shows, by the directory's
/// inode; the root directory also for a store whose root is an array.
fn group_dirs(view: &View, dataset: &Dataset) -> HashMap<u64, usize> {
    let number = dataset.index();
    let mut dirs = HashMap::new();
    if let Some(&root) = number.get("") {
        dirs.insert(ROOT_INO, root);
    }
    let mut level = vec![ROOT_INO];
    while let Some(ino) = level.pop() {
        let Ok(listing) = view.dir(ino, Wait::Yes) else {
            continue;
        };
        for &(_, child) in &listing.entries {
            if let Some(d) = view.known_dir(child) {
                if let Some(group) = &d.group {
                    if let Some(&g) = number.get(&*group.path) {
                        dirs.insert(child, g);
                    }
                    level.push(child);
                }
            }
        }
    }
    dirs
}
