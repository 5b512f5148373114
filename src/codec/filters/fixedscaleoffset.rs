//! numcodecs `fixedscaleoffset`: stores `round((x - offset) * scale)` as `astype`. Decoding is
//! numpy's `(encoded / scale + offset).astype(dtype)`, computed in `astype`'s float type when it
//! is a float (numpy 2 keeps Python scalars weak) and in float64 otherwise.

use super::{Numeric, Op};
use crate::codec::config::{bad, get_f64};
use crate::codec::numtype::{to_f32, Kind, NumType, Value};
use crate::codec::{CodecError, StoredElem};
use crate::meta::{f16_from_f64, CodecSpec};
use half::f16;

/// `fixedscaleoffset` from a config with `scale`, `offset`, `dtype` (default: the array's) and
/// `astype`.
pub(crate) fn build(spec: &CodecSpec, elem: &StoredElem) -> Result<Numeric, CodecError> {
    let scale = get_f64(spec, "scale")?.ok_or_else(|| bad(spec, "missing 'scale'"))?;
    let offset = get_f64(spec, "offset")?.ok_or_else(|| bad(spec, "missing 'offset'"))?;
    Numeric::from_config(spec, elem, Op::ScaleOffset { scale, offset })
}

/// Decodes whole `astype` elements of `encoded` into the `dtype` elements of `out`.
pub(super) fn unscale(
    astype: NumType,
    dtype: NumType,
    (scale, offset): (f64, f64),
    encoded: &[u8],
    out: &mut [u8],
) {
    let pairs = encoded
        .chunks_exact(astype.size)
        .zip(out.chunks_exact_mut(dtype.size));
    match (astype.kind, astype.size) {
        (Kind::Float, 2) => {
            let scale = f16_from_f64(scale).to_f32();
            let offset = f16_from_f64(offset).to_f32();
            for (src, dst) in pairs {
                let x = f16_from_f64(astype.read(src).to_f64()).to_f32();
                let q = f16::from_f32(x / scale).to_f32();
                let y = f16::from_f32(q + offset);
                dtype.write(Value::F(y.to_f64()), dst);
            }
        }
        (Kind::Float, 4) => {
            let (scale, offset) = (scale as f32, offset as f32);
            for (src, dst) in pairs {
                let y = to_f32(astype.read(src)) / scale + offset;
                dtype.write(Value::F(f64::from(y)), dst);
            }
        }
        _ => {
            for (src, dst) in pairs {
                let y = astype.read(src).to_f64() / scale + offset;
                dtype.write(Value::F(y), dst);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::BytesToBytes;
    use crate::meta::DataType;
    use serde_json::json;

    #[test]
    fn decodes_and_requires_scale_and_offset() {
        let elem = StoredElem::le(DataType::Float(8));
        let spec = CodecSpec::new(
            "fixedscaleoffset",
            json!({"scale": 10, "offset": 1000, "astype": "u1"}),
        );
        let f = build(&spec, &elem).unwrap();
        let mut out = [0u8; 16];
        assert_eq!(f.decode(&[0, 5], &mut out), Ok(16));
        assert_eq!(&out[8..], &1000.5f64.to_le_bytes());
        assert!(f.decode(&[0, 5, 6], &mut out).is_err());
        let spec = CodecSpec::new("fixedscaleoffset", json!({"offset": 1}));
        assert!(matches!(
            build(&spec, &elem),
            Err(CodecError::BadConfig { .. })
        ));
    }
}
