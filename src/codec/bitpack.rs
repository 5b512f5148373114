//! zarr-extensions `packbits` (the v3 array→bytes codec zarrs writes for `bool`, `int2`,
//! `int4`, `uint2`, `uint4`, the small floats and, for uniformity, every numeric type): each
//! component's bits `first_bit..=last_bit` packed back to back, least significant bit first,
//! with an optional byte giving the number of padding bits (`padding_encoding` `"first_byte"`
//! or `"last_byte"`; `"none"` by default).
//!
//! Decoding shifts a component's bits back to `first_bit`, then sign-extends signed integers
//! and zero-extends everything else to the served width: `int2`/`int4` become `int8` values,
//! `uint2`/`uint4` and the small floats' bits `uint8` values (one element a byte, as with the
//! `bytes` codec). The v3 parser writes the extension types' own `last_bit` (their bit width
//! less one) into the configuration when it is absent, since the served type does not tell it.

use super::config::{bad, get_str, get_usize};
use super::{BytesToBytes, CodecError, Size};
use crate::meta::{CodecSpec, DataType};

/// Where the padding count is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Padding {
    None,
    FirstByte,
    LastByte,
}

/// The `packbits` array→bytes codec, bound to the array's element type.
pub(crate) struct BitPack {
    name: String,
    padding: Padding,
    first_bit: u32,
    /// Bits stored per component: `last_bit - first_bit + 1`.
    bits: u32,
    /// Served bytes per component.
    component_bytes: usize,
    signed: bool,
}

impl BitPack {
    /// Builds the codec for elements of `dtype`.
    pub fn build(spec: &CodecSpec, dtype: &DataType) -> Result<Self, CodecError> {
        let (component_bytes, width, signed) = match dtype {
            DataType::Bool => (1, 1, false),
            DataType::Int(n) => (*n, 8 * n, true),
            DataType::UInt(n) | DataType::Float(n) => (*n, 8 * n, false),
            // Complex numbers: real and imaginary part are two components.
            DataType::Complex(n) => (n / 2, 4 * n, false),
            other => {
                return Err(bad(
                    spec,
                    format!("data type {} is not bit-packable", other.npy_descr()),
                ))
            }
        };
        let padding = match get_str(spec, "padding_encoding")? {
            None | Some("none") => Padding::None,
            Some("first_byte") => Padding::FirstByte,
            Some("last_byte") => Padding::LastByte,
            Some(other) => return Err(bad(spec, format!("unknown padding_encoding {other:?}"))),
        };
        let first_bit = get_usize(spec, "first_bit")?.unwrap_or(0);
        let last_bit = get_usize(spec, "last_bit")?.unwrap_or(width - 1);
        if last_bit < first_bit || last_bit >= width {
            return Err(bad(
                spec,
                format!("bits {first_bit}..={last_bit} do not fit a {width}-bit component"),
            ));
        }
        Ok(BitPack {
            name: spec.name.clone(),
            padding,
            first_bit: first_bit as u32,
            bits: (last_bit - first_bit + 1) as u32,
            component_bytes,
            signed,
        })
    }

    /// Number of components in `decoded_len` served bytes.
    fn component_count(&self, decoded_len: usize) -> usize {
        decoded_len / self.component_bytes
    }

    /// Bytes of packed bits for `decoded_len` served bytes, and the padding bit count.
    fn packed_len(&self, decoded_len: usize) -> (usize, u8) {
        let bits = self.component_count(decoded_len) * self.bits as usize;
        (bits.div_ceil(8), ((8 - bits % 8) % 8) as u8)
    }

    fn pad_bytes(&self) -> usize {
        usize::from(self.padding != Padding::None)
    }
}

/// `bits` bits (1..=64) of `packed` from bit `start`, least significant first.
fn read_bits(packed: &[u8], start: usize, bits: u32) -> u64 {
    let first = start / 8;
    let mut window = [0u8; 16];
    let end = packed.len().min(first + 9);
    window[..end - first].copy_from_slice(&packed[first..end]);
    let value = u128::from_le_bytes(window) >> (start % 8);
    (value & ((1u128 << bits) - 1)) as u64
}

impl BytesToBytes for BitPack {
    fn name(&self) -> &str {
        &self.name
    }

    fn encoded_size(&self, decoded: Size) -> Size {
        Size::Exact(self.packed_len(decoded.max()).0 + self.pad_bytes())
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        let (len, padding) = self.packed_len(out.len());
        if encoded.len() != len + self.pad_bytes() {
            return Err(CodecError::corrupt(
                &self.name,
                format!(
                    "{} bytes, expected {}",
                    encoded.len(),
                    len + self.pad_bytes()
                ),
            ));
        }
        let (packed, stated) = match self.padding {
            Padding::None => (encoded, padding),
            Padding::FirstByte => (&encoded[1..], encoded[0]),
            Padding::LastByte => (&encoded[..len], encoded[len]),
        };
        if stated != padding {
            return Err(CodecError::corrupt(
                &self.name,
                format!("padding byte says {stated} bits, expected {padding}"),
            ));
        }
        let width = 8 * self.component_bytes as u32;
        let top = self.first_bit + self.bits; // bits above `top` are the extension
        for (i, dst) in out.chunks_exact_mut(self.component_bytes).enumerate() {
            let mut v = read_bits(packed, i * self.bits as usize, self.bits) << self.first_bit;
            if self.signed && top < 64 && (v >> (top - 1)) & 1 == 1 {
                v |= !0u64 << top;
            }
            if width < 64 {
                v &= (1u64 << width) - 1;
            }
            dst.copy_from_slice(&v.to_le_bytes()[..self.component_bytes]);
        }
        Ok(out.len())
    }
}
