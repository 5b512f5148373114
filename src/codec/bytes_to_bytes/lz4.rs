//! numcodecs `lz4`: the decoded size as a 4-byte little-endian integer, then one LZ4 block.

use crate::codec::{BytesToBytes, CodecError};

/// The `lz4` codec, under the name it was configured with (its `acceleration` does not matter for
/// decoding).
pub(crate) struct Lz4(pub String);

impl BytesToBytes for Lz4 {
    fn name(&self) -> &str {
        &self.0
    }

    fn stated_size(&self, encoded: &[u8]) -> Option<usize> {
        encoded
            .first_chunk::<4>()
            .map(|h| u32::from_le_bytes(*h) as usize)
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        let (header, block) = encoded
            .split_first_chunk::<4>()
            .ok_or_else(|| CodecError::corrupt(&self.0, "shorter than its 4-byte header"))?;
        let size = u32::from_le_bytes(*header) as usize;
        let expected = out.len();
        let dst = out.get_mut(..size).ok_or_else(|| {
            CodecError::corrupt(
                &self.0,
                format!("header gives {size} bytes, more than the expected {expected}"),
            )
        })?;
        let written = lz4_flex::block::decompress_into(block, dst)
            .map_err(|e| CodecError::corrupt(&self.0, e.to_string()))?;
        if written != size {
            return Err(CodecError::corrupt(
                &self.0,
                format!("block decoded to {written} bytes, header says {size}"),
            ));
        }
        Ok(size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::testutil;

    #[test]
    fn damaged_input_fails() {
        testutil::damaged_inputs_fail("lz4_a1");
        let l = Lz4("lz4".into());
        let mut out = [0u8; 8];
        assert!(l.decode(&[1, 0], &mut out).is_err());
        assert!(l
            .decode(&[9, 0, 0, 0, 0x90, 1, 2, 3, 4, 5, 6, 7, 8, 9], &mut out)
            .is_err());
    }
}
