//! numcodecs `packbits`: booleans packed eight to a byte, most significant bit first, after one
//! byte giving the number of padding bits in the last byte.

use super::{encoded_size, Elements};
use crate::codec::{BytesToBytes, CodecError, Size, StoredElem};
use crate::meta::DataType;

/// The `packbits` filter, under the name it was configured with.
pub(crate) struct PackBits(pub String);

impl BytesToBytes for PackBits {
    fn name(&self) -> &str {
        &self.0
    }

    fn encoded_size(&self, decoded: Size) -> Size {
        encoded_size(decoded, 1, |n| Some(1 + n.div_ceil(8)))
    }

    fn elements(&self) -> Option<Elements> {
        Some(Elements {
            decoded: Some(DataType::Bool),
            encoded: Some(StoredElem::le(DataType::UInt(1))),
            elementwise: false,
        })
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        let (&padding, packed) = encoded
            .split_first()
            .ok_or_else(|| CodecError::corrupt(&self.0, "empty input"))?;
        let bits = packed.len().saturating_mul(8);
        if padding > 7 || usize::from(padding) > bits {
            return Err(CodecError::corrupt(
                &self.0,
                format!("bad padding count {padding}"),
            ));
        }
        let n = bits - usize::from(padding);
        if n > out.len() {
            return Err(CodecError::corrupt(
                &self.0,
                format!("{n} booleans exceed the expected {}", out.len()),
            ));
        }
        let out = &mut out[..n];
        let mut chunks = out.chunks_exact_mut(8);
        for (dst, &byte) in (&mut chunks).zip(packed) {
            for (i, d) in dst.iter_mut().enumerate() {
                *d = (byte >> (7 - i)) & 1;
            }
        }
        let rest = chunks.into_remainder();
        if let Some(&byte) = packed.get(n / 8) {
            for (i, d) in rest.iter_mut().enumerate() {
                *d = (byte >> (7 - i)) & 1;
            }
        }
        Ok(n)
    }
}
