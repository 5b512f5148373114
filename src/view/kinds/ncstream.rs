//! `.ncstream`: the subtree of the group shown by the file's directory as an ncstream (see
//! `netcdf`). A stream holding strings is measured on first use.

use super::{ReadAt, Reply, ServedFile};
use crate::view::{View, ViewError};

/// The ncstream of its directory's group.
pub(in crate::view) struct NcStreamFile;

impl ServedFile for NcStreamFile {
    fn size(&self, view: &View, dir: u64, measure: bool) -> Option<u64> {
        // 0 when it cannot be measured; reading it then fails.
        let stream = view.netcdf_files(measure)?.stream(dir);
        Some(stream.and_then(|s| s.size(view).ok()).unwrap_or(0))
    }

    fn read(&self, view: &View, dir: u64, read: ReadAt, reply: Reply) -> Result<(), ViewError> {
        let stream = view.netcdf_files(true).and_then(|f| f.stream(dir));
        stream.map_or(Ok(()), |s| s.read(view, read.offset, read.len, reply.out))
    }
}
