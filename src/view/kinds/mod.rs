//! The kinds of files of the tree, one module each, behind one trait: what the file tree asks
//! of every file it serves. A kind answers from the code that makes its bytes (`array_file`,
//! `vlen_file`, `netcdf`, `zom_files`, `preview`, `stats_file`); selections (`slice_table`)
//! implement it too. A new kind of file is one module here and one variant of `Content`.

mod bytes;
mod cdl;
mod data;
mod ncstream;
mod npy;
mod preview;
mod stats;
mod text;
mod zom;

pub(super) use bytes::{extend_range, BytesFile};
pub(super) use cdl::CdlFile;
pub(super) use data::DataFile;
pub(super) use ncstream::NcStreamFile;
pub(super) use npy::NpyFile;
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

    /// Reads `read` (`dir` as for `size`), appending to `out` or handing the bytes to `send` once (see
    /// [`View::read_answer`]).
    fn read(
        &self,
        view: &View,
        dir: u64,
        read: ReadAt,
        out: &mut Vec<u8>,
        send: SendBytes,
    ) -> Result<(), ViewError>;

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
