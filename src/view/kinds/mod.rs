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
pub(super) use bytes::{extend_range, BytesFile};
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

/// Where a read's bytes go: appended to `out`, or handed to `send` once by a read that can
/// answer before it is done (see [`View::read_into`]).
pub(super) struct Reply<'a> {
    pub out: &'a mut Vec<u8>,
    pub send: SendBytes<'a>,
}

/// A kind of file of the tree.
pub(super) trait ServedFile {
    /// Its size; `dir` is the inode of its directory. Without `measure`, `None` when
    /// measuring it would load a subtree.
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
