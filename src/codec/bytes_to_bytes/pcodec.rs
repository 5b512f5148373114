//! numcodecs `pcodec`: a Pco standalone file of the chunk's numbers (the `pco` crate). Pco
//! stores numbers, not bytes, so the element type comes from the array: integers and floats of
//! 1 to 8 bytes, and datetimes as int64.

use crate::codec::{BytesToBytes, CodecError, StoredElem};
use crate::meta::{CodecSpec, DataType};
use pco::data_types::Number;

/// The numeric types Pco stores.
#[derive(Clone, Copy)]
enum Kind {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F16,
    F32,
    F64,
}

/// The `pcodec` codec for one element type.
pub(crate) struct Pcodec {
    name: String,
    kind: Kind,
    big_endian: bool,
}

/// Builds a `pcodec` decoder for the stored elements `elem`.
pub(crate) fn build(spec: &CodecSpec, elem: &StoredElem) -> Result<Pcodec, CodecError> {
    let kind = match elem.dtype {
        DataType::Int(1) => Kind::I8,
        DataType::Int(2) => Kind::I16,
        DataType::Int(4) => Kind::I32,
        DataType::Int(8) | DataType::Time { .. } => Kind::I64,
        DataType::UInt(1) => Kind::U8,
        DataType::UInt(2) => Kind::U16,
        DataType::UInt(4) => Kind::U32,
        DataType::UInt(8) => Kind::U64,
        DataType::Float(2) => Kind::F16,
        DataType::Float(4) => Kind::F32,
        DataType::Float(8) => Kind::F64,
        ref other => {
            return Err(CodecError::unsupported(
                &spec.name,
                &format!("Pco stores numbers, not {}", other.npy_descr()),
            ))
        }
    };
    Ok(Pcodec {
        name: spec.name.clone(),
        kind,
        big_endian: elem.big_endian,
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
            dst.copy_from_slice(&bytes(*n, self.big_endian));
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
        match self.kind {
            Kind::I8 => self.decode_as(encoded, out, ordered!(i8)),
            Kind::I16 => self.decode_as(encoded, out, ordered!(i16)),
            Kind::I32 => self.decode_as(encoded, out, ordered!(i32)),
            Kind::I64 => self.decode_as(encoded, out, ordered!(i64)),
            Kind::U8 => self.decode_as(encoded, out, ordered!(u8)),
            Kind::U16 => self.decode_as(encoded, out, ordered!(u16)),
            Kind::U32 => self.decode_as(encoded, out, ordered!(u32)),
            Kind::U64 => self.decode_as(encoded, out, ordered!(u64)),
            Kind::F16 => self.decode_as(encoded, out, ordered!(half::f16)),
            Kind::F32 => self.decode_as(encoded, out, ordered!(f32)),
            Kind::F64 => self.decode_as(encoded, out, ordered!(f64)),
        }
    }
}
