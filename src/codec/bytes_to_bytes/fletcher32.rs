//! numcodecs `fletcher32`: HDF5's Fletcher-32 of the payload (big-endian 16-bit words, an odd
//! last byte as the high half of a word), appended little-endian.

use super::checksum::Checksum;
use crate::codec::CodecError;
use crate::meta::CodecSpec;

/// The `fletcher32` codec.
pub(crate) fn build(spec: &CodecSpec) -> Result<Checksum, CodecError> {
    Checksum::build(spec, false, false, Box::new(fletcher32))
}

/// Fletcher-32 as HDF5 (`H5_checksum_fletcher32`) and numcodecs compute it.
fn fletcher32(data: &[u8]) -> u32 {
    // 360 words keep both sums below 2^32 between reductions.
    const WORDS_PER_ROUND: usize = 360;
    let fold = |s: u32| (s & 0xffff) + (s >> 16);
    let (mut sum1, mut sum2) = (0u32, 0u32);
    let words = data.chunks_exact(2);
    let odd = words.remainder();
    for round in data[..data.len() - odd.len()].chunks(2 * WORDS_PER_ROUND) {
        for word in round.chunks_exact(2) {
            sum1 += u32::from(u16::from_be_bytes([word[0], word[1]]));
            sum2 += sum1;
        }
        sum1 = fold(sum1);
        sum2 = fold(sum2);
    }
    if let [last] = odd {
        sum1 += u32::from(*last) << 8;
        sum2 += sum1;
        sum1 = fold(sum1);
        sum2 = fold(sum2);
    }
    sum1 = fold(sum1);
    sum2 = fold(sum2);
    (sum2 << 16) | sum1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::testutil;

    #[test]
    fn known_values() {
        assert_eq!(fletcher32(b""), 0);
        assert_eq!(fletcher32(&[1, 2]), 0x0102_0102);
    }

    #[test]
    fn flips_are_detected() {
        testutil::flips_detected("fletcher32__u1", 1005);
    }
}
