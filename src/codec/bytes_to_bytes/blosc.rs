//! `blosc` (v3) and numcodecs `blosc`: a c-blosc 1.x buffer. Decoding reads everything it needs
//! (compressor, shuffle, type size, block size) from the buffer's own 16-byte header, so both
//! the v2 config (`shuffle` as 0/1/2/-1) and the v3 one (`"noshuffle"`, ...) decode alike.
//! c-blosc is built with every compressor it knows: blosclz, lz4, lz4hc, zlib, zstd and snappy.

use crate::codec::{BytesToBytes, CodecError};
use std::os::raw::c_void;

/// Length of the c-blosc header.
const HEADER_LEN: usize = 16;

/// The `blosc` codec, under the name it was configured with (its configuration does not matter for
/// decoding).
pub(crate) struct Blosc(pub String);

impl Blosc {
    fn corrupt(&self, reason: impl Into<String>) -> CodecError {
        CodecError::corrupt(&self.0, reason)
    }
}

/// A little-endian u32 of the header at `at`.
fn header_u32(header: &[u8; HEADER_LEN], at: usize) -> usize {
    u32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]]) as usize
}

impl BytesToBytes for Blosc {
    fn name(&self) -> &str {
        &self.0
    }

    fn stated_size(&self, encoded: &[u8]) -> Option<usize> {
        encoded
            .first_chunk::<HEADER_LEN>()
            .map(|h| header_u32(h, 4))
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        let header = encoded.first_chunk::<HEADER_LEN>().ok_or_else(|| {
            self.corrupt(format!(
                "{} bytes is shorter than the header",
                encoded.len()
            ))
        })?;
        let nbytes = header_u32(header, 4);
        let cbytes = header_u32(header, 12);
        if cbytes > encoded.len() || cbytes < HEADER_LEN {
            return Err(self.corrupt(format!(
                "header gives {cbytes} compressed bytes, input has {}",
                encoded.len()
            )));
        }
        if nbytes > out.len() {
            return Err(self.corrupt(format!(
                "header gives {nbytes} bytes, more than the expected {}",
                out.len()
            )));
        }
        if nbytes == 0 {
            return Ok(0);
        }
        let src = &encoded[..cbytes];
        let mut validated = 0usize;
        // SAFETY: `src` is a live buffer of exactly `cbytes` bytes, `validated` a live usize.
        let valid = unsafe {
            blosc_src::blosc_cbuffer_validate(src.as_ptr().cast::<c_void>(), cbytes, &mut validated)
        };
        if valid != 0 || validated != nbytes {
            return Err(self.corrupt("invalid header"));
        }
        let dst = &mut out[..nbytes];
        // SAFETY: the header was validated against the `cbytes`-byte `src` (c-blosc checks every
        // block offset and size against that length), `dst` is a live, writable buffer of the
        // `nbytes` bytes passed as its size, and the buffers do not overlap. One thread: no
        // global state is touched.
        let written = unsafe {
            blosc_src::blosc_decompress_ctx(
                src.as_ptr().cast::<c_void>(),
                dst.as_mut_ptr().cast::<c_void>(),
                nbytes,
                1,
            )
        };
        match usize::try_from(written) {
            Ok(n) if n == nbytes => Ok(n),
            _ => Err(self.corrupt(format!("decompression failed (c-blosc returned {written})"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_lying_headers() {
        let b = Blosc("blosc".into());
        let mut out = [0u8; 64];
        let mut header = [2u8, 1, 1, 4, 64, 0, 0, 0, 64, 0, 0, 0, 200, 0, 0, 0];
        assert!(b.decode(&header, &mut out).is_err(), "cbytes beyond input");
        header[12] = 16;
        header[4] = 65;
        assert!(b.decode(&header, &mut out).is_err(), "nbytes beyond output");
        header[4] = 64;
        assert!(b.decode(&header, &mut out).is_err(), "no blocks");
        assert!(b.decode(&header[..10], &mut out).is_err(), "short header");
    }
}
