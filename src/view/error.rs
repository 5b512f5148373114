//! Why a view call failed.

use crate::cache::{ChunkError, Panicked};
use crate::fetch::{FetchCause, FetchError};
use crate::meta::MetaError;
use crate::store::StoreError;
use rustix::io::Errno;

/// Why a view could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The store could not be opened.
    #[error("cannot open store {location}: {cause}")]
    Store {
        /// The location given.
        location: String,
        /// What the store said.
        #[source]
        cause: StoreError,
    },
    /// Its hierarchy could not be loaded.
    #[error(transparent)]
    Hierarchy(#[from] MetaError),
}

/// Why an array's shape cannot be read in its chunk grid.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GridError {
    /// The chunk shape has another rank, or an empty axis.
    #[error("chunk shape {chunk_shape:?} does not tile shape {shape:?}")]
    NotTiled {
        /// The array's shape.
        shape: Vec<u64>,
        /// Its chunk shape.
        chunk_shape: Vec<u64>,
    },
    /// A count of elements or chunks does not fit in 64 bits.
    #[error("shape {shape:?} in chunks of {chunk_shape:?} overflows 64-bit counts")]
    Overflow {
        /// The array's shape.
        shape: Vec<u64>,
        /// Its chunk shape.
        chunk_shape: Vec<u64>,
    },
}

/// Why a view call failed; each maps to one errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViewError {
    /// No such inode or name (ENOENT).
    NotFound,
    /// A directory operation on a file (ENOTDIR).
    NotDir,
    /// A file operation on a directory (EISDIR).
    IsDir,
    /// No such extended attribute (ENODATA).
    NoAttribute,
    /// An extended attribute namespace zarrfs does not have (`security.*`, `system.*`:
    /// EOPNOTSUPP, which `ls` remembers per filesystem instead of asking for every file).
    NoNamespace,
    /// The caller's buffer is too small for the answer (ERANGE).
    TooSmall,
    /// The data cannot be read (EIO); the cause has been logged with the node's path.
    Io(IoCause),
    /// Only from a call told not to wait ([`super::Wait::No`]): the answer needs work that may
    /// wait (loading a group's children or a subtree, measuring a file, asking the store),
    /// which the same call told to wait does (EAGAIN).
    WouldBlock,
}

/// Why data cannot be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoCause {
    /// The array's metadata could not be parsed.
    Metadata,
    /// Its codec chain or data type is not supported.
    Unsupported,
    /// Its codec configuration or geometry cannot be used (chunks too large, layout overflow).
    BadConfig,
    /// A chunk or shard is corrupt, truncated or decodes to the wrong size.
    Corrupt,
    /// A stored object is larger than its chunk can be encoded in; it was not read.
    Oversized,
    /// The store failed.
    Store,
    /// One chunk is larger than the whole cache budget (`--cache-size`).
    TooLargeForCache,
    /// A decoder panicked (the panic was caught).
    Panicked,
}

impl ViewError {
    /// The errno this error stands for.
    pub fn errno(self) -> i32 {
        match self {
            ViewError::NotFound => Errno::NOENT,
            ViewError::NotDir => Errno::NOTDIR,
            ViewError::IsDir => Errno::ISDIR,
            ViewError::NoAttribute => Errno::NODATA,
            ViewError::NoNamespace => Errno::OPNOTSUPP,
            ViewError::TooSmall => Errno::RANGE,
            ViewError::Io(_) => Errno::IO,
            ViewError::WouldBlock => Errno::AGAIN,
        }
        .raw_os_error()
    }
}

impl From<FetchCause> for IoCause {
    fn from(cause: FetchCause) -> Self {
        match cause {
            FetchCause::Store => IoCause::Store,
            FetchCause::Corrupt => IoCause::Corrupt,
            FetchCause::Oversized => IoCause::Oversized,
            FetchCause::Unsupported => IoCause::Unsupported,
            FetchCause::BadConfig => IoCause::BadConfig,
            FetchCause::Panicked => IoCause::Panicked,
        }
    }
}

/// The cause of a failed cache load: the fetch error it holds, or a panic.
pub(super) fn cause_of(e: &ChunkError) -> IoCause {
    match e.downcast_ref::<FetchError>() {
        Some(f) => f.cause.into(),
        None if e.downcast_ref::<Panicked>().is_some() => IoCause::Panicked,
        None => IoCause::Store,
    }
}

/// Logs a failed chunk load and turns it into an EIO.
pub(super) fn chunk_failed(e: ChunkError) -> ViewError {
    log::error!("{e}");
    let cause = cause_of(&e);
    crate::stats::STATS.error(&format!("{cause:?}"));
    ViewError::Io(cause)
}
