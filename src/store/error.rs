//! Errors of the store layer.

use std::fmt;

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
            StoreError::CannotList(what) => write!(f, "{what}: this store cannot list its keys"),
        }
    }
}

impl std::error::Error for StoreError {}
