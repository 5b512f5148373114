//! Errors of the metadata layer: why a node, or the whole hierarchy, could not be loaded.

use crate::store::StoreError;

/// Why metadata was refused. Tests match the variant; the text is for logs.
#[derive(Clone, Debug, thiserror::Error)]
pub enum MetaError {
    /// A metadata object is not valid JSON, or not a JSON object.
    #[error("{key}: malformed JSON: {reason}")]
    Json {
        /// The object's key.
        key: String,
        /// What the parser said.
        reason: String,
    },
    /// A required field is missing or has the wrong JSON type.
    #[error("field \"{field}\": {reason}")]
    Field {
        /// The field's name.
        field: String,
        /// What was wrong with it.
        reason: String,
    },
    /// A shape or chunk shape is unusable (zero chunk extent, ranks differ, negative, ...).
    #[error("bad shape: {0}")]
    Shape(String),
    /// A data type is malformed or unknown.
    #[error("bad data type: {0}")]
    DataType(String),
    /// A fill value does not fit the data type.
    #[error("bad fill value: {0}")]
    FillValue(String),
    /// A size is beyond what zarrfs accepts (element size, element count, byte size).
    #[error("too large: {0}")]
    TooLarge(String),
    /// Valid metadata asking for something zarrfs does not implement (a chunk grid, an
    /// extension, a key encoding).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A key or name that would leave the store, found in `origin`.
    #[error("{origin}: refused key {key:?}: it would leave the store")]
    RefusedKey {
        /// Where the key came from (a listing, `.zmetadata`, an NCZarr list, ...).
        origin: String,
        /// The refused key.
        key: String,
    },
    /// The hierarchy is deeper than [`super::MAX_DEPTH`] levels.
    #[error("{path}: deeper than {} levels; not shown", super::MAX_DEPTH)]
    TooDeep {
        /// The first path cut.
        path: String,
    },
    /// The store cannot list its keys and its metadata names no node below the root.
    #[error(
        "{0}: this store cannot list its keys and its metadata names no node below the root; \
         consolidate the metadata (zarr.consolidate_metadata) to mount it"
    )]
    CannotList(String),
    /// The store holds no Zarr metadata at all.
    #[error("{0}: no Zarr metadata found (.zgroup, .zarray or zarr.json)")]
    NoMetadata(String),
    /// The store failed to answer.
    #[error(transparent)]
    Store(StoreError),
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
                origin: "store".into(),
                key,
            },
            StoreError::CannotList(what) => MetaError::CannotList(what),
            too_large @ StoreError::TooLarge { .. } => MetaError::TooLarge(too_large.to_string()),
            other => MetaError::Store(other),
        }
    }
}
