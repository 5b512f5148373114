//! numcodecs `categorize`: strings stored as integer codes into a list of labels (0 means the
//! empty string). Only fixed-width unicode (`<U<n>`) arrays can be served; object arrays of
//! variable-length strings are not supported.

use super::{elementwise_count, encoded_size, Elements};
use crate::codec::config::{bad, field, get_numtype, get_str};
use crate::codec::numtype::{Kind, NumType, Value};
use crate::codec::{BytesToBytes, CodecError, Size};
use crate::meta::{CodecSpec, DataType};

/// The `categorize` filter for a fixed-width unicode `dtype`.
pub(crate) struct Categorize {
    name: String,
    /// The codes' type.
    astype: NumType,
    /// Characters per element.
    width: usize,
    /// Each label encoded as one element (UCS-4 in the dtype's byte order, zero padded).
    labels: Vec<Vec<u8>>,
}

impl Categorize {
    /// From a config with `labels`, `dtype` (`<U<n>` or `>U<n>`) and `astype` (default `u1`).
    pub fn build(spec: &CodecSpec) -> Result<Self, CodecError> {
        let dtype = get_str(spec, "dtype")?.ok_or_else(|| bad(spec, "missing 'dtype'"))?;
        let (big_endian, width) = parse_unicode(dtype).ok_or_else(|| {
            CodecError::unsupported(
                &spec.name,
                &format!("only fixed-width unicode dtypes can be decoded, not '{dtype}'"),
            )
        })?;
        let astype = get_numtype(spec, "astype")?.unwrap_or(NumType::le(Kind::UInt, 1));
        let labels = field(spec, "labels")
            .and_then(|v| v.as_array())
            .ok_or_else(|| bad(spec, "'labels' must be a list of strings"))?
            .iter()
            .map(|l| {
                l.as_str()
                    .map(|s| encode_label(s, width, big_endian))
                    .ok_or_else(|| bad(spec, "'labels' must be a list of strings"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Categorize {
            name: spec.name.clone(),
            astype,
            width,
            labels,
        })
    }
}

/// `(big_endian, characters)` of a numpy `U` type string.
fn parse_unicode(s: &str) -> Option<(bool, usize)> {
    let (big, rest) = match s.as_bytes().first()? {
        b'>' => (true, &s[1..]),
        b'<' | b'=' | b'|' => (false, &s[1..]),
        _ => (false, s),
    };
    let n: usize = rest.strip_prefix('U')?.parse().ok()?;
    // numpy caps itemsizes at 2^31 - 1 bytes.
    (n > 0 && n <= (i32::MAX / 4) as usize).then_some((big, n))
}

/// A label as one `U<width>` element: truncated to `width` characters like numpy does.
fn encode_label(label: &str, width: usize, big_endian: bool) -> Vec<u8> {
    let mut out = vec![0u8; 4 * width];
    for (dst, c) in out.chunks_exact_mut(4).zip(label.chars()) {
        let bytes = if big_endian {
            u32::from(c).to_be_bytes()
        } else {
            u32::from(c).to_le_bytes()
        };
        dst.copy_from_slice(&bytes);
    }
    out
}

impl BytesToBytes for Categorize {
    fn name(&self) -> &str {
        &self.name
    }

    fn encoded_size(&self, decoded: Size) -> Size {
        let es = 4 * self.width;
        encoded_size(decoded, es, |n| {
            n.is_multiple_of(es).then(|| n / es * self.astype.size)
        })
    }

    fn elements(&self) -> Option<Elements> {
        Some(Elements {
            decoded: Some(DataType::Unicode(self.width)),
            encoded: Some(self.astype.stored()),
            elementwise: true,
        })
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        let (es, ds) = (self.astype.size, 4 * self.width);
        let count = elementwise_count(&self.name, encoded.len(), es, ds, out.len())?;
        for (src, dst) in encoded
            .chunks_exact(es)
            .zip(out[..count * ds].chunks_exact_mut(ds))
        {
            let code = match self.astype.read(src) {
                Value::I(v) => usize::try_from(v).ok(),
                Value::U(v) => usize::try_from(v).ok(),
                Value::F(v) => (v >= 1.0 && v.fract() == 0.0).then_some(v as usize),
            };
            match code
                .and_then(|c| c.checked_sub(1))
                .and_then(|i| self.labels.get(i))
            {
                Some(label) => dst.copy_from_slice(label),
                None => dst.fill(0),
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
    fn maps_codes_and_rejects_object_dtype() {
        let spec = CodecSpec::new(
            "categorize",
            json!({"labels": ["ab", "toolong"], "dtype": "<U2", "astype": "|u1"}),
        );
        let c = Categorize::build(&spec).unwrap();
        let mut out = [7u8; 24];
        assert_eq!(c.decode(&[1, 2, 0], &mut out), Ok(24));
        assert_eq!(&out[..8], &[b'a', 0, 0, 0, b'b', 0, 0, 0]);
        assert_eq!(&out[8..16], &[b't', 0, 0, 0, b'o', 0, 0, 0]);
        assert_eq!(&out[16..], &[0; 8]);
        let spec = CodecSpec::new("categorize", json!({"labels": [], "dtype": "|O"}));
        assert!(matches!(
            Categorize::build(&spec),
            Err(CodecError::Unsupported(_))
        ));
    }
}
