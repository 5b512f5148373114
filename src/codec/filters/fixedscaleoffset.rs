//! numcodecs `fixedscaleoffset`: stores `round((x - offset) * scale)` as `astype`. Decoding is
//! numpy's `(encoded / scale + offset).astype(dtype)`, computed in `astype`'s float type when it
//! is a float (numpy 2 keeps Python scalars weak) and in float64 otherwise.

use super::{Conversion, Elements};
use crate::codec::config::{bad, get_f64};
use crate::codec::numtype::{to_f32, Kind, Value};
use crate::codec::{BytesToBytes, CodecError, Size, StoredElem};
use crate::meta::CodecSpec;
use half::f16;

/// The `fixedscaleoffset` filter.
pub(crate) struct FixedScaleOffset {
    name: String,
    scale: f64,
    offset: f64,
    types: Conversion,
}

impl FixedScaleOffset {
    /// From a config with `scale`, `offset`, `dtype` (default: the array's) and `astype`.
    pub fn build(spec: &CodecSpec, elem: &StoredElem) -> Result<Self, CodecError> {
        let scale = get_f64(spec, "scale")?.ok_or_else(|| bad(spec, "missing 'scale'"))?;
        let offset = get_f64(spec, "offset")?.ok_or_else(|| bad(spec, "missing 'offset'"))?;
        Ok(FixedScaleOffset {
            name: spec.name.clone(),
            scale,
            offset,
            types: Conversion::from_config(spec, elem)?,
        })
    }
}

impl BytesToBytes for FixedScaleOffset {
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
        let pairs = encoded
            .chunks_exact(es)
            .zip(out[..count * ds].chunks_exact_mut(ds));
        match (self.types.astype.kind, self.types.astype.size) {
            (Kind::Float, 2) => {
                let scale = f16::from_f64(self.scale).to_f32();
                let offset = f16::from_f64(self.offset).to_f32();
                for (src, dst) in pairs {
                    let x = f16::from_f64(self.types.astype.read(src).to_f64()).to_f32();
                    let q = f16::from_f32(x / scale).to_f32();
                    let y = f16::from_f32(q + offset);
                    self.types.dtype.write(Value::F(y.to_f64()), dst);
                }
            }
            (Kind::Float, 4) => {
                let (scale, offset) = (self.scale as f32, self.offset as f32);
                for (src, dst) in pairs {
                    let y = to_f32(self.types.astype.read(src)) / scale + offset;
                    self.types.dtype.write(Value::F(f64::from(y)), dst);
                }
            }
            _ => {
                for (src, dst) in pairs {
                    let y = self.types.astype.read(src).to_f64() / self.scale + self.offset;
                    self.types.dtype.write(Value::F(y), dst);
                }
            }
        }
        Ok(count * ds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::DataType;
    use serde_json::json;

    #[test]
    fn fixtures() {
        crate::codec::testutil::run_group("fixedscaleoffset");
    }

    #[test]
    fn decodes_and_requires_scale_and_offset() {
        let elem = StoredElem {
            dtype: DataType::Float(8),
            big_endian: false,
        };
        let spec = CodecSpec::new(
            "fixedscaleoffset",
            json!({"scale": 10, "offset": 1000, "astype": "u1"}),
        );
        let f = FixedScaleOffset::build(&spec, &elem).unwrap();
        let mut out = [0u8; 16];
        assert_eq!(f.decode(&[0, 5], &mut out), Ok(16));
        assert_eq!(&out[8..], &1000.5f64.to_le_bytes());
        assert!(f.decode(&[0, 5, 6], &mut out).is_err());
        let spec = CodecSpec::new("fixedscaleoffset", json!({"offset": 1}));
        assert!(matches!(
            FixedScaleOffset::build(&spec, &elem),
            Err(CodecError::BadConfig { .. })
        ));
    }
}
