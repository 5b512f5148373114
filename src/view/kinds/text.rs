//! A variable-length array's files: its elements as text (`A`) or as a fixed-width NPY file
//! (`A.npy`). Their sizes cost a scan (see `vlen_file`): an unreadable array shows size 0 and
//! its reads fail with EIO.

use super::{Measure, ReadAt, Reply, ServedFile};
use crate::view::vlen_file::Part;
use crate::view::{View, ViewError};

/// One file of variable-length array number `vlen` of the view.
pub(in crate::view) struct TextFile {
    pub vlen: u32,
    pub part: Part,
}

impl ServedFile for TextFile {
    /// The array is listed for its backing files (see `open`, which attaches them) before the
    /// scan reads any chunk: chunks read before the listing may be older than it, and would
    /// keep the array out of the cache directory. Found only by a call that may wait: both
    /// read the store.
    fn size(&self, view: &View, _dir: u64, measure: Measure) -> Result<Option<u64>, ViewError> {
        let vlen = &view.vlen[self.vlen as usize];
        if let Some(known) = vlen.known_size(self.part) {
            return Ok(known);
        }
        measure.scanned(|| {
            if let Some(backing) = &view.backing {
                vlen.identify(backing);
            }
            vlen.size(self.part, view.vlen_reads(), &view.sizer)
        })
    }

    /// Opens at once; a read waits for the scan.
    fn open(&self, view: &View, _page_cached: bool) -> Result<u64, ViewError> {
        if let Some(backing) = &view.backing {
            view.vlen[self.vlen as usize].attach_backing(backing, self.part);
        }
        Ok(0)
    }

    fn read(&self, view: &View, _dir: u64, read: ReadAt, reply: Reply) -> Result<(), ViewError> {
        let vlen = &view.vlen[self.vlen as usize];
        let (backing, part) = (view.backing.as_ref(), self.part);
        reply
            .out
            .extend(vlen.read(view.vlen_reads(), backing, part, read.offset, read.len)?);
        Ok(())
    }

    /// Large ones: `stat` may show 0 while the size is being found, and reads must not stop
    /// there.
    fn direct_io(&self, view: &View) -> bool {
        view.vlen[self.vlen as usize].size_may_lag()
    }

    fn passthrough(&self, view: &View) -> Option<std::fs::File> {
        let backing = view.vlen[self.vlen as usize].complete_backing(self.part)?;
        backing.passthrough()?.try_clone().ok()
    }
}
