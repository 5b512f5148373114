//! numcodecs `bitround`: lossy rounding of float mantissas that keeps the type, so decoding is
//! the identity.

use super::Elements;
use crate::codec::{out_prefix, BytesToBytes, CodecError, Size};

/// The `bitround` filter, under the name it was configured with (its `keepbits` does not matter for
/// decoding).
pub(crate) struct BitRound(pub String);

impl BytesToBytes for BitRound {
    fn name(&self) -> &str {
        &self.0
    }

    fn encoded_size(&self, decoded: Size) -> Size {
        decoded
    }

    fn elements(&self) -> Option<Elements> {
        Some(Elements {
            decoded: None,
            encoded: None,
            elementwise: true,
        })
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        out_prefix(&self.0, out, encoded.len())?.copy_from_slice(encoded);
        Ok(encoded.len())
    }
}
