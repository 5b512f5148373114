//! Bytes made once: a JSON sidecar (`A.json`, `.group.json`), a selection's `.json`.

use super::{Measure, ReadAt, Reply, ServedFile};
use crate::view::{View, ViewError};
use std::sync::Arc;

/// Bytes made once: a JSON sidecar, a selection's `.json`.
pub(in crate::view) struct BytesFile(pub Arc<[u8]>);

impl ServedFile for BytesFile {
    fn size(&self, _view: &View, _dir: u64, _: Measure) -> Result<Option<u64>, ViewError> {
        Ok(Some(self.0.len() as u64))
    }

    fn read(&self, _view: &View, _dir: u64, read: ReadAt, reply: Reply) -> Result<(), ViewError> {
        extend_range(&self.0, read, reply.out);
        Ok(())
    }
}

/// Appends the bytes of `bytes` that `read` covers to `out`.
pub(in crate::view) fn extend_range(bytes: &[u8], read: ReadAt, out: &mut Vec<u8>) {
    let end = read.offset.saturating_add(read.len);
    out.extend_from_slice(overlap(bytes, 0, read.offset, end));
}

/// The part of `bytes`, standing at byte `at` of a file, that lies in bytes `from..to` of it.
pub(in crate::view) fn overlap(bytes: &[u8], at: u64, from: u64, to: u64) -> &[u8] {
    let inside = |x: u64| x.saturating_sub(at).min(bytes.len() as u64) as usize;
    let end = inside(to);
    &bytes[inside(from).min(end)..end]
}
