//! An array's picture (`A.png`, see `preview`).

use super::{extend_range, Measure, ReadAt, Reply, ServedFile};
use crate::view::{View, ViewError};

/// Preview number N of the view.
pub(in crate::view) struct PreviewFile(pub u32);

impl ServedFile for PreviewFile {
    /// Rendered when opened, not here (`ls -l` must not decode pictures): 0 until then.
    /// Known once rendered; until then 0, not exact (the kernel asks again).
    fn size(&self, view: &View, _dir: u64, _: Measure) -> Result<Option<u64>, ViewError> {
        Ok(view.rendered_size(self.0))
    }

    fn open(&self, view: &View, _page_cached: bool) -> Result<u64, ViewError> {
        view.preview_png(self.0).map(|_| 0)
    }

    fn read(&self, view: &View, _dir: u64, read: ReadAt, reply: Reply) -> Result<(), ViewError> {
        extend_range(&view.preview_png(self.0)?, read, reply.out);
        Ok(())
    }

    /// Its size is known once it is rendered.
    fn direct_io(&self, _view: &View) -> bool {
        true
    }
}
