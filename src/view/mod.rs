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
mod kinds;
mod layout;
mod look_ahead;
pub mod netcdf;
mod npy;
mod preview;
mod row_walk;
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
use kinds::{
    ArrayPart, CdlFile, JsonFile, Measure, NcStreamFile, PreviewFile, ReadAt, Reply, ServedFile,
    StatsFile, TextFile, ZomFile,
};
pub use layout::{GridGeometry, Run};
pub use npy::npy_header;
use slice_table::{is_slice, SliceTable};
pub use stats_file::{STATS_FILE, ZARRFS_DIR};
pub use totals::Totals;
pub use vlen_file::SYNC_SCAN_MAX;
use vlen_file::{Reads, Sizer, VlenFile};
pub use xattrs::XattrReply;
use xattrs::Xattrs;
pub use zom::ZOM_FILE;

use crate::backing::BackingDir;
use crate::cache::read_ahead::{Prediction, ReadAhead, ReadPolicy, ReaderState};
use crate::cache::ChunkCache;
use crate::meta::{LoadOptions, MetaError, StoreRef, Tree};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize};
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

/// Where a read that can answer before it is done hands its bytes (see [`View::read_into`]).
pub type SendBytes<'a> = &'a mut dyn FnMut(&[u8]);

/// Where a read's bytes go: FUSE's reply, or a buffer (a `Vec<u8>` appends them). Each read
/// answers once, by one of the two methods.
pub trait ReadSink {
    /// Takes the read's bytes, gathered in a buffer, when the read is done.
    fn answer(&mut self, bytes: &[u8]);

    /// Takes the read's bytes straight from where they were decoded, before the read is done
    /// (a run inside one chunk, as soon as its bytes are there).
    fn answer_early(&mut self, bytes: &[u8]) {
        self.answer(bytes)
    }
}

impl ReadSink for Vec<u8> {
    fn answer(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// Groups loaded at once when a whole subtree is.
const SUBTREE_WORKERS: usize = 8;

/// Inode number of the mount root.
pub const ROOT_INO: u64 = 1;

/// Whether a call may wait for the work its answer needs: loading a group's children or a
/// subtree, measuring a file (scanning its chunks, writing a netCDF header), asking the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// It does that work first, however long it takes.
    Yes,
    /// It answers from what is in memory now, or at once with [`ViewError::WouldBlock`].
    No,
}

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
    /// False when the size is not known yet (shown as 0): the kernel must not keep it.
    pub exact: bool,
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

/// What an inode holds: a directory, or a file of one of the kinds in [`kinds`].
enum Content {
    Dir(Box<Dir>),
    /// An array's data or NPY file.
    Array(ArrayPart),
    /// A JSON sidecar.
    Json(JsonFile),
    Zom(ZomFile),
    Cdl(CdlFile),
    NcStream(NcStreamFile),
    /// A variable-length array's text or NPY file.
    Text(TextFile),
    Stats(StatsFile),
    Preview(PreviewFile),
}

impl Content {
    /// The file it is; `None` for a directory.
    fn file(&self) -> Option<&dyn ServedFile> {
        Some(match self {
            Content::Dir(_) => return None,
            Content::Array(f) => f,
            Content::Json(f) => f,
            Content::Zom(f) => f,
            Content::Cdl(f) => f,
            Content::NcStream(f) => f,
            Content::Text(f) => f,
            Content::Stats(f) => f,
            Content::Preview(f) => f,
        })
    }
}

/// A directory: its entries, made at its first use (or before, see [`look_ahead`]); a failed
/// making is not kept, the next use tries again.
#[derive(Default)]
struct Dir {
    /// The group it shows (none for `.zarrfs` and for the root of a store that is an array).
    group: Option<Group>,
    listing: OnceLock<Listing>,
    /// Held while the listing is made, so that concurrent first uses make it once.
    making: Mutex<()>,
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

    /// Its listing, made by `make` if not made yet, and whether this call made it. Only
    /// a listing made is kept: after a failure, the next call makes it again.
    fn listing_or(
        &self,
        make: impl FnOnce() -> Result<Listing, ViewError>,
    ) -> Result<(&Listing, bool), ViewError> {
        if let Some(listing) = self.listing.get() {
            return Ok((listing, false));
        }
        let _making = self.making.lock();
        if let Some(listing) = self.listing.get() {
            return Ok((listing, false));
        }
        let made = make()?;
        Ok((self.listing.get_or_init(|| made), true))
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
    entries: Vec<(Box<str>, u64)>,
    /// The directories of its subgroups, by inode (which is name order).
    subgroups: Vec<u64>,
}

impl Listing {
    /// The inode of entry `name`.
    fn get(&self, name: &str) -> Option<u64> {
        let at = self
            .entries
            .binary_search_by(|(n, _)| (**n).cmp(name))
            .ok()?;
        Some(self.entries[at].1)
    }
}

/// Where an inode's extended attributes come from.
enum Attrs {
    /// It has none.
    None,
    /// The root's, made with the view (see [`View::root_xattrs`]).
    Root,
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
    /// Nodes whose extended attributes too long to read have been warned of.
    long_xattrs: xattrs::Warned,
    /// The `.header.cdl` and `.ncstream` files: their dataset, made at the first use of one;
    /// each group's files, made when asked for.
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
    /// The read-ahead workers (shared with the scans of variable-length arrays handed to the
    /// sizer).
    prefetcher: Option<Arc<ReadAhead>>,
    /// Every open data file, by file handle. A handle's state stays locked while a read of it
    /// queues its prediction, so a concurrent read of the handle never reads a chunk before
    /// an older prediction queues it (it would be fetched twice).
    handles: Mutex<HashMap<u64, Arc<Mutex<ReaderState>>>>,
    /// The `.zarrfs/stats` text each open handle reads, made when it was opened.
    snapshots: Mutex<HashMap<u64, Arc<[u8]>>>,
    next_handle: AtomicU64,
    /// The cache directory of decoded arrays, when one is used.
    backing: Option<backed::Backing>,
    /// Selection files (`A[SEL]`) looked up so far.
    slices: SliceTable,
    /// The root's extended attributes: a group's, and what the store says of itself.
    root_xattrs: Xattrs,
}

impl View {
    fn inode(&self, ino: u64) -> Result<&Inode, ViewError> {
        usize::try_from(ino.wrapping_sub(1))
            .ok()
            .and_then(|i| self.inodes.get(i))
            .ok_or(ViewError::NotFound)
    }

    /// Inode `ino`, a number this view handed out.
    fn known(&self, ino: u64) -> &Inode {
        &self.inodes[(ino - 1) as usize]
    }

    /// Directory `ino`, a number this view handed out; `None` when it is a file.
    fn known_dir(&self, ino: u64) -> Option<&Dir> {
        match &self.known(ino).content {
            Content::Dir(d) => Some(d),
            _ => None,
        }
    }

    /// The entries of directory `ino`, made now if not made yet and `wait` allows (EIO when its
    /// group's children cannot be loaded now). Without waiting, the lock a making holds is
    /// never taken.
    fn dir(&self, ino: u64, wait: Wait) -> Result<&Listing, ViewError> {
        let Content::Dir(d) = &self.inode(ino)?.content else {
            return Err(ViewError::NotDir);
        };
        let listing = match (d.listing.get(), wait) {
            (Some(listing), _) => listing,
            (None, Wait::No) => return Err(ViewError::WouldBlock),
            (None, Wait::Yes) => d.listing_or(|| self.make_listing(ino, d))?.0,
        };
        self.used(ino, d);
        Ok(listing)
    }

    /// Makes every directory below `ino` (and `ino`), for the files that show a whole subtree:
    /// level by level, the groups of a level on up to [`SUBTREE_WORKERS`] threads (each also
    /// probes its children in parallel on a remote store). Fails with the first error met
    /// when a group's children could not be loaded (each logged; the rest is loaded all the
    /// same): what shows the subtree must not be made without them.
    fn load_subtree(&self, ino: u64) -> Result<(), ViewError> {
        let workers = self.store.parallelism().min(SUBTREE_WORKERS);
        let mut level = vec![ino];
        let mut failed = Ok(());
        while !level.is_empty() {
            let listed = crate::meta::parallel_map(&level, workers, |&dir| {
                let listing = self.dir(dir, Wait::Yes)?;
                let groups = listing.entries.iter().map(|(_, i)| *i);
                let groups =
                    groups.filter(|&i| self.known_dir(i).is_some_and(|d| d.group.is_some()));
                Ok(groups.collect::<Vec<_>>())
            });
            level = Vec::new();
            for groups in listed {
                match groups {
                    Ok(groups) => level.extend(groups),
                    Err(e) => failed = failed.and(Err(e)),
                }
            }
        }
        failed
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
        self.lookup_with(parent, name, Wait::Yes)
    }

    /// [`View::lookup`], waiting for the work it needs or not as `wait` says: without, a name
    /// in a directory not loaded yet, a file whose size needs measuring and a selection file
    /// not made yet are [`ViewError::WouldBlock`].
    pub fn lookup_with(&self, parent: u64, name: &str, wait: Wait) -> Result<Attr, ViewError> {
        match self.dir(parent, wait)?.get(name) {
            Some(ino) => self.getattr_with(ino, wait),
            None => self.lookup_slice(parent, name, wait),
        }
    }

    /// Attributes of `ino`. Directories show one link: counting their subdirectories would
    /// load them.
    pub fn getattr(&self, ino: u64) -> Result<Attr, ViewError> {
        self.getattr_with(ino, Wait::Yes)
    }

    /// [`View::getattr`], waiting for the work it needs or not as `wait` says: without, a file
    /// whose size needs measuring is [`ViewError::WouldBlock`].
    pub fn getattr_with(&self, ino: u64, wait: Wait) -> Result<Attr, ViewError> {
        let subtree = true;
        self.attr(ino, Measure { subtree, wait })
    }

    /// Attributes of `ino` as a directory listing hands them out (readdirplus): as
    /// [`View::getattr_with`], except that the size of a file showing a whole subtree
    /// (`.zom.json`, `.header.cdl`, `.ncstream`) is not measured here, which would load the
    /// subtree; then the size is 0 and not exact, and the kernel must ask again.
    pub fn listed_attr(&self, ino: u64, wait: Wait) -> Result<Attr, ViewError> {
        let subtree = false;
        self.attr(ino, Measure { subtree, wait })
    }

    fn attr(&self, ino: u64, measure: Measure) -> Result<Attr, ViewError> {
        let attr = |kind, size: Option<u64>, mtime| Attr {
            ino,
            kind,
            size: size.unwrap_or(0),
            mtime,
            nlink: 1,
            exact: size.is_some(),
        };
        if let Ok(inode) = self.inode(ino) {
            if let Content::Dir(_) = inode.content {
                return Ok(attr(FileKind::Directory, Some(0), inode.mtime));
            }
        }
        self.with_file(ino, |file, dir, mtime| {
            Ok(attr(FileKind::File, file.size(self, dir, measure)?, mtime))
        })
    }

    /// Hands file `ino` (a selection file too), the inode of its directory and its
    /// modification time to `f`; a directory is [`ViewError::IsDir`].
    fn with_file<R>(
        &self,
        ino: u64,
        f: impl FnOnce(&dyn ServedFile, u64, SystemTime) -> Result<R, ViewError>,
    ) -> Result<R, ViewError> {
        if is_slice(ino) {
            // Selection files need no directory.
            let entry = self.slice(ino)?;
            return f(&entry, 0, entry.mtime);
        }
        let inode = self.inode(ino)?;
        let file = inode.content.file().ok_or(ViewError::IsDir)?;
        f(file, inode.parent, inode.mtime)
    }

    /// The size of the `.zom.json` of group node `z`, shown in directory `dir`: its subtree
    /// is loaded first, unless measured before. EIO (logged) when a group of the subtree could
    /// not be loaded: nothing is measured then, and the next use tries again.
    fn zom_size(&self, z: u32, dir: u64) -> Result<u64, ViewError> {
        if let Some(size) = self.zoms.measured_size(z) {
            return Ok(size);
        }
        self.load_subtree(dir).inspect_err(|_| {
            let path = self.zoms.path(z);
            log::error!(
                "/{path}: {ZOM_FILE} not made: a group below could not be loaded (the next use \
                 tries again)"
            );
        })?;
        Ok(self.zoms.size(z))
    }

    /// The netCDF files, if their dataset was made before.
    fn netcdf_made(&self) -> Option<&netcdf::files::NetcdfFiles> {
        self.netcdf.get()
    }

    /// The netCDF files, their dataset made now (from the whole tree) unless made before. EIO
    /// (logged) when a group could not be loaded: nothing is made then, and the next use
    /// tries again.
    fn netcdf_files(&self) -> Result<&netcdf::files::NetcdfFiles, ViewError> {
        if let Some(files) = self.netcdf.get() {
            return Ok(files);
        }
        self.load_subtree(ROOT_INO).inspect_err(|_| {
            log::error!(
                "the netCDF files are not made: a group could not be loaded (the next use tries \
                 again)"
            );
        })?;
        Ok(self
            .netcdf
            .get_or_init(|| netcdf::files::NetcdfFiles::new(self)))
    }

    /// Entries of directory `ino` from position `offset` on (0 is `.`, 1 is `..`).
    pub fn readdir(&self, ino: u64, offset: u64) -> Result<Vec<DirEntry>, ViewError> {
        self.readdir_with(ino, offset, usize::MAX, Wait::Yes)
    }

    /// At most `max` entries of [`View::readdir`], waiting for the directory to be loaded or
    /// not as `wait` says: without, a directory not loaded yet is [`ViewError::WouldBlock`].
    pub fn readdir_with(
        &self,
        ino: u64,
        offset: u64,
        max: usize,
        wait: Wait,
    ) -> Result<Vec<DirEntry>, ViewError> {
        let dir = self.dir(ino, wait)?;
        let parent = self.inode(ino)?.parent;
        let dots = [(".", ino), ("..", parent)];
        let all = dots
            .into_iter()
            .chain(dir.entries.iter().map(|(n, i)| (&**n, *i)));
        Ok(all
            .enumerate()
            .skip(offset as usize)
            .take(max)
            .map(|(pos, (name, ino))| DirEntry {
                ino,
                kind: match self.known_dir(ino) {
                    Some(_) => FileKind::Directory,
                    None => FileKind::File,
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
        // The workers of an earlier policy stop when the new ones start (each start is a
        // generation of its own), or, when the new policy starts none, once no scan under way
        // holds them.
        self.prefetcher = None;
        let limits = policy.limits(self.cache.budget());
        self.prefetcher =
            (limits.fetchers > 0).then(|| Arc::new(ReadAhead::start(self.cache.clone(), limits)));
    }

    /// How variable-length arrays read their chunks: through the cache, ahead as the read
    /// policy says.
    fn vlen_reads(&self) -> Reads<'_> {
        Reads {
            cache: &self.cache,
            ahead: self.prefetcher.as_ref().map(|pool| (pool, &self.policy)),
        }
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
        self.with_file(ino, |file, _, _| Ok(file.passthrough(self)))
            .ok()
            .flatten()
    }

    /// True when `ino` must be served with direct I/O (`FOPEN_DIRECT_IO`), as its kind says
    /// (see `kinds::ServedFile::direct_io`).
    pub fn direct_io(&self, ino: u64) -> bool {
        self.with_file(ino, |file, _, _| Ok(file.direct_io(self)))
            .unwrap_or(false)
    }

    /// Opens `ino` for reading through the kernel's page cache and returns a file handle (0
    /// for files that need none); unreadable arrays fail here with EIO. Chunks a sequential
    /// reader has gone past leave the chunk cache (see `DropBehind`).
    pub fn open(&self, ino: u64) -> Result<u64, ViewError> {
        self.open_handle(ino, true)
    }

    /// Like [`View::open`], for reads that bypass the page cache (`O_DIRECT`): the chunk cache
    /// is their only cache, so it keeps what they read.
    pub fn open_direct(&self, ino: u64) -> Result<u64, ViewError> {
        self.open_handle(ino, false)
    }

    fn open_handle(&self, ino: u64, page_cached: bool) -> Result<u64, ViewError> {
        self.with_file(ino, |file, _, _| file.open(self, page_cached))
    }

    /// The kernel forgets `n` lookups of `ino`: a selection file it no longer knows may be let
    /// go (the tree's inodes stay).
    pub fn forget(&self, ino: u64, n: u64) {
        if is_slice(ino) {
            self.slices.forget(ino, n);
        }
    }

    /// Forgets file handle `fh`.
    pub fn release(&self, fh: u64) {
        self.handles.lock().remove(&fh);
        self.slices.release(fh);
        if let Some(pool) = &self.prefetcher {
            pool.forget(fh);
        }
        self.forget_stats(fh);
    }

    /// Up to `size` bytes of file `ino` from `offset` (fewer at the end of the file), through
    /// [`View::read_into`].
    pub fn read(&self, ino: u64, offset: u64, size: u32) -> Result<Vec<u8>, ViewError> {
        let mut out = Vec::new();
        self.read_into(ino, 0, offset, size, &mut out)?;
        Ok(out)
    }

    /// Reads up to `size` bytes of file `ino` from `offset` (fewer at the end of the file) and
    /// hands them to `sink`, once: the one read entry, for FUSE and for tests. `fh` (from
    /// [`View::open`], or 0) lets sequential and strided readers be served ahead. A read that
    /// can answer before it is done (a selection's run inside one chunk, as soon as its bytes
    /// are decoded) answers then; an error can follow (the chunk failed after the bytes sent
    /// were decoded): those bytes stand, and the error is returned.
    pub fn read_into(
        &self,
        ino: u64,
        fh: u64,
        offset: u64,
        size: u32,
        sink: &mut dyn ReadSink,
    ) -> Result<(), ViewError> {
        // A spare buffer, emptied: no allocation per request.
        let mut buf = crate::memory::buffers().take_empty(size as usize);
        // Each read is counted before it is answered: `.zarrfs/stats` read right after it
        // shows it.
        let mut sent = false;
        let mut send = |bytes: &[u8]| {
            sent = true;
            crate::stats::STATS.read(bytes.len() as u64);
            sink.answer_early(bytes)
        };
        let read = ReadAt {
            fh,
            offset,
            len: u64::from(size),
        };
        let reply = Reply {
            send: Some(&mut send),
            ..Reply::new(&mut buf, false)
        };
        let result = self.with_file(ino, |file, dir, _| file.read(self, dir, read, reply));
        if result.is_ok() && !sent {
            crate::stats::STATS.read(buf.len() as u64);
            sink.answer(&buf);
        }
        crate::memory::buffers().give(buf);
        result
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
        let (natural, chunk) = (array.read_ahead_bytes(), array.chunk_bytes());
        let window = self.policy.window(natural, chunk, self.cache.budget());
        let ends = now.iter().map(|&c| (c, array.chunk_end_byte(c)));
        let first_limit = (0..self.policy.first_bands).fold(offset, |at, _| array.band_end(at));
        let Some(state) = self.handles.lock().get(&fh).cloned() else {
            return true;
        };
        let mut state = state.lock();
        let (prediction, passed) = state.after_read(offset, len, window, first_limit, ends);
        array.discard(&self.cache, &passed, fh);
        if let Some(pool) = &self.prefetcher {
            let beyond = state.beyond(window);
            let (ahead, beyond) = (array.chunks_for(&prediction), array.chunks_for(&beyond));
            array.predict(pool, fh, &ahead, &beyond);
        }
        state.page_cached()
    }
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
