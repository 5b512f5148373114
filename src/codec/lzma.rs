//! numcodecs `lzma`: an `.xz` stream (its default `format` 1) or a legacy `.lzma` stream
//! (`format` 2), as Python's `lzma` module writes them. Raw streams (`format` 3) need the
//! filter chain from the configuration and are refused when the chain is built.

use super::config::get_usize;
use super::stream::read_bounded;
use super::{BytesToBytes, CodecError, Size};
use crate::meta::CodecSpec;
use liblzma::bufread::XzDecoder;
use liblzma::stream::Stream;

/// The `lzma` codec.
pub(crate) struct Lzma {
    name: String,
}

/// Builds an `lzma` decoder; `format` 0 (auto), 1 (xz) and 2 (alone) are read alike.
pub(crate) fn build(spec: &CodecSpec) -> Result<Lzma, CodecError> {
    match get_usize(spec, "format")?.unwrap_or(1) {
        0..=2 => Ok(Lzma {
            name: spec.name.clone(),
        }),
        3 => Err(CodecError::unsupported(
            &spec.name,
            "raw LZMA streams (format 3) with a custom filter chain are not supported",
        )),
        other => Err(CodecError::bad_config(
            &spec.name,
            format!("unknown format {other}"),
        )),
    }
}

impl BytesToBytes for Lzma {
    fn name(&self) -> &str {
        &self.name
    }

    fn encoded_size(&self, decoded: Size) -> Size {
        decoded.compressed_bound()
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        // The auto decoder reads .xz (every concatenated stream) and .lzma alike.
        let stream = Stream::new_auto_decoder(u64::MAX, liblzma::stream::CONCATENATED)
            .map_err(|e| CodecError::corrupt(&self.name, e.to_string()))?;
        read_bounded(&self.name, XzDecoder::new_stream(encoded, stream), out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Python's `lzma.compress(b"zarrfs" * 3)`.
    const XZ: &str =
        "fd377a585a000004e6d6b4460200210116000000742fe5a3e00011000b5d003d184abdf241b81f8b\
    40000000f8841e3e2e256e9d000127120676fa091fb6f37d010000000004595a";

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn decodes_python_xz() {
        let codec = build(&CodecSpec::new("lzma", json!({"format": 1}))).unwrap();
        let mut out = [0u8; 18];
        assert_eq!(codec.decode(&hex(XZ), &mut out), Ok(18));
        assert_eq!(&out, b"zarrfszarrfszarrfs");
        let mut short = [0u8; 17];
        assert!(codec.decode(&hex(XZ), &mut short).is_err());
        assert!(codec.decode(&hex(XZ)[..30], &mut out).is_err());
        assert!(build(&CodecSpec::new("lzma", json!({"format": 3}))).is_err());
    }
}
