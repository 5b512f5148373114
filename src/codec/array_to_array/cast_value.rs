//! zarr-extensions' `cast_value` array→array codec: elements stored converted to `data_type`.
//! Decoding converts each stored value back to the array's type by the spec's ordered rules:
//! `scalar_map.decode` first, then an exact conversion, then `rounding` (`nearest-even`,
//! `towards-zero`, `towards-positive`, `towards-negative`, `nearest-away`) and `out_of_range`
//! (`clamp`, `wrap`, or absent: an error). NaN and infinities propagate between float types
//! and are an error into integers unless mapped.

use super::scalar::{int_range, numeric, only_keys, scalar, wide};
use crate::codec::config::{bad, get_str};
use crate::codec::numtype::{float_bits, float_value, Kind, NumType, Value};
use crate::codec::{ArrayToArray, ChunkRepr, CodecError};
use crate::meta::CodecSpec;
use half::f16;

/// How a value between two representable ones is rounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rounding {
    NearestEven,
    TowardsZero,
    TowardsPositive,
    TowardsNegative,
    NearestAway,
}

/// What happens to a value beyond the target's range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OutOfRange {
    Error,
    Clamp,
    Wrap,
}

/// The `cast_value` codec: stored as `stored`, decoded into `array`.
pub(crate) struct CastValue {
    name: String,
    stored: NumType,
    array: NumType,
    rounding: Rounding,
    out_of_range: OutOfRange,
    /// `scalar_map.decode`: a stored value and the array element it decodes to (first wins).
    decode_map: Vec<(Value, Vec<u8>)>,
}

impl CastValue {
    /// From a config with `data_type` and optional `rounding`, `out_of_range`, `scalar_map`,
    /// for chunks of `decoded` form; returns the codec and the stored form.
    pub fn build(spec: &CodecSpec, decoded: &ChunkRepr) -> Result<(Self, ChunkRepr), CodecError> {
        only_keys(
            spec,
            &["data_type", "rounding", "out_of_range", "scalar_map"],
        )?;
        let array = numeric(spec, NumType::from_data_type(&decoded.dtype, false))?;
        let type_name = match spec.config.get("data_type") {
            Some(serde_json::Value::String(s)) => s.as_str(),
            Some(serde_json::Value::Object(o)) => o
                .get("name")
                .and_then(serde_json::Value::as_str)
                .unwrap_or(""),
            _ => return Err(bad(spec, "missing 'data_type'")),
        };
        let stored = numeric(spec, NumType::from_v3_name(type_name)).map_err(|_| {
            bad(
                spec,
                format!("casts to the integer and float types of Zarr v3, not {type_name:?}"),
            )
        })?;
        let rounding = match get_str(spec, "rounding")?.unwrap_or("nearest-even") {
            "nearest-even" => Rounding::NearestEven,
            "towards-zero" => Rounding::TowardsZero,
            "towards-positive" => Rounding::TowardsPositive,
            "towards-negative" => Rounding::TowardsNegative,
            "nearest-away" => Rounding::NearestAway,
            other => return Err(bad(spec, format!("unknown rounding {other:?}"))),
        };
        let out_of_range = match get_str(spec, "out_of_range")? {
            None => OutOfRange::Error,
            Some("clamp") => OutOfRange::Clamp,
            Some("wrap") if stored.kind != Kind::Float => OutOfRange::Wrap,
            Some(other) => return Err(bad(spec, format!("out_of_range {other:?} not allowed"))),
        };
        let mut decode_map = Vec::new();
        let entries = spec.config.pointer("/scalar_map/decode");
        for entry in entries.and_then(|e| e.as_array()).into_iter().flatten() {
            let pair = entry
                .as_array()
                .filter(|p| p.len() == 2)
                .ok_or_else(|| bad(spec, format!("scalar_map entry {entry} is not a pair")))?;
            let key = scalar(spec, stored, &pair[0])?;
            let mut value = vec![0; array.size];
            array.write(scalar(spec, array, &pair[1])?, &mut value);
            if !decode_map.iter().any(|(k, _)| same(*k, key)) {
                decode_map.push((key, value));
            }
        }
        let codec = CastValue {
            name: spec.name.clone(),
            stored,
            array,
            rounding,
            out_of_range,
            decode_map,
        };
        let encoded = ChunkRepr::new(decoded.shape.clone(), stored.data_type());
        Ok((codec, encoded))
    }

    /// Writes `v` converted to the array's type into `out`.
    fn convert(&self, v: Value, out: &mut [u8]) -> Result<(), Unconvertible> {
        if let Some((_, bytes)) = self.decode_map.iter().find(|(k, _)| same(*k, v)) {
            out.copy_from_slice(bytes);
            return Ok(());
        }
        match self.array.kind {
            Kind::Float => {
                // An integer is rounded once, exactly, to the target's precision: through an
                // f64 first, one above 2^53 would be rounded twice.
                let f = match wide(v) {
                    Some(i) => round_int(i, mantissa_digits(self.array.size), self.rounding),
                    None => v.to_f64(),
                };
                let bits = to_float(f, self.array.size, self.rounding)
                    .or_else(|| match self.out_of_range {
                        OutOfRange::Error => None,
                        _ => Some(float_bits(
                            self.array.size,
                            v.to_f64().signum() * f64::INFINITY,
                        )),
                    })
                    .ok_or(Unconvertible::FloatRange(v))?;
                self.array.write_bits(bits, out);
            }
            _ => {
                let i = match (wide(v), v) {
                    (Some(i), _) => i,
                    (None, Value::F(f)) if f.is_finite() => round(f, self.rounding) as i128,
                    _ => return Err(Unconvertible::NotInteger(v)),
                };
                let (lo, hi) = int_range(self.array);
                let i = match self.out_of_range {
                    _ if (lo..=hi).contains(&i) => i,
                    OutOfRange::Clamp => i.clamp(lo, hi),
                    OutOfRange::Wrap => {
                        let span = hi - lo + 1;
                        (i - lo).rem_euclid(span) + lo
                    }
                    OutOfRange::Error => return Err(Unconvertible::IntRange(i)),
                };
                self.array.write_bits(i as u64, out);
            }
        }
        Ok(())
    }
}

/// Why a stored value has no value of the array's type.
#[derive(Debug, thiserror::Error)]
enum Unconvertible {
    /// A value beyond a float type's range (`out_of_range` absent).
    #[error("{0:?} is beyond the range of the array's type")]
    FloatRange(Value),
    /// NaN or an infinity into an integer type.
    #[error("{0:?} has no integer value and no scalar_map entry")]
    NotInteger(Value),
    /// An integer beyond the integer type's range (`out_of_range` absent).
    #[error("{0} is beyond the range of the array's type")]
    IntRange(i128),
}

/// True when a `scalar_map` key matches a value (NaN matches NaN).
fn same(key: Value, v: Value) -> bool {
    match (key, v) {
        (Value::F(a), Value::F(b)) => a == b || (a.is_nan() && b.is_nan()),
        _ => match (wide(key), wide(v)) {
            (Some(a), Some(b)) => a == b,
            _ => key.to_f64() == v.to_f64(),
        },
    }
}

/// `f` rounded to an integer.
fn round(f: f64, mode: Rounding) -> f64 {
    match mode {
        Rounding::NearestEven => f.round_ties_even(),
        Rounding::TowardsZero => f.trunc(),
        Rounding::TowardsPositive => f.ceil(),
        Rounding::TowardsNegative => f.floor(),
        Rounding::NearestAway => f.round(),
    }
}

/// The significand bits (implicit bit included) of the float of `size` bytes.
fn mantissa_digits(size: usize) -> u32 {
    match size {
        2 => f16::MANTISSA_DIGITS,
        4 => f32::MANTISSA_DIGITS,
        _ => f64::MANTISSA_DIGITS,
    }
}

/// `i` rounded by `mode` to `digits` significant bits, exactly (no intermediate float); the
/// result has at most 53 significant bits and so is exact as an `f64`.
fn round_int(i: i128, digits: u32, mode: Rounding) -> f64 {
    let (magnitude, negative) = (i.unsigned_abs(), i < 0);
    let shift = (u128::BITS - magnitude.leading_zeros()).saturating_sub(digits);
    let unit = 1u128 << shift;
    let (rest, half) = (magnitude & (unit - 1), unit >> 1);
    let down = magnitude - rest;
    let up = match mode {
        _ if rest == 0 => false,
        Rounding::NearestEven => rest > half || (rest == half && (magnitude >> shift) & 1 == 1),
        Rounding::NearestAway => rest >= half,
        Rounding::TowardsZero => false,
        Rounding::TowardsPositive => !negative,
        Rounding::TowardsNegative => negative,
    };
    let rounded = (if up { down + unit } else { down }) as f64;
    if negative {
        -rounded
    } else {
        rounded
    }
}

/// `2^MAX_EXP` of the float of `size` bytes: the value after its largest finite one when its
/// exponent is unbounded.
fn beyond_max(size: usize) -> f64 {
    2f64.powi(match size {
        2 => f16::MAX_EXP,
        4 => f32::MAX_EXP,
        _ => f64::MAX_EXP,
    })
}

/// The bits of `f` rounded by `mode` to the float of `size` bytes; `None` when the rounded
/// value is beyond that type's finite range. Rounding comes before the range check
/// (zarr-extensions: rounding "MUST be applied before the `out_of_range` transformation"):
/// `f` is rounded to the type's precision as if its exponent were unbounded, as cast-value-rs
/// does, so 65519 rounds to float16's 65504 and 65520 (nearest) or 65536 (towards zero) is out.
fn to_float(f: f64, size: usize, mode: Rounding) -> Option<u64> {
    let near = float_bits(size, f);
    if !f.is_finite() || float_value(size, near) == f {
        return Some(near);
    }
    let (a, negative) = (f.abs(), f < 0.0);
    let beyond = beyond_max(size);
    if a >= beyond {
        return None;
    }
    // The magnitudes either side of `a`; `inf` stands for `beyond`.
    let inf = float_bits(size, f64::INFINITY);
    let mag = float_bits(size, a);
    let (down, up) = if float_value(size, mag) < a {
        (mag, mag + 1)
    } else {
        (mag - 1, mag)
    };
    let up_value = if up == inf {
        beyond
    } else {
        float_value(size, up)
    };
    let mid = (float_value(size, down) + up_value) / 2.0;
    let to_up = match mode {
        Rounding::TowardsZero => false,
        Rounding::TowardsPositive => !negative,
        Rounding::TowardsNegative => negative,
        Rounding::NearestEven if a == mid => down & 1 == 1,
        Rounding::NearestAway if a == mid => true,
        Rounding::NearestEven | Rounding::NearestAway => a > mid,
    };
    let bits = if to_up { up } else { down };
    let sign = 1u64 << (8 * size - 1);
    (bits != inf).then_some(if negative { bits | sign } else { bits })
}

impl ArrayToArray for CastValue {
    fn name(&self) -> &str {
        &self.name
    }

    fn elementwise(&self) -> bool {
        true
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<(), CodecError> {
        let (es, ds) = (self.stored.size, self.array.size);
        for (src, dst) in encoded.chunks_exact(es).zip(out.chunks_exact_mut(ds)) {
            self.convert(self.stored.read(src), dst)
                .map_err(|e| CodecError::corrupt(&self.name, e.to_string()))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::DataType;
    use serde_json::json;

    fn codec(array: DataType, config: serde_json::Value) -> Result<CastValue, CodecError> {
        let repr = ChunkRepr::new(vec![1], array);
        CastValue::build(&CodecSpec::new("cast_value", config), &repr).map(|(c, _)| c)
    }

    fn decode(c: &CastValue, stored: &[u8]) -> Result<Vec<u8>, CodecError> {
        let mut out = vec![0; stored.len() / c.stored.size * c.array.size];
        c.decode(stored, &mut out).map(|()| out)
    }

    #[test]
    fn scalar_map_then_exact_values() {
        let c = codec(
            DataType::Float(8),
            json!({"data_type": "int16", "scalar_map": {"decode": [[-32768, "NaN"], [-32768, 1]]}}),
        )
        .unwrap();
        let out = decode(&c, &[0x00, 0x80, 0x05, 0x00]).unwrap();
        assert!(f64::from_le_bytes(out[..8].try_into().unwrap()).is_nan());
        assert_eq!(out[8..], 5f64.to_le_bytes());
    }

    #[test]
    fn rounding_and_range_into_integers() {
        let f = |v: f32| v.to_le_bytes();
        let zero = codec(
            DataType::Int(1),
            json!({"data_type": "float32", "rounding": "towards-zero", "out_of_range": "clamp"}),
        )
        .unwrap();
        assert_eq!(decode(&zero, &f(-1.9)).unwrap(), [0xff]);
        assert_eq!(decode(&zero, &f(200.0)).unwrap(), [127]);
        assert!(decode(&zero, &f(f32::NAN)).is_err());
        let wrap = codec(
            DataType::Int(1),
            json!({"data_type": "int16", "out_of_range": "wrap"}),
        )
        .unwrap();
        assert_eq!(decode(&wrap, &200i16.to_le_bytes()).unwrap(), [200]);
        assert_eq!(decode(&wrap, &(-129i16).to_le_bytes()).unwrap(), [127]);
        let clamp = codec(
            DataType::UInt(1),
            json!({"data_type": "float32", "out_of_range": "clamp", "rounding": "nearest-away"}),
        )
        .unwrap();
        assert_eq!(decode(&clamp, &f(2.5)).unwrap(), [3]);
        assert_eq!(decode(&clamp, &f(-7.0)).unwrap(), [0]);
        let strict = codec(DataType::UInt(1), json!({"data_type": "int16"})).unwrap();
        assert!(decode(&strict, &[0, 1]).is_err());
        assert_eq!(decode(&strict, &[255, 0]).unwrap(), [255]);
    }

    #[test]
    fn rounding_into_narrower_floats() {
        let third = (1.0f64 / 3.0).to_le_bytes();
        let up = codec(
            DataType::Float(4),
            json!({"data_type": "float64", "rounding": "towards-positive"}),
        )
        .unwrap();
        let got = f32::from_le_bytes(decode(&up, &third).unwrap().try_into().unwrap());
        assert!(f64::from(got) > 1.0 / 3.0 && got.next_down() < (1.0 / 3.0) as f32 + 1e-9);
        let strict = codec(DataType::Float(2), json!({"data_type": "float64"})).unwrap();
        assert!(decode(&strict, &1e6f64.to_le_bytes()).is_err());
        let clamp = codec(
            DataType::Float(2),
            json!({"data_type": "float64", "out_of_range": "clamp"}),
        )
        .unwrap();
        assert_eq!(
            decode(&clamp, &(-1e6f64).to_le_bytes()).unwrap(),
            [0x00, 0xfc]
        );
    }

    #[test]
    fn large_integers_round_once() {
        // Expected values: cast-value-rs 0.5.1 (zarr-python's cast_value backend).
        let f64_zero = codec(
            DataType::Float(8),
            json!({"data_type": "int64", "rounding": "towards-zero"}),
        )
        .unwrap();
        let stored = [9_007_199_254_740_995i64, -9_007_199_254_740_995];
        let got = decode(&f64_zero, &stored.map(i64::to_le_bytes).concat()).unwrap();
        let want = [9_007_199_254_740_994f64, -9_007_199_254_740_994.0];
        assert_eq!(got, want.map(f64::to_le_bytes).concat());
        let f32_even = codec(DataType::Float(4), json!({"data_type": "int64"})).unwrap();
        let v = (1i64 << 60) + (1 << 36) + 1;
        let got = decode(&f32_even, &v.to_le_bytes()).unwrap();
        assert_eq!(got, (((1u64 << 60) + (1 << 37)) as f32).to_le_bytes());
        let f32_zero = codec(
            DataType::Float(4),
            json!({"data_type": "uint64", "rounding": "towards-zero"}),
        )
        .unwrap();
        let got = decode(&f32_zero, &u64::MAX.to_le_bytes()).unwrap();
        assert_eq!(got, (((1u64 << 40) * ((1 << 24) - 1)) as f32).to_le_bytes());
        let f16_away = codec(
            DataType::Float(2),
            json!({"data_type": "uint64", "rounding": "nearest-away"}),
        )
        .unwrap();
        assert_eq!(
            decode(&f16_away, &2049u64.to_le_bytes()).unwrap(),
            f16::from_f64(2050.0).to_le_bytes()
        );
        assert!(decode(&f16_away, &65520u64.to_le_bytes()).is_err());
    }

    #[test]
    fn rounding_comes_before_the_range() {
        // Expected values: cast-value-rs 0.5.1 (zarr-python's cast_value backend).
        let h = |v: f64| f16::from_f64(v).to_le_bytes().to_vec();
        let from_f64 = |v: &[f64]| v.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>();
        let f16_codec = |rounding: &str, out_of_range: Option<&str>| {
            let mut config = json!({"data_type": "float64", "rounding": rounding});
            if let Some(o) = out_of_range {
                config["out_of_range"] = json!(o);
            }
            codec(DataType::Float(2), config).unwrap()
        };
        let even = f16_codec("nearest-even", None);
        assert_eq!(
            decode(&even, &from_f64(&[65510.0, 65519.0])).unwrap(),
            [h(65504.0), h(65504.0)].concat()
        );
        assert!(decode(&even, &from_f64(&[65520.0])).is_err());
        let even_clamp = f16_codec("nearest-even", Some("clamp"));
        assert_eq!(
            decode(&even_clamp, &from_f64(&[65520.0, -65520.0])).unwrap(),
            [h(f64::INFINITY), h(f64::NEG_INFINITY)].concat()
        );
        let zero = f16_codec("towards-zero", None);
        assert_eq!(
            decode(&zero, &from_f64(&[65535.0, -65535.0])).unwrap(),
            [h(65504.0), h(-65504.0)].concat()
        );
        assert!(decode(&zero, &from_f64(&[65536.0])).is_err());
        assert!(decode(&zero, &from_f64(&[70000.0])).is_err());
        let up = f16_codec("towards-positive", None);
        assert_eq!(decode(&up, &from_f64(&[-65535.0])).unwrap(), h(-65504.0));
        assert!(decode(&up, &from_f64(&[65510.0])).is_err());
        let down = f16_codec("towards-negative", None);
        assert_eq!(decode(&down, &from_f64(&[65535.0])).unwrap(), h(65504.0));
        assert!(decode(&down, &from_f64(&[-65505.0])).is_err());
        let away = f16_codec("nearest-away", Some("clamp"));
        assert_eq!(
            decode(&away, &from_f64(&[65519.0, 65520.0, 2.0f64.powi(-25)])).unwrap(),
            [h(65504.0), h(f64::INFINITY), h(2.0f64.powi(-24))].concat()
        );
        // Beyond float32's range: out of range whichever the rounding (cast-value-rs errs
        // without out_of_range and gives ±inf with clamp).
        let f32_zero = codec(
            DataType::Float(4),
            json!({"data_type": "float64", "rounding": "towards-zero"}),
        )
        .unwrap();
        assert!(decode(&f32_zero, &from_f64(&[1e39])).is_err());
        assert_eq!(
            decode(&f32_zero, &from_f64(&[-1e-50])).unwrap(),
            (-0f32).to_le_bytes()
        );
        let f32_clamp = codec(
            DataType::Float(4),
            json!({"data_type": "float64", "rounding": "towards-zero", "out_of_range": "clamp"}),
        )
        .unwrap();
        assert_eq!(
            decode(&f32_clamp, &from_f64(&[1e39])).unwrap(),
            f32::INFINITY.to_le_bytes()
        );
    }

    #[test]
    fn config_is_checked() {
        for config in [
            json!({}),
            json!({"data_type": "<i2"}),
            json!({"data_type": "i4"}),
            json!({"data_type": "f8"}),
            json!({"data_type": "half"}),
            json!({"data_type": "d"}),
            json!({"data_type": "int12"}),
            json!({"data_type": {"name": "float20"}}),
            json!({"data_type": "bool"}),
            json!({"data_type": "float16", "out_of_range": "wrap"}),
            json!({"data_type": "int8", "extra": 1}),
            json!({"data_type": "int8", "rounding": "up"}),
        ] {
            assert!(
                codec(DataType::Float(4), config.clone()).is_err(),
                "{config}"
            );
        }
    }
}
