//! numcodecs `zfpy`: a zfp stream with its full header (as `zfpy.compress_numpy` writes it), in
//! any of zfp's modes (fixed rate, precision, accuracy, reversible), for `int32`, `int64`,
//! `float32` and `float64` arrays of 1 to 4 dimensions. Decoded by libzfp (built by the
//! `zfp-sys-cc` crate, through [`super::zfp_stream`], which also bounds what it reads). zfpy
//! stores a C-order array with zfp's x axis last, so the decoded field is the chunk in C order.

use super::zfp_stream::{self, FieldSource, Scalar};
use crate::codec::config::bad;
use crate::codec::{ArrayToBytes, BytesToBytes, CodecError, Size};
use crate::meta::{CodecSpec, DataType};

/// The `zfpy` codec, bound to the array's element type.
pub(crate) struct Zfpy {
    name: String,
    /// The zfp scalar type the elements must have.
    ty: Scalar,
}

impl Zfpy {
    /// Builds a `zfpy` decoder for elements of `dtype`.
    pub fn build(spec: &CodecSpec, dtype: &DataType) -> Result<Self, CodecError> {
        let ty = match dtype {
            DataType::Int(4) => Scalar::Int32,
            DataType::Int(8) => Scalar::Int64,
            DataType::Float(4) => Scalar::Float32,
            DataType::Float(8) => Scalar::Float64,
            other => {
                return Err(bad(
                    spec,
                    format!(
                        "zfp holds int32, int64, float32 or float64, not {}",
                        other.npy_descr()
                    ),
                ))
            }
        };
        Ok(Zfpy {
            name: spec.name.clone(),
            ty,
        })
    }
}

impl ArrayToBytes for Zfpy {
    fn name(&self) -> &str {
        &self.name
    }

    fn encoded_size(&self, decoded: Size) -> Size {
        decoded.compressed_bound()
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        let size = self.ty.size();
        if !out.len().is_multiple_of(size) {
            return Err(CodecError::corrupt(
                &self.name,
                format!(
                    "a chunk of {} bytes holds no whole {size}-byte values",
                    out.len()
                ),
            ));
        }
        let values = zfp_stream::decode(encoded, &FieldSource::Header, self.ty, out.len() / size)
            .map_err(|why| CodecError::corrupt(&self.name, why.to_string()))?;
        zfp_stream::copy_le(&values, size, out);
        Ok(out.len())
    }
}

/// numcodecs' own (Zarr v2) use of `zfpy`: the compressor after the filters, which it hands the
/// array they leave. The stream is the same.
impl BytesToBytes for Zfpy {
    fn name(&self) -> &str {
        &self.name
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        ArrayToBytes::decode(self, encoded, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::array_to_bytes::zfp_stream::testutil::{check_damaged_streams, wild_chunk};
    use serde_json::json;

    /// A chunk numcodecs' zfpy wrote (by scripts/make_wild_fixtures.py).
    fn chunk(array: &str, key: &str) -> Vec<u8> {
        wild_chunk(&format!("zfpy_v2.zarr/{array}/{key}"))
    }

    fn codec(dtype: DataType) -> Zfpy {
        Zfpy::build(&CodecSpec::new("zfpy", json!({})), &dtype).unwrap()
    }

    /// Every mode: the chunk decodes; damaged it fails or stays in bounds.
    #[test]
    fn damaged_streams_fail_or_decode_within_bounds() {
        for (array, key, dtype, len) in [
            ("rate_f8_2d", "0.0", DataType::Float(8), 16 * 4 * 8),
            (
                "precision_f4_3d",
                "0.0.0",
                DataType::Float(4),
                4 * 5 * 6 * 4,
            ),
            ("accuracy_f8_1d", "0", DataType::Float(8), 30 * 8),
            (
                "reversible_i4_4d",
                "0.0.0.0",
                DataType::Int(4),
                2 * 3 * 4 * 5 * 4,
            ),
            ("precision_i8_2d", "0.0", DataType::Int(8), 5 * 5 * 8),
        ] {
            check_damaged_streams(&codec(dtype), &chunk(array, key), len, array);
        }
    }

    #[test]
    fn refuses_other_types() {
        let good = chunk("rate_f8_2d", "0.0");
        let mut out = vec![0u8; 16 * 4 * 8];
        let err = ArrayToBytes::decode(&codec(DataType::Int(8)), &good, &mut out).unwrap_err();
        assert!(err.to_string().contains("zfp type"), "{err}");
        let spec = CodecSpec::new("zfpy", json!({}));
        assert!(Zfpy::build(&spec, &DataType::UInt(4)).is_err());
    }
}
