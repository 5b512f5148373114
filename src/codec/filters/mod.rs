//! numcodecs filters (`delta`, `fixedscaleoffset`, `quantize`, `bitround`, `astype`,
//! `packbits`, `categorize`), usable on both sides of the array→bytes codec.
//!
//! A filter decodes bytes to bytes exactly as numcodecs does: it reinterprets its input as its
//! configured encoded type (`astype`, byte order included) and writes its configured decoded
//! type. So each filter is a [`BytesToBytes`] codec, which is where Zarr v2 puts it (after the
//! array→bytes codec, seeing the stored byte order). zarr-python 3 writes the same filters as
//! `numcodecs.*` array→array codecs before the array→bytes codec, where they see little-endian
//! elements: [`FilterArray`] places a filter there, using the element types it states
//! ([`BytesToBytes::elements`]).

pub(crate) mod astype;
pub(crate) mod bitround;
pub(crate) mod categorize;
pub(crate) mod delta;
pub(crate) mod fixedscaleoffset;
pub(crate) mod packbits;
pub(crate) mod quantize;

use crate::codec::config::{bad, get_numtype};
use crate::codec::numtype::NumType;
use crate::codec::{ArrayToArray, BytesToBytes, ChunkRepr, CodecError, Size, StoredElem};
use crate::meta::{CodecSpec, DataType};

/// The element types a filter decodes between (`None`: the chunk's own type, kept).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Elements {
    /// The type it decodes to, checked against the chunk's type before the array→bytes codec.
    pub decoded: Option<DataType>,
    /// The type and byte order of its encoded elements, which the codecs after it see.
    pub encoded: Option<StoredElem>,
    /// True when each decoded element comes from its own encoded element alone.
    pub elementwise: bool,
}

/// A numeric filter: elements of `dtype` stored as `astype`, changed by `op` on the way.
pub(crate) struct Numeric {
    name: String,
    /// The decoded type.
    dtype: NumType,
    /// The encoded type.
    astype: NumType,
    op: Op,
}

/// What a [`Numeric`] filter did to the elements, which decoding undoes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Op {
    /// Nothing but the cast (`astype`, `quantize`).
    Cast,
    /// Differences of neighbours (`delta`).
    Delta,
    /// `(x - offset) * scale`, rounded (`fixedscaleoffset`).
    ScaleOffset { scale: f64, offset: f64 },
}

impl Numeric {
    /// The filter `spec` names, storing `dtype` as `astype`.
    pub fn new(spec: &CodecSpec, dtype: NumType, astype: NumType, op: Op) -> Self {
        Numeric {
            name: spec.name.clone(),
            dtype,
            astype,
            op,
        }
    }

    /// From a config's `dtype` (default: the array's element type) and `astype` (default:
    /// `dtype`).
    pub fn from_config(spec: &CodecSpec, elem: &StoredElem, op: Op) -> Result<Self, CodecError> {
        let dtype = numtype_or_stored(spec, "dtype", elem, "needs a numeric 'dtype'")?;
        let astype = get_numtype(spec, "astype")?.unwrap_or(dtype);
        Ok(Numeric::new(spec, dtype, astype, op))
    }
}

impl BytesToBytes for Numeric {
    fn name(&self) -> &str {
        &self.name
    }

    fn encoded_size(&self, decoded: Size) -> Size {
        let (ds, es) = (self.dtype.size, self.astype.size);
        encoded_size(decoded, ds, |n| n.is_multiple_of(ds).then(|| n / ds * es))
    }

    fn elements(&self) -> Option<Elements> {
        Some(Elements {
            decoded: Some(self.dtype.data_type()),
            encoded: Some(self.astype.stored()),
            elementwise: self.op != Op::Delta,
        })
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        let (es, ds) = (self.astype.size, self.dtype.size);
        let count = elementwise_count(&self.name, encoded.len(), es, ds, out.len())?;
        let out = &mut out[..count * ds];
        match self.op {
            Op::Cast => astype::cast(self.astype, self.dtype, encoded, out),
            Op::Delta => delta::cumsum(self.astype, self.dtype, encoded, out),
            Op::ScaleOffset { scale, offset } => {
                fixedscaleoffset::unscale(self.astype, self.dtype, (scale, offset), encoded, out)
            }
        }
        Ok(count * ds)
    }
}

/// The numeric type the config's `key` names, by default the stored elements' own; `missing` is
/// the error when neither is one.
pub(crate) fn numtype_or_stored(
    spec: &CodecSpec,
    key: &str,
    elem: &StoredElem,
    missing: &str,
) -> Result<NumType, CodecError> {
    get_numtype(spec, key)?
        .or_else(|| NumType::from_data_type(&elem.dtype, elem.big_endian))
        .ok_or_else(|| bad(spec, missing))
}

/// [`BytesToBytes::encoded_size`] of a filter whose encoded form of `n` decoded bytes (whole
/// `elem_size`-byte elements) has `encoded_len(n)` bytes (`None` when `n` is not whole elements).
pub(crate) fn encoded_size(
    decoded: Size,
    elem_size: usize,
    encoded_len: impl Fn(usize) -> Option<usize>,
) -> Size {
    match decoded {
        Size::Exact(n) => match encoded_len(n) {
            Some(e) => Size::Exact(e),
            // Not a whole number of elements: decoding can only fail the size check.
            None => Size::AtMost(n),
        },
        Size::AtMost(n) => {
            let whole = n - n % elem_size.max(1);
            Size::AtMost(encoded_len(whole).unwrap_or(n))
        }
    }
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

/// A filter in the array→array position (zarr-python 3 `numcodecs.*` filters), and whether it
/// works element by element.
pub(crate) struct FilterArray(Box<dyn BytesToBytes>, bool);

impl FilterArray {
    /// Places `filter` on chunks of `decoded` form; returns it and the encoded form.
    pub fn build(
        filter: Box<dyn BytesToBytes>,
        decoded: &ChunkRepr,
    ) -> Result<(FilterArray, ChunkRepr), CodecError> {
        let name = filter.name().to_string();
        let elements = filter
            .elements()
            .ok_or_else(|| CodecError::bad_config(&name, "not an array→array codec"))?;
        if let Some(dtype) = elements.decoded {
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
        let dtype = elements
            .encoded
            .map_or_else(|| decoded.dtype.clone(), |e| e.dtype);
        let Size::Exact(enc_len) = filter.encoded_size(Size::Exact(decoded.byte_len(&name)?))
        else {
            return Err(CodecError::bad_config(&name, "chunk is not whole elements"));
        };
        let count = decoded.count(&name)?;
        let enc_count = enc_len / dtype.size().max(1);
        let shape = if enc_count == count {
            decoded.shape.clone()
        } else {
            vec![enc_count as u64]
        };
        let elementwise = elements.elementwise;
        Ok((
            FilterArray(filter, elementwise),
            ChunkRepr::new(shape, dtype),
        ))
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

    fn elementwise(&self) -> bool {
        self.1
    }
}
