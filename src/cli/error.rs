//! What the command line refuses and why: an option value, the store, the mount point, the
//! mount, an unmount. Each message is the one line `zarrfs:` prints.

use super::unmount::Refusal;
use crate::meta::MetaError;
use crate::store::StoreError;
use std::path::PathBuf;

/// An option value or `-o` list the command line refuses.
#[derive(Debug, thiserror::Error)]
pub enum OptionError {
    #[error("invalid size {0:?} (examples: 512M, 2G, 1048576)")]
    Size(String),
    #[error("invalid size unit in {0:?} (use K, M, G or T)")]
    SizeUnit(String),
    #[error("size {0:?} is out of range")]
    SizeOutOfRange(String),
    #[error(
        "{0:?} is less than one page, which turns readahead off; use at least 4K \
         (128K suits random access, 1M or more sequential reads)"
    )]
    ReadAheadBelowPage(String),
    #[error(
        "a cache of {0:?} holds no chunk, so no array could be read; give it room for the \
         chunks being read (the default is 1G)"
    )]
    NoCache(String),
    #[error("a mount needs at least one thread")]
    NoThreads,
    #[error("{0:?} is not a number of threads")]
    Threads(String),
    #[error("option {0:?}: max_read takes a number of bytes, such as 1048576")]
    MaxRead(String),
    #[error("option {0:?}: a subtype cannot hold a comma (the kernel splits options at commas)")]
    SubtypeComma(String),
    #[error(
        "unknown option {option:?}: not a zarrfs option (see zarrfs --help; write \
         --cache-size 2G as -o cache_size=2G) nor a mount option zarrfs knows ({known})"
    )]
    UnknownMountOption { option: String, known: &'static str },
    #[error("option {item:?} needs a value: write -o {name}={value_name}")]
    ValueMissing {
        item: String,
        name: String,
        value_name: String,
    },
    #[error("option {item:?}: {name} is a switch and takes no value: write -o {name}")]
    SwitchWithValue { item: String, name: String },
    #[error(
        "option auto_unmount needs allow_other or allow_root beside it (zarrfs's FUSE library \
         has fusermount3 unmount only a mount opened to others)"
    )]
    AutoUnmountAlone,
    #[error("option {item:?} cannot be given in a -o list: {why}")]
    NotInList { item: String, why: &'static str },
    /// mount.fuse3's `drop_privileges` mounts itself and passes the connection as `/dev/fd/N`.
    #[error(
        "mount point {}: a FUSE connection handed over by mount.fuse3 (its option \
         drop_privileges), which zarrfs does not take; the mount mount.fuse3 made is left without \
         a daemon: umount it, then mount without drop_privileges",
        .0.display()
    )]
    HandedOver(PathBuf),
}

/// Why nothing was mounted.
#[derive(Debug, thiserror::Error)]
pub enum MountError {
    #[error(transparent)]
    Option(#[from] OptionError),
    #[error("cannot open store {store}: {cause}")]
    Store { store: String, cause: StoreError },
    /// A local store's path could not be made absolute.
    #[error("cannot open store {store}: {cause}")]
    StorePath {
        store: String,
        cause: std::io::Error,
    },
    #[error(transparent)]
    Hierarchy(#[from] MetaError),
    /// A relative path option could not be made absolute (the working directory is gone).
    #[error("--{option} {}: {cause}", .path.display())]
    Relative {
        option: &'static str,
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("mount point {}: {cause}", .path.display())]
    MountPoint {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("mount point {} is not a directory", .0.display())]
    NotADirectory(PathBuf),
    #[error(
        "{shown}: Transport endpoint is not connected: a zarrfs mount whose daemon died is \
         still there; clean it with `zarrfs unmount {shown}`, then mount again",
        shown = .0.display()
    )]
    DeadZarrfsMount(PathBuf),
    #[error(
        "{shown}: Transport endpoint is not connected: a FUSE mount whose daemon died is \
         still there; clean it with `fusermount3 -u {shown}` (or `umount {shown}` as root)",
        shown = .0.display()
    )]
    DeadFuseMount(PathBuf),
    #[error(
        "{shown}: already mounted by zarrfs; unmount it first: zarrfs unmount {shown}",
        shown = .0.display()
    )]
    AlreadyMounted(PathBuf),
    #[error("cache dir {}: {cause}", .dir.display())]
    CacheDir { dir: PathBuf, cause: std::io::Error },
    /// The kernel refused the mount (explained by `mount_error::explain`).
    #[error("{}", super::mount_error::explain(.cause, .mountpoint))]
    Refused {
        mountpoint: PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot start the session thread: {0}")]
    SessionThread(std::io::Error),
    #[error("{} did not appear in the mount table within {waited:?}", .path.display())]
    NeverMounted {
        path: PathBuf,
        waited: std::time::Duration,
    },
}

impl MountError {
    /// The exit status: 2 for a refused option (as clap's usage errors), 1 for a failed mount.
    pub fn exit_status(&self) -> i32 {
        match self {
            MountError::Option(_) => 2,
            _ => 1,
        }
    }
}

/// Why the directory of pid files (and of log files without syslog) is not used: it must be the
/// user's own, as files there are written and trusted.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeDirError {
    #[error("{}: {cause}", .dir.display())]
    Io { dir: PathBuf, cause: std::io::Error },
    #[error("{}: not a directory (a symbolic link?); zarrfs does not use it", .0.display())]
    NotADirectory(PathBuf),
    #[error(
        "{}: owned by uid {owner}, not by this user (uid {uid}); zarrfs does not use it",
        .dir.display()
    )]
    NotOwned { dir: PathBuf, owner: u32, uid: u32 },
    #[error("{}: other users may write into it (mode {mode:o}); zarrfs does not use it", .dir.display())]
    Writable { dir: PathBuf, mode: u32 },
}

/// Why `zarrfs unmount` did not unmount.
#[derive(Debug, thiserror::Error)]
pub enum UnmountError {
    #[error("{}: {cause}", .path.display())]
    Resolve {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{}: not a mount point", .0.display())]
    NotMounted(PathBuf),
    #[error(
        "{}: not a zarrfs mount (its type is {fstype}); zarrfs unmounts only its own mounts",
        .path.display()
    )]
    NotZarrfs { path: PathBuf, fstype: String },
    #[error(
        "{shown}: busy (a process has a file open or its working directory in it); \
         try again once it has left, or detach it lazily with `umount -l {shown}`",
        shown = .0.display()
    )]
    Busy(PathBuf),
    #[error("{}: {cause}", .path.display())]
    Failed { path: PathBuf, cause: Refusal },
}
