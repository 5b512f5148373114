//! numcodecs `pcodec`: a Pco standalone file of the chunk's numbers (the `pco` crate). Pco
//! stores numbers, not bytes, so the element type comes from the array: integers and floats of
//! 1 to 8 bytes, and datetimes as int64.

use crate::codec::numtype::{Kind, NumType};
use crate::codec::{BytesToBytes, CodecError, StoredElem};
use crate::meta::{CodecSpec, DataType};
use pco::data_types::Number;

/// The `pcodec` codec for one element type (in the stored byte order).
pub(crate) struct Pcodec {
    name: String,
    ty: NumType,
}

/// Builds a `pcodec` decoder for the stored elements `elem`.
pub(crate) fn build(spec: &CodecSpec, elem: &StoredElem) -> Result<Pcodec, CodecError> {
    let dtype = match elem.dtype {
        DataType::Time { .. } => &DataType::Int(8),
        ref other => other,
    };
    let ty = NumType::from_data_type(dtype, elem.big_endian)
        .filter(|t| t.kind != Kind::Bool)
        .ok_or_else(|| {
            CodecError::unsupported(
                &spec.name,
                &format!("Pco stores numbers, not {}", elem.dtype.npy_descr()),
            )
        })?;
    Ok(Pcodec {
        name: spec.name.clone(),
        ty,
    })
}

impl Pcodec {
    /// Decodes `encoded` as numbers of type `T` into `out` (`N` bytes each, in the stored
    /// byte order).
    fn decode_as<T: Number, const N: usize>(
        &self,
        encoded: &[u8],
        out: &mut [u8],
        bytes: fn(T, bool) -> [u8; N],
    ) -> Result<usize, CodecError> {
        let corrupt = |what: String| CodecError::corrupt(&self.name, what);
        let count = out.len() / N;
        let mut numbers = vec![T::default(); count];
        let progress = pco::standalone::simple_decompress_into(encoded, &mut numbers)
            .map_err(|e| corrupt(e.to_string()))?;
        if !progress.finished {
            return Err(corrupt(format!(
                "holds more than the expected {count} numbers"
            )));
        }
        for (dst, n) in out
            .chunks_exact_mut(N)
            .zip(&numbers[..progress.n_processed])
        {
            dst.copy_from_slice(&bytes(*n, self.ty.big_endian));
        }
        Ok(progress.n_processed * N)
    }
}

/// The bytes of a number in the stored byte order.
macro_rules! ordered {
    ($t:ty) => {
        |n: $t, big: bool| {
            if big {
                n.to_be_bytes()
            } else {
                n.to_le_bytes()
            }
        }
    };
}

impl BytesToBytes for Pcodec {
    fn name(&self) -> &str {
        &self.name
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        match (self.ty.kind, self.ty.size) {
            (Kind::Int, 1) => self.decode_as(encoded, out, ordered!(i8)),
            (Kind::Int, 2) => self.decode_as(encoded, out, ordered!(i16)),
            (Kind::Int, 4) => self.decode_as(encoded, out, ordered!(i32)),
            (Kind::Int, _) => self.decode_as(encoded, out, ordered!(i64)),
            (Kind::UInt, 1) => self.decode_as(encoded, out, ordered!(u8)),
            (Kind::UInt, 2) => self.decode_as(encoded, out, ordered!(u16)),
            (Kind::UInt, 4) => self.decode_as(encoded, out, ordered!(u32)),
            (Kind::UInt, _) => self.decode_as(encoded, out, ordered!(u64)),
            (Kind::Float, 2) => self.decode_as(encoded, out, ordered!(half::f16)),
            (Kind::Float, 4) => self.decode_as(encoded, out, ordered!(f32)),
            (_, _) => self.decode_as(encoded, out, ordered!(f64)),
        }
    }
}
