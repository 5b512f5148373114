//! zarr-extensions' `scale_offset` array→array codec: stores `(x - offset) * scale`; decoding
//! computes `x / scale + offset` in the arithmetic of the array's own type (float16 and float32
//! rounded as those types round; integers divided exactly, with any remainder or overflow an
//! error, as the spec requires).

use super::scalar::{int_range, numeric, only_keys, scalar, wide};
use crate::codec::numtype::{Kind, NumType, Value};
use crate::codec::{ArrayToArray, ChunkRepr, CodecError};
use crate::meta::CodecSpec;
use half::f16;

/// The `scale_offset` codec for one element type.
pub(crate) struct ScaleOffset {
    name: String,
    ty: NumType,
    scale: Value,
    offset: Value,
}

impl ScaleOffset {
    /// From a config with optional `offset` (default 0) and `scale` (default 1), for chunks of
    /// `decoded` form; the encoded form is the same.
    pub fn build(spec: &CodecSpec, decoded: &ChunkRepr) -> Result<(Self, ChunkRepr), CodecError> {
        only_keys(spec, &["offset", "scale"])?;
        let ty = numeric(spec, NumType::from_data_type(&decoded.dtype, false))?;
        let get = |key: &str, default: i64| match spec.config.get(key) {
            None => scalar(spec, ty, &serde_json::json!(default)),
            Some(v) => scalar(spec, ty, v),
        };
        let (scale, offset) = (get("scale", 1)?, get("offset", 0)?);
        if scale.to_f64() == 0.0 {
            return Err(crate::codec::config::bad(spec, "'scale' must not be zero"));
        }
        let codec = ScaleOffset {
            name: spec.name.clone(),
            ty,
            scale,
            offset,
        };
        Ok((codec, decoded.clone()))
    }

    /// `(x - offset) * scale` in the arithmetic of the array's type (numpy's: float16 in
    /// float32, each result rounded); `None` when an integer result does not fit the type.
    fn encode_one(&self, x: Value) -> Option<Value> {
        if self.ty.kind == Kind::Float {
            let (x, s, o) = (x.to_f64(), self.scale.to_f64(), self.offset.to_f64());
            return Some(Value::F(match self.ty.size {
                2 => {
                    let d = f16::from_f32(x as f32 - o as f32);
                    f16::from_f32(d.to_f32() * s as f32).to_f64()
                }
                4 => f64::from((x as f32 - o as f32) * s as f32),
                _ => (x - o) * s,
            }));
        }
        let y = (wide(x)? - wide(self.offset)?).checked_mul(wide(self.scale)?)?;
        let (lo, hi) = int_range(self.ty);
        if y < lo || y > hi {
            return None;
        }
        Some(if self.ty.kind == Kind::Int {
            Value::I(y as i64)
        } else {
            Value::U(y as u64)
        })
    }

    fn decode_one(&self, x: Value) -> Result<Value, Undecodable> {
        if self.ty.kind == Kind::Float {
            let (x, s, o) = (x.to_f64(), self.scale.to_f64(), self.offset.to_f64());
            return Ok(Value::F(match self.ty.size {
                // numpy computes float16 operations in float32, rounding each result.
                2 => {
                    let q = f16::from_f32(x as f32 / s as f32);
                    f16::from_f32(q.to_f32() + o as f32).to_f64()
                }
                4 => f64::from((x as f32 / s as f32) + o as f32),
                _ => x / s + o,
            }));
        }
        let (x, s, o) = (
            wide(x).unwrap_or(0),
            wide(self.scale).unwrap_or(1),
            wide(self.offset).unwrap_or(0),
        );
        if x % s != 0 {
            return Err(Undecodable::Remainder { x, s });
        }
        let y = x / s + o;
        let (lo, hi) = int_range(self.ty);
        if y < lo || y > hi {
            return Err(Undecodable::Range { x, s, o });
        }
        Ok(if self.ty.kind == Kind::Int {
            Value::I(y as i64)
        } else {
            Value::U(y as u64)
        })
    }
}

/// Why a stored integer has no value of the array's type.
#[derive(Debug, thiserror::Error)]
enum Undecodable {
    /// `x` is not a multiple of the scale `s`.
    #[error("{x} is not a multiple of the scale {s}")]
    Remainder { x: i128, s: i128 },
    /// `x / s + o` is beyond the array type's range.
    #[error("{x} / {s} + {o} does not fit the array's type")]
    Range { x: i128, s: i128, o: i128 },
}

impl ArrayToArray for ScaleOffset {
    fn name(&self) -> &str {
        &self.name
    }

    fn elementwise(&self) -> bool {
        true
    }

    /// `(fill - offset) * scale` in the array type's arithmetic, as zarr-python encodes the
    /// fill value; an integer overflow is an error there too.
    fn encode_fill(&self, fill: &[u8]) -> Result<Vec<u8>, CodecError> {
        let mut out = vec![0; self.ty.size];
        let y = self.encode_one(self.ty.read(fill)).ok_or_else(|| {
            CodecError::bad_config(&self.name, "the fill value overflows its type")
        })?;
        self.ty.write(y, &mut out);
        Ok(out)
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<(), CodecError> {
        let n = self.ty.size;
        for (src, dst) in encoded.chunks_exact(n).zip(out.chunks_exact_mut(n)) {
            let y = self
                .decode_one(self.ty.read(src))
                .map_err(|e| CodecError::corrupt(&self.name, e.to_string()))?;
            self.ty.write(y, dst);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::DataType;
    use serde_json::json;

    fn codec(dtype: DataType, config: serde_json::Value) -> Result<ScaleOffset, CodecError> {
        let repr = ChunkRepr::new(vec![2], dtype);
        ScaleOffset::build(&CodecSpec::new("scale_offset", config), &repr).map(|(c, _)| c)
    }

    #[test]
    fn decodes_in_the_array_type() {
        let c = codec(DataType::Float(8), json!({"offset": 10, "scale": 100})).unwrap();
        let mut out = [0u8; 16];
        let input: Vec<u8> = [50.0f64, -123.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        c.decode(&input, &mut out).unwrap();
        assert_eq!(out[..8], 10.5f64.to_le_bytes());
        assert_eq!(out[8..], (-123.0f64 / 100.0 + 10.0).to_le_bytes());

        let c = codec(DataType::Int(2), json!({"offset": -3, "scale": 4})).unwrap();
        let mut out = [0u8; 4];
        c.decode(&[0, 0, 32, 0], &mut out).unwrap();
        assert_eq!(out, [0xfd, 0xff, 5, 0]);
        assert!(c.decode(&[1, 0, 0, 0], &mut out).is_err(), "remainder");
        let c = codec(DataType::UInt(1), json!({"offset": 200})).unwrap();
        assert!(c.decode(&[100, 0], &mut [0; 2]).is_err(), "overflow");
    }

    #[test]
    fn fills_are_encoded_as_zarr_python_encodes_them() {
        // numpy 2.5: (np.asarray(fill) - offset) * scale, in the array's type.
        let c = codec(DataType::Float(8), json!({"offset": 10, "scale": 100})).unwrap();
        assert_eq!(
            c.encode_fill(&10.5f64.to_le_bytes()).unwrap(),
            50f64.to_le_bytes()
        );
        let c = codec(DataType::Float(2), json!({"offset": -3.3, "scale": 0.1})).unwrap();
        let fill = crate::meta::f16_from_f64(0.1).to_le_bytes();
        assert_eq!(c.encode_fill(&fill).unwrap(), 0x3570u16.to_le_bytes());
        let c = codec(DataType::Float(4), json!({"offset": 0.1, "scale": 3})).unwrap();
        let out = c.encode_fill(&0.3f32.to_le_bytes()).unwrap();
        assert_eq!(out, 0x3f19999au32.to_le_bytes());
        let c = codec(DataType::Int(1), json!({"offset": -20, "scale": 2})).unwrap();
        assert_eq!(c.encode_fill(&[(-50i8) as u8]).unwrap(), [(-60i8) as u8]);
        assert!(c.encode_fill(&[100]).is_err(), "overflow");
        let c = codec(DataType::UInt(1), json!({"offset": 200})).unwrap();
        assert!(c.encode_fill(&[100]).is_err(), "below zero");
    }

    #[test]
    fn config_is_checked() {
        assert!(codec(DataType::Float(4), json!({"scale": 0})).is_err());
        assert!(codec(DataType::Float(4), json!({"scale": 2, "astype": "u1"})).is_err());
        assert!(codec(DataType::Int(4), json!({"scale": 0.5})).is_err());
        assert!(codec(DataType::Bool, json!({})).is_err());
        assert!(codec(DataType::Float(4), json!({"offset": "NaN"})).is_ok());
    }
}
