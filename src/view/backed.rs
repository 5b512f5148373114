//! Arrays served from, and written into, backing files (see [`crate::backing`]).

use super::ViewError;
use crate::backing::{BackingDir, BackingFile, Held, Identity};
use crate::fetch::ChunkReader;
use crate::meta::Document;
use crate::store::Store;
use std::sync::{Arc, OnceLock};

/// The cache directory of a view and what identifies its arrays.
pub(super) struct Backing {
    pub dir: Arc<BackingDir>,
    pub store: Arc<dyn Store>,
    pub location: String,
}

/// What an array's backing files are valid for, computed at first use.
#[derive(Default)]
pub(super) struct ArrayIdentity(OnceLock<Option<Identity>>);

impl ArrayIdentity {
    /// The identity of the array at `path` (`label` in logs; `metadata` its document, `reader`
    /// its chunk reader): one listing of its chunks, at the first call, which the reader is
    /// told of (a chunk listed but then answered as absent is a fault, never the fill value
    /// written into a backing file); `None` when the store could not be listed, or when a
    /// chunk was read before (by a slice or a preview read before the array's first open: it
    /// may be older than the listing and in the chunk cache, so the array is not cached on
    /// disk in this mount).
    pub fn get(
        &self,
        backing: &Backing,
        (path, label): (&str, &str),
        metadata: &Document,
        reader: &ChunkReader,
    ) -> Option<&Identity> {
        self.0
            .get_or_init(|| {
                let chunks = reader.meta().chunk_keys.prefix.trim_end_matches('/');
                let store = backing.store.as_ref();
                // The document as its `.json` sidecar shows it.
                let metadata = metadata.pretty();
                match Identity::of(store, &backing.location, (path, chunks), &metadata) {
                    Ok((id, listed)) => {
                        if reader.expect_listed(listed) {
                            log::info!("{label}: chunks were read before it was listed, and may be older than the listing; not cached on disk in this mount");
                            return None;
                        }
                        Some(id)
                    }
                    Err(e) => {
                        log::warn!("{label}: cannot list its chunks: {e}; served uncached");
                        None
                    }
                }
            })
            .as_ref()
    }
}

/// One file's link to its backing file (made at the first attach: most files never have one).
#[derive(Default)]
pub(super) struct ArrayBacking {
    file: OnceLock<Arc<Held>>,
}

impl ArrayBacking {
    /// The backing file, when attached.
    pub fn get(&self) -> Option<Arc<BackingFile>> {
        self.file.get()?.lock().clone()
    }

    /// Attaches the backing file with identity `id` (of the file `label`) unless attached
    /// already (at every call until it is: another mount may have finished writing it
    /// meanwhile), or again when the attached one was evicted by another mount since (this
    /// mount's evictions let go of it at once: see [`BackingDir::hold`]); one attached already
    /// is marked as opened now (see [`BackingFile::touch`]). `size` is the file's size; `None`
    /// when not known yet: then only a complete backing file is attached, of the size it has.
    pub fn attach(&self, backing: &Backing, id: &Identity, label: &str, size: Option<u64>) {
        let held = self.file.get_or_init(Arc::default);
        let mut slot = held.lock();
        if let Some(file) = slot.as_ref().filter(|f| !f.removed()) {
            file.touch();
        } else {
            // The file let go first: a writer's lock is released before the new attach takes it.
            drop(slot.take());
            *slot = match size {
                Some(size) => backing.dir.attach(id, size, label),
                None => backing.dir.attach_complete(id, label),
            }
            .map(Arc::new);
            if slot.is_some() {
                backing.dir.hold(id, held);
            }
        }
    }
}

/// Appends bytes `offset..end` of a file to `out`: copied from `file` where it holds them, else
/// made by `produce(from, to, out)` (decoded) and then written into `file`. What is made is
/// widened to whole blocks of the backing file, so that every block a reader reads gets
/// written whole at once and counts as present, however the reads fall (`A.npy` reads are
/// offset by the header; views read `A` anywhere); the bytes asked for are copied out of it.
/// Where the wider bytes cannot be made, those asked for are.
pub(super) fn read_through(
    file: &BackingFile,
    label: &str,
    (offset, end): (u64, u64),
    out: &mut Vec<u8>,
    mut produce: impl FnMut(u64, u64, &mut Vec<u8>) -> Result<(), ViewError>,
) -> Result<(), ViewError> {
    for (from, to, present) in file.runs(offset, end) {
        if present && file.read_into(from, to, out).is_ok() {
            log::debug!("{label}: {} bytes from the backing file", to - from);
            continue;
        }
        let at = out.len();
        let (wide_from, wide_to) = file.whole_blocks(from, to);
        if (wide_from, wide_to) != (from, to) {
            if produce(wide_from, wide_to, out).is_ok()
                && out.len() - at == (wide_to - wide_from) as usize
            {
                file.store(wide_from, &out[at..]);
                out.truncate(at + (to - wide_from) as usize);
                out.drain(at..at + (from - wide_from) as usize);
                continue;
            }
            out.truncate(at);
        }
        produce(from, to, out)?;
        file.store(from, &out[at..]);
    }
    Ok(())
}
