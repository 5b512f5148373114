//! numcodecs `bz2`: a bzip2 stream (concatenated streams allowed like Python's `bz2` module).

use super::stream::read_bounded;
use crate::codec::{BytesToBytes, CodecError};
use bzip2::bufread::MultiBzDecoder;

/// The `bz2` codec, under the name it was configured with (its `level` does not matter for
/// decoding).
pub(crate) struct Bz2(pub String);

impl BytesToBytes for Bz2 {
    fn name(&self) -> &str {
        &self.0
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        read_bounded(&self.0, MultiBzDecoder::new(encoded), out)
    }
}
