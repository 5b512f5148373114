//! `.header.cdl`: the netCDF header of the group shown by the file's directory (see
//! `netcdf::files`): the whole tree is loaded at first use, the header made when asked for.

use super::{Measure, ReadAt, Reply, ServedFile};
use crate::view::{View, ViewError};

/// The CDL header of its directory's group.
pub(in crate::view) struct CdlFile;

impl ServedFile for CdlFile {
    fn size(&self, view: &View, dir: u64, measure: Measure) -> Result<Option<u64>, ViewError> {
        let known = view.netcdf_made().and_then(|f| f.cdl_size(dir, false));
        measure.subtree(known, || Ok(view.netcdf_files()?.cdl_size(dir, true)))
    }

    fn read(&self, view: &View, dir: u64, read: ReadAt, reply: Reply) -> Result<(), ViewError> {
        let files = view.netcdf_files()?;
        files.read_cdl(dir, read.offset, read.len, reply.out);
        Ok(())
    }
}
