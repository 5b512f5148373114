//! `.header.cdl`: the netCDF header of the group shown by the file's directory (see
//! `netcdf::files`): the whole tree is loaded at first use, the header made when asked for.

use super::{ReadAt, Reply, ServedFile};
use crate::view::{View, ViewError};

/// The CDL header of its directory's group.
pub(in crate::view) struct CdlFile;

impl ServedFile for CdlFile {
    fn size(&self, view: &View, dir: u64, measure: bool) -> Option<u64> {
        view.netcdf_files(measure)?.cdl_size(dir, measure)
    }

    fn read(&self, view: &View, dir: u64, read: ReadAt, reply: Reply) -> Result<(), ViewError> {
        if let Some(files) = view.netcdf_files(true) {
            files.read_cdl(dir, read.offset, read.len, reply.out);
        }
        Ok(())
    }
}
