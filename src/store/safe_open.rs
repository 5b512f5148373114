//! Opening the files of a local store so that no open leaves the store, blocks, or reads more
//! than it means to.
//!
//! Every key is resolved by the kernel beneath the store root's directory descriptor
//! (`openat2` with `RESOLVE_BENEATH`): a symbolic link is followed only while it stays beneath
//! the root (a relative target that never climbs above it), so swapping a directory of the
//! store, or the root itself, for a link cannot reach a file outside it, whatever the timing.
//! Where `openat2` is refused (kernels before 5.6, seccomp filters) the same resolution is done
//! one component at a time with `O_NOFOLLOW` ([`walk_beneath`]). A file is resolved with `O_PATH`,
//! which opens nothing, its type checked on that descriptor, and only a regular file or a
//! directory is then opened, through that descriptor ([`reopen_checked`]): a device's driver is
//! never run, a FIFO never waited on. Reads stop at the size that check found
//! ([`read_to_size`]).

use rustix::fs::{fstat, openat, openat2, readlinkat, statat, AtFlags, FileType, Mode, OFlags};
use rustix::fs::{ResolveFlags, Stat};
use rustix::io::Errno;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

/// Links one resolution may follow, as the kernel allows.
const MAX_LINKS: usize = 40;
/// Times a resolution is retried when a rename raced it (`openat2` says EAGAIN).
const MAX_RETRIES: usize = 16;

/// Set once `openat2` is found missing: every later open walks.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// Flags every open of a store file carries: never a controlling terminal, never a wait on a
/// FIFO's writer, never inherited by a child. (`O_PATH` opens nothing, and `openat2` refuses
/// other flags with it.)
fn base_flags(flags: OFlags) -> OFlags {
    if flags.contains(OFlags::PATH) {
        flags | OFlags::CLOEXEC
    } else {
        flags | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK
    }
}

/// Opens `path` (relative, `/`-separated; `""` is `root` itself) beneath the directory `root`
/// with `flags`. A link is followed while it stays beneath `root`; a link with an absolute
/// target, or one whose resolution climbs above `root`, fails with `EXDEV`.
pub fn open_beneath(root: BorrowedFd<'_>, path: &str, flags: OFlags) -> std::io::Result<OwnedFd> {
    let flags = base_flags(flags);
    let path = if path.is_empty() { "." } else { path };
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        if let Some(opened) = try_openat2(root, path, flags) {
            return opened;
        }
    }
    walk_beneath(root, path, flags)
}

/// `openat2` beneath `root`, or `None` when the kernel refuses the call itself.
fn try_openat2(
    root: BorrowedFd<'_>,
    path: &str,
    flags: OFlags,
) -> Option<std::io::Result<OwnedFd>> {
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    for _ in 0..MAX_RETRIES {
        match openat2(root, path, flags, Mode::empty(), resolve) {
            // A rename elsewhere raced the resolution: the kernel asks to try again.
            Err(Errno::AGAIN) => continue,
            Err(Errno::NOSYS) => {
                NO_OPENAT2.store(true, Ordering::Relaxed);
                log::info!("openat2 is missing: store paths are resolved one link at a time");
                return None;
            }
            // A seccomp filter refusing the call: walk this time.
            Err(Errno::PERM) => return None,
            r => return Some(r.map_err(Into::into)),
        }
    }
    Some(Err(Errno::AGAIN.into()))
}

/// [`open_beneath`] without `openat2`: each component is opened with `O_NOFOLLOW` relative to
/// the directory before it, `..` is taken from the walk's own stack (never from the file
/// system), and a link's target is read and resolved the same way, relative targets only.
pub fn walk_beneath(root: BorrowedFd<'_>, path: &str, flags: OFlags) -> std::io::Result<OwnedFd> {
    let flags = base_flags(flags);
    let mut todo: Vec<String> = components(path).rev().map(str::to_string).collect();
    let mut dirs: Vec<OwnedFd> = Vec::new();
    let mut links = 0;
    while let Some(name) = todo.pop() {
        let here = dirs.last().map_or(root, |d| d.as_fd());
        if name == ".." {
            dirs.pop().ok_or(Errno::XDEV)?;
            continue;
        }
        let last = todo.is_empty();
        let step = if last {
            flags | OFlags::NOFOLLOW
        } else {
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
        };
        let opened = openat(here, name.as_str(), step, Mode::empty());
        let is_link = match &opened {
            // O_PATH with O_NOFOLLOW opens the link itself.
            Ok(fd) => FileType::from_raw_mode(fstat(fd)?.st_mode) == FileType::Symlink,
            Err(Errno::LOOP | Errno::NOTDIR) => {
                statat(here, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Symlink)
            }
            Err(_) => false,
        };
        if is_link {
            links += 1;
            if links > MAX_LINKS {
                return Err(Errno::LOOP.into());
            }
            let target = readlinkat(here, name.as_str(), Vec::new())?;
            let target = target.to_str().map_err(|_| Errno::NOENT)?;
            if target.starts_with('/') {
                return Err(Errno::XDEV.into());
            }
            todo.extend(components(target).rev().map(str::to_string));
            continue;
        }
        let fd = opened?;
        if last {
            return Ok(fd);
        }
        dirs.push(fd);
    }
    // The path names a directory: the last one reached.
    let here = dirs.last().map_or(root, |d| d.as_fd());
    Ok(openat(here, ".", flags, Mode::empty())?)
}

/// The components of a relative path, without empty ones and `.`.
fn components(path: &str) -> impl DoubleEndedIterator<Item = &str> {
    path.split('/').filter(|c| !c.is_empty() && *c != ".")
}

/// What an open descriptor is, when it is not a regular file or a directory.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}, not a regular file: refused")]
pub struct NotRegular(pub &'static str);

/// What kind of file `stat` describes.
pub fn kind(stat: &Stat) -> FileType {
    FileType::from_raw_mode(stat.st_mode)
}

/// Refuses anything but a regular file or a directory, naming what it is.
pub fn check_type(stat: &Stat) -> Result<(), NotRegular> {
    match kind(stat) {
        FileType::RegularFile | FileType::Directory => Ok(()),
        FileType::Fifo => Err(NotRegular("a FIFO")),
        FileType::Socket => Err(NotRegular("a socket")),
        FileType::CharacterDevice => Err(NotRegular("a character device")),
        FileType::BlockDevice => Err(NotRegular("a block device")),
        _ => Err(NotRegular("an unknown kind of file")),
    }
}

/// An opened file of a store and what `fstat` said of it then.
pub struct Opened {
    /// The file (or directory).
    pub file: File,
    /// Its status, taken on the descriptor.
    pub stat: Stat,
}

impl Opened {
    /// True for a directory.
    pub fn is_dir(&self) -> bool {
        kind(&self.stat) == FileType::Directory
    }

    /// Size in bytes when opened.
    pub fn size(&self) -> u64 {
        self.stat.st_size.max(0) as u64
    }

    /// Last modification time.
    pub fn mtime(&self) -> Option<SystemTime> {
        mtime(&self.stat)
    }
}

/// Opens for reading the file `fd` (an `O_PATH` descriptor) names, once its type is checked on
/// `fd`: a regular file or a directory, else [`NotRegular`] (as an `InvalidData` error) and the
/// file is not opened (opening a device runs its driver: a tape rewinds, a watchdog arms). The
/// file is reopened through `/proc/self/fd`, which names the very file `fd` resolved: no path is
/// resolved again, so nothing can be swapped in between.
pub fn reopen_checked(fd: OwnedFd) -> std::io::Result<Opened> {
    let stat = fstat(&fd)?;
    check_type(&stat).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    let mut flags = base_flags(OFlags::RDONLY);
    if kind(&stat) == FileType::Directory {
        flags |= OFlags::DIRECTORY;
    }
    let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
    let file = rustix::fs::open(path.as_str(), flags, Mode::empty()).map_err(|e| {
        std::io::Error::new(
            std::io::Error::from(e).kind(),
            format!("reopening {path} (is /proc mounted?): {e}"),
        )
    })?;
    Ok(Opened {
        file: File::from(file),
        stat,
    })
}

/// Opens the local file or directory `path` (named by the user, links followed), regular files
/// and directories only, checked before they are opened ([`reopen_checked`]).
pub fn open_path(path: &Path) -> std::io::Result<Opened> {
    reopen_checked(rustix::fs::open(
        path,
        base_flags(OFlags::PATH),
        Mode::empty(),
    )?)
}

/// Reads the whole of `opened` as its size said when opened: never more, however the file
/// grows meanwhile; a file that shrank gives fewer bytes.
pub fn read_to_size(opened: &Opened) -> std::io::Result<Vec<u8>> {
    let size = opened.size();
    let mut bytes = Vec::with_capacity(size as usize);
    (&opened.file).take(size).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The modification time in `stat`.
pub fn mtime(stat: &Stat) -> Option<SystemTime> {
    let secs = u64::try_from(stat.st_mtime).ok()?;
    let nanos = u32::try_from(stat.st_mtime_nsec).unwrap_or(0);
    SystemTime::UNIX_EPOCH.checked_add(Duration::new(secs, nanos))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    type Open = fn(BorrowedFd<'_>, &str, OFlags) -> std::io::Result<OwnedFd>;

    fn read(open: Open, root: &File, path: &str) -> Result<String, Errno> {
        let fd = open(root.as_fd(), path, OFlags::RDONLY)
            .map_err(|e| Errno::from_io_error(&e).unwrap())?;
        let mut s = String::new();
        File::from(fd).read_to_string(&mut s).unwrap();
        Ok(s)
    }

    /// openat2 and the walk give the same answers.
    #[test]
    fn links_are_followed_only_beneath_the_root() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        std::fs::create_dir_all(store.join("a/b")).unwrap();
        std::fs::write(store.join("a/b/x"), "x").unwrap();
        std::fs::write(dir.path().join("sibling"), "sib").unwrap();
        symlink("b", store.join("a/lb")).unwrap();
        symlink("../a/b/x", store.join("a/lx")).unwrap();
        symlink("lb/../lb/x", store.join("a/chain")).unwrap();
        symlink("..", store.join("up")).unwrap();
        symlink("../sibling", store.join("sib")).unwrap();
        symlink(outside.path(), store.join("out")).unwrap();
        symlink(store.join("a/b/x"), store.join("abs")).unwrap();
        symlink("loop", store.join("loop")).unwrap();
        let root = File::open(&store).unwrap();
        for open in [open_beneath as Open, walk_beneath as Open] {
            assert_eq!(read(open, &root, "a/b/x"), Ok("x".into()));
            assert_eq!(read(open, &root, "a/lb/x"), Ok("x".into()));
            assert_eq!(read(open, &root, "a/lx"), Ok("x".into()));
            assert_eq!(read(open, &root, "a/chain"), Ok("x".into()));
            assert_eq!(read(open, &root, "a/b/../b/x"), Ok("x".into()));
            assert_eq!(read(open, &root, "up/store/a/b/x"), Err(Errno::XDEV));
            assert_eq!(read(open, &root, "sib"), Err(Errno::XDEV));
            assert_eq!(read(open, &root, "../sibling"), Err(Errno::XDEV));
            assert_eq!(read(open, &root, "out/secret"), Err(Errno::XDEV));
            assert_eq!(read(open, &root, "abs"), Err(Errno::XDEV));
            assert_eq!(read(open, &root, "loop"), Err(Errno::LOOP));
            assert_eq!(read(open, &root, "a/nothing"), Err(Errno::NOENT));
            assert!(open(root.as_fd(), "a", OFlags::RDONLY | OFlags::DIRECTORY).is_ok());
            assert!(open(root.as_fd(), "", OFlags::RDONLY | OFlags::DIRECTORY).is_ok());
        }
    }

    #[test]
    fn special_files_are_refused_on_the_descriptor_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let root = File::open(dir.path()).unwrap();
        for open in [open_beneath as Open, walk_beneath as Open] {
            let e = reopen_checked(open(root.as_fd(), "fifo", OFlags::PATH).unwrap())
                .err()
                .unwrap();
            assert_eq!(e.to_string(), "a FIFO, not a regular file: refused");
        }
        assert_eq!(
            open_path(Path::new("/dev/zero")).err().unwrap().to_string(),
            "a character device, not a regular file: refused"
        );
    }

    #[test]
    fn a_device_is_refused_before_its_driver_is_opened() {
        // Device 0:0 has no driver: opening it fails (ENXIO) before any type check could run.
        let dir = tempfile::tempdir().unwrap();
        let node = dir.path().join("dev");
        let (device, mode) = (FileType::CharacterDevice, Mode::from_raw_mode(0o644));
        if let Err(e) = rustix::fs::mknodat(rustix::fs::CWD, &node, device, mode, 0) {
            return eprintln!("skipped: mknod needs CAP_MKNOD ({e})");
        }
        let root = File::open(dir.path()).unwrap();
        let refused = "a character device, not a regular file: refused";
        for open in [open_beneath as Open, walk_beneath as Open] {
            let fd = open(root.as_fd(), "dev", OFlags::PATH).unwrap();
            assert_eq!(reopen_checked(fd).err().unwrap().to_string(), refused);
        }
        assert_eq!(open_path(&node).err().unwrap().to_string(), refused);
        // Files and directories reopen for reading.
        std::fs::write(dir.path().join("f"), "x").unwrap();
        let f = reopen_checked(open_beneath(root.as_fd(), "f", OFlags::PATH).unwrap()).unwrap();
        assert_eq!(read_to_size(&f).unwrap(), b"x");
        let d = reopen_checked(open_beneath(root.as_fd(), "", OFlags::PATH).unwrap()).unwrap();
        assert!(d.is_dir());
        assert!(rustix::fs::Dir::read_from(&d.file).is_ok());
    }

    #[test]
    fn a_read_stops_at_the_size_found_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "0123").unwrap();
        let opened = open_path(&path).unwrap();
        std::fs::write(&path, "0123456789").unwrap();
        assert_eq!(read_to_size(&opened).unwrap(), b"0123");
    }
}
