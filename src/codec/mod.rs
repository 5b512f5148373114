//! The decode pipeline: array→array, array→bytes and bytes→bytes codecs, one file each.
//!
//! PLACEHOLDER: the public API below is the contract the cache and view build on.

use crate::meta::{CodecSpec, DataType};

/// Why a chunk could not be decoded, or a chain could not be built.
#[derive(Debug)]
pub enum CodecError {
    /// The chain names a codec zarrfs does not implement.
    Unsupported(String),
    /// A codec's configuration is invalid.
    BadConfig { codec: String, reason: String },
    /// The encoded bytes are corrupt, truncated or decode to the wrong size.
    Corrupt { codec: String, reason: String },
}

/// A codec chain built for one array (or one shard's inner chunks).
pub struct Pipeline;

impl Pipeline {
    /// Builds the chain for chunks of `chunk_shape` elements of `dtype`.
    pub fn new(codecs: &[CodecSpec], dtype: &DataType, chunk_shape: &[u64]) -> Result<Self, CodecError> {
        let _ = (codecs, dtype, chunk_shape);
        unimplemented!()
    }

    /// Decodes one stored chunk into its elements: C order, little-endian, exactly
    /// product(chunk_shape) * dtype.size() bytes.
    pub fn decode(&self, encoded: &[u8]) -> Result<Vec<u8>, CodecError> {
        let _ = encoded;
        unimplemented!()
    }
}

impl std::fmt::Display for CodecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}
