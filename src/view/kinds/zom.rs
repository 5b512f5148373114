//! A group's `.zom.json` (see `zom_files`): its subtree is loaded when it is first measured
//! (EIO while a group of it cannot be loaded).

use super::{extend_range, Measure, ReadAt, Reply, ServedFile};
use crate::view::{View, ViewError};

/// The `.zom.json` of group node N in the view's `ZomFiles`.
pub(in crate::view) struct ZomFile(pub u32);

impl ServedFile for ZomFile {
    fn size(&self, view: &View, dir: u64, measure: Measure) -> Result<Option<u64>, ViewError> {
        let known = view.zoms.measured_size(self.0);
        measure.subtree(known, || view.zom_size(self.0, dir).map(Some))
    }

    fn read(&self, view: &View, dir: u64, read: ReadAt, reply: Reply) -> Result<(), ViewError> {
        view.zom_size(self.0, dir)?;
        extend_range(&view.zoms.bytes(self.0), read, reply.out);
        Ok(())
    }
}
