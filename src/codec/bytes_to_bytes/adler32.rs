//! numcodecs `adler32`: zlib's Adler-32 of the payload, by default before it.

use super::checksum::Checksum;
use crate::codec::CodecError;
use crate::meta::CodecSpec;

/// The `adler32` codec (`location`, default `"start"`).
pub(crate) fn build(spec: &CodecSpec) -> Result<Checksum, CodecError> {
    Checksum::build(spec, true, true, Box::new(adler2::adler32_slice))
}

#[cfg(test)]
mod tests {
    use crate::codec::testutil;
    use adler2::adler32_slice as adler32;

    #[test]
    fn known_values() {
        assert_eq!(adler32(b""), 1);
        assert_eq!(adler32(b"Wikipedia"), 0x11e6_0398);
        assert_eq!(adler32(&[0xff; 100_000]), 0x149a_302c);
    }

    #[test]
    fn flips_are_detected() {
        testutil::flips_detected("adler32__u1", 1005);
    }
}
