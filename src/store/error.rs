//! Errors of the store layer.

use std::sync::Arc;
use std::time::Duration;

/// Why a store operation failed. Cheap to clone (an I/O cause is shared), so a store opened
/// once can give every caller its real error.
#[derive(Clone, Debug, thiserror::Error)]
pub enum StoreError {
    /// The key is not acceptable (absolute, `..`, empty segment, NUL).
    #[error("refused key {0:?}: it would leave the store")]
    BadKey(String),
    /// An I/O error reading `what`.
    #[error("{what}: {cause}")]
    Io {
        what: String,
        cause: Arc<std::io::Error>,
    },
    /// The store itself is malformed (a zip without a central directory, ...).
    #[error("{0}")]
    Invalid(String),
    /// The store cannot list its keys (plain HTTP): the hierarchy must be found from metadata.
    #[error(
        "{0}: this store cannot list its keys (plain HTTP): it needs consolidated metadata \
         (zarr.consolidate_metadata) or NCZarr's own listings"
    )]
    CannotList(String),
    /// A remote request failed for good (after its retries): `what` names the key's URL.
    #[error("{what}: {cause}")]
    Remote { what: String, cause: String },
    /// The remote server refused the credentials or the access.
    #[error(
        "{what}: access denied ({cause}); check the credentials, or use --anonymous for public \
         data"
    )]
    Denied { what: String, cause: String },
    /// A value larger than the caller accepts (`size` bytes, at most `max`), not read.
    #[error("{what}: {size} bytes, more than the {max} bytes accepted for it; not read")]
    TooLarge { what: String, size: u64, max: u64 },
    /// A listing longer than zarrfs holds in memory or reads (`why`: more entries or pages
    /// than it takes): not listed.
    #[error("{what}: {why}; not listed")]
    TooMany { what: String, why: String },
    /// The object is no longer the version a read depends on (a shard rewritten since its
    /// index was read): the server refused the read of that version (412, `If-Match`).
    #[error("{what}: replaced since it was first read (the server refused to read that version)")]
    Changed { what: String },
    /// No answer within the store's time bound (the server is down, hung or too slow).
    #[error(
        "{what}: no answer within {} s (server down or too slow; see --timeout)",
        .after.as_secs_f64()
    )]
    TimedOut { what: String, after: Duration },
}

impl StoreError {
    /// An I/O error naming what was being read.
    pub fn io(what: impl Into<String>, cause: std::io::Error) -> Self {
        StoreError::Io {
            what: what.into(),
            cause: Arc::new(cause),
        }
    }
}
