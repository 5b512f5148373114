//! A thin `fuser` adapter: translates kernel calls into [`View`] calls. No logic lives here.
//! The mount is always read-only, so the kernel answers every change (write, create, setattr,
//! setxattr, ...) with EROFS itself, before it reaches this adapter.
//!
//! A request whose work may wait on the store or decode is handed to the `RequestPool` and the
//! request thread returns at once, so a few slow requests never hold every thread: open,
//! statfs, reads of a remote store, and the lookups, getattrs, readdirs and readdirpluses the
//! view cannot answer from memory (a directory not loaded yet, a size to measure). The view
//! is asked those first without waiting (`Wait::No`): when it can answer, the request is
//! answered on its thread, which costs less than the hand-over. So are forget, release,
//! opendir (of a directory: its attributes are at hand), extended attributes (made from
//! documents in memory) and reads of a local store.

mod requests;

use crate::view::{Attr, DirEntry, FileKind, ReadSink, View, ViewError, Wait, XattrReply};
use fuser::{
    BackingId, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    InitFlags, KernelConfig, OpenAccMode, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory,
    ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyXattr, Request,
};
use parking_lot::Mutex;
use requests::{ErrorReply, RequestPool, Ticket, What};
use rustix::fs::OFlags;
use std::any::Any;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fmt::{self, Display};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long the kernel may keep names and attributes: the mount is a read-only snapshot.
const TTL: Duration = Duration::from_secs(3600);

/// A lookup's answer for a name that is not there: inode 0 is a negative entry, which the
/// kernel keeps as long as the entry's time to live and answers ENOENT from.
const NOT_FOUND: Attr = Attr {
    ino: 0,
    kind: FileKind::File,
    size: 0,
    mtime: std::time::UNIX_EPOCH,
    nlink: 0,
    exact: true,
};
/// Asynchronous requests the kernel may have in flight.
const MAX_BACKGROUND: u16 = 64;
/// Entries one readdirplus reply carries at most: their attributes are found before the reply
/// is taken (the deadline may answer it meanwhile), so not many more than a reply holds (each
/// takes at least 160 bytes of it; `readdir(3)` reads 32 KiB at a time). The kernel asks for
/// the rest.
const LISTED_PER_REPLY: usize = 256;
/// Entries one readdir reply carries at most: each takes at least 32 bytes of a reply of at
/// most 32 KiB. The kernel asks for the rest.
const NAMES_PER_REPLY: usize = 1024;
/// Readahead the kernel is asked for, in bytes.
pub const MAX_READAHEAD: u32 = 1 << 20;

/// The filesystem handed to `fuser`.
pub struct ZarrFs {
    shared: Arc<Shared>,
    /// Requests answered off the request threads.
    pool: Arc<RequestPool>,
}

/// What the request threads and the pool's workers share.
struct Shared {
    view: Arc<View>,
    uid: u32,
    gid: u32,
    /// Whether complete backing files are opened with passthrough (kernel 6.9+, CAP_SYS_ADMIN).
    passthrough: AtomicBool,
    /// How each open file is served: the kernel refuses a passthrough open of an inode that
    /// has files open through the page cache (and the reverse), so one mode per inode at a time.
    opens: Mutex<OpenModes>,
}

/// How the open files of each inode are served. Counted per inode, not per file handle: the
/// view numbers some handles 0, and a release of one must not touch another file's state.
struct OpenModes<B = BackingId> {
    /// Inodes open with passthrough: the backing id, held while any of their handles is open
    /// (the kernel looks the id up in the opener's context, after the reply: closed before
    /// that, the open fails with EIO), and how many handles.
    passthrough: HashMap<u64, (B, u32)>,
    /// Open handles of each inode served through the daemon and the page cache.
    cached: HashMap<u64, u32>,
}

impl<B> Default for OpenModes<B> {
    fn default() -> Self {
        OpenModes {
            passthrough: HashMap::new(),
            cached: HashMap::new(),
        }
    }
}

impl<B> OpenModes<B> {
    fn opened_cached(&mut self, ino: u64) {
        *self.cached.entry(ino).or_default() += 1;
    }

    /// One more handle of `ino` with passthrough, through its backing id: the one its open
    /// handles share, else the one `open` makes (`None`: `open` failed).
    fn opened_passthrough(&mut self, ino: u64, open: impl FnOnce() -> Option<B>) -> Option<&B> {
        let (id, n) = match self.passthrough.entry(ino) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert((open()?, 0)),
        };
        *n += 1;
        Some(id)
    }

    /// A handle of `ino` is released: the last one with passthrough lets its backing id go.
    fn released(&mut self, ino: u64) {
        let passthrough = self.passthrough.get_mut(&ino).map(|(_, n)| n);
        let Some(count) = passthrough.or_else(|| self.cached.get_mut(&ino)) else {
            return;
        };
        *count = count.saturating_sub(1);
        if *count == 0 {
            self.passthrough.remove(&ino);
            self.cached.remove(&ino);
        }
    }
}

impl ZarrFs {
    /// Serves `view`, showing every file as owned by `uid`:`gid`. With `timeout` (the store's
    /// time bound, for remote stores), a request not answered within it gets EIO.
    pub fn new(view: Arc<View>, uid: u32, gid: u32, timeout: Option<Duration>) -> Self {
        let shared = Shared {
            view,
            uid,
            gid,
            passthrough: AtomicBool::new(false),
            opens: Mutex::default(),
        };
        ZarrFs {
            shared: Arc::new(shared),
            pool: Arc::new(RequestPool::new(timeout)),
        }
    }

    /// A handle that answers the requests still waiting when the daemon ends (see
    /// [`Waiting::cut_off`]).
    pub fn waiting(&self) -> Waiting {
        Waiting(self.pool.clone())
    }

    /// Hands request `op` on `args` to the pool: `job` runs on a worker, under the panic
    /// guard, and answers through its ticket.
    fn offload<R, A>(
        &self,
        reply: R,
        op: &'static str,
        args: A,
        job: impl FnOnce(&Shared, &A, Ticket<R>) + Send + 'static,
    ) where
        R: ErrorReply,
        A: Display + Send + Sync + 'static,
    {
        let shared = self.shared.clone();
        let call = Arc::new(Call { op, args });
        let what: What = call.clone();
        self.pool.submit(reply, what, move |ticket| {
            let args = &call.args;
            catch_panic_as_eio(op, format_args!("{args}"), || job(&shared, args, ticket))
        });
    }

    /// Answers request `op` on `args` with what `find` finds: on this thread when the view
    /// has it in memory (`find` told not to wait), else on the pool, where `find` waits for the
    /// work it needs. `give` answers through the reply; given none (the deadline answered
    /// first), it gives back what the view counted.
    fn answer<R, A, T>(
        &self,
        reply: R,
        op: &'static str,
        args: A,
        find: impl Fn(&View, &A, Wait) -> Result<T, ViewError> + Send + 'static,
        give: impl Fn(&Shared, Result<T, ViewError>, Option<R>) + Send + 'static,
    ) where
        R: ErrorReply,
        A: Display + Send + Sync + 'static,
    {
        let mut waiting = Some(reply);
        catch_panic_as_eio(op, format_args!("{args}"), || {
            // Taken here: a panic drops it, which answers EIO.
            let reply = waiting.take();
            match find(&self.shared.view, &args, Wait::No) {
                Err(ViewError::WouldBlock) => waiting = reply,
                found => give(&self.shared, found, reply),
            }
        });
        if let Some(reply) = waiting {
            self.offload(reply, op, args, move |fs, args, ticket| {
                give(fs, find(&fs.view, args, Wait::Yes), ticket.take())
            });
        }
    }
}

/// A request as logs name it (`lookup "a" in inode 1`), formatted only when a line is
/// written: at its deadline, or when it panics.
struct Call<A> {
    op: &'static str,
    args: A,
}

impl<A: Display> Display for Call<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.op, self.args)
    }
}

/// A request's inode: `inode 5`.
struct Inode(u64);

impl Display for Inode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "inode {}", self.0)
    }
}

/// A name looked up in directory `parent`: `"a" in inode 1`.
struct Named {
    parent: u64,
    name: OsString,
}

impl Display for Named {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} in inode {}", self.name, self.parent)
    }
}

/// Directory `ino` listed from position `offset`: `inode 5 from 2`.
struct Listed {
    ino: u64,
    offset: u64,
}

impl Display for Listed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "inode {} from {}", self.ino, self.offset)
    }
}

impl Shared {
    /// Answers the open of `ino` (handle `fh`): with passthrough to its complete backing file
    /// `file` unless the inode is open through the page cache, else through the daemon (which
    /// copies from the backing file where it can).
    fn answer_open(&self, ino: u64, fh: u64, file: Option<std::fs::File>, reply: ReplyOpen) {
        let mut opens = self.opens.lock();
        if let Some(reply) = self.open_passthrough(&mut opens, ino, fh, file, reply) {
            opens.opened_cached(ino);
            drop(opens);
            reply.opened(FileHandle(fh), open_flags(&self.view, ino));
        }
    }

    /// The complete backing file `ino` may be opened with passthrough to. Found before the
    /// lock every open and release takes: the first time, the backing file is checked whole,
    /// which takes a while for a large array.
    fn passthrough_file(&self, ino: u64) -> Option<std::fs::File> {
        match self.passthrough.load(Ordering::Relaxed) {
            true => self.view.passthrough_file(ino),
            false => None,
        }
    }

    /// Answers with passthrough when it applies (the inode's files are open with passthrough
    /// already, or it has a complete backing file, `file`, and none open through the page
    /// cache); else gives `reply` back.
    fn open_passthrough(
        &self,
        ids: &mut OpenModes,
        ino: u64,
        fh: u64,
        file: Option<std::fs::File>,
        reply: ReplyOpen,
    ) -> Option<ReplyOpen> {
        let shared = ids.passthrough.contains_key(&ino);
        if !shared && (!self.passthrough.load(Ordering::Relaxed) || ids.cached.contains_key(&ino)) {
            return Some(reply);
        }
        let file = match (shared, file) {
            (true, _) => None,
            (false, Some(file)) => Some(file),
            (false, None) => return Some(reply),
        };
        let opened = ids.opened_passthrough(ino, || {
            let file = file?;
            reply
                .open_backing(&file)
                .map_err(|e| {
                    self.passthrough.store(false, Ordering::Relaxed);
                    log::warn!(
                        "FUSE passthrough refused ({e}): complete arrays are copied from \
                         their backing files instead"
                    );
                })
                .ok()
        });
        let Some(id) = opened else {
            return Some(reply);
        };
        if let Some(dir) = self.view.backing_dir() {
            dir.count_passthrough();
        }
        log::info!("inode {ino}: opened with passthrough");
        reply.opened_passthrough(FileHandle(fh), FopenFlags::empty(), id);
        None
    }

    fn file_attr(&self, a: &Attr) -> FileAttr {
        let perm = match a.kind {
            FileKind::Directory => 0o555,
            FileKind::File => 0o444,
        };
        FileAttr {
            ino: INodeNo(a.ino),
            size: a.size,
            blocks: a.size.div_ceil(512),
            atime: a.mtime,
            mtime: a.mtime,
            ctime: a.mtime,
            crtime: a.mtime,
            kind: file_type(a.kind),
            perm,
            nlink: a.nlink,
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            blksize: MAX_READAHEAD,
            flags: 0,
        }
    }

    /// Answers a getattr that found `attr`, through `reply` (none: the deadline answered).
    fn answer_attr(&self, attr: Result<Attr, ViewError>, reply: Option<ReplyAttr>) {
        let Some(reply) = reply else { return };
        match attr {
            Ok(a) => reply.attr(&ttl(&a), &self.file_attr(&a)),
            Err(e) => reply.error(errno(e)),
        }
    }

    /// Answers a readdir that found `entries`, through `reply` (none: the deadline answered).
    fn answer_readdir(
        &self,
        entries: Result<Vec<DirEntry>, ViewError>,
        reply: Option<ReplyDirectory>,
    ) {
        let Some(mut reply) = reply else { return };
        match entries {
            Ok(entries) => {
                for e in entries {
                    if reply.add(INodeNo(e.ino), e.next_offset, file_type(e.kind), &e.name) {
                        break;
                    }
                }
                reply.ok()
            }
            Err(e) => reply.error(errno(e)),
        }
    }

    /// Answers a readdirplus that found `entries`, through `reply` (none: the deadline
    /// answered).
    fn answer_readdirplus(
        &self,
        entries: Result<Vec<(Attr, DirEntry)>, ViewError>,
        reply: Option<ReplyDirectoryPlus>,
    ) {
        // Entries handed out count no lookup in the view (a directory lists no
        // selection file): nothing to give back when the deadline answered first.
        let Some(mut reply) = reply else { return };
        match entries {
            Ok(entries) => {
                for (attr, e) in entries {
                    if reply.add(
                        INodeNo(e.ino),
                        e.next_offset,
                        &e.name,
                        &ttl(&attr),
                        &self.file_attr(&attr),
                        Generation(0),
                    ) {
                        break;
                    }
                }
                reply.ok()
            }
            Err(e) => reply.error(errno(e)),
        }
    }

    /// Answers a lookup that found `found`, through `reply`. When the deadline answered first
    /// (no reply), the kernel never learned the inode: the lookup the view counted is given
    /// back.
    fn answer_lookup(&self, found: Result<Attr, ViewError>, reply: Option<ReplyEntry>) {
        let Some(reply) = reply else {
            if let Ok(attr) = found {
                self.view.forget(attr.ino, 1);
            }
            return;
        };
        match found {
            Ok(a) => reply.entry(&ttl(&a), &self.file_attr(&a), Generation(0)),
            // The tree does not change while mounted: a name that is not there never will
            // be, and the kernel keeps that answer (a negative entry) instead of asking again.
            Err(ViewError::NotFound) => {
                reply.entry(&TTL, &self.file_attr(&NOT_FOUND), Generation(0))
            }
            Err(e) => reply.error(errno(e)),
        }
    }
}

/// The requests of a mount, for the daemon's exit.
pub struct Waiting(Arc<RequestPool>);

impl Waiting {
    /// Answers every request still waiting, and every request after, with "Transport endpoint
    /// is not connected": what a process using a detached mount gets from the kernel once the
    /// daemon is gone, rather than the "Software caused connection abort" of a request it was
    /// holding.
    pub fn cut_off(&self) {
        self.0.close(Errno::ENOTCONN);
    }
}

/// How long the kernel may keep `attr`: a size not known yet is asked again when needed.
fn ttl(attr: &Attr) -> Duration {
    if attr.exact {
        TTL
    } else {
        Duration::ZERO
    }
}

fn errno(e: ViewError) -> Errno {
    Errno::from_i32(e.errno())
}

fn file_type(kind: FileKind) -> FileType {
    match kind {
        FileKind::Directory => FileType::Directory,
        FileKind::File => FileType::RegularFile,
    }
}

/// Runs one request's `handler`. A panic inside it must not end the thread (the mount would
/// slowly stop answering): it is caught and logged once, naming `op` and its `target`, and the
/// kernel gets EIO, which the unanswered reply sends as the unwinding drops it.
fn catch_panic_as_eio(op: &str, target: std::fmt::Arguments<'_>, handler: impl FnOnce()) {
    if let Err(payload) = std::panic::catch_unwind(AssertUnwindSafe(handler)) {
        log::error!("{}", panic_report(op, target, payload.as_ref()));
    }
}

/// The log line of a request whose handler panicked with `payload`.
fn panic_report(op: &str, target: std::fmt::Arguments<'_>, payload: &(dyn Any + Send)) -> String {
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    format!("{op} {target}: internal error, answered EIO: {message}")
}

/// A read (inode, handle, offset, size), as logs name it: `inode 5, 4096 bytes at 0`.
struct Read((u64, u64, u64, u32));

impl Display for Read {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (ino, _, offset, size) = self.0;
        write!(f, "inode {ino}, {size} bytes at {offset}")
    }
}

/// Answers one read of `view`; `take` gives the reply unless it was answered already (on a
/// pool worker: at the deadline, or when the daemon ended).
fn answer_read(
    view: &View,
    (ino, fh, offset, size): (u64, u64, u64, u32),
    take: impl Fn() -> Option<ReplyData>,
) {
    if let Err(e) = view.read_into(ino, fh, offset, size, &mut ReplySink(&take)) {
        if let Some(r) = take() {
            r.error(errno(e))
        }
    }
}

/// A read's reply, taken when the bytes are ready unless answered already.
struct ReplySink<F>(F);

impl<F: Fn() -> Option<ReplyData>> ReadSink for ReplySink<F> {
    fn answer(&mut self, bytes: &[u8]) {
        if let Some(r) = (self.0)() {
            r.data(bytes)
        }
    }
}

/// The entries of directory `ino` from position `offset` with their attributes, as many as
/// one reply of readdirplus takes ([`LISTED_PER_REPLY`]), waiting for the work they need or
/// not as `wait` says; an entry whose attributes cannot be found is left out.
fn listed(
    view: &View,
    ino: u64,
    offset: u64,
    wait: Wait,
) -> Result<Vec<(Attr, DirEntry)>, ViewError> {
    let mut listed = Vec::new();
    for e in view.readdir_with(ino, offset, LISTED_PER_REPLY, wait)? {
        match view.listed_attr(e.ino, wait) {
            Ok(attr) => listed.push((attr, e)),
            Err(ViewError::WouldBlock) => return Err(ViewError::WouldBlock),
            Err(_) => {}
        }
    }
    Ok(listed)
}

fn reply_xattr(answer: Result<XattrReply, ViewError>, reply: ReplyXattr) {
    match answer {
        Ok(XattrReply::Size(n)) => reply.size(n),
        Ok(XattrReply::Data(bytes)) => reply.data(&bytes),
        Err(e) => reply.error(errno(e)),
    }
}

/// How the kernel caches an open file: the page cache is kept across opens (the mount is a
/// snapshot), except for files whose size may not be known yet, which bypass it.
fn open_flags(view: &View, ino: u64) -> FopenFlags {
    if view.direct_io(ino) {
        FopenFlags::FOPEN_DIRECT_IO
    } else {
        FopenFlags::FOPEN_KEEP_CACHE
    }
}

impl Filesystem for ZarrFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        let _ = config.set_max_readahead(MAX_READAHEAD);
        // Let the kernel keep many readahead requests in flight: they decode in parallel.
        let _ = config.set_max_background(MAX_BACKGROUND);
        let _ = config.set_congestion_threshold(MAX_BACKGROUND * 3 / 4);
        if let Some(dir) = self.shared.view.backing_dir() {
            let on = config.add_capabilities(InitFlags::FUSE_PASSTHROUGH).is_ok()
                && config.set_max_stack_depth(1).is_ok();
            self.shared.passthrough.store(on, Ordering::Relaxed);
            log::info!(
                "cache dir {}: {}",
                dir.root().display(),
                if on {
                    "complete arrays are served with FUSE passthrough"
                } else {
                    "the kernel has no FUSE passthrough (6.9+): complete arrays are copied \
                     from their backing files"
                }
            );
        }
        // Files served with direct I/O (selections) can still be mapped (kernel 6.6+).
        let _ = config.add_capabilities(InitFlags::FUSE_DIRECT_IO_ALLOW_MMAP);
        let _ = config.add_capabilities(
            InitFlags::FUSE_DO_READDIRPLUS
                | InitFlags::FUSE_READDIRPLUS_AUTO
                | InitFlags::FUSE_PARALLEL_DIROPS,
        );
        Ok(())
    }

    /// May load the groups on the way, or measure the file (selections too).
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let find = |view: &View, n: &Named, wait| {
            let name = n.name.to_str().ok_or(ViewError::NotFound)?;
            view.lookup_with(n.parent, name, wait)
        };
        let named = Named {
            parent: parent.0,
            name: name.to_owned(),
        };
        self.answer(reply, "lookup", named, find, Shared::answer_lookup)
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.shared.view.forget(ino.0, nlookup);
    }

    /// May measure the file: a variable-length array's sizes are found by decoding it, a
    /// file showing a subtree loads it.
    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let find = |view: &View, i: &Inode, wait| view.getattr_with(i.0, wait);
        self.answer(reply, "getattr", Inode(ino.0), find, Shared::answer_attr)
    }

    /// May make an array's chunk reader, render a preview or check a backing file whole.
    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if flags.acc_mode() != OpenAccMode::O_RDONLY || flags.0 & OFlags::TRUNC.bits() as i32 != 0 {
            return reply.error(Errno::EROFS);
        }
        let direct = flags.0 & OFlags::DIRECT.bits() as i32 != 0;
        self.offload(reply, "open", Inode(ino.0), move |fs, _, ticket| {
            let opened = match direct {
                true => fs.view.open_direct(ino.0),
                false => fs.view.open(ino.0),
            };
            let file = opened
                .as_ref()
                .ok()
                .and_then(|_| fs.passthrough_file(ino.0));
            let Some(reply) = ticket.take() else {
                // The kernel will never release a handle it did not hear of.
                if let Ok(fh) = opened {
                    fs.view.release(fh);
                }
                return;
            };
            match opened {
                Ok(fh) => fs.answer_open(ino.0, fh, file, reply),
                Err(e) => reply.error(errno(e)),
            }
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<fuser::LockOwner>,
        reply: ReplyData,
    ) {
        let read = (ino.0, fh.0, offset, size);
        // A local store answers on the request thread; a remote one, which may stall, on the
        // pool, so that stalled reads never hold every request thread.
        if !self.pool.has_deadline() {
            let reply = std::cell::Cell::new(Some(reply));
            let view = &self.shared.view;
            let target = format_args!("{}", Read(read));
            return catch_panic_as_eio("read", target, || answer_read(view, read, || reply.take()));
        }
        self.offload(reply, "read", Read(read), move |fs, _, ticket| {
            answer_read(&fs.view, read, || ticket.take())
        });
    }

    fn release(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<fuser::LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        catch_panic_as_eio("release", format_args!("inode {ino}"), || {
            self.shared.view.release(fh.0);
            self.shared.opens.lock().released(ino.0);
            reply.ok();
        })
    }

    /// On the request thread: the kernel opens only directories as such, and a directory's
    /// attributes are at hand.
    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        catch_panic_as_eio("opendir", format_args!("inode {ino}"), || {
            match self.shared.view.getattr_with(ino.0, Wait::No) {
                Ok(a) if a.kind == FileKind::Directory => {
                    reply.opened(FileHandle(0), FopenFlags::FOPEN_KEEP_CACHE)
                }
                // Only a file's attributes may need waiting for.
                Ok(_) | Err(ViewError::WouldBlock) => reply.error(Errno::ENOTDIR),
                Err(e) => reply.error(errno(e)),
            }
        })
    }

    /// May load the group's children.
    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        reply: ReplyDirectory,
    ) {
        let find = |view: &View, l: &Listed, wait| {
            view.readdir_with(l.ino, l.offset, NAMES_PER_REPLY, wait)
        };
        let from = Listed { ino: ino.0, offset };
        self.answer(reply, "readdir", from, find, Shared::answer_readdir)
    }

    /// May load the group's children and measure them (variable-length arrays).
    fn readdirplus(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        reply: ReplyDirectoryPlus,
    ) {
        let find = |view: &View, l: &Listed, wait| listed(view, l.ino, l.offset, wait);
        let from = Listed { ino: ino.0, offset };
        self.answer(reply, "readdirplus", from, find, Shared::answer_readdirplus)
    }

    /// Loads the whole tree the first time (the totals).
    fn statfs(&self, _req: &Request, ino: INodeNo, reply: ReplyStatfs) {
        self.offload(reply, "statfs", Inode(ino.0), move |fs, _, ticket| {
            let totals = fs.view.totals();
            let Some(reply) = ticket.take() else { return };
            let blocks = totals.blocks(MAX_READAHEAD);
            reply.statfs(
                blocks,
                0,
                0,
                totals.files,
                0,
                MAX_READAHEAD,
                255,
                MAX_READAHEAD,
            )
        })
    }

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        catch_panic_as_eio("getxattr", format_args!("inode {ino} {name:?}"), || {
            let answer = match name.to_str() {
                Some(n) => self.shared.view.getxattr(ino.0, n, size),
                None => Err(ViewError::NoAttribute),
            };
            reply_xattr(answer, reply)
        })
    }

    fn listxattr(&self, _req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        catch_panic_as_eio("listxattr", format_args!("inode {ino}"), || {
            reply_xattr(self.shared.view.listxattr(ino.0, size), reply)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_lets_go_only_its_own_inodes_backing_id() {
        // File handles are not unique (the view numbers some 0): opens are counted per inode.
        let mut modes = OpenModes::<u32>::default();
        assert_eq!(modes.opened_passthrough(4, || Some(40)), Some(&40));
        assert_eq!(modes.opened_passthrough(14, || Some(140)), Some(&140));
        let again = modes.opened_passthrough(14, || panic!("the inode's id is shared"));
        assert_eq!(again, Some(&140));
        modes.opened_cached(5);
        // Inode 4's release comes after inode 14's opens: 14 keeps its id.
        modes.released(4);
        assert_eq!(modes.passthrough.get(&4), None);
        assert_eq!(modes.passthrough.get(&14), Some(&(140, 2)));
        modes.released(5);
        assert!(modes.cached.is_empty());
        modes.released(14);
        assert_eq!(modes.passthrough.get(&14), Some(&(140, 1)));
        modes.released(14);
        assert!(modes.passthrough.is_empty());
        assert_eq!(
            modes.opened_passthrough(4, || None),
            None,
            "a failed open holds nothing"
        );
        assert!(modes.passthrough.is_empty());
    }

    /// Stands for a fuser reply: answers (here: records) when dropped unanswered.
    struct Reply<'a>(&'a AtomicBool);

    impl Drop for Reply<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_panicking_handler_is_caught_and_its_reply_still_answers() {
        let answered = AtomicBool::new(false);
        let reply = Reply(&answered);
        let inode = 7;
        catch_panic_as_eio("read", format_args!("inode {inode}"), move || {
            let _owned = reply;
            let chunks: Vec<u64> = Vec::new();
            let _ = chunks[inode];
        });
        assert!(answered.load(Ordering::SeqCst), "the reply was not dropped");
        // The thread lives on and the next request runs normally.
        let mut ran = false;
        catch_panic_as_eio("getattr", format_args!("inode 1"), || ran = true);
        assert!(ran);
    }

    #[test]
    fn the_report_names_operation_target_and_message() {
        let report = |payload: Box<dyn Any + Send>| {
            panic_report(
                "lookup",
                format_args!("{:?} in inode {}", "t", 1),
                payload.as_ref(),
            )
        };
        let text = std::panic::catch_unwind(|| panic!("static text")).unwrap_err();
        assert_eq!(
            report(text),
            "lookup \"t\" in inode 1: internal error, answered EIO: static text"
        );
        let n = 3;
        let formatted = std::panic::catch_unwind(|| panic!("formatted {n}")).unwrap_err();
        assert!(report(formatted).ends_with("EIO: formatted 3"));
        let other = std::panic::catch_unwind(|| std::panic::panic_any(5u8)).unwrap_err();
        assert!(report(other).ends_with("EIO: (no message)"));
    }
}
