//! zarrs' `zfp` array→bytes codec (also named `zarrs.zfp` and
//! `https://codec.zarrs.dev/array_to_bytes/zfp`): a zfp stream without a header, its field the
//! chunk (C order, zfp's x axis last, 1 to 4 dimensions) and its mode the codec's
//! configuration: `expert` (`minbits`, `maxbits`, `maxprec`, `minexp`), `fixed_rate` (`rate`),
//! `fixed_precision` (`precision`), `fixed_accuracy` (`tolerance`, floating-point types only)
//! or `reversible`. Set up and decoded as zarrs does, by [`super::zfp_stream`].
//!
//! zfp codes 32- and 64-bit integers and floats; zarrs promotes the other integer types before
//! encoding and demotes after decoding, as libzfp's utility functions do: `int8` and `uint8`
//! (centred on 0x80) shifted left 23 bits into int32, `int16` and `uint16` (centred on 0x8000)
//! 15 bits, `uint32` and `uint64` clamped to the signed maximum; decoding shifts back and
//! clamps to the type's range (negative values to 0 for `uint32`/`uint64`). Datetimes and
//! timedeltas are coded as their int64 counts.

use super::zfp_stream::{self, FieldSource, Mode, Scalar};
use crate::codec::config::{bad, field, get_f64, get_str, get_usize};
use crate::codec::{ArrayToBytes, ChunkRepr, CodecError, Size};
use crate::meta::{CodecSpec, DataType};

/// How zarrs promotes an integer type zfp does not code to one it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Promoted {
    /// `int8`: `v << 23`.
    Int8,
    /// `uint8`: `(v - 0x80) << 23`.
    UInt8,
    /// `int16`: `v << 15`.
    Int16,
    /// `uint16`: `(v - 0x8000) << 15`.
    UInt16,
    /// `uint32`: clamped to `i32::MAX`.
    UInt32,
    /// `uint64`: clamped to `i64::MAX`.
    UInt64,
}

/// The `zfp` codec, bound to the chunk's shape and element type.
pub(crate) struct Zfp {
    name: String,
    mode: Mode,
    shape: Vec<usize>,
    scalar: Scalar,
    /// `None` when the elements are zfp's values.
    promoted: Option<Promoted>,
    /// The longest stream the mode writes for one chunk.
    max_len: usize,
}

impl Zfp {
    /// Builds a `zfp` decoder for chunks of `repr` form.
    pub fn build(spec: &CodecSpec, repr: &ChunkRepr) -> Result<Self, CodecError> {
        let (scalar, promoted) = match &repr.dtype {
            DataType::Float(4) => (Scalar::Float32, None),
            DataType::Float(8) => (Scalar::Float64, None),
            DataType::Int(4) => (Scalar::Int32, None),
            DataType::Int(8) | DataType::Time { .. } => (Scalar::Int64, None),
            DataType::Int(1) => (Scalar::Int32, Some(Promoted::Int8)),
            DataType::UInt(1) => (Scalar::Int32, Some(Promoted::UInt8)),
            DataType::Int(2) => (Scalar::Int32, Some(Promoted::Int16)),
            DataType::UInt(2) => (Scalar::Int32, Some(Promoted::UInt16)),
            DataType::UInt(4) => (Scalar::Int32, Some(Promoted::UInt32)),
            DataType::UInt(8) => (Scalar::Int64, Some(Promoted::UInt64)),
            other => {
                return Err(bad(
                    spec,
                    format!(
                        "zfp codes integers, floats and datetimes, not {}",
                        other.npy_descr()
                    ),
                ))
            }
        };
        let mode = mode(spec)?;
        if matches!(mode, Mode::FixedAccuracy(_))
            && !matches!(scalar, Scalar::Float32 | Scalar::Float64)
        {
            return Err(bad(
                spec,
                "fixed_accuracy mode codes floating-point types only",
            ));
        }
        let shape = repr
            .shape
            .iter()
            .map(|&d| usize::try_from(d).ok())
            .collect::<Option<Vec<_>>>()
            .filter(|s| (1..=4).contains(&s.len()))
            .ok_or_else(|| {
                bad(
                    spec,
                    format!("zfp codes 1 to 4 dimensions, not {:?}", repr.shape),
                )
            })?;
        repr.count(&spec.name)?;
        let layout = FieldSource::Known {
            mode,
            shape: &shape,
        };
        let max_len = zfp_stream::max_stream_len(&layout, scalar)
            .ok_or_else(|| bad(spec, "libzfp refuses the field or mode"))?;
        Ok(Zfp {
            name: spec.name.clone(),
            mode,
            shape,
            scalar,
            promoted,
            max_len,
        })
    }
}

/// The mode the configuration names, with its parameters.
fn mode(spec: &CodecSpec) -> Result<Mode, CodecError> {
    let u32_of = |key: &str| -> Result<u32, CodecError> {
        get_usize(spec, key)?
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| bad(spec, format!("needs '{key}', an integer below 2^32")))
    };
    let f64_of = |key: &str| -> Result<f64, CodecError> {
        get_f64(spec, key)?.ok_or_else(|| bad(spec, format!("needs the number '{key}'")))
    };
    Ok(match get_str(spec, "mode")? {
        Some("expert") => Mode::Expert {
            minbits: u32_of("minbits")?,
            maxbits: u32_of("maxbits")?,
            maxprec: u32_of("maxprec")?,
            minexp: field(spec, "minexp")
                .and_then(|v| v.as_i64())
                .and_then(|v| i32::try_from(v).ok())
                .ok_or_else(|| bad(spec, "needs 'minexp', a 32-bit integer"))?,
        },
        Some("fixed_rate") => Mode::FixedRate(f64_of("rate")?),
        Some("fixed_precision") => Mode::FixedPrecision(u32_of("precision")?),
        Some("fixed_accuracy") => Mode::FixedAccuracy(f64_of("tolerance")?),
        Some("reversible") => Mode::Reversible,
        other => {
            return Err(bad(
                spec,
                format!(
                    "'mode' must be expert, fixed_rate, fixed_precision, fixed_accuracy or \
                     reversible, not {other:?}"
                ),
            ))
        }
    })
}

impl Promoted {
    /// Bytes per element in the chunk.
    fn size(self) -> usize {
        match self {
            Promoted::Int8 | Promoted::UInt8 => 1,
            Promoted::Int16 | Promoted::UInt16 => 2,
            Promoted::UInt32 => 4,
            Promoted::UInt64 => 8,
        }
    }

    /// Writes the element zfp's value `v` demotes to, little-endian, into `out`.
    fn demote(self, v: i64, out: &mut [u8]) {
        // The clamps bound every value to its type: the casts cannot wrap.
        match self {
            Promoted::Int8 => out[0] = ((v >> 23).clamp(-0x80, 0x7f) as i8) as u8,
            Promoted::UInt8 => out[0] = ((v >> 23) + 0x80).clamp(0, 0xff) as u8,
            Promoted::Int16 => {
                out.copy_from_slice(&((v >> 15).clamp(-0x8000, 0x7fff) as i16).to_le_bytes())
            }
            Promoted::UInt16 => {
                out.copy_from_slice(&(((v >> 15) + 0x8000).clamp(0, 0xffff) as u16).to_le_bytes())
            }
            Promoted::UInt32 => out.copy_from_slice(&(v.max(0) as u32).to_le_bytes()),
            Promoted::UInt64 => out.copy_from_slice(&(v.max(0) as u64).to_le_bytes()),
        }
    }
}

impl ArrayToBytes for Zfp {
    fn name(&self) -> &str {
        &self.name
    }

    fn encoded_size(&self, _decoded: Size) -> Size {
        Size::AtMost(self.max_len)
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        let corrupt = |why: String| CodecError::corrupt(&self.name, why);
        let count: usize = self.shape.iter().product();
        let size = self.scalar.size();
        let elem_size = self.promoted.map_or(size, Promoted::size);
        if count.checked_mul(elem_size) != Some(out.len()) {
            return Err(corrupt(format!(
                "{count} elements of {elem_size} bytes, the chunk {} bytes",
                out.len()
            )));
        }
        let layout = FieldSource::Known {
            mode: self.mode,
            shape: &self.shape,
        };
        let values = zfp_stream::decode(encoded, &layout, self.scalar, count)
            .map_err(|e| corrupt(e.to_string()))?;
        let Some(promotion) = self.promoted else {
            zfp_stream::copy_le(&values, size, out);
            return Ok(out.len());
        };
        let mut promoted = vec![0u8; count * size];
        zfp_stream::copy_le(&values, size, &mut promoted);
        for (v, o) in promoted
            .chunks_exact(size)
            .zip(out.chunks_exact_mut(elem_size))
        {
            let v = match *v {
                [a, b, c, d] => i64::from(i32::from_le_bytes([a, b, c, d])),
                [a, b, c, d, e, f, g, h] => i64::from_le_bytes([a, b, c, d, e, f, g, h]),
                _ => 0,
            };
            promotion.demote(v, o);
        }
        Ok(out.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::array_to_bytes::zfp_stream::testutil::{check_damaged_streams, wild_chunk};
    use serde_json::{json, Value};

    /// A chunk zarrs wrote (by scripts/zarrs_writer).
    fn chunk(array: &str, key: &str) -> Vec<u8> {
        wild_chunk(&format!("zarrs/zarrs_zfp.zarr/{array}/c/{key}"))
    }

    fn build(config: Value, dtype: DataType, shape: &[u64]) -> Result<Zfp, CodecError> {
        Zfp::build(
            &CodecSpec::new("zfp", config),
            &ChunkRepr::new(shape.to_vec(), dtype),
        )
    }

    /// One chunk per mode and promotion, within the codec's size bound, decodes; damaged it
    /// fails or stays in bounds.
    #[test]
    fn damaged_streams_fail_or_decode_within_bounds() {
        for (array, key, config, dtype, shape) in [
            (
                "rate_f4_2d",
                "0/0",
                json!({"mode": "fixed_rate", "rate": 10.5}),
                DataType::Float(4),
                &[8, 16][..],
            ),
            (
                "precision_u1_2d",
                "1/0",
                json!({"mode": "fixed_precision", "precision": 10}),
                DataType::UInt(1),
                &[8, 8],
            ),
            (
                "accuracy_f4_4d",
                "0/0/0/0",
                json!({"mode": "fixed_accuracy", "tolerance": 0.01}),
                DataType::Float(4),
                &[3, 4, 5, 6],
            ),
            (
                "expert_f4_2d",
                "0/0",
                json!({"mode": "expert", "minbits": 100, "maxbits": 300, "maxprec": 18,
                       "minexp": -10}),
                DataType::Float(4),
                &[9, 11],
            ),
            (
                "reversible_i8_2d",
                "1/2",
                json!({"mode": "reversible"}),
                DataType::Int(8),
                &[4, 4],
            ),
            (
                "reversible_u2_1d",
                "2",
                json!({"mode": "reversible"}),
                DataType::UInt(2),
                &[30],
            ),
        ] {
            let good = chunk(array, key);
            let c = build(config, dtype.clone(), shape).unwrap();
            assert!(good.len() <= c.max_len, "{array}: bound {}", c.max_len);
            let len = shape.iter().product::<u64>() as usize * dtype.size();
            check_damaged_streams(&c, &good, len, array);
        }
    }

    /// A forged `minbits` with a short stream fails before anything is padded to its size.
    #[test]
    fn forged_minbits_is_refused() {
        let config = json!({"mode": "expert", "minbits": 4_000_000_000u32,
                            "maxbits": 4_000_000_000u32, "maxprec": 64, "minexp": -1074});
        let c = build(config, DataType::Float(8), &[4]).unwrap();
        let err = c.decode(&[0u8; 64], &mut [0u8; 32]).unwrap_err();
        assert!(err.to_string().contains("shorter than"), "{err}");
    }

    #[test]
    fn configurations_zarrs_cannot_write_are_refused() {
        let accuracy = json!({"mode": "fixed_accuracy", "tolerance": 0.1});
        assert!(build(accuracy.clone(), DataType::Int(4), &[4]).is_err());
        assert!(build(accuracy, DataType::Float(4), &[4]).is_ok());
        let reversible = json!({"mode": "reversible"});
        assert!(build(reversible.clone(), DataType::Bool, &[4]).is_err());
        assert!(build(reversible.clone(), DataType::Complex(8), &[4]).is_err());
        assert!(build(reversible.clone(), DataType::Float(4), &[1, 1, 1, 1, 4]).is_err());
        assert!(build(reversible, DataType::Float(4), &[]).is_err());
        for bad in [
            json!({"mode": "lossless"}),
            json!({}),
            json!({"mode": "fixed_rate"}),
            json!({"mode": "fixed_precision", "precision": -1}),
            json!({"mode": "expert", "minbits": 1, "maxbits": 2, "maxprec": 3}),
        ] {
            assert!(
                build(bad.clone(), DataType::Float(4), &[4]).is_err(),
                "{bad}"
            );
        }
        for name in [
            "zfp",
            "zarrs.zfp",
            "https://codec.zarrs.dev/array_to_bytes/zfp",
        ] {
            assert!(crate::codec::registry::is_array_to_bytes(name), "{name}");
        }
        assert!(!crate::codec::registry::is_array_to_bytes("zfpy"));
    }

    /// zarrs' demotion: shift back, clamp to the type's range.
    #[test]
    fn promoted_values_demote_as_zarrs_does() {
        let demote = |p: Promoted, v: i64| {
            let mut out = vec![0u8; p.size()];
            p.demote(v, &mut out);
            out
        };
        assert_eq!(demote(Promoted::Int8, -5 << 23), [(-5i8) as u8]);
        assert_eq!(demote(Promoted::Int8, (-5 << 23) - 1), [(-6i8) as u8]);
        assert_eq!(demote(Promoted::Int8, i64::from(i32::MAX)), [0x7f]);
        assert_eq!(demote(Promoted::UInt8, -(0x80 << 23)), [0]);
        assert_eq!(demote(Promoted::UInt8, i64::from(i32::MIN)), [0]);
        assert_eq!(demote(Promoted::UInt8, 0x7f << 23), [0xff]);
        assert_eq!(demote(Promoted::Int16, -(3 << 15)), (-3i16).to_le_bytes());
        assert_eq!(demote(Promoted::UInt16, 0), 0x8000u16.to_le_bytes());
        assert_eq!(demote(Promoted::UInt32, -1), [0; 4]);
        assert_eq!(demote(Promoted::UInt32, 7), 7u32.to_le_bytes());
        assert_eq!(
            demote(Promoted::UInt64, i64::MAX),
            (i64::MAX as u64).to_le_bytes()
        );
        assert_eq!(demote(Promoted::UInt64, i64::MIN), [0; 8]);
    }
}
