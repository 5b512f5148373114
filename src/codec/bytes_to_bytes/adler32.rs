//! numcodecs `adler32`: zlib's Adler-32 of the payload, by default before it.

use super::checksum::Checksum;
use crate::codec::CodecError;
use crate::meta::CodecSpec;

/// The `adler32` codec (`location`, default `"start"`).
pub(crate) fn build(spec: &CodecSpec) -> Result<Checksum, CodecError> {
    Checksum::build(spec, true, true, Box::new(adler32))
}

/// Adler-32 with zlib's starting value 1.
fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    // Largest run of bytes whose sums cannot overflow u32 before the modulo.
    const NMAX: usize = 5552;
    let (mut a, mut b) = (1u32, 0u32);
    for block in data.chunks(NMAX) {
        for &byte in block {
            a += u32::from(byte);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::testutil;

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
