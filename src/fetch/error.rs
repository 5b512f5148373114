//! Why a chunk could not be fetched or decoded.

use std::fmt;

/// The kind of failure, for callers that act on it (tests, errno choice, log wording).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FetchCause {
    /// The store failed (I/O error, bad key, a value that vanished while being read).
    Store,
    /// The stored bytes are corrupt, truncated, or decode to the wrong size.
    Corrupt,
    /// A stored object is larger than any encoding of its chunk can be (see
    /// [`crate::fetch::ChunkReader::max_object_len`]); it was not read.
    Oversized,
    /// The codec chain names a codec zarrfs does not implement.
    Unsupported,
    /// The codec chain or the chunk shape cannot be used (bad configuration, too large).
    BadConfig,
    /// A decoder panicked; the panic was caught.
    Panicked,
}

/// A fetch failure: its cause and a message naming node, key and cause.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FetchError {
    /// What went wrong.
    pub cause: FetchCause,
    /// The whole message, starting with the node's path.
    pub message: String,
}

impl FetchError {
    /// An error of `cause` with message `message`.
    pub fn new(cause: FetchCause, message: impl Into<String>) -> Self {
        FetchError {
            cause,
            message: message.into(),
        }
    }

    /// The same error with `context` put in front of its message.
    pub fn context(self, context: impl fmt::Display) -> Self {
        FetchError {
            cause: self.cause,
            message: format!("{context}: {}", self.message),
        }
    }
}

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

impl From<crate::store::StoreError> for FetchError {
    fn from(e: crate::store::StoreError) -> Self {
        FetchError::new(FetchCause::Store, e.to_string())
    }
}
