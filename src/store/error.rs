//! Errors of the store layer.

use std::fmt;
use std::time::Duration;

/// Why a store operation failed.
#[derive(Debug)]
pub enum StoreError {
    /// The key is not acceptable (absolute, `..`, empty segment, NUL).
    BadKey(String),
    /// An I/O error reading `what`.
    Io {
        what: String,
        source: std::io::Error,
    },
    /// The store itself is malformed (a zip without a central directory, ...).
    Invalid(String),
    /// The store cannot list its keys (plain HTTP): the hierarchy must be found from metadata.
    CannotList(String),
    /// A remote request failed for good (after its retries): `what` names the key's URL.
    Remote { what: String, cause: String },
    /// The remote server refused the credentials or the access.
    Denied { what: String, cause: String },
    /// A value larger than the caller accepts (`size` bytes, at most `max`), not read.
    TooLarge { what: String, size: u64, max: u64 },
    /// No answer within the store's time bound (the server is down, hung or too slow).
    TimedOut { what: String, after: Duration },
}

impl StoreError {
    /// An I/O error naming what was being read.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        StoreError::Io {
            what: what.into(),
            source,
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::BadKey(key) => write!(f, "refused key {key:?}: it would leave the store"),
            StoreError::Io { what, source } => write!(f, "{what}: {source}"),
            StoreError::Invalid(msg) => f.write_str(msg),
            StoreError::CannotList(what) => write!(
                f,
                "{what}: this store cannot list its keys (plain HTTP): it needs consolidated \
                 metadata (zarr.consolidate_metadata) or NCZarr's own listings"
            ),
            StoreError::Remote { what, cause } => write!(f, "{what}: {cause}"),
            StoreError::Denied { what, cause } => write!(
                f,
                "{what}: access denied ({cause}); check the credentials, or use --anonymous for public data"
            ),
            StoreError::TooLarge { what, size, max } => write!(
                f,
                "{what}: {size} bytes, more than the {max} bytes accepted for it; not read"
            ),
            StoreError::TimedOut { what, after } => write!(
                f,
                "{what}: no answer within {} s (server down or too slow; see --timeout)",
                after.as_secs_f64()
            ),
        }
    }
}

impl std::error::Error for StoreError {}
