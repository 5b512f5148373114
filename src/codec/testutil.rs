//! Test helpers: the numcodecs-made vectors in `tests/fixtures/codecs/` (written by
//! `scripts/make_codec_vectors.py`) and damage tests over them.

use super::{CodecError, Pipeline};
use crate::meta::{CodecSpec, DataType, Field};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::OnceLock;

/// One vector from `manifest.json`.
pub(crate) struct Case {
    pub name: String,
    pub group: String,
    pub codecs: Vec<CodecSpec>,
    pub dtype: DataType,
    pub shape: Vec<u64>,
    pub encoded: Vec<u8>,
    pub decoded: Vec<u8>,
}

fn dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/codecs"
    ))
}

fn read(name: &str) -> Vec<u8> {
    let path = dir().join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Parses the manifest's dtype notation: a code (`i4`, `c16`, `U3`, ...) or a list of
/// `[name, code, offset, subshape]` fields.
fn parse_dtype(v: &Value) -> DataType {
    if let Some(fields) = v.as_array() {
        return DataType::Structured(
            fields
                .iter()
                .map(|f| Field {
                    name: f[0].as_str().unwrap().to_string(),
                    dtype: parse_dtype(&f[1]),
                    offset: f[2].as_u64().unwrap() as usize,
                    shape: f[3]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|d| d.as_u64().unwrap() as usize)
                        .collect(),
                })
                .collect(),
        );
    }
    let code = v.as_str().unwrap();
    let (kind, n) = code.split_at(1);
    let n: usize = n.parse().unwrap();
    match kind {
        "b" => DataType::Bool,
        "i" => DataType::Int(n),
        "u" => DataType::UInt(n),
        "f" => DataType::Float(n),
        "c" => DataType::Complex(n),
        "U" => DataType::Unicode(n),
        "S" => DataType::Bytes(n),
        "V" => DataType::Raw(n),
        _ => panic!("unknown dtype code {code}"),
    }
}

/// All vectors.
pub(crate) fn cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| {
        let manifest: Value = serde_json::from_slice(&read("manifest.json")).unwrap();
        manifest["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| Case {
                name: c["name"].as_str().unwrap().to_string(),
                group: c["group"].as_str().unwrap().to_string(),
                codecs: c["codecs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| {
                        CodecSpec::new(s["name"].as_str().unwrap(), s["configuration"].clone())
                    })
                    .collect(),
                dtype: parse_dtype(&c["dtype"]),
                shape: c["shape"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d.as_u64().unwrap())
                    .collect(),
                encoded: read(c["encoded"].as_str().unwrap()),
                decoded: read(c["decoded"].as_str().unwrap()),
            })
            .collect()
    })
}

/// `encoded` decoded by `pipeline` into a buffer of its own.
pub(crate) fn decoded(pipeline: &Pipeline, encoded: &[u8]) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::new();
    pipeline.decode(encoded, &mut out).map(|()| out)
}

/// The vector named `name`.
pub(crate) fn case(name: &str) -> &'static Case {
    cases()
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no vector {name}"))
}

impl Case {
    /// The pipeline for this vector, optionally with another chunk shape.
    pub fn pipeline(&self, shape: Option<&[u64]>) -> Result<Pipeline, CodecError> {
        Pipeline::new(&self.codecs, &self.dtype, shape.unwrap_or(&self.shape))
    }

    /// Decodes into an owned buffer and into room, checking both agree.
    pub fn decode(&self, encoded: &[u8]) -> Result<Vec<u8>, CodecError> {
        let pipeline = self
            .pipeline(None)
            .unwrap_or_else(|e| panic!("{}: {e}", self.name));
        let decoded = decoded(&pipeline, encoded)?;
        let mut into = vec![0xa5u8; decoded.len()];
        pipeline.decode(encoded, &mut into[..]).unwrap();
        assert_eq!(decoded, into, "{}: decoding into room differs", self.name);
        Ok(decoded)
    }
}

/// Decodes every vector of `group` and compares the bytes exactly.
pub(crate) fn run_group(group: &str) {
    let mut ran = 0;
    for c in cases().iter().filter(|c| c.group == group) {
        let decoded = c
            .decode(&c.encoded)
            .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        assert!(decoded == c.decoded, "{}: decoded bytes differ", c.name);
        ran += 1;
    }
    assert!(ran > 0, "no vectors for {group}");
}

/// Truncated input and a wrong chunk size fail; flipped bytes never panic.
pub(crate) fn damaged_inputs_fail(name: &str) {
    let c = case(name);
    let n = c.encoded.len();
    for cut in [0, 1, n / 2, n - 1] {
        assert!(
            c.decode(&c.encoded[..cut]).is_err(),
            "{name}: truncated to {cut} decoded"
        );
    }
    for delta in [-1i64, 1] {
        let mut shape = c.shape.clone();
        shape[0] = shape[0].saturating_add_signed(delta);
        let p = c.pipeline(Some(&shape)).unwrap();
        assert!(
            decoded(&p, &c.encoded).is_err(),
            "{name}: decoded as shape {shape:?}"
        );
    }
    for i in positions(n, 64) {
        let mut bad = c.encoded.clone();
        bad[i] ^= 0x5a;
        let _ = c.decode(&bad);
    }
}

/// Flipping a byte at up to `max` positions always fails: the codec checks integrity.
pub(crate) fn flips_detected(name: &str, max: usize) {
    let c = case(name);
    for i in positions(c.encoded.len(), max) {
        let mut bad = c.encoded.clone();
        bad[i] ^= 0x01;
        match c.decode(&bad) {
            Err(CodecError::Corrupt { .. }) => {}
            // A flip that changes nothing decoded (e.g. in an unused header bit) is no corruption.
            Ok(d) if d == c.decoded => {}
            other => panic!("{name}: flip at {i} gave {:?}", other.map(|d| d.len())),
        }
    }
}

/// Up to `max` positions spread over `0..len`.
fn positions(len: usize, max: usize) -> impl Iterator<Item = usize> {
    let step = len.div_ceil(max.max(1)).max(1);
    (0..len).step_by(step)
}

/// Every vector of every group (one group per codec, and `pipeline` for whole chains) decodes
/// to the bytes its writer's reader gave.
#[test]
fn every_vector_decodes() {
    let mut groups: Vec<&str> = cases().iter().map(|c| c.group.as_str()).collect();
    groups.sort_unstable();
    groups.dedup();
    assert!(groups.len() > 20, "groups: {groups:?}");
    for group in groups {
        run_group(group);
    }
}

/// Damaged compressed vectors fail (checksummed ones in their codec's file).
#[test]
fn damaged_compressed_inputs_fail() {
    for name in [
        "bz2_l9",
        "gzip_l1",
        "zlib_l9",
        "blosc_lz4_shuffle",
        "blosc_v3_zstd_bitshuffle_bs512",
        "blosc_clevel0_memcpy",
    ] {
        damaged_inputs_fail(name);
    }
}

/// Hand-made inputs of the small codecs: what each decodes to (into a buffer of `room` bytes),
/// and what it refuses (`None`).
#[test]
fn small_codecs_decode_hand_made_inputs() {
    use super::bytes_to_bytes::base64::Base64;
    use super::filters::{bitround::BitRound, packbits::PackBits};
    use super::BytesToBytes;
    let base64 = Base64("base64".into());
    let bitround = BitRound("bitround".into());
    let packbits = PackBits("packbits".into());
    /// A codec, an input, the output room, and what it decodes to.
    type HandMade<'a> = (&'a dyn BytesToBytes, &'a [u8], usize, Option<&'a [u8]>);
    let cases: [HandMade; 12] = [
        (&base64, b"AQID", 3, Some(&[1, 2, 3])),
        (&base64, b"AQI", 3, None),
        (&base64, b"A!ID", 3, None),
        (&base64, b"AQIDBA==", 3, None),
        (&bitround, &[1, 2, 3, 4], 4, Some(&[1, 2, 3, 4])),
        (&bitround, &[0; 5], 4, None),
        (&packbits, &[4, 0b1001_0000], 4, Some(&[1, 0, 0, 1])),
        (&packbits, &[], 4, None),
        (&packbits, &[8, 0], 4, None),
        (&packbits, &[1], 4, None),
        (&packbits, &[0, 0xff], 4, None),
        (&packbits, &[0], 4, Some(&[])),
    ];
    for (codec, input, room, expected) in cases {
        let mut out = vec![9u8; room];
        let got = codec.decode(input, &mut out);
        let what = format!("{} of {input:?}", codec.name());
        match expected {
            Some(bytes) => {
                assert_eq!(got, Ok(bytes.len()), "{what}");
                assert_eq!(&out[..bytes.len()], bytes, "{what}");
            }
            None => assert!(got.is_err(), "{what}"),
        }
    }
}
