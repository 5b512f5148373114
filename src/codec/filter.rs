//! numcodecs filters (`delta`, `fixedscaleoffset`, `astype`, `packbits`, ...), usable on both
//! sides of the array→bytes codec.
//!
//! A filter decodes bytes to bytes exactly as numcodecs does: it reinterprets its input as its
//! configured encoded type (`astype`, byte order included) and writes its configured decoded
//! type. Zarr v2 puts filters after the array→bytes codec, where they see the stored byte order;
//! zarr-python 3 writes them as `numcodecs.*` array→array codecs before it, where they see
//! little-endian elements. The two adapters below fit a filter into either position.

use super::{ArrayToArray, BytesToBytes, ChunkRepr, CodecError, Size};
use crate::meta::DataType;

/// A numcodecs filter.
pub(crate) trait Filter: Send + Sync {
    /// Codec name, for error messages.
    fn name(&self) -> &str;
    /// Type of the decoded elements, if the filter fixes it (checked against the array's type
    /// in the array→array position).
    fn decoded_dtype(&self) -> Option<DataType>;
    /// Size of the encoded form of `decoded_len` bytes; `None` if that is not a whole number of
    /// decoded elements.
    fn encoded_len(&self, decoded_len: usize) -> Option<usize>;
    /// Element type of the encoded form, given the decoded form's (array→array position).
    fn encoded_dtype(&self, decoded: &DataType) -> DataType;
    /// Decodes `encoded` into the start of `out`; returns the bytes written. Errors if the
    /// result does not fit in `out`.
    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError>;
}

/// Checks an elementwise filter's input: a whole number of `enc_size` elements whose decoded
/// form (`dec_size` each) fits in `out_len` bytes. Returns the element count.
pub(crate) fn elementwise_count(
    name: &str,
    encoded_len: usize,
    enc_size: usize,
    dec_size: usize,
    out_len: usize,
) -> Result<usize, CodecError> {
    if !encoded_len.is_multiple_of(enc_size) {
        return Err(CodecError::corrupt(
            name,
            format!("{encoded_len} bytes is not a whole number of {enc_size}-byte elements"),
        ));
    }
    let count = encoded_len / enc_size;
    if count.checked_mul(dec_size).is_none_or(|n| n > out_len) {
        return Err(CodecError::corrupt(
            name,
            format!("{count} elements decode to more than the expected {out_len} bytes"),
        ));
    }
    Ok(count)
}

/// A filter in the bytes→bytes position (Zarr v2 `filters`).
pub(crate) struct FilterBytes(pub Box<dyn Filter>);

impl BytesToBytes for FilterBytes {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn encoded_size(&self, decoded: Size) -> Size {
        match decoded {
            Size::Exact(n) => match self.0.encoded_len(n) {
                Some(e) => Size::Exact(e),
                // Not a whole number of elements: decoding can only fail the size check.
                None => Size::AtMost(n),
            },
            Size::AtMost(n) => {
                let whole = self
                    .0
                    .decoded_dtype()
                    .map_or(n, |t| n - n % t.size().max(1));
                Size::AtMost(self.0.encoded_len(whole).unwrap_or(n))
            }
        }
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        self.0.decode(encoded, out)
    }
}

/// A filter in the array→array position (zarr-python 3 `numcodecs.*` filters).
pub(crate) struct FilterArray(Box<dyn Filter>);

impl FilterArray {
    /// Places `filter` on chunks of `decoded` form; returns it and the encoded form.
    pub fn build(
        filter: Box<dyn Filter>,
        decoded: &ChunkRepr,
    ) -> Result<(FilterArray, ChunkRepr), CodecError> {
        let name = filter.name().to_string();
        if let Some(dtype) = filter.decoded_dtype() {
            if dtype != decoded.dtype {
                return Err(CodecError::bad_config(
                    &name,
                    format!(
                        "decodes to {dtype:?} but the chunk holds {:?}",
                        decoded.dtype
                    ),
                ));
            }
        }
        let dtype = filter.encoded_dtype(&decoded.dtype);
        let enc_len = filter
            .encoded_len(decoded.byte_len(&name)?)
            .ok_or_else(|| CodecError::bad_config(&name, "chunk is not whole elements"))?;
        let count = decoded.count(&name)?;
        let enc_count = enc_len / dtype.size().max(1);
        let shape = if enc_count == count {
            decoded.shape.clone()
        } else {
            vec![enc_count as u64]
        };
        Ok((FilterArray(filter), ChunkRepr { shape, dtype }))
    }
}

impl ArrayToArray for FilterArray {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<(), CodecError> {
        let written = self.0.decode(encoded, out)?;
        Size::Exact(out.len()).check(self.0.name(), written)
    }
}
