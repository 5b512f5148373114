//! `zstd` (v3) and numcodecs `zstd`: one or more Zstandard frames. Frame checksums, when
//! present, are verified by the decoder.

use crate::codec::{BytesToBytes, CodecError, Prefix};
use std::cell::RefCell;

thread_local! {
    /// One decompression context per thread, reused across chunks.
    static CONTEXT: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// The `zstd` codec, under the name it was configured with (its `level` and `checksum` do not
/// matter for decoding).
pub(crate) struct Zstd(pub String);

impl BytesToBytes for Zstd {
    fn name(&self) -> &str {
        &self.0
    }

    fn stated_size(&self, encoded: &[u8]) -> Option<usize> {
        match zstd::zstd_safe::get_frame_content_size(encoded) {
            Ok(Some(n)) => usize::try_from(n).ok(),
            _ => None,
        }
    }

    fn progressive(&self) -> Option<Prefix> {
        Some(Prefix::Zstd)
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        let corrupt = |e: std::io::Error| CodecError::corrupt(&self.0, e.to_string());
        CONTEXT.with(|cell| {
            let mut slot = cell.borrow_mut();
            let context = match &mut *slot {
                Some(context) => context,
                empty => empty.insert(zstd::bulk::Decompressor::new().map_err(corrupt)?),
            };
            // Decompresses straight into `out`; output that does not fit is an error.
            context.decompress_to_buffer(encoded, out).map_err(corrupt)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::testutil;

    #[test]
    fn damaged_input_fails() {
        testutil::damaged_inputs_fail("zstd_l5");
        testutil::flips_detected("zstd_checksum", 12);
    }

    #[test]
    fn concatenated_frames_and_bombs() {
        let a = zstd::bulk::compress(&[1u8; 100], 1).unwrap();
        let b = zstd::bulk::compress(&[2u8; 50], 1).unwrap();
        let z = Zstd("zstd".into());
        let mut out = vec![0u8; 150];
        assert_eq!(z.decode(&[a.clone(), b].concat(), &mut out), Ok(150));
        assert_eq!(&out[..100], &[1u8; 100][..]);
        assert_eq!(&out[100..], &[2u8; 50][..]);
        let bomb = zstd::bulk::compress(&vec![0u8; 1 << 24], 19).unwrap();
        assert!(z.decode(&bomb, &mut out).is_err());
        assert!(z.decode(&a[..a.len() - 1], &mut out).is_err());
    }
}
