//! The checksum codecs: a 4-byte little-endian checksum of the payload, before or after it.
//! Decoding verifies it and hands the payload on without copying. The codecs whose checksum a
//! crate computes are built here (`crc32c`, `crc32`, `adler32`); `fletcher32` and
//! `jenkins_lookup3` compute their own, in their files.

use crate::codec::config::{bad, get_str};
use crate::codec::{out_prefix, BytesToBytes, CodecError, Size};
use crate::meta::CodecSpec;
use std::ops::Range;

/// A checksum function over the payload.
pub(crate) type ChecksumFn = Box<dyn Fn(&[u8]) -> u32 + Send + Sync>;

/// A checksum codec (`crc32c`, `crc32`, `adler32`, `fletcher32`, `jenkins_lookup3`).
pub(crate) struct Checksum {
    name: String,
    at_start: bool,
    sum: ChecksumFn,
}

impl Checksum {
    /// A checksum codec; `location` (`"start"` or `"end"`) comes from the config's `location`
    /// key when `configurable`, else is `default_start`.
    pub fn build(
        spec: &CodecSpec,
        default_start: bool,
        configurable: bool,
        sum: ChecksumFn,
    ) -> Result<Self, CodecError> {
        let at_start = match get_str(spec, "location")? {
            Some(_) if !configurable => return Err(bad(spec, "has no 'location' option")),
            Some("start") => true,
            Some("end") => false,
            Some(other) => return Err(bad(spec, format!("unknown location '{other}'"))),
            None => default_start,
        };
        Ok(Checksum {
            name: spec.name.clone(),
            at_start,
            sum,
        })
    }
}

/// `crc32c` (v3) and numcodecs `crc32c`: CRC-32C (Castagnoli), by default after the payload.
pub(crate) fn crc32c(spec: &CodecSpec) -> Result<Checksum, CodecError> {
    Checksum::build(spec, false, true, Box::new(::crc32c::crc32c))
}

/// numcodecs `crc32`: zlib's CRC-32 (ISO-HDLC), by default before the payload.
pub(crate) fn crc32(spec: &CodecSpec) -> Result<Checksum, CodecError> {
    Checksum::build(spec, true, true, Box::new(crc32_of))
}

/// numcodecs `adler32`: zlib's Adler-32, by default before the payload.
pub(crate) fn adler32(spec: &CodecSpec) -> Result<Checksum, CodecError> {
    Checksum::build(spec, true, true, Box::new(adler2::adler32_slice))
}

/// CRC-32 as zlib computes it.
fn crc32_of(data: &[u8]) -> u32 {
    let mut crc = flate2::Crc::new();
    crc.update(data);
    crc.sum()
}

impl BytesToBytes for Checksum {
    fn name(&self) -> &str {
        &self.name
    }

    fn encoded_size(&self, decoded: Size) -> Size {
        decoded.map(|n| n.saturating_add(4))
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        let range = self.verify(encoded)?;
        let payload = &encoded[range];
        out_prefix(&self.name, out, payload.len())?.copy_from_slice(payload);
        Ok(payload.len())
    }

    fn payload(&self, encoded: &[u8]) -> Result<Option<Range<usize>>, CodecError> {
        self.verify(encoded).map(Some)
    }
}

impl Checksum {
    /// Checks the stored checksum; returns the payload's range.
    fn verify(&self, encoded: &[u8]) -> Result<Range<usize>, CodecError> {
        let n = encoded.len();
        if n < 4 {
            return Err(CodecError::corrupt(
                &self.name,
                "shorter than its 4-byte checksum",
            ));
        }
        let (stored, range) = if self.at_start {
            (0..4, 4..n)
        } else {
            (n - 4..n, 0..n - 4)
        };
        let mut sum = [0u8; 4];
        sum.copy_from_slice(&encoded[stored]);
        let stored = u32::from_le_bytes(sum);
        let computed = (self.sum)(&encoded[range.clone()]);
        if stored != computed {
            return Err(CodecError::corrupt(
                &self.name,
                format!("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"),
            ));
        }
        Ok(range)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::testutil;
    use serde_json::json;

    #[test]
    fn known_values() {
        assert_eq!(crc32_of(b"123456789"), 0xcbf4_3926);
        let adler32 = adler2::adler32_slice;
        assert_eq!(adler32(b""), 1);
        assert_eq!(adler32(b"Wikipedia"), 0x11e6_0398);
        assert_eq!(adler32(&[0xff; 100_000]), 0x149a_302c);
    }

    #[test]
    fn flips_are_detected() {
        for name in [
            "crc32c__u1",
            "crc32__u1",
            "crc32_locationend_u1",
            "adler32__u1",
        ] {
            testutil::flips_detected(name, 1005);
        }
        testutil::damaged_inputs_fail("crc32c__u1");
    }

    fn xor_sum() -> ChecksumFn {
        Box::new(|d: &[u8]| d.iter().map(|&b| u32::from(b)).sum())
    }

    #[test]
    fn verifies_at_either_end() {
        let start =
            Checksum::build(&CodecSpec::new("c", json!({})), true, true, xor_sum()).unwrap();
        assert_eq!(start.payload(&[3, 0, 0, 0, 1, 2]), Ok(Some(4..6)));
        assert!(start.payload(&[4, 0, 0, 0, 1, 2]).is_err());
        assert!(start.payload(&[0, 0, 0]).is_err());
        let end = Checksum::build(
            &CodecSpec::new("c", json!({"location": "end"})),
            true,
            true,
            xor_sum(),
        )
        .unwrap();
        let mut out = [0u8; 2];
        assert_eq!(end.decode(&[1, 2, 3, 0, 0, 0], &mut out), Ok(2));
        assert_eq!(out, [1, 2]);
        assert!(end.decode(&[1, 2, 3, 3, 0, 0, 0], &mut out).is_err());
    }

    #[test]
    fn location_is_validated() {
        let spec = CodecSpec::new("c", json!({"location": "middle"}));
        assert!(Checksum::build(&spec, true, true, xor_sum()).is_err());
        let spec = CodecSpec::new("c", json!({"location": "end"}));
        assert!(Checksum::build(&spec, false, false, xor_sum()).is_err());
    }
}
