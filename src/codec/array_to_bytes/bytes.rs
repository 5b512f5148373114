//! `bytes` (and the v3 drafts' `endian`): elements serialized in C order, little- or big-endian.
//! Big-endian data is swapped in place, unit by unit (`DataType::swap_units`, or the config's
//! `swap_units` list of `[offset, width]`, which the v2 parser uses for structured types of mixed
//! byte order). The config's `low_bits` (which the parsers write for `int2`/`int4`/`uint2`/
//! `uint4`, stored one element a byte) keeps only that many low bits of each byte, sign-extended
//! for signed types: tensorstore stores -8 as `0x08`, zarrs as `0xf8`, and both read as -8.

use crate::codec::config::{bad, field, get_str};
use crate::codec::{ArrayToBytes, CodecError, Size};
use crate::meta::{CodecSpec, DataType};

/// The `bytes` codec for one element type.
#[derive(Debug)]
pub(crate) struct Bytes {
    /// Element size in bytes.
    elem_size: usize,
    /// `(offset, width)` of every byte range to reverse inside an element (empty: nothing to do).
    units: Vec<(usize, usize)>,
    /// Set when the units tile the element with one width, so the whole buffer swaps as a run of
    /// equal units.
    uniform: Option<usize>,
    /// Meaningful low bits of each one-byte element, and whether they are signed.
    low_bits: Option<(u32, bool)>,
}

impl Bytes {
    /// From a config with `endian` (`"little"`, `"big"`, or absent) and optional `swap_units`,
    /// for elements of `dtype`.
    pub fn build(spec: &CodecSpec, dtype: &DataType) -> Result<Self, CodecError> {
        let elem_size = dtype.size();
        let big = match get_str(spec, "endian")? {
            None | Some("little") => false,
            Some("big") => true,
            Some(other) => return Err(bad(spec, format!("unknown endian '{other}'"))),
        };
        let units = match (big, field(spec, "swap_units")) {
            (false, _) => Vec::new(),
            (true, None) => dtype.swap_units(),
            (true, Some(list)) => parse_units(spec, list, elem_size)?,
        };
        let low_bits = match (field(spec, "low_bits"), dtype) {
            (None, _) => None,
            (Some(v), DataType::Int(1) | DataType::UInt(1)) => Some((
                v.as_u64()
                    .filter(|b| (1..8).contains(b))
                    .ok_or_else(|| bad(spec, "'low_bits' must be 1 to 7"))? as u32,
                matches!(dtype, DataType::Int(_)),
            )),
            (Some(_), _) => return Err(bad(spec, "'low_bits' needs one-byte integers")),
        };
        Ok(Bytes {
            low_bits,
            ..Bytes::new(elem_size, units)
        })
    }

    /// Swaps `units` of each `elem_size`-byte element.
    pub fn new(elem_size: usize, mut units: Vec<(usize, usize)>) -> Self {
        units.retain(|&(_, width)| width > 1);
        let uniform = units.first().map(|&(_, w)| w).filter(|&w| {
            units.len() * w == elem_size
                && units
                    .iter()
                    .enumerate()
                    .all(|(i, &(off, width))| width == w && off == i * w)
        });
        Bytes {
            elem_size,
            units,
            uniform,
            low_bits: None,
        }
    }
}

/// Parses and validates a `swap_units` list.
fn parse_units(
    spec: &CodecSpec,
    list: &serde_json::Value,
    elem_size: usize,
) -> Result<Vec<(usize, usize)>, CodecError> {
    let err = || {
        bad(
            spec,
            "'swap_units' must be a list of [offset, width] inside the element",
        )
    };
    let list = list.as_array().ok_or_else(err)?;
    list.iter()
        .map(|pair| {
            let pair = pair.as_array().filter(|p| p.len() == 2).ok_or_else(err)?;
            let get = |i: usize| pair[i].as_u64().and_then(|v| usize::try_from(v).ok());
            let (offset, width) = (get(0).ok_or_else(err)?, get(1).ok_or_else(err)?);
            match offset.checked_add(width) {
                Some(end) if end <= elem_size => Ok((offset, width)),
                _ => Err(err()),
            }
        })
        .collect()
}

impl ArrayToBytes for Bytes {
    fn name(&self) -> &str {
        "bytes"
    }

    fn encoded_size(&self, decoded: Size) -> Size {
        decoded
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        if encoded.len() != out.len() {
            let reason = format!("{} bytes, expected {}", encoded.len(), out.len());
            return Err(CodecError::corrupt("bytes", reason));
        }
        out.copy_from_slice(encoded);
        self.decode_in_place(out);
        Ok(out.len())
    }

    fn in_place(&self) -> Option<&Bytes> {
        Some(self)
    }
}

impl Bytes {
    /// True when decoding leaves every byte as it is (little-endian, whole bytes).
    pub fn is_identity(&self) -> bool {
        self.units.is_empty() && self.low_bits.is_none()
    }

    /// Turns the serialized elements in `data` into little-endian elements, in place.
    pub fn decode_in_place(&self, data: &mut [u8]) {
        if let Some((bits, signed)) = self.low_bits {
            let unused = 8 - bits;
            for b in data.iter_mut() {
                *b = if signed {
                    ((*b << unused) as i8 >> unused) as u8
                } else {
                    *b & (0xff >> unused)
                };
            }
        }
        match self.uniform {
            _ if self.units.is_empty() => {}
            Some(2) => swap_all::<2>(data),
            Some(4) => swap_all::<4>(data),
            Some(8) => swap_all::<8>(data),
            Some(w) => data.chunks_exact_mut(w).for_each(<[u8]>::reverse),
            None => {
                for element in data.chunks_exact_mut(self.elem_size) {
                    for &(offset, width) in &self.units {
                        element[offset..offset + width].reverse();
                    }
                }
            }
        }
    }
}

/// Reverses every `N`-byte unit of `data`.
fn swap_all<const N: usize>(data: &mut [u8]) {
    for unit in data.chunks_exact_mut(N) {
        let mut bytes = [0u8; N];
        bytes.copy_from_slice(unit);
        bytes.reverse();
        unit.copy_from_slice(&bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn uniform_detection() {
        assert_eq!(Bytes::new(16, vec![(0, 8), (8, 8)]).uniform, Some(8));
        assert_eq!(
            Bytes::new(12, vec![(0, 4), (4, 4), (8, 4)]).uniform,
            Some(4)
        );
        assert_eq!(Bytes::new(12, vec![(0, 4), (8, 4)]).uniform, None);
        assert_eq!(Bytes::new(8, vec![(0, 4), (4, 2)]).uniform, None);
        assert!(Bytes::new(3, vec![(0, 1), (1, 1)]).units.is_empty());
    }

    #[test]
    fn swaps_mixed_units() {
        let b = Bytes::new(7, vec![(1, 2), (3, 4)]);
        let mut data = [0, 1, 2, 3, 4, 5, 6, 10, 11, 12, 13, 14, 15, 16];
        b.decode_in_place(&mut data);
        assert_eq!(data, [0, 2, 1, 6, 5, 4, 3, 10, 12, 11, 16, 15, 14, 13]);
    }

    #[test]
    fn config_is_validated() {
        let build = |c| Bytes::build(&CodecSpec::new("bytes", c), &DataType::Int(4));
        assert!(build(json!({"endian": "middle"})).is_err());
        assert!(build(json!({"endian": "big", "swap_units": [[2, 4]]})).is_err());
        assert!(build(json!({"endian": "big", "swap_units": [[0]]})).is_err());
        assert!(build(json!({"endian": "big", "swap_units": "x"})).is_err());
        assert_eq!(
            build(json!({"endian": "big", "swap_units": [[0, 2]]}))
                .unwrap()
                .units,
            [(0, 2)]
        );
        assert!(build(json!({})).unwrap().units.is_empty());
        assert!(build(json!({"low_bits": 4})).is_err());
    }

    #[test]
    fn low_bits_read_both_forms_of_small_integers() {
        // tensorstore's int4 -8, -1, 0, 7 (low bits only), then zarrs' -8, -1 (whole bytes).
        let int4 = CodecSpec::new("bytes", json!({"low_bits": 4}));
        let mut data = [0x08, 0x0f, 0x00, 0x07, 0xf8, 0xff];
        Bytes::build(&int4, &DataType::Int(1))
            .unwrap()
            .decode_in_place(&mut data);
        assert_eq!(data.map(|b| b as i8), [-8, -1, 0, 7, -8, -1]);
        let uint2 = CodecSpec::new("bytes", json!({"low_bits": 2}));
        let mut data = [0x03, 0xfe, 0x01];
        Bytes::build(&uint2, &DataType::UInt(1))
            .unwrap()
            .decode_in_place(&mut data);
        assert_eq!(data, [3, 2, 1]);
        let bad = CodecSpec::new("bytes", json!({"low_bits": 8}));
        assert!(Bytes::build(&bad, &DataType::Int(1)).is_err());
    }
}
