//! An array as a NumPy file (`A.npy`): a header, then the data file's bytes.

use super::data::open_array;
use super::{ReadAt, ServedFile};
use crate::view::{SendBytes, View, ViewError};

/// The NPY file of array number N of the view.
pub(in crate::view) struct NpyFile(pub u32);

impl ServedFile for NpyFile {
    fn size(&self, view: &View, _dir: u64, _measure: bool) -> Option<u64> {
        Some(view.arrays[self.0 as usize].npy_size())
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
        _send: SendBytes,
    ) -> Result<(), ViewError> {
        let array = &view.arrays[self.0 as usize];
        let data_offset = read.offset.saturating_sub(array.header_len());
        let into_reply = view.track_read(read.fh, array, data_offset, read.len);
        array.read_npy(&view.cache, read.offset, read.len, into_reply, out)
    }

    fn passthrough(&self, view: &View) -> Option<std::fs::File> {
        view.arrays[self.0 as usize].npy_backing()
    }
}
