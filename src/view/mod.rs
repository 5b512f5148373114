//! The tree of files: the filesystem minus FUSE.
//!
//! Renders the node model as directories and files (`A`, `A.json`, `A.npy`, `.group.json`),
//! owns inode numbers and attributes, and maps byte ranges of array files onto chunks.
//! Tests drive it directly; the `fuse` module only translates calls.

mod array_file;
mod backed;
mod build;
mod chunk_source;
mod error;
mod held_chunks;
mod layout;
mod look_ahead;
pub mod netcdf;
mod npy;
mod preview;
mod selection;
mod selection_buffer;
mod slice_file;
mod slice_table;
mod stats_file;
mod totals;
mod vlen_file;
mod xattrs;
mod zom;
mod zom_files;

use array_file::ArrayFile;
pub use error::{GridError, IoCause, OpenError, ViewError};
pub use layout::{GridGeometry, Run};
pub use npy::npy_header;
use slice_table::{is_slice, SliceTable};
pub use stats_file::{STATS_FILE, ZARRFS_DIR};
pub use totals::Totals;
pub use vlen_file::SYNC_SCAN_MAX;
use vlen_file::{Part, Sizer, VlenFile};
pub use xattrs::XattrReply;
use xattrs::Xattrs;
pub use zom::ZOM_FILE;

use crate::backing::BackingDir;
use crate::cache::read_ahead::{Prediction, ReadAhead, ReadPolicy, ReaderState};
use crate::cache::ChunkCache;
use crate::meta::{LoadOptions, MetaError, StoreRef, Tree};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

/// Where a read that can answer before it is done hands its bytes (see [`View::read_answer`]).
pub type SendBytes<'a> = &'a mut dyn FnMut(&[u8]);

/// Groups loaded at once when a whole subtree is.
const SUBTREE_WORKERS: usize = 8;

/// Inode number of the mount root.
pub const ROOT_INO: u64 = 1;
/// Directory or regular file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// A directory (a group).
    Directory,
    /// A regular file.
    File,
}

/// What `stat` shows of an inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attr {
    /// Inode number.
    pub ino: u64,
    /// Directory or file.
    pub kind: FileKind,
    /// Size in bytes (0 for directories).
    pub size: u64,
    /// Modification time, from the store.
    pub mtime: SystemTime,
    /// Link count.
    pub nlink: u32,
}

/// One directory entry as `readdir` returns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    /// Inode of the entry.
    pub ino: u64,
    /// Its kind.
    pub kind: FileKind,
    /// Its name.
    pub name: String,
    /// The offset to pass to continue after this entry.
    pub next_offset: u64,
}

/// What an inode holds.
enum Content {
    Dir(Box<Dir>),
    /// The elements of array number N.
    Data(u32),
    /// NPY header plus the elements of array number N.
    Npy(u32),
    /// A JSON sidecar.
    Json(Arc<[u8]>),
    /// A group's `.zom.json`: the group's node number N in [`zom_files::ZomFiles`].
    Zom(u32),
    /// The CDL header (`.header.cdl`) of the group shown by the parent directory.
    Cdl,
    /// The subtree of the group shown by the parent directory as ncstream (`.ncstream`).
    NcStream,
    /// Variable-length array number N as text.
    Text(u32),
    /// Variable-length array number N as a fixed-width NPY file.
    TextNpy(u32),
    /// The live counters (`.zarrfs/stats`).
    Stats,
    /// Preview number N as a PNG picture.
    Preview(u32),
}

/// A directory: its entries, made at its first use (or before, see [`look_ahead`]).
#[derive(Default)]
struct Dir {
    /// The group it shows (none for `.zarrfs` and for the root of a store that is an array).
    group: Option<Group>,
    listing: OnceLock<Listing>,
    /// Set at its first use by a request.
    used: AtomicBool,
    /// Set when it was queued to be made ahead of its use.
    queued: AtomicBool,
}

impl Dir {
    fn of(group: Group) -> Box<Dir> {
        Box::new(Dir {
            group: Some(group),
            ..Dir::default()
        })
    }
}

/// The group a directory shows, as needed to load its children.
struct Group {
    path: Box<str>,
    /// Its node number in [`zom_files::ZomFiles`], which keeps its document.
    zom: u32,
    /// The modification time of its metadata.
    mtime: SystemTime,
}

/// The entries of a directory, sorted by name (each name kept once: lookups search them).
#[derive(Default)]
struct Listing {
    entries: Vec<(String, u64)>,
    /// The directories of its subgroups, by inode (which is name order).
    subgroups: Vec<u64>,
}

impl Listing {
    /// The inode of entry `name`.
    fn get(&self, name: &str) -> Option<u64> {
        let at = self
            .entries
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .ok()?;
        Some(self.entries[at].1)
    }
}

/// Where an inode's extended attributes come from.
enum Attrs {
    /// It has none.
    None,
    /// These, made when its directory was (the root's, with what the store says of itself).
    Made(Xattrs),
    /// Those of node N in [`zom_files::ZomFiles`], made from its document at each request, so
    /// that a listed node keeps none.
    Node(u32),
}

struct Inode {
    parent: u64,
    content: Content,
    mtime: SystemTime,
    /// Extended attributes (none for most sidecars).
    xattrs: Attrs,
}

/// The whole mounted tree, made group by group as it is used.
pub struct View {
    inodes: boxcar::Vec<Inode>,
    arrays: boxcar::Vec<ArrayFile>,
    vlen: boxcar::Vec<Arc<VlenFile>>,
    /// Arrays with a picture, and the pictures rendered.
    previews: boxcar::Vec<preview::Preview>,
    previews_shown: bool,
    rendered: preview::Rendered,
    /// Every node's document, and the `.zom.json` files, rendered on first use.
    zoms: zom_files::ZomFiles,
    /// The `.header.cdl` and `.ncstream` files, made at the first use of one.
    netcdf: OnceLock<netcdf::files::NetcdfFiles>,
    /// Where the nodes come from, group by group.
    tree: Tree<'static>,
    store: Arc<dyn crate::store::Store>,
    store_mtime: SystemTime,
    /// The Zarr version of the store (2 or 3), for `user.zarr.format` and the ZOM.
    version: u8,
    /// The name of the files of an array at the store root.
    root_name: String,
    /// The next number keying an array's chunks in the cache.
    next_array_id: AtomicU32,
    /// Groups whose children were loaded, and nodes loaded, so far (for the log and stats):
    /// groups that requests used, and groups made ahead of their first use.
    groups_loaded: AtomicUsize,
    groups_ahead: AtomicUsize,
    loaded: AtomicUsize,
    /// Loads the groups a walk visits next, when started (see [`View::look_ahead`]).
    ahead: OnceLock<look_ahead::LookAhead>,
    /// The store's request counts, when it counts them (remote stores).
    requests: Option<Arc<crate::store::RequestCounts>>,
    /// Scans large variable-length arrays for their sizes.
    sizer: Sizer,
    cache: Arc<ChunkCache>,
    /// Makes an array's chunk source when it is first opened.
    sources: Arc<array_file::Sources>,
    policy: ReadPolicy,
    prefetcher: Option<ReadAhead>,
    /// Every open data file, by file handle.
    handles: Mutex<HashMap<u64, ReaderState>>,
    /// The `.zarrfs/stats` text each open handle reads, made when it was opened.
    snapshots: Mutex<HashMap<u64, Arc<[u8]>>>,
    next_handle: AtomicU64,
    /// The cache directory of decoded arrays, when one is used.
    backing: Option<backed::Backing>,
    /// Selection files (`A[SEL]`) looked up so far.
    slices: SliceTable,
    /// Set at the first open of a data file, which readies memory for decoded chunks.
    memory_readied: std::sync::Once,
}

impl View {
    fn inode(&self, ino: u64) -> Result<&Inode, ViewError> {
        usize::try_from(ino.wrapping_sub(1))
            .ok()
            .and_then(|i| self.inodes.get(i))
            .ok_or(ViewError::NotFound)
    }

    /// The entries of directory `ino`, made now if this is its first use.
    fn dir(&self, ino: u64) -> Result<&Listing, ViewError> {
        match &self.inode(ino)?.content {
            Content::Dir(d) => {
                let listing = d.listing.get_or_init(|| self.make_listing(ino, d));
                self.used(ino, d);
                Ok(listing)
            }
            _ => Err(ViewError::NotDir),
        }
    }

    /// Makes every directory below `ino` (and `ino`), for the files that show a whole subtree:
    /// level by level, the groups of a level on up to [`SUBTREE_WORKERS`] threads (each also
    /// probes its children in parallel on a remote store).
    fn load_subtree(&self, ino: u64) {
        let workers = self.store.parallelism().min(SUBTREE_WORKERS);
        let mut level = vec![ino];
        while !level.is_empty() {
            let listed = crate::meta::parallel_map(&level, workers, |&dir| {
                let Ok(listing) = self.dir(dir) else {
                    return Vec::new();
                };
                let groups = listing.entries.iter().map(|(_, i)| *i).filter(|&i| {
                    matches!(&self.inodes[(i - 1) as usize].content, Content::Dir(d) if d.group.is_some())
                });
                groups.collect()
            });
            level = listed.into_iter().flatten().collect();
        }
    }

    /// The shared chunk cache.
    pub fn cache(&self) -> &ChunkCache {
        &self.cache
    }

    /// Number of inodes made so far.
    pub fn len(&self) -> usize {
        self.inodes.count()
    }

    /// True when the view holds nothing but its root.
    pub fn is_empty(&self) -> bool {
        self.inodes.count() <= 1
    }

    /// The inode at `path` below the root (`a/b.json`; `""` is the root).
    pub fn resolve(&self, path: &str) -> Result<u64, ViewError> {
        path.split('/')
            .filter(|s| !s.is_empty())
            .try_fold(ROOT_INO, |dir, name| self.lookup(dir, name).map(|a| a.ino))
    }

    /// The entry `name` in directory `parent`; names of selections (`A[SEL]`) too.
    pub fn lookup(&self, parent: u64, name: &str) -> Result<Attr, ViewError> {
        match self.dir(parent)?.get(name) {
            Some(ino) => self.getattr(ino),
            None => self.lookup_slice(parent, name),
        }
    }

    /// Attributes of `ino`. Directories show one link: counting their subdirectories would
    /// load them.
    pub fn getattr(&self, ino: u64) -> Result<Attr, ViewError> {
        self.attr(ino, true).map(|(attr, _)| attr)
    }

    /// Attributes of `ino` as a directory listing hands them out (readdirplus): as
    /// [`View::getattr`], except that the size of a file showing a whole subtree (`.zom.json`,
    /// `.header.cdl`, `.ncstream`) is not measured here, which would load the subtree; then
    /// the size is 0 and the second value false, and the kernel must ask again.
    pub fn listed_attr(&self, ino: u64) -> Result<(Attr, bool), ViewError> {
        self.attr(ino, false)
    }

    fn attr(&self, ino: u64, measure: bool) -> Result<(Attr, bool), ViewError> {
        if is_slice(ino) {
            return self.slice_attr(ino).map(|a| (a, true));
        }
        let inode = self.inode(ino)?;
        let mut exact = true;
        let mut unless_measured = |size: Option<u64>| {
            exact = size.is_some();
            size.unwrap_or(0)
        };
        let (kind, size) = match &inode.content {
            Content::Dir(_) => (FileKind::Directory, 0),
            Content::Data(a) => (FileKind::File, self.arrays[*a as usize].data_size()),
            Content::Npy(a) => (FileKind::File, self.arrays[*a as usize].npy_size()),
            Content::Json(bytes) => (FileKind::File, bytes.len() as u64),
            Content::Zom(z) => {
                let size = match measure {
                    true => Some(self.zom_size(*z, inode.parent)),
                    false => self.zoms.measured_size(*z),
                };
                (FileKind::File, unless_measured(size))
            }
            Content::Cdl => {
                let files = self.netcdf_files(measure);
                let size = files.map(|f| f.cdl(inode.parent).len() as u64);
                (FileKind::File, unless_measured(size))
            }
            // A stream holding strings is measured on first use (see `netcdf::ncstream`).
            Content::NcStream => {
                let files = self.netcdf_files(measure);
                let size = files.map(|f| f.stream_size(self, inode.parent));
                (FileKind::File, unless_measured(size))
            }
            // Sizes of variable-length arrays cost a scan: see `vlen_file`. An unreadable one
            // shows size 0; reading it fails with EIO.
            Content::Text(a) => (
                FileKind::File,
                self.vlen[*a as usize]
                    .text_size(&self.cache, &self.sizer)
                    .unwrap_or(0),
            ),
            Content::TextNpy(a) => (
                FileKind::File,
                self.vlen[*a as usize]
                    .npy_size(&self.cache, &self.sizer)
                    .unwrap_or(0),
            ),
            // Its size now; reads are served with direct I/O, so a longer version is read whole.
            Content::Stats => (FileKind::File, self.stats_json().len() as u64),
            // Rendered when opened, not here (`ls -l` must not decode pictures): 0 until then,
            // and reads are served with direct I/O.
            Content::Preview(p) => (FileKind::File, self.rendered_size(*p)),
        };
        let attr = Attr {
            ino,
            kind,
            size,
            mtime: inode.mtime,
            nlink: 1,
        };
        Ok((attr, exact))
    }

    /// The size of the `.zom.json` of group node `z`, shown in directory `dir`: its subtree
    /// is loaded first, unless measured before.
    fn zom_size(&self, z: u32, dir: u64) -> u64 {
        if let Some(size) = self.zoms.measured_size(z) {
            return size;
        }
        self.load_subtree(dir);
        self.zoms.size(z)
    }

    /// The netCDF files, made now (from the whole tree) when `make`, else only if made before.
    fn netcdf_files(&self, make: bool) -> Option<&netcdf::files::NetcdfFiles> {
        if !make {
            return self.netcdf.get();
        }
        Some(self.netcdf.get_or_init(|| {
            self.load_subtree(ROOT_INO);
            netcdf::files::NetcdfFiles::new(self)
        }))
    }

    /// Entries of directory `ino` from position `offset` on (0 is `.`, 1 is `..`).
    pub fn readdir(&self, ino: u64, offset: u64) -> Result<Vec<DirEntry>, ViewError> {
        let dir = self.dir(ino)?;
        let parent = self.inode(ino)?.parent;
        let dots = [(".", ino), ("..", parent)];
        let all = dots
            .iter()
            .map(|&(n, i)| (n, i))
            .chain(dir.entries.iter().map(|(n, i)| (n.as_str(), *i)));
        Ok(all
            .enumerate()
            .skip(offset as usize)
            .map(|(pos, (name, ino))| DirEntry {
                ino,
                kind: match self.inodes[(ino - 1) as usize].content {
                    Content::Dir(_) => FileKind::Directory,
                    _ => FileKind::File,
                },
                name: name.to_string(),
                next_offset: pos as u64 + 1,
            })
            .collect())
    }

    /// Shows `counts`, the store's request counts, in `.zarrfs/stats`.
    pub fn show_requests(&mut self, counts: Arc<crate::store::RequestCounts>) {
        self.requests = Some(counts);
    }

    /// Reads ahead as `policy` says: its windows, and its workers (none without fetchers).
    pub fn set_read_policy(&mut self, policy: ReadPolicy) {
        self.policy = policy;
        // The workers of an earlier policy stop first.
        self.prefetcher = None;
        let limits = policy.limits(self.cache.budget());
        self.prefetcher =
            (limits.fetchers > 0).then(|| ReadAhead::start(self.cache.clone(), limits));
    }

    /// Writes decoded arrays into, and serves them from, `dir` (see [`crate::backing`]);
    /// `store` and `location` are those the view was built from.
    pub fn set_backing_dir(
        &mut self,
        dir: Arc<BackingDir>,
        store: Arc<dyn crate::store::Store>,
        location: &str,
    ) {
        self.backing = Some(backed::Backing {
            dir,
            store,
            location: location.to_string(),
        });
    }

    /// The cache directory, when one is used.
    pub fn backing_dir(&self) -> Option<&Arc<BackingDir>> {
        self.backing.as_ref().map(|b| &b.dir)
    }

    /// The local file holding exactly the bytes of `ino` (opened before with [`View::open`]):
    /// an array's complete backing file for `A`, its NPY file for `A.npy` (written at the first
    /// open after completion; `None` until then). The kernel may read it directly (FUSE
    /// passthrough).
    pub fn passthrough_file(&self, ino: u64) -> Option<std::fs::File> {
        match self.inode(ino).ok()?.content {
            Content::Data(a) => self.arrays[a as usize]
                .complete_backing()?
                .passthrough()?
                .try_clone()
                .ok(),
            Content::Npy(a) => self.arrays[a as usize].npy_backing(),
            Content::Text(a) => self.vlen[a as usize]
                .complete_backing(Part::Text)?
                .passthrough()?
                .try_clone()
                .ok(),
            Content::TextNpy(a) => self.vlen[a as usize]
                .complete_backing(Part::Npy)?
                .passthrough()?
                .try_clone()
                .ok(),
            _ => None,
        }
    }

    /// True when `ino` must be served with direct I/O (`FOPEN_DIRECT_IO`): the text and NPY
    /// files of large variable-length arrays (and of large selections of them), whose size `stat` may show as 0 while it is being
    /// computed (see [`VlenFile`]), reads must not stop at that size; `.zarrfs/stats`, whose
    /// content changes with every read; and `A.png`, whose size is known once it is rendered.
    pub fn direct_io(&self, ino: u64) -> bool {
        if is_slice(ino) {
            return self.slice_direct_io(ino);
        }
        match self.inode(ino).map(|i| &i.content) {
            Ok(Content::Text(a) | Content::TextNpy(a)) => self.vlen[*a as usize].size_may_lag(),
            Ok(Content::Stats | Content::Preview(_)) => true,
            _ => false,
        }
    }

    /// Opens `ino` for reading through the kernel's page cache and returns a file handle (0
    /// for files that need none); unreadable arrays fail here with EIO. Chunks a sequential
    /// reader has gone past leave the chunk cache (see [`DropBehind`]).
    pub fn open(&self, ino: u64) -> Result<u64, ViewError> {
        self.open_handle(ino, true)
    }

    /// Like [`View::open`], for reads that bypass the page cache (`O_DIRECT`): the chunk cache
    /// is their only cache, so it keeps what they read.
    pub fn open_direct(&self, ino: u64) -> Result<u64, ViewError> {
        self.open_handle(ino, false)
    }

    fn open_handle(&self, ino: u64, page_cached: bool) -> Result<u64, ViewError> {
        if is_slice(ino) {
            self.ready_memory();
            return self.open_slice(ino);
        }
        let content = &self.inode(ino)?.content;
        if matches!(
            content,
            Content::Data(_) | Content::Npy(_) | Content::Text(_) | Content::TextNpy(_)
        ) {
            self.ready_memory();
        }
        match content {
            Content::Dir(_) => Err(ViewError::IsDir),
            // Variable-length files open at once; a read waits for their scan (see `vlen_file`).
            Content::Json(_) | Content::Zom(_) | Content::Cdl | Content::NcStream => Ok(0),
            Content::Text(a) | Content::TextNpy(a) => {
                if let Some(backing) = &self.backing {
                    self.vlen[*a as usize].attach_backing(backing, vlen_part(content));
                }
                Ok(0)
            }
            Content::Stats => Ok(self.open_stats()),
            Content::Preview(p) => self.preview_png(*p).map(|_| 0),
            Content::Data(a) | Content::Npy(a) => {
                let array = &self.arrays[*a as usize];
                array.check_readable()?;
                if let Some(backing) = &self.backing {
                    array.attach_backing(backing);
                }
                let fh = self.next_handle.fetch_add(1, Ordering::Relaxed) + 1;
                let state = self.policy.reader(page_cached);
                self.lock_handles().insert(fh, state);
                Ok(fh)
            }
        }
    }

    /// At the first open of a data file, has the allocator ready memory for the chunk cache
    /// (see [`crate::memory::keep_ready_for_cache`]).
    fn ready_memory(&self) {
        self.memory_readied
            .call_once(|| crate::memory::keep_ready_for_cache(self.cache.budget()));
    }

    /// Forgets file handle `fh`.
    pub fn release(&self, fh: u64) {
        self.lock_handles().remove(&fh);
        if let Some(pool) = &self.prefetcher {
            pool.forget(fh);
        }
        self.forget_stats(fh);
    }

    fn lock_handles(&self) -> parking_lot::MutexGuard<'_, HashMap<u64, ReaderState>> {
        self.handles.lock()
    }

    /// Up to `size` bytes of file `ino` from `offset` (fewer at the end of the file).
    pub fn read(&self, ino: u64, offset: u64, size: u32) -> Result<Vec<u8>, ViewError> {
        let mut out = Vec::new();
        self.read_into(ino, 0, offset, size, &mut out)?;
        Ok(out)
    }

    /// Appends up to `size` bytes of file `ino` from `offset` to `out`. `fh` (from
    /// [`View::open`], or 0) lets sequential and strided readers be served ahead.
    pub fn read_into(
        &self,
        ino: u64,
        fh: u64,
        offset: u64,
        size: u32,
        out: &mut Vec<u8>,
    ) -> Result<(), ViewError> {
        let mut sent = None;
        self.read_answer(ino, fh, offset, size, out, &mut |b| sent = Some(b.to_vec()))?;
        out.extend(sent.unwrap_or_default());
        Ok(())
    }

    /// Up to `size` bytes of file `ino` from `offset`, like [`View::read_into`]: handed to
    /// `send` (once) by a read that can answer before it is done (a selection's run inside one
    /// chunk, as soon as its bytes are decoded), else appended to `out`. An error can follow
    /// `send` (the chunk failed after the bytes sent were decoded): those bytes stand.
    pub fn read_answer(
        &self,
        ino: u64,
        fh: u64,
        offset: u64,
        size: u32,
        out: &mut Vec<u8>,
        send: SendBytes,
    ) -> Result<(), ViewError> {
        let before = out.len();
        let mut early = 0;
        let mut counted = |bytes: &[u8]| {
            early = bytes.len();
            send(bytes)
        };
        let result = self.read_content(ino, fh, offset, size, out, &mut counted);
        if result.is_ok() {
            crate::stats::STATS.read((out.len() - before + early) as u64);
        }
        result
    }

    fn read_content(
        &self,
        ino: u64,
        fh: u64,
        offset: u64,
        size: u32,
        out: &mut Vec<u8>,
        send: SendBytes,
    ) -> Result<(), ViewError> {
        let len = u64::from(size);
        if is_slice(ino) {
            return self.read_slice(ino, offset, len, out, send);
        }
        let inode = self.inode(ino)?;
        let content = &inode.content;
        match content {
            Content::Dir(_) => Err(ViewError::IsDir),
            Content::Stats => {
                extend_range(&self.stats_snapshot(fh), offset, len, out);
                Ok(())
            }
            Content::Json(bytes) => {
                extend_range(bytes, offset, len, out);
                Ok(())
            }
            Content::Cdl => {
                let files = self.netcdf_files(true);
                let cdl = files.map(|f| f.cdl(inode.parent)).unwrap_or_default();
                extend_range(&cdl, offset, len, out);
                Ok(())
            }
            Content::Zom(z) => {
                self.zom_size(*z, inode.parent);
                extend_range(&self.zoms.bytes(*z), offset, len, out);
                Ok(())
            }
            Content::Preview(p) => {
                extend_range(&self.preview_png(*p)?, offset, len, out);
                Ok(())
            }
            Content::Data(a) => {
                let array = &self.arrays[*a as usize];
                let into_reply = self.track_read(fh, array, offset, len);
                array.answer_data(&self.cache, offset, len, into_reply, out, Some(send))
            }
            Content::Npy(a) => {
                let array = &self.arrays[*a as usize];
                let data_offset = offset.saturating_sub(array.header_len());
                let into_reply = self.track_read(fh, array, data_offset, len);
                array.read_npy(&self.cache, offset, len, into_reply, out)
            }
            Content::NcStream => match self.netcdf_files(true) {
                Some(files) => files.read_stream(self, inode.parent, offset, len, out),
                None => Ok(()),
            },
            Content::Text(a) | Content::TextNpy(a) => {
                let (backing, part) = (self.backing.as_ref(), vlen_part(content));
                out.extend(self.vlen[*a as usize].read(&self.cache, backing, part, offset, len)?);
                Ok(())
            }
        }
    }

    /// Records a read of `array`'s data (`offset` into `A`) through handle `fh`; queues for the
    /// read-ahead the other chunks this read needs, first (so they load in parallel with the
    /// first), and the chunks the read policy predicts; drops the chunks a sequential reader
    /// passed.
    ///
    /// Returns whether this read may decode whole chunks straight into its reply without keeping
    /// them (see [`ArrayFile::read_data`]): when the kernel caches what the handle reads (an
    /// `O_DIRECT` handle has only the chunk cache), whatever the store.
    fn track_read(&self, fh: u64, array: &ArrayFile, offset: u64, len: u64) -> bool {
        // A complete backing file serves every byte: nothing to decode ahead or drop behind.
        if array.complete_backing().is_some() {
            return true;
        }
        let now = array.chunks_for(&Prediction::Range(offset, offset.saturating_add(len)));
        if let (Some(pool), [_, rest @ ..]) = (&self.prefetcher, now.as_slice()) {
            array.prefetch(pool, rest, true);
        }
        if fh == 0 {
            return true;
        }
        let window = self
            .policy
            .window(array.read_ahead_bytes(), self.cache.budget());
        let ends = now.iter().map(|&c| (c, array.chunk_end_byte(c)));
        let first_limit = (0..self.policy.first_bands).fold(offset, |at, _| array.band_end(at));
        let (prediction, beyond, passed, page_cached) = {
            let mut handles = self.lock_handles();
            let Some(state) = handles.get_mut(&fh) else {
                return true;
            };
            let (prediction, passed) = state.after_read(offset, len, window, first_limit, ends);
            (
                prediction,
                state.beyond(window),
                passed,
                state.page_cached(),
            )
        };
        array.discard(&self.cache, &passed);
        if let Some(pool) = &self.prefetcher {
            let (ahead, beyond) = (array.chunks_for(&prediction), array.chunks_for(&beyond));
            array.predict(pool, fh, &ahead, &beyond);
        }
        page_cached
    }
}

/// Which file of a variable-length array `content` (`Text` or `TextNpy`) is.
fn vlen_part(content: &Content) -> Part {
    match content {
        Content::Text(_) => Part::Text,
        _ => Part::Npy,
    }
}

/// Appends up to `len` bytes of `bytes` from `offset` to `out`.
fn extend_range(bytes: &[u8], offset: u64, len: u64, out: &mut Vec<u8>) {
    let start = (offset.min(bytes.len() as u64)) as usize;
    let end = (offset.saturating_add(len).min(bytes.len() as u64)) as usize;
    out.extend_from_slice(&bytes[start..end]);
}

/// Opens the store at `location`, loads its hierarchy and builds the view: the whole mount minus
/// FUSE. An array at the store root is named after the store's file name.
pub fn from_location(
    location: &str,
    cache_bytes: u64,
    load: &LoadOptions,
) -> Result<View, OpenError> {
    let store = crate::store::open(location).map_err(|cause| OpenError::Store {
        location: location.to_string(),
        cause,
    })?;
    Ok(from_store(Arc::from(store), location, cache_bytes, load)?)
}

/// Opens the tree of an opened store (its root and the root's children) and builds its view,
/// which loads every other group at its first use.
pub fn from_store(
    store: Arc<dyn crate::store::Store>,
    location: &str,
    cache_bytes: u64,
    load: &LoadOptions,
) -> Result<View, MetaError> {
    let tree = Tree::open(StoreRef::Shared(store.clone()), load)?;
    let cache = Arc::new(ChunkCache::new(cache_bytes));
    Ok(View::build(
        tree,
        store,
        cache,
        &crate::store::stem(location),
    ))
}
