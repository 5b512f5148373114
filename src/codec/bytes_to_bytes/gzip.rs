//! `gzip` (v3) and numcodecs `gzip`: gzip members (RFC 1952), concatenated members allowed like
//! Python's `gzip` module does.

use super::inflate::{inflate_whole, Container};
use super::stream::read_bounded;
use crate::codec::{BytesToBytes, CodecError};
use flate2::bufread::MultiGzDecoder;

/// The `gzip` codec, under the name it was configured with (its `level` does not matter for
/// decoding).
pub(crate) struct Gzip(pub String);

impl BytesToBytes for Gzip {
    fn name(&self) -> &str {
        &self.0
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        match inflate_whole(Container::Gzip, encoded, out) {
            Some(n) => Ok(n),
            None => read_bounded(&self.0, MultiGzDecoder::new(encoded), out),
        }
    }
}
