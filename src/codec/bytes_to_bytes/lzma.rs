//! numcodecs `lzma`: an `.xz` stream (its default `format` 1), a legacy `.lzma` stream
//! (`format` 2), or a raw stream (`format` 3) whose filter chain the configuration's `filters`
//! list gives, as Python's `lzma` module takes it: `{"id": <filter id>, <options>}` for LZMA1,
//! LZMA2, delta and the branch (BCJ) filters.

use super::stream::read_bounded;
use crate::codec::config::{bad, get_usize};
use crate::codec::{BytesToBytes, CodecError};
use crate::meta::CodecSpec;
use liblzma::bufread::XzDecoder;
use liblzma::stream::{Filters, LzmaOptions, Stream};
use serde_json::{Map, Value};

/// Python's `lzma.FILTER_*` ids.
const LZMA1: u64 = 0x4000_0000_0000_0001;
const LZMA2: u64 = 0x21;
const DELTA: u64 = 0x03;
const X86: u64 = 0x04;
const POWERPC: u64 = 0x05;
const IA64: u64 = 0x06;
const ARM: u64 = 0x07;
const ARMTHUMB: u64 = 0x08;
const SPARC: u64 = 0x09;
const ARM64: u64 = 0x0a;
const RISCV: u64 = 0x0b;

/// The least memory a chunk's decoder may use: enough for every preset (`-9` declares a
/// 64 MiB dictionary and needs 64.06 MiB to decode).
const MEMLIMIT_FLOOR: u64 = 65 << 20;

/// The most memory liblzma may use to decode a chunk of `len` bytes: a stream declaring a
/// larger dictionary is refused rather than have liblzma allocate it.
fn memlimit(len: usize) -> u64 {
    MEMLIMIT_FLOOR.max((len as u64).saturating_mul(2).saturating_add(1 << 20))
}

/// The `lzma` codec.
pub(crate) struct Lzma {
    name: String,
    /// The raw stream's filter chain (`format` 3); `None` for `.xz` and `.lzma` streams.
    raw: Option<Vec<RawFilter>>,
}

/// One filter of a raw stream's chain, as the configuration gives it. (liblzma's `Filters`
/// holds raw pointers and is not `Sync`: it is rebuilt from these for each chunk.)
#[derive(Clone, Debug, PartialEq)]
enum RawFilter {
    /// LZMA1 (`lzma1: true`) or LZMA2 with their options.
    Lzma {
        lzma1: bool,
        preset: u32,
        dict_size: Option<u32>,
        lc: Option<u32>,
        lp: Option<u32>,
        pb: Option<u32>,
    },
    /// Delta or a branch filter: its id and its encoded properties.
    Props { id: u64, props: Vec<u8> },
}

/// Builds an `lzma` decoder: `format` 0 (auto), 1 (xz) and 2 (alone) are read alike; 3 (raw)
/// needs `filters`.
pub(crate) fn build(spec: &CodecSpec) -> Result<Lzma, CodecError> {
    let raw = match get_usize(spec, "format")?.unwrap_or(1) {
        0..=2 => None,
        3 => {
            let chain = raw_filters(spec)?;
            filters(&chain).map_err(|e| bad(spec, format!("filter chain: {e}")))?;
            Some(chain)
        }
        other => return Err(bad(spec, format!("unknown format {other}"))),
    };
    Ok(Lzma {
        name: spec.name.clone(),
        raw,
    })
}

/// The filter chain of a raw stream, from `filters`.
fn raw_filters(spec: &CodecSpec) -> Result<Vec<RawFilter>, CodecError> {
    let list = match spec.config.get("filters") {
        Some(Value::Array(list)) if !list.is_empty() => list,
        _ => return Err(bad(spec, "a raw stream (format 3) needs a 'filters' list")),
    };
    list.iter()
        .enumerate()
        .map(|(i, f)| {
            let f = f
                .as_object()
                .ok_or_else(|| bad(spec, format!("filter {i} is not an object")))?;
            raw_filter(f).map_err(|e| bad(spec, format!("filter {i}: {e}")))
        })
        .collect()
}

/// Why a filter's Python form is refused.
#[derive(Debug, thiserror::Error)]
enum BadFilter {
    /// An option that is not a 32-bit count.
    #[error("'{key}' is {value}")]
    NotACount { key: &'static str, value: Value },
    /// No numeric `id`.
    #[error("no numeric 'id'")]
    NoId,
    /// A delta distance outside 1..256.
    #[error("delta 'dist' {0} is not 1..256")]
    Distance(u32),
    /// An id liblzma's raw streams do not have.
    #[error("unknown filter id {0}")]
    UnknownId(u64),
}

/// One filter from its Python form `{"id": .., options}`.
fn raw_filter(f: &Map<String, Value>) -> Result<RawFilter, BadFilter> {
    let num = |key: &'static str| -> Result<Option<u32>, BadFilter> {
        match f.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| BadFilter::NotACount {
                    key,
                    value: v.clone(),
                }),
        }
    };
    let id = f.get("id").and_then(Value::as_u64).ok_or(BadFilter::NoId)?;
    Ok(match id {
        LZMA1 | LZMA2 => RawFilter::Lzma {
            lzma1: id == LZMA1,
            preset: num("preset")?.unwrap_or(6),
            dict_size: num("dict_size")?,
            lc: num("lc")?,
            lp: num("lp")?,
            pb: num("pb")?,
        },
        DELTA => {
            let dist = num("dist")?.unwrap_or(1);
            if !(1..=256).contains(&dist) {
                return Err(BadFilter::Distance(dist));
            }
            RawFilter::Props {
                id,
                props: vec![(dist - 1) as u8],
            }
        }
        X86 | POWERPC | IA64 | ARM | ARMTHUMB | SPARC | ARM64 | RISCV => {
            let start = num("start_offset")?.unwrap_or(0);
            let props = if start == 0 {
                Vec::new()
            } else {
                start.to_le_bytes().to_vec()
            };
            RawFilter::Props { id, props }
        }
        other => return Err(BadFilter::UnknownId(other)),
    })
}

/// liblzma's filter chain for `chain`.
fn filters(chain: &[RawFilter]) -> Result<Filters, liblzma::stream::Error> {
    let mut out = Filters::new();
    for f in chain {
        match f {
            RawFilter::Lzma {
                lzma1,
                preset,
                dict_size,
                lc,
                lp,
                pb,
            } => {
                let mut opts = LzmaOptions::new_preset(*preset)?;
                if let Some(n) = dict_size {
                    opts.dict_size(*n);
                }
                if let Some(n) = lc {
                    opts.literal_context_bits(*n);
                }
                if let Some(n) = lp {
                    opts.literal_position_bits(*n);
                }
                if let Some(n) = pb {
                    opts.position_bits(*n);
                }
                if *lzma1 {
                    out.lzma1(&opts);
                } else {
                    out.lzma2(&opts);
                }
            }
            RawFilter::Props { id, props } => {
                match *id {
                    DELTA => out.delta_properties(props),
                    X86 => out.x86_properties(props),
                    POWERPC => out.powerpc_properties(props),
                    IA64 => out.ia64_properties(props),
                    ARM => out.arm_properties(props),
                    ARMTHUMB => out.arm_thumb_properties(props),
                    SPARC => out.sparc_properties(props),
                    ARM64 => out.arm64_properties(props),
                    _ => out.riscv_properties(props),
                }?;
            }
        }
    }
    Ok(out)
}

impl BytesToBytes for Lzma {
    fn name(&self) -> &str {
        &self.name
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        let limit = memlimit(out.len());
        let stream = match &self.raw {
            Some(chain) => {
                // A raw stream's dictionary is the configuration's (a preset's is at most
                // 64 MiB): liblzma's raw decoder takes no memory limit.
                let dict = chain.iter().find_map(|f| match f {
                    RawFilter::Lzma { dict_size, .. } => dict_size.map(u64::from),
                    RawFilter::Props { .. } => None,
                });
                if let Some(dict) = dict.filter(|&d| d > limit) {
                    return Err(CodecError::corrupt(
                        &self.name,
                        format!("a {dict}-byte dictionary is over the {limit} bytes a chunk of {} bytes may use", out.len()),
                    ));
                }
                filters(chain).and_then(|f| Stream::new_raw_decoder(&f))
            }
            // The auto decoder reads .xz (every concatenated stream) and .lzma alike; one
            // declaring a dictionary over the limit fails with `MemLimit`.
            None => Stream::new_auto_decoder(limit, liblzma::stream::CONCATENATED),
        }
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

    /// Python's `lzma.compress(b"zarrfs" * 3, format=lzma.FORMAT_RAW, filters=...)`.
    #[test]
    fn decodes_python_raw_streams() {
        let delta_lzma2 = json!({"format": 3, "filters": [{"id": 3, "dist": 2},
            {"id": 33, "preset": 1}]});
        let lzma1 = json!({"format": 3, "filters": [{"id": LZMA1, "preset": 6,
            "dict_size": 65536, "lc": 0, "lp": 2, "pb": 2}]});
        for (config, stream) in [
            (delta_lzma2, "e00011000e5d003d185b090f211ae905845be9800000"),
            (lzma1, "003d184a58663b6f48b83bffffff7c400000"),
        ] {
            let codec = build(&CodecSpec::new("lzma", config.clone())).unwrap();
            let mut out = [0u8; 18];
            assert_eq!(codec.decode(&hex(stream), &mut out), Ok(18), "{config}");
            assert_eq!(&out, b"zarrfszarrfszarrfs");
            let cut = hex(stream).len() - 3;
            assert!(codec.decode(&hex(stream)[..cut], &mut out).is_err());
        }
    }

    #[test]
    fn dictionaries_beyond_the_memory_limit_are_refused() {
        // Python's `lzma.compress(b"zarrfs" * 3, preset=9)`: a 64 MiB dictionary decodes.
        let xz9 = "fd377a585a000004e6d6b446020021011c00000010cf58cce00011000b5d003d184abdf241b81f\
        8b40000000f8841e3e2e256e9d000127120676fa091fb6f37d010000000004595a";
        let codec = build(&CodecSpec::new("lzma", json!({"format": 1}))).unwrap();
        let mut out = [0u8; 18];
        assert_eq!(codec.decode(&hex(xz9), &mut out), Ok(18));
        assert_eq!(&out, b"zarrfszarrfszarrfs");
        // `lzma.compress(b"zarrfs" * 3, format=lzma.FORMAT_ALONE)` with its header's
        // dictionary made 3 GiB: Python decodes it without a limit, and refuses it with one.
        let alone = "5d000000c0ffffffffffffffff003d184abdf241b820ef5697ffff58940000";
        let err = codec.decode(&hex(alone), &mut out).unwrap_err();
        assert!(matches!(err, CodecError::Corrupt { .. }), "{err:?}");
        let mut patched = hex(alone);
        patched[1..5].copy_from_slice(&(1u32 << 23).to_le_bytes());
        assert_eq!(codec.decode(&patched, &mut out), Ok(18), "8 MiB");
        // A raw stream's dictionary comes from its configuration.
        let mut raw = |dict_size: u64| {
            let config = json!({"format": 3, "filters": [{"id": LZMA1, "preset": 6,
                "dict_size": dict_size, "lc": 0, "lp": 2, "pb": 2}]});
            let codec = build(&CodecSpec::new("lzma", config)).unwrap();
            codec.decode(&hex("003d184a58663b6f48b83bffffff7c400000"), &mut out)
        };
        assert_eq!(raw(64 << 20), Ok(18));
        let err = raw(1 << 30).unwrap_err();
        assert!(matches!(err, CodecError::Corrupt { .. }), "{err:?}");
    }

    #[test]
    fn refuses_bad_filter_chains() {
        for filters in [
            json!([]),
            json!([{"dist": 2}]),
            json!([{"id": 99}]),
            json!([{"id": 3, "dist": 0}]),
            json!([{"id": 33, "preset": 10}]),
            json!("lzma2"),
        ] {
            let spec = CodecSpec::new("lzma", json!({"format": 3, "filters": filters}));
            assert!(
                matches!(build(&spec), Err(CodecError::BadConfig { .. })),
                "{filters}"
            );
        }
    }
}
