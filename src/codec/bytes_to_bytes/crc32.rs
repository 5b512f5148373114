//! numcodecs `crc32`: zlib's CRC-32 of the payload, by default before it.

use super::checksum::Checksum;
use crate::codec::CodecError;
use crate::meta::CodecSpec;

/// The `crc32` codec (`location`, default `"start"`).
pub(crate) fn build(spec: &CodecSpec) -> Result<Checksum, CodecError> {
    Checksum::build(spec, true, true, Box::new(crc32))
}

/// CRC-32 (ISO-HDLC, as zlib computes it).
fn crc32(data: &[u8]) -> u32 {
    let mut crc = flate2::Crc::new();
    crc.update(data);
    crc.sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::testutil;

    #[test]
    fn known_value() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn flips_are_detected() {
        testutil::flips_detected("crc32__u1", 1005);
        testutil::flips_detected("crc32_locationend_u1", 1005);
    }
}
