//! The kinds of files of the tree, one module each, behind one trait: what the file tree asks
//! of every file it serves. A kind answers from the code that makes its bytes (`array_file`,
//! `vlen_file`, `netcdf`, `zom_files`, `preview`, `stats_file`); selections (`slice_table`)
//! implement it too. A new kind of file is one module here and one variant of `Content`.

mod array;
mod bytes;
mod cdl;
mod ncstream;
mod preview;
mod stats;
mod text;
mod zom;

pub(super) use array::ArrayPart;
pub(super) use bytes::{extend_range, overlap, JsonFile};
pub(super) use cdl::CdlFile;
pub(super) use ncstream::NcStreamFile;
pub(super) use preview::PreviewFile;
pub(super) use stats::StatsFile;
pub(super) use text::TextFile;
pub(super) use zom::ZomFile;

use super::{SendBytes, View, ViewError, Wait};

/// One read: up to `len` bytes from `offset`, through file handle `fh` (0: none).
#[derive(Clone, Copy)]
pub(super) struct ReadAt {
    pub fh: u64,
    pub offset: u64,
    pub len: u64,
}

/// Where a read's bytes go (see [`View::read_into`]).
pub(in crate::view) struct Reply<'a> {
    /// The buffer they are appended to.
    pub out: &'a mut Vec<u8>,
    /// Where a read that can answer before it is done (a run inside one chunk) hands them
    /// instead, once, as soon as they are decoded (see [`super::chunk_source::Dest::Send`]).
    pub send: Option<SendBytes<'a>>,
    /// A whole chunk nobody decoded yet may be decoded straight into `out`, leaving no chunk
    /// cache entry: only for readers whose bytes something else keeps (the page cache) and
    /// stores that are cheap to read again.
    pub into_reply: bool,
}

impl<'a> Reply<'a> {
    /// Into `out` alone (`into_reply` as [`Reply::into_reply`] says).
    pub fn new(out: &'a mut Vec<u8>, into_reply: bool) -> Self {
        Reply {
            out,
            send: None,
            into_reply,
        }
    }
}

/// Into a buffer alone, whole chunks decoded straight into it.
impl<'a> From<&'a mut Vec<u8>> for Reply<'a> {
    fn from(out: &'a mut Vec<u8>) -> Self {
        Reply::new(out, true)
    }
}

/// How far finding a file's size may go.
#[derive(Clone, Copy)]
pub(super) struct Measure {
    /// Whether a file showing a whole subtree is measured (`stat`), which loads the subtree,
    /// or shown with its size unknown until measured (a listing's attributes).
    pub subtree: bool,
    /// Whether the call may wait for the work a size needs.
    pub wait: Wait,
}

impl Measure {
    /// The size of a file showing a subtree: `known` when it was measured before, else the
    /// size `measure` finds (or the error it meets: a group of the subtree could not be
    /// loaded) when this call measures such files and may wait; unknown when it does not
    /// measure them; [`ViewError::WouldBlock`] when it would but may not wait.
    pub fn subtree(
        self,
        known: Option<u64>,
        measure: impl FnOnce() -> Result<Option<u64>, ViewError>,
    ) -> Result<Option<u64>, ViewError> {
        match (known, self.subtree, self.wait) {
            (Some(size), _, _) => Ok(Some(size)),
            (None, false, _) => Ok(None),
            (None, true, Wait::Yes) => measure(),
            (None, true, Wait::No) => Err(ViewError::WouldBlock),
        }
    }

    /// The size `measure` finds (by scanning chunks, or asking the store), when this call may
    /// wait; else [`ViewError::WouldBlock`].
    pub fn scanned(self, measure: impl FnOnce() -> Option<u64>) -> Result<Option<u64>, ViewError> {
        match self.wait {
            Wait::Yes => Ok(measure()),
            Wait::No => Err(ViewError::WouldBlock),
        }
    }
}

/// A kind of file of the tree.
pub(super) trait ServedFile {
    /// Its size; `dir` is the inode of its directory. `Ok(None)` while it is not known yet,
    /// and when `measure` leaves it unmeasured; [`ViewError::WouldBlock`] when finding it
    /// needs work `measure` may not wait for; EIO when a file showing a subtree cannot be
    /// measured now (a group of it could not be loaded).
    fn size(&self, view: &View, dir: u64, measure: Measure) -> Result<Option<u64>, ViewError>;

    /// Opens it (`page_cached`: read through the kernel's page cache) and returns a file
    /// handle, 0 when it needs none.
    fn open(&self, _view: &View, _page_cached: bool) -> Result<u64, ViewError> {
        Ok(0)
    }

    /// Reads `read` (`dir` as for `size`) into `reply`.
    fn read(&self, view: &View, dir: u64, read: ReadAt, reply: Reply) -> Result<(), ViewError>;

    /// True when it is served with direct I/O (`FOPEN_DIRECT_IO`): its content or size may
    /// change after `stat`.
    fn direct_io(&self, _view: &View) -> bool {
        false
    }

    /// The local file holding exactly its bytes, when there is one the kernel may read
    /// directly (FUSE passthrough).
    fn passthrough(&self, _view: &View) -> Option<std::fs::File> {
        None
    }
}
