//! numcodecs `astype`: stores elements converted to `encode_dtype`; decoding converts them back
//! to `decode_dtype` with numpy's casting rules.

use super::config::{bad, get_numtype};
use super::filter::{elementwise_count, Filter};
use super::numtype::NumType;
use super::{CodecError, StoredElem};
use crate::meta::{CodecSpec, DataType};

/// An elementwise numeric cast from `from` (encoded) to `to` (decoded): `astype`, and
/// `quantize` (whose decoding is only its `astype` → `dtype` cast).
pub(crate) struct Cast {
    name: String,
    from: NumType,
    to: NumType,
}

impl Cast {
    /// A cast filter named `name`.
    pub fn new(name: &str, from: NumType, to: NumType) -> Self {
        Cast {
            name: name.to_string(),
            from,
            to,
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

impl Filter for Cast {
    fn name(&self) -> &str {
        &self.name
    }

    fn decoded_dtype(&self) -> Option<DataType> {
        Some(self.to.data_type())
    }

    fn encoded_len(&self, decoded_len: usize) -> Option<usize> {
        decoded_len
            .is_multiple_of(self.to.size)
            .then(|| decoded_len / self.to.size * self.from.size)
    }

    fn encoded_dtype(&self, _decoded: &DataType) -> DataType {
        self.from.data_type()
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        let (es, ds) = (self.from.size, self.to.size);
        let count = elementwise_count(&self.name, encoded.len(), es, ds, out.len())?;
        if self.from == self.to {
            out[..encoded.len()].copy_from_slice(encoded);
        } else {
            let pairs = encoded
                .chunks_exact(es)
                .zip(out[..count * ds].chunks_exact_mut(ds));
            for (src, dst) in pairs {
                self.to.write(self.from.read(src), dst);
            }
        }
        Ok(count * ds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
