//! Decoding through a `std::io::Read` decompressor straight into a bounded buffer.

use crate::codec::CodecError;
use std::io::{ErrorKind, Read};

/// Reads `reader` into `out` until it ends; returns the bytes read. More data than `out` holds
/// is an error (a decompression bomb stops after `out.len() + 1` bytes); so is any read error.
pub(crate) fn read_bounded(
    codec: &str,
    mut reader: impl Read,
    out: &mut [u8],
) -> Result<usize, CodecError> {
    let corrupt = |e: std::io::Error| CodecError::corrupt(codec, e.to_string());
    let mut filled = 0;
    while filled < out.len() {
        match reader.read(&mut out[filled..]) {
            Ok(0) => return Ok(filled),
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(corrupt(e)),
        }
    }
    let mut probe = [0u8; 1];
    loop {
        match reader.read(&mut probe) {
            Ok(0) => return Ok(filled),
            Ok(_) => {
                return Err(CodecError::corrupt(
                    codec,
                    format!("decoded data exceeds the expected {} bytes", out.len()),
                ))
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(corrupt(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_and_detects_overflow() {
        let mut out = [0u8; 4];
        assert_eq!(read_bounded("t", &[1u8, 2, 3][..], &mut out), Ok(3));
        assert_eq!(read_bounded("t", &[1u8, 2, 3, 4][..], &mut out), Ok(4));
        assert!(read_bounded("t", &[1u8, 2, 3, 4, 5][..], &mut out).is_err());
    }
}
