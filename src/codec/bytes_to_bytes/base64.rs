//! numcodecs `base64`: standard base64 text (with padding) of the bytes.

use crate::codec::{BytesToBytes, CodecError, Size};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;

/// The `base64` codec, under the name it was configured with.
pub(crate) struct Base64(pub String);

impl BytesToBytes for Base64 {
    fn name(&self) -> &str {
        &self.0
    }

    fn encoded_size(&self, decoded: Size) -> Size {
        decoded.map(|n| n.div_ceil(3).saturating_mul(4))
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        if encoded.len() / 4 * 3 > out.len() + 2 {
            return Err(CodecError::corrupt(
                &self.0,
                format!(
                    "{} base64 bytes exceed the expected {} bytes",
                    encoded.len(),
                    out.len()
                ),
            ));
        }
        STANDARD
            .decode_slice(encoded, out)
            .map_err(|e| CodecError::corrupt(&self.0, e.to_string()))
    }
}
