//! numcodecs `bitround`: lossy rounding of float mantissas that keeps the type, so decoding is
//! the identity.

use super::filter::Filter;
use super::CodecError;
use crate::meta::DataType;

/// The `bitround` filter.
pub(crate) struct BitRound {
    name: String,
}

impl BitRound {
    /// A `bitround` filter named `name` (its `keepbits` does not matter for decoding).
    pub fn new(name: &str) -> Self {
        BitRound {
            name: name.to_string(),
        }
    }
}

impl Filter for BitRound {
    fn name(&self) -> &str {
        &self.name
    }

    fn decoded_dtype(&self) -> Option<DataType> {
        None
    }

    fn encoded_len(&self, decoded_len: usize) -> Option<usize> {
        Some(decoded_len)
    }

    fn encoded_dtype(&self, decoded: &DataType) -> DataType {
        decoded.clone()
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        let dst = out.get_mut(..encoded.len()).ok_or_else(|| {
            CodecError::corrupt(
                &self.name,
                format!("{} bytes exceed the expected size", encoded.len()),
            )
        })?;
        dst.copy_from_slice(encoded);
        Ok(encoded.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixtures() {
        crate::codec::testutil::run_group("bitround");
    }

    #[test]
    fn identity_within_size() {
        let b = BitRound::new("bitround");
        let mut out = [0u8; 4];
        assert_eq!(b.decode(&[1, 2, 3, 4], &mut out), Ok(4));
        assert_eq!(out, [1, 2, 3, 4]);
        assert!(b.decode(&[0; 5], &mut out).is_err());
    }
}
