//! `.ncstream`: the subtree of the group shown by the file's directory as an ncstream (see
//! `netcdf`). A stream holding strings is measured on first use.

use super::{ReadAt, Reply, ServedFile};
use crate::view::{View, ViewError};

/// The ncstream of its directory's group.
pub(in crate::view) struct NcStreamFile;

impl ServedFile for NcStreamFile {
    fn size(&self, view: &View, dir: u64, measure: bool) -> Option<u64> {
        // 0 when it cannot be measured; reading it then fails.
        view.netcdf_files(measure)?.stream_size(view, dir, measure)
    }

    fn read(&self, view: &View, dir: u64, read: ReadAt, reply: Reply) -> Result<(), ViewError> {
        match view.netcdf_files(true) {
            Some(files) => files.read_stream(view, dir, read.offset, read.len, reply.out),
            None => Ok(()),
        }
    }
}
