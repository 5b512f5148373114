//! A node's JSON sidecar (`A.json`, `.group.json`), and copying a read's range out of bytes
//! made whole.

use super::{Measure, ReadAt, Reply, ServedFile};
use crate::view::{View, ViewError};

/// The JSON sidecar of node N in the view's `ZomFiles`: its document pretty-printed, made when
/// read (its size is known without making it).
pub(in crate::view) struct JsonFile(pub u32);

impl ServedFile for JsonFile {
    fn size(&self, view: &View, _dir: u64, _: Measure) -> Result<Option<u64>, ViewError> {
        Ok(Some(view.zoms.document(self.0).pretty_len()))
    }

    fn read(&self, view: &View, _dir: u64, read: ReadAt, reply: Reply) -> Result<(), ViewError> {
        extend_range(&view.zoms.json(self.0), read, reply.out);
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
