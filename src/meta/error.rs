//! Errors of the metadata layer: why a node, or the whole hierarchy, could not be loaded.

use crate::store::StoreError;
use std::fmt;

/// Why metadata was refused. Tests match the variant; the text is for logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MetaError {
    /// A metadata object is not valid JSON, or not a JSON object.
    Json {
        /// The object's key.
        key: String,
        /// What the parser said.
        reason: String,
    },
    /// A required field is missing or has the wrong JSON type.
    Field {
        /// The field's name.
        field: String,
        /// What was wrong with it.
        reason: String,
    },
    /// A shape or chunk shape is unusable (zero chunk extent, ranks differ, negative, ...).
    Shape(String),
    /// A data type is malformed or unknown.
    DataType(String),
    /// A fill value does not fit the data type.
    FillValue(String),
    /// A size is beyond what zarrfs accepts (element size, element count, byte size).
    TooLarge(String),
    /// Valid metadata asking for something zarrfs does not implement (a chunk grid, an
    /// extension, a key encoding).
    Unsupported(String),
    /// A key or name that would leave the store, found in `source`.
    RefusedKey {
        /// Where the key came from (a listing, `.zmetadata`, an NCZarr list, ...).
        source: String,
        /// The refused key.
        key: String,
    },
    /// The hierarchy is deeper than [`super::MAX_DEPTH`] levels.
    TooDeep {
        /// The first path cut.
        path: String,
    },
    /// The store cannot list its keys and its metadata names no node below the root.
    CannotList(String),
    /// The store holds no Zarr metadata at all.
    NoMetadata(String),
    /// The store failed to answer.
    Store(String),
}

impl MetaError {
    /// A missing or wrongly typed field.
    pub fn field(field: &str, reason: impl Into<String>) -> Self {
        MetaError::Field {
            field: field.to_string(),
            reason: reason.into(),
        }
    }
}

impl From<StoreError> for MetaError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::BadKey(key) => MetaError::RefusedKey {
                source: "store".into(),
                key,
            },
            StoreError::CannotList(what) => MetaError::CannotList(what),
            too_large @ StoreError::TooLarge { .. } => MetaError::TooLarge(too_large.to_string()),
            other => MetaError::Store(other.to_string()),
        }
    }
}

impl fmt::Display for MetaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetaError::Json { key, reason } => write!(f, "{key}: malformed JSON: {reason}"),
            MetaError::Field { field, reason } => write!(f, "field \"{field}\": {reason}"),
            MetaError::Shape(m) => write!(f, "bad shape: {m}"),
            MetaError::DataType(m) => write!(f, "bad data type: {m}"),
            MetaError::FillValue(m) => write!(f, "bad fill value: {m}"),
            MetaError::TooLarge(m) => write!(f, "too large: {m}"),
            MetaError::Unsupported(m) => write!(f, "unsupported: {m}"),
            MetaError::RefusedKey { source, key } => {
                write!(f, "{source}: refused key {key:?}: it would leave the store")
            }
            MetaError::TooDeep { path } => write!(
                f,
                "{path}: deeper than {} levels; not shown",
                super::MAX_DEPTH
            ),
            MetaError::CannotList(what) => write!(
                f,
                "{what}: this store cannot list its keys and its metadata names no node below \
                 the root; consolidate the metadata (zarr.consolidate_metadata) to mount it"
            ),
            MetaError::NoMetadata(what) => {
                write!(
                    f,
                    "{what}: no Zarr metadata found (.zgroup, .zarray or zarr.json)"
                )
            }
            MetaError::Store(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for MetaError {}
