//! numcodecs `astype`: stores elements converted to `encode_dtype`; decoding converts them back
//! to `decode_dtype` with numpy's casting rules.

use super::{Conversion, Elements};
use crate::codec::config::{bad, get_numtype};
use crate::codec::numtype::NumType;
use crate::codec::{BytesToBytes, CodecError, Size, StoredElem};
use crate::meta::CodecSpec;

/// An elementwise numeric cast from `from` (encoded) to `to` (decoded): `astype`, and
/// `quantize` (whose decoding is only its `astype` → `dtype` cast).
pub(crate) struct Cast {
    name: String,
    types: Conversion,
}

impl Cast {
    /// A cast filter named `name`.
    pub fn new(name: &str, from: NumType, to: NumType) -> Self {
        Cast {
            name: name.to_string(),
            types: Conversion {
                dtype: to,
                astype: from,
            },
        }
    }

    /// `astype` from a config with `encode_dtype` and `decode_dtype` (default: the array's).
    pub fn build_astype(spec: &CodecSpec, elem: &StoredElem) -> Result<Self, CodecError> {
        let from = get_numtype(spec, "encode_dtype")?
            .ok_or_else(|| bad(spec, "missing 'encode_dtype'"))?;
        let to = match get_numtype(spec, "decode_dtype")? {
            Some(t) => t,
            None => NumType::from_data_type(&elem.dtype, elem.big_endian)
                .ok_or_else(|| bad(spec, "needs a numeric 'decode_dtype'"))?,
        };
        Ok(Cast::new(&spec.name, from, to))
    }
}

impl BytesToBytes for Cast {
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
        if self.types.astype == self.types.dtype {
            out[..encoded.len()].copy_from_slice(encoded);
        } else {
            let pairs = encoded
                .chunks_exact(es)
                .zip(out[..count * ds].chunks_exact_mut(ds));
            for (src, dst) in pairs {
                self.types.dtype.write(self.types.astype.read(src), dst);
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
        crate::codec::testutil::run_group("astype");
    }

    #[test]
    fn casts_and_defaults_decode_dtype() {
        let elem = StoredElem {
            dtype: DataType::Int(4),
            big_endian: false,
        };
        let spec = CodecSpec::new("astype", json!({"encode_dtype": "|i1"}));
        let c = Cast::build_astype(&spec, &elem).unwrap();
        let mut out = [0u8; 8];
        assert_eq!(c.decode(&[0xff, 2], &mut out), Ok(8));
        assert_eq!(out, [0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0]);
        assert!(c.decode(&[1, 2, 3], &mut out).is_err());
        let spec = CodecSpec::new("astype", json!({"decode_dtype": "<i4"}));
        assert!(matches!(
            Cast::build_astype(&spec, &elem),
            Err(CodecError::BadConfig { .. })
        ));
    }
}
