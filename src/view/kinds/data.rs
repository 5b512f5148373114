//! An array's elements in C order (`A`).

use super::{ReadAt, ServedFile};
use crate::view::{SendBytes, View, ViewError};
use std::sync::atomic::Ordering;

/// The data file of array number N of the view.
pub(in crate::view) struct DataFile(pub u32);

impl ServedFile for DataFile {
    fn size(&self, view: &View, _dir: u64, _measure: bool) -> Option<u64> {
        Some(view.arrays[self.0 as usize].data_size())
    }

    fn open(&self, view: &View, page_cached: bool) -> Result<u64, ViewError> {
        open_array(view, self.0, page_cached)
    }

    fn read(
        &self,
        view: &View,
        _dir: u64,
        read: ReadAt,
        out: &mut Vec<u8>,
        send: SendBytes,
    ) -> Result<(), ViewError> {
        let array = &view.arrays[self.0 as usize];
        let into_reply = view.track_read(read.fh, array, read.offset, read.len);
        array.answer_data(
            &view.cache,
            read.offset,
            read.len,
            into_reply,
            out,
            Some(send),
        )
    }

    fn passthrough(&self, view: &View) -> Option<std::fs::File> {
        let backing = view.arrays[self.0 as usize].complete_backing()?;
        backing.passthrough()?.try_clone().ok()
    }
}

/// Opens array number `a`'s data or NPY file: a handle that its reads are tracked by (for
/// reading ahead); an array that cannot be read fails here with EIO.
pub(super) fn open_array(view: &View, a: u32, page_cached: bool) -> Result<u64, ViewError> {
    view.ready_memory();
    let array = &view.arrays[a as usize];
    array.check_readable()?;
    if let Some(backing) = &view.backing {
        array.attach_backing(backing);
    }
    let fh = view.next_handle.fetch_add(1, Ordering::Relaxed) + 1;
    let state = view.policy.reader(page_cached);
    view.handles.lock().insert(fh, state);
    Ok(fh)
}
