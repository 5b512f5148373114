//! `gzip` (v3) and numcodecs `gzip`: gzip members (RFC 1952), concatenated members allowed like
//! Python's `gzip` module does.

use super::inflate::{inflate_whole, Container};
use super::stream::read_bounded;
use crate::codec::{BytesToBytes, CodecError};
use flate2::bufread::MultiGzDecoder;

/// The `gzip` codec.
pub(crate) struct Gzip {
    name: String,
}

impl Gzip {
    /// A `gzip` decoder named `name` (its `level` does not matter for decoding).
    pub fn new(name: &str) -> Self {
        Gzip {
            name: name.to_string(),
        }
    }
}

impl BytesToBytes for Gzip {
    fn name(&self) -> &str {
        &self.name
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        match inflate_whole(Container::Gzip, encoded, out) {
            Some(n) => Ok(n),
            None => read_bounded(&self.name, MultiGzDecoder::new(encoded), out),
        }
    }
}
