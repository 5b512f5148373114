//! An array's elements in C order (`A`), and the same as a NumPy file (`A.npy`): a header,
//! then the data file's bytes.

use super::{Measure, ReadAt, Reply, ServedFile};
use crate::view::npy::read_after_header;
use crate::view::{View, ViewError};
use parking_lot::Mutex;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The data file (`npy` false) or NPY file of array number `array` of the view.
pub(in crate::view) struct ArrayPart {
    pub array: u32,
    pub npy: bool,
}

impl ServedFile for ArrayPart {
    fn size(&self, view: &View, _dir: u64, _: Measure) -> Result<Option<u64>, ViewError> {
        let array = &view.arrays[self.array as usize];
        Ok(Some(match self.npy {
            true => array.npy_size(),
            false => array.data_size(),
        }))
    }

    /// A handle that its reads are tracked by (for reading ahead); an array that cannot be
    /// read fails here with EIO.
    fn open(&self, view: &View, page_cached: bool) -> Result<u64, ViewError> {
        let array = &view.arrays[self.array as usize];
        array.check_readable()?;
        if let Some(backing) = &view.backing {
            array.attach_backing(backing);
        }
        let fh = view.next_handle.fetch_add(1, Ordering::Relaxed) + 1;
        let state = view.policy.reader(page_cached);
        view.handles.lock().insert(fh, Arc::new(Mutex::new(state)));
        Ok(fh)
    }

    fn read(&self, view: &View, _: u64, read: ReadAt, mut reply: Reply) -> Result<(), ViewError> {
        let array = &view.arrays[self.array as usize];
        let (offset, len) = (read.offset, read.len);
        let header = if self.npy { array.header_len() } else { 0 };
        // Only the data part of a read is tracked: a read of the header alone reads no data.
        let data_len = offset
            .saturating_add(len)
            .saturating_sub(offset.max(header));
        if data_len > 0 {
            let at = offset.saturating_sub(header);
            reply.into_reply = view.track_read(read.fh, array, at, data_len);
        }
        let read_data = |at, n, reply: Reply| array.read_data(&view.cache, read.fh, at, n, reply);
        if !self.npy {
            return read_data(offset, len, reply);
        }
        // Never answered early.
        array.check_readable()?;
        let reply = Reply::new(reply.out, reply.into_reply);
        read_after_header(&array.header(), offset, len, reply, read_data)
    }

    fn passthrough(&self, view: &View) -> Option<std::fs::File> {
        let array = &view.arrays[self.array as usize];
        if self.npy {
            return array.npy_backing();
        }
        array.complete_backing()?.passthrough()?.try_clone().ok()
    }
}
