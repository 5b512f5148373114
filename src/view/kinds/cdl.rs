//! `.header.cdl`: the netCDF header of the group shown by the file's directory (see
//! `netcdf::files`), made from the whole tree at first use.

use super::{extend_range, ReadAt, Reply, ServedFile};
use crate::view::{View, ViewError};

/// The CDL header of its directory's group.
pub(in crate::view) struct CdlFile;

impl ServedFile for CdlFile {
    fn size(&self, view: &View, dir: u64, measure: bool) -> Option<u64> {
        let files = view.netcdf_files(measure)?;
        Some(files.cdl(dir).len() as u64)
    }

    fn read(&self, view: &View, dir: u64, read: ReadAt, reply: Reply) -> Result<(), ViewError> {
        let files = view.netcdf_files(true);
        let cdl = files.map(|f| f.cdl(dir)).unwrap_or_default();
        extend_range(&cdl, read, reply.out);
        Ok(())
    }
}
