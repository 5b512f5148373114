//! The descriptors of backing files this process keeps open, a bounded number of them: the
//! least recently used is closed when another is needed, and opened again by path when used
//! again (and only if the path still names the same file), so a mount serving any number of
//! arrays never runs out of descriptors.

use super::owned::open_owned;
use parking_lot::Mutex;
use std::fs::{File, Metadata};
use std::io;
use std::num::NonZeroUsize;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

/// The descriptors kept open, by [`Reopen::id`].
pub(super) struct OpenFiles {
    open: Mutex<lru::LruCache<u64, Arc<File>>>,
    next: AtomicU64,
}

/// How to open a registered file again: the paths it may be linked at (in order), and which
/// file it is.
pub(super) struct Reopen {
    id: u64,
    paths: Vec<PathBuf>,
    write: bool,
    which: Which,
}

/// Which file: its device, inode and (where the file system tells it) creation time, which
/// tells a file from a later one given the inode number of a removed one.
#[derive(PartialEq, Eq)]
pub(super) struct Which(u64, u64, Option<SystemTime>);

impl Which {
    /// The file `meta` describes.
    pub(super) fn of(meta: &Metadata) -> Self {
        Which(meta.dev(), meta.ino(), meta.created().ok())
    }
}

impl Reopen {
    /// Whether `path` names this file (one `stat`; false when it cannot be told).
    pub fn linked_at(&self, path: &std::path::Path) -> bool {
        std::fs::symlink_metadata(path).is_ok_and(|m| Which::of(&m) == self.which)
    }
}

impl OpenFiles {
    /// At most `cap` descriptors open.
    pub fn new(cap: usize) -> Self {
        OpenFiles {
            open: Mutex::new(lru::LruCache::new(
                NonZeroUsize::new(cap).unwrap_or(NonZeroUsize::MIN),
            )),
            next: AtomicU64::new(0),
        }
    }

    /// Keeps `file` (open for writing too when `write`), which is linked at the first of
    /// `paths`; after its descriptor is closed, it is opened again at whichever of `paths`
    /// names it then (it may be renamed from one to the next).
    pub fn register(&self, file: File, paths: Vec<PathBuf>, write: bool) -> io::Result<Reopen> {
        let reopen = Reopen {
            id: self.next.fetch_add(1, Ordering::Relaxed),
            paths,
            write,
            which: Which::of(&file.metadata()?),
        };
        self.keep(reopen.id, Arc::new(file));
        Ok(reopen)
    }

    /// The open file `r` stands for, opened again when its descriptor was closed;
    /// `NotFound` when none of its paths names it any more (removed or replaced).
    pub fn get(&self, r: &Reopen) -> io::Result<Arc<File>> {
        if let Some(file) = self.open.lock().get(&r.id) {
            return Ok(file.clone());
        }
        for path in &r.paths {
            let Some(file) = open_owned(path, r.write)? else {
                continue;
            };
            if Which::of(&file.metadata()?) == r.which {
                let file = Arc::new(file);
                self.keep(r.id, file.clone());
                return Ok(file);
            }
        }
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            "the backing file was removed or replaced",
        ))
    }

    /// Closes the descriptor of `r` (once no reader holds it): it is not used any more.
    pub fn forget(&self, r: &Reopen) {
        let gone = self.open.lock().pop(&r.id);
        drop(gone);
    }

    fn keep(&self, id: u64, file: Arc<File>) {
        // The descriptor pushed out is closed outside the lock.
        let out = self.open.lock().push(id, file);
        drop(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_descriptor_is_opened_again_only_on_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("c"),
        );
        std::fs::write(&a, b"first").unwrap();
        std::fs::write(&c, b"other").unwrap();
        let files = OpenFiles::new(1);
        let one = files
            .register(File::open(&a).unwrap(), vec![a.clone(), b.clone()], false)
            .unwrap();
        let other = files
            .register(File::open(&c).unwrap(), vec![c], false)
            .unwrap();
        // `one` was closed to make room; renamed meanwhile, it is found at its next path.
        std::fs::rename(&a, &b).unwrap();
        let read = |f: Arc<File>| std::io::read_to_string(&*f).unwrap();
        assert_eq!(read(files.get(&one).unwrap()), "first");
        assert_eq!(files.open.lock().len(), 1);
        assert_eq!(read(files.get(&other).unwrap()), "other");
        // Replaced by another file: not opened.
        let _old = File::open(&b).unwrap();
        std::fs::remove_file(&b).unwrap();
        std::fs::write(&b, b"first").unwrap();
        let e = files.get(&one).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
