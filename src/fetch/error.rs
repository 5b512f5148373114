//! Why a chunk could not be fetched or decoded.

use crate::store::StoreError;
use std::fmt;

/// The kind of failure, for callers that act on it (tests, errno choice, log wording).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FetchCause {
    /// The store failed (I/O error, bad key, a value that vanished while being read).
    Store,
    /// The stored bytes are corrupt, truncated, or decode to the wrong size.
    Corrupt,
    /// A stored object is larger than any encoding of its chunk can be (twice the chunk's largest
    /// form plus 64 KiB, see [`crate::fetch::ChunkReader`]); it was not read.
    Oversized,
    /// The codec chain names a codec zarrfs does not implement.
    Unsupported,
    /// The codec chain or the chunk shape cannot be used (bad configuration, too large).
    BadConfig,
    /// A decoder panicked; the panic was caught.
    Panicked,
}

/// A fetch failure: its cause and a message naming node, key and cause.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{message}")]
pub struct FetchError {
    /// What went wrong.
    pub cause: FetchCause,
    /// The whole message, starting with the node's path.
    pub message: String,
    /// The store's own error, when the store failed (its text ends the message).
    #[source]
    pub store: Option<StoreError>,
}

impl FetchError {
    /// An error of `cause` with message `message`.
    pub fn new(cause: FetchCause, message: impl Into<String>) -> Self {
        FetchError {
            cause,
            message: message.into(),
            store: None,
        }
    }

    /// The same error with `context` put in front of its message.
    pub fn context(self, context: impl fmt::Display) -> Self {
        FetchError {
            message: format!("{context}: {}", self.message),
            ..self
        }
    }
}

/// Equal when cause and message are (a store error's text is in the message; `StoreError` has
/// no equality of its own, as `std::io::Error` has none).
impl PartialEq for FetchError {
    fn eq(&self, other: &Self) -> bool {
        self.cause == other.cause && self.message == other.message
    }
}

impl Eq for FetchError {}

impl From<crate::codec::CodecError> for FetchError {
    fn from(e: crate::codec::CodecError) -> Self {
        use crate::codec::CodecError as C;
        let cause = match &e {
            C::Unsupported(_) => FetchCause::Unsupported,
            C::BadConfig { .. } => FetchCause::BadConfig,
            C::Corrupt { .. } => FetchCause::Corrupt,
        };
        FetchError::new(cause, e.to_string())
    }
}

impl From<StoreError> for FetchError {
    fn from(e: StoreError) -> Self {
        FetchError {
            cause: FetchCause::Store,
            message: e.to_string(),
            store: Some(e),
        }
    }
}
