//! `.zarrfs/stats`: the live counters (see `stats_file`).

use super::{extend_range, Measure, ReadAt, Reply, ServedFile};
use crate::view::{View, ViewError};

/// The counters file.
pub(in crate::view) struct StatsFile;

impl ServedFile for StatsFile {
    /// Its size now; a longer text later is read whole, with direct I/O.
    fn size(&self, view: &View, _dir: u64, _: Measure) -> Result<Option<u64>, ViewError> {
        Ok(Some(view.stats_json().len() as u64))
    }

    fn open(&self, view: &View, _page_cached: bool) -> Result<u64, ViewError> {
        Ok(view.open_stats())
    }

    fn read(&self, view: &View, _dir: u64, read: ReadAt, reply: Reply) -> Result<(), ViewError> {
        extend_range(&view.stats_snapshot(read.fh), read, reply.out);
        Ok(())
    }

    /// Its content changes with every open.
    fn direct_io(&self, _view: &View) -> bool {
        true
    }
}
