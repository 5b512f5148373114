//! numcodecs `bz2`: a bzip2 stream (concatenated streams allowed like Python's `bz2` module).

use super::stream::read_bounded;
use crate::codec::{BytesToBytes, CodecError};
use bzip2::bufread::MultiBzDecoder;

/// The `bz2` codec.
pub(crate) struct Bz2 {
    name: String,
}

impl Bz2 {
    /// A `bz2` decoder named `name` (its `level` does not matter for decoding).
    pub fn new(name: &str) -> Self {
        Bz2 {
            name: name.to_string(),
        }
    }
}

impl BytesToBytes for Bz2 {
    fn name(&self) -> &str {
        &self.name
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        read_bounded(&self.name, MultiBzDecoder::new(encoded), out)
    }
}
