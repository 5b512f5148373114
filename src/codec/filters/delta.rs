//! numcodecs `delta`: the first element, then differences of neighbours. Decoding is numpy's
//! `cumsum(encoded, out=decoded)`: accumulation in the promoted type of `astype` and `dtype`
//! (integers wrap), each partial sum cast to `dtype`.

use super::{Numeric, Op};
use crate::codec::numtype::{to_f32, Kind, NumType, Value};
use crate::codec::{CodecError, StoredElem};
use crate::meta::{f16_from_f64, CodecSpec};
use half::f16;

/// `delta` from a config with `dtype` (default: the array's) and optional `astype`.
pub(crate) fn build(spec: &CodecSpec, elem: &StoredElem) -> Result<Numeric, CodecError> {
    Numeric::from_config(spec, elem, Op::Delta)
}

/// Decodes whole `astype` elements of `encoded` into the `dtype` elements of `out`.
pub(super) fn cumsum(astype: NumType, dtype: NumType, encoded: &[u8], out: &mut [u8]) {
    let (es, ds) = (astype.size, dtype.size);
    if astype == dtype && matches!(dtype.kind, Kind::Int | Kind::UInt) {
        let big = dtype.big_endian;
        match ds {
            1 => cumsum_int::<1>(encoded, out, big),
            2 => cumsum_int::<2>(encoded, out, big),
            4 => cumsum_int::<4>(encoded, out, big),
            _ => cumsum_int::<8>(encoded, out, big),
        }
        return;
    }
    let pairs = encoded.chunks_exact(es).zip(out.chunks_exact_mut(ds));
    let acc = NumType::promote(astype, dtype);
    match (acc.kind, acc.size) {
        (Kind::Float, 2) => {
            let mut sum = f16::ZERO;
            for (src, dst) in pairs {
                let x = f16_from_f64(astype.read(src).to_f64());
                sum = f16::from_f32(sum.to_f32() + x.to_f32());
                dtype.write(Value::F(sum.to_f64()), dst);
            }
        }
        (Kind::Float, 4) => {
            let mut sum = 0f32;
            for (src, dst) in pairs {
                sum += to_f32(astype.read(src));
                dtype.write(Value::F(f64::from(sum)), dst);
            }
        }
        (Kind::Float, _) => {
            let mut sum = 0f64;
            for (src, dst) in pairs {
                sum += astype.read(src).to_f64();
                dtype.write(Value::F(sum), dst);
            }
        }
        _ => {
            // Integer (or bool) accumulation wraps; the result modulo 2^64 is the same for
            // every width at least as wide as `dtype`.
            let mut sum = 0u64;
            for (src, dst) in pairs {
                let x = match astype.read(src) {
                    Value::I(v) => v as u64,
                    Value::U(v) => v,
                    Value::F(v) => v as i64 as u64,
                };
                sum = sum.wrapping_add(x);
                dtype.write(Value::U(sum), dst);
            }
        }
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
    use crate::codec::BytesToBytes;
    use crate::meta::DataType;
    use serde_json::json;

    fn delta(config: serde_json::Value) -> Numeric {
        let elem = StoredElem::le(DataType::Int(4));
        build(&CodecSpec::new("delta", config), &elem).unwrap()
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
        let elem = StoredElem::le(DataType::Int(4));
        assert!(matches!(
            build(&bad, &elem),
            Err(CodecError::BadConfig { .. })
        ));
    }
}
