//! numcodecs `zlib`: a zlib stream (RFC 1950: deflate with a header and an Adler-32 trailer).

use super::inflate::{inflate_whole, Container};
use super::stream::read_bounded;
use crate::codec::{BytesToBytes, CodecError};
use flate2::bufread::ZlibDecoder;

/// The `zlib` codec, under the name it was configured with (its `level` does not matter for
/// decoding).
pub(crate) struct Zlib(pub String);

impl BytesToBytes for Zlib {
    fn name(&self) -> &str {
        &self.0
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        match inflate_whole(Container::Zlib, encoded, out) {
            Some(n) => Ok(n),
            None => read_bounded(&self.0, ZlibDecoder::new(encoded), out),
        }
    }
}
