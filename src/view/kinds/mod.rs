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
pub(super) use bytes::{extend_range, overlap, BytesFile};
pub(super) use cdl::CdlFile;
pub(super) use ncstream::NcStreamFile;
pub(super) use preview::PreviewFile;
pub(super) use stats::StatsFile;
pub(super) use text::TextFile;
pub(super) use zom::ZomFile;

use super::{SendBytes, View, ViewError};

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

/// A kind of file of the tree.
pub(super) trait ServedFile {
    /// Its size; `dir` is the inode of its directory. `None` while it is not known yet, and,
    /// without `measure`, when measuring it would load a subtree.
    fn size(&self, view: &View, dir: u64, measure: bool) -> Option<u64>;

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
