//! `.ncstream`: the subtree of the group shown by the file's directory as an ncstream (see
//! `netcdf`). A stream holding strings is measured on first use.

use super::{Measure, ReadAt, Reply, ServedFile};
use crate::view::{View, ViewError};

/// The ncstream of its directory's group.
pub(in crate::view) struct NcStreamFile;

impl ServedFile for NcStreamFile {
    fn size(&self, view: &View, dir: u64, measure: Measure) -> Result<Option<u64>, ViewError> {
        // 0 when it cannot be measured; reading it then fails.
        let known = view
            .netcdf_made()
            .and_then(|f| f.stream_size(view, dir, false));
        measure.subtree(known, || {
            Ok(view.netcdf_files()?.stream_size(view, dir, true))
        })
    }

    fn read(&self, view: &View, dir: u64, read: ReadAt, reply: Reply) -> Result<(), ViewError> {
        let files = view.netcdf_files()?;
        files.read_stream(view, dir, read.offset, read.len, reply.out)
    }
}
