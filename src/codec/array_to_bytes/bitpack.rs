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

use crate::codec::config::{bad, get_str, get_usize};
use crate::codec::{ArrayToBytes, CodecError, Size};
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

impl ArrayToBytes for BitPack {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn codec(dtype: DataType, config: serde_json::Value) -> BitPack {
        BitPack::build(&CodecSpec::new("packbits", config), &dtype).unwrap()
    }

    #[test]
    fn unpacks_least_significant_bit_first() {
        // int4 (last_bit 3, as the v3 parser sets it): -3, 7, -8 packed as 0xd, 0x7, 0x8.
        let c = codec(DataType::Int(1), json!({"last_bit": 3}));
        let mut out = [0u8; 3];
        assert_eq!(c.decode(&[0x7d, 0x08], &mut out), Ok(3));
        assert_eq!(out, [-3i8 as u8, 7, -8i8 as u8]);
        // bool, 10 values, padding count first: 6 bits.
        let c = codec(DataType::Bool, json!({"padding_encoding": "first_byte"}));
        let mut out = [9u8; 10];
        assert_eq!(c.decode(&[6, 0b1000_0101, 0b10], &mut out), Ok(10));
        assert_eq!(out, [1, 0, 1, 0, 0, 0, 0, 1, 0, 1]);
    }

    #[test]
    fn puts_bits_back_in_place_and_sign_extends() {
        // int16, bits 2..=11: 0b1000_0000_01 is stored; it decodes to bits 2 and 11 set,
        // sign-extended from bit 11.
        let c = codec(DataType::Int(2), json!({"first_bit": 2, "last_bit": 11}));
        let mut out = [0u8; 2];
        assert_eq!(c.decode(&[0x01, 0x02], &mut out), Ok(2));
        assert_eq!(i16::from_le_bytes(out), (0xf804u16) as i16);
        // float32, top 16 bits: zero-extended below.
        let c = codec(DataType::Float(4), json!({"first_bit": 16}));
        let mut out = [0u8; 4];
        assert_eq!(c.decode(&[0x80, 0x3f], &mut out), Ok(4));
        assert_eq!(f32::from_le_bytes(out), 1.0);
    }

    #[test]
    fn checks_length_padding_and_configuration() {
        let c = codec(
            DataType::UInt(1),
            json!({"last_bit": 1, "padding_encoding": "last_byte"}),
        );
        let mut out = [0u8; 3];
        assert_eq!(c.decode(&[0b11_10_01, 2], &mut out), Ok(3));
        assert_eq!(out, [1, 2, 3]);
        assert!(c.decode(&[0b11_10_01, 3], &mut out).is_err());
        assert!(c.decode(&[0b11_10_01], &mut out).is_err());
        assert!(c.decode(&[0b11_10_01, 2, 0], &mut out).is_err());
        assert_eq!(c.encoded_size(Size::Exact(3)), Size::Exact(2));
        for (dtype, config) in [
            (DataType::Int(1), json!({"first_bit": 3, "last_bit": 2})),
            (DataType::Int(1), json!({"last_bit": 8})),
            (DataType::Bool, json!({"last_bit": 1})),
            (DataType::UInt(1), json!({"padding_encoding": "start_byte"})),
            (DataType::Bytes(4), json!({})),
        ] {
            let spec = CodecSpec::new("packbits", config.clone());
            assert!(BitPack::build(&spec, &dtype).is_err(), "{config}");
        }
    }
}
