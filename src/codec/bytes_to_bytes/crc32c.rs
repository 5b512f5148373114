//! `crc32c` (v3) and numcodecs `crc32c`: CRC-32C (Castagnoli) of the payload, appended.

use super::checksum::Checksum;
use crate::codec::CodecError;
use crate::meta::CodecSpec;

/// The `crc32c` codec (numcodecs allows `location`, default `"end"`).
pub(crate) fn build(spec: &CodecSpec) -> Result<Checksum, CodecError> {
    Checksum::build(spec, false, true, Box::new(crc32c::crc32c))
}

#[cfg(test)]
mod tests {
    use crate::codec::testutil;

    #[test]
    fn flips_are_detected() {
        testutil::flips_detected("crc32c__u1", 1005);
        testutil::damaged_inputs_fail("crc32c__u1");
    }
}
