//! Bytes made once: a JSON sidecar (`A.json`, `.group.json`), a selection's `.json`.

use super::{ReadAt, Reply, ServedFile};
use crate::view::{View, ViewError};
use std::sync::Arc;

/// Bytes made once: a JSON sidecar, a selection's `.json`.
pub(in crate::view) struct BytesFile(pub Arc<[u8]>);

impl ServedFile for BytesFile {
    fn size(&self, _view: &View, _dir: u64, _measure: bool) -> Option<u64> {
        Some(self.0.len() as u64)
    }

    fn read(&self, _view: &View, _dir: u64, read: ReadAt, reply: Reply) -> Result<(), ViewError> {
        extend_range(&self.0, read, reply.out);
        Ok(())
    }
}

/// Appends the bytes of `bytes` that `read` covers to `out`.
pub(in crate::view) fn extend_range(bytes: &[u8], read: ReadAt, out: &mut Vec<u8>) {
    let size = bytes.len() as u64;
    let start = read.offset.min(size) as usize;
    let end = read.offset.saturating_add(read.len).min(size) as usize;
    out.extend_from_slice(&bytes[start..end]);
}
