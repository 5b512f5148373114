//! numcodecs `delta`: the first element, then differences of neighbours. Decoding is numpy's
//! `cumsum(encoded, out=decoded)`: accumulation in the promoted type of `astype` and `dtype`
//! (integers wrap), each partial sum cast to `dtype`.

use super::{Conversion, Elements};
use crate::codec::numtype::{Kind, NumType, Value};
use crate::codec::{BytesToBytes, CodecError, Size, StoredElem};
use crate::meta::CodecSpec;
use half::f16;

/// The `delta` filter.
pub(crate) struct Delta {
    name: String,
    types: Conversion,
}

impl Delta {
    /// From a config with `dtype` (default: the array's) and optional `astype`.
    pub fn build(spec: &CodecSpec, elem: &StoredElem) -> Result<Self, CodecError> {
        Ok(Delta {
            name: spec.name.clone(),
            types: Conversion::from_config(spec, elem)?,
        })
    }
}

impl BytesToBytes for Delta {
    fn name(&self) -> &str {
        &self.name
    }

    fn encoded_size(&self, decoded: Size) -> Size {
        self.types.encoded_size(decoded)
    }

    fn elements(&self) -> Option<Elements> {
        self.types.elements()
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        let (es, ds) = (self.types.astype.size, self.types.dtype.size);
        let count = self.types.count(&self.name, encoded.len(), out.len())?;
        let out = &mut out[..count * ds];
        if self.types.astype == self.types.dtype
            && matches!(self.types.dtype.kind, Kind::Int | Kind::UInt)
        {
            let big = self.types.dtype.big_endian;
            match ds {
                1 => cumsum_int::<1>(encoded, out, big),
                2 => cumsum_int::<2>(encoded, out, big),
                4 => cumsum_int::<4>(encoded, out, big),
                _ => cumsum_int::<8>(encoded, out, big),
            }
            return Ok(count * ds);
        }
        let pairs = encoded.chunks_exact(es).zip(out.chunks_exact_mut(ds));
        let acc = NumType::promote(self.types.astype, self.types.dtype);
        match (acc.kind, acc.size) {
            (Kind::Float, 2) => {
                let mut sum = f16::ZERO;
                for (src, dst) in pairs {
                    let x = f16::from_f64(self.types.astype.read(src).to_f64());
                    sum = f16::from_f32(sum.to_f32() + x.to_f32());
                    self.types.dtype.write(Value::F(sum.to_f64()), dst);
                }
            }
            (Kind::Float, 4) => {
                let mut sum = 0f32;
                for (src, dst) in pairs {
                    sum += crate::codec::numtype::to_f32(self.types.astype.read(src));
                    self.types.dtype.write(Value::F(f64::from(sum)), dst);
                }
            }
            (Kind::Float, _) => {
                let mut sum = 0f64;
                for (src, dst) in pairs {
                    sum += self.types.astype.read(src).to_f64();
                    self.types.dtype.write(Value::F(sum), dst);
                }
            }
            _ => {
                // Integer (or bool) accumulation wraps; the result modulo 2^64 is the same for
                // every width at least as wide as `dtype`.
                let mut sum = 0u64;
                for (src, dst) in pairs {
                    let x = match self.types.astype.read(src) {
                        Value::I(v) => v as u64,
                        Value::U(v) => v,
                        Value::F(v) => v as i64 as u64,
                    };
                    sum = sum.wrapping_add(x);
                    self.types.dtype.write(Value::U(sum), dst);
                }
            }
        }
        Ok(count * ds)
    }
}

/// Running sum of `N`-byte integers of one type: wrapping, so signedness does not matter.
fn cumsum_int<const N: usize>(encoded: &[u8], out: &mut [u8], big_endian: bool) {
    let mut sum = 0u64;
    for (src, dst) in encoded.chunks_exact(N).zip(out.chunks_exact_mut(N)) {
        let mut raw = [0u8; 8];
        raw[..N].copy_from_slice(src);
        if big_endian {
            raw[..N].reverse();
        }
        sum = sum.wrapping_add(u64::from_le_bytes(raw));
        let mut bytes = sum.to_le_bytes();
        if big_endian {
            bytes[..N].reverse();
        }
        dst.copy_from_slice(&bytes[..N]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::DataType;
    use serde_json::json;

    fn delta(config: serde_json::Value) -> Delta {
        let elem = StoredElem {
            dtype: DataType::Int(4),
            big_endian: false,
        };
        Delta::build(&CodecSpec::new("delta", config), &elem).unwrap()
    }

    #[test]
    fn fixtures() {
        crate::codec::testutil::run_group("delta");
    }

    #[test]
    fn narrow_astype_widens() {
        let d = delta(json!({"dtype": "<i2", "astype": "<i1"}));
        let mut out = [0u8; 6];
        assert_eq!(d.decode(&[100, 100, 100], &mut out), Ok(6));
        assert_eq!(out, [100, 0, 200, 0, 44, 1]);
    }

    #[test]
    fn defaults_to_array_dtype_and_checks_sizes() {
        let d = delta(json!({}));
        let mut out = [0u8; 8];
        assert_eq!(d.decode(&[1, 0, 0, 0, 2, 0, 0, 0], &mut out), Ok(8));
        assert_eq!(out, [1, 0, 0, 0, 3, 0, 0, 0]);
        assert!(matches!(
            d.decode(&[1, 2, 3], &mut out),
            Err(CodecError::Corrupt { .. })
        ));
        assert!(matches!(
            d.decode(&[0; 12], &mut out),
            Err(CodecError::Corrupt { .. })
        ));
        let bad = CodecSpec::new("delta", json!({"dtype": "<U2"}));
        let elem = StoredElem {
            dtype: DataType::Int(4),
            big_endian: false,
        };
        assert!(matches!(
            Delta::build(&bad, &elem),
            Err(CodecError::BadConfig { .. })
        ));
    }
}
