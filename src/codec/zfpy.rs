//! numcodecs `zfpy`: a zfp stream with its full header (as `zfpy.compress_numpy` writes it), in
//! any of zfp's modes (fixed rate, precision, accuracy, reversible), for `int32`, `int64`,
//! `float32` and `float64` arrays of 1 to 4 dimensions. Decoded by libzfp (built by the
//! `zfp-sys-cc` crate). zfpy stores a C-order array with zfp's x axis last, so the decoded
//! field is the chunk in C order.
//!
//! libzfp reads its input without bounds checks, so the stream is copied into a buffer
//! zero-padded to the most bits the header's mode can read, and a stream that needed the
//! padding, or ended before the stream's last 64-bit word, is corrupt (zfp has no checksum: a
//! stream cut inside its last word or in its header's last word can still decode).

use super::config::bad;
use super::{BytesToBytes, CodecError, Size};
use crate::meta::{CodecSpec, DataType};
use std::ffi::c_void;
use zfp_sys_cc as zfp;

/// The `zfpy` codec, bound to the array's element type.
pub(crate) struct Zfpy {
    name: String,
    /// The zfp scalar type the elements must have.
    ty: zfp::zfp_type,
}

impl Zfpy {
    /// Builds a `zfpy` decoder for elements of `dtype`.
    pub fn build(spec: &CodecSpec, dtype: &DataType) -> Result<Self, CodecError> {
        let ty = match dtype {
            DataType::Int(4) => zfp::zfp_type_zfp_type_int32,
            DataType::Int(8) => zfp::zfp_type_zfp_type_int64,
            DataType::Float(4) => zfp::zfp_type_zfp_type_float,
            DataType::Float(8) => zfp::zfp_type_zfp_type_double,
            other => {
                return Err(bad(
                    spec,
                    format!(
                        "zfp holds int32, int64, float32 or float64, not {}",
                        other.npy_descr()
                    ),
                ))
            }
        };
        Ok(Zfpy {
            name: spec.name.clone(),
            ty,
        })
    }
}

/// What a zfp header says about the stream.
struct Header {
    ty: zfp::zfp_type,
    dims: u32,
    count: usize,
    blocks: usize,
    minbits: usize,
    maxbits: usize,
    maxprec: usize,
}

/// libzfp's stream and field objects over one buffer, freed on drop.
struct Reader {
    bits: *mut zfp::bitstream,
    stream: *mut zfp::zfp_stream,
    field: *mut zfp::zfp_field,
}

impl Reader {
    /// Opens `words` (which must outlive the reader) and reads the full header.
    fn open(words: &mut [u64]) -> Option<(Reader, Header)> {
        // SAFETY: the buffer is valid for `len * 8` bytes while the reader lives; each object
        // is checked for null and freed once, in `drop`.
        unsafe {
            let bits = zfp::stream_open(words.as_mut_ptr().cast::<c_void>(), words.len() * 8);
            let reader = Reader {
                bits,
                stream: if bits.is_null() {
                    std::ptr::null_mut()
                } else {
                    zfp::zfp_stream_open(bits)
                },
                field: zfp::zfp_field_alloc(),
            };
            if reader.stream.is_null() || reader.field.is_null() {
                return None;
            }
            if zfp::zfp_read_header(reader.stream, reader.field, zfp::ZFP_HEADER_FULL) == 0 {
                return None;
            }
            let s = &*reader.stream;
            let header = Header {
                ty: zfp::zfp_field_type(reader.field),
                dims: zfp::zfp_field_dimensionality(reader.field),
                count: zfp::zfp_field_size(reader.field, std::ptr::null_mut()),
                blocks: zfp::zfp_field_blocks(reader.field),
                minbits: s.minbits as usize,
                maxbits: s.maxbits as usize,
                maxprec: s.maxprec as usize,
            };
            Some((reader, header))
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        // SAFETY: each pointer came from its libzfp constructor and is freed once.
        unsafe {
            if !self.field.is_null() {
                zfp::zfp_field_free(self.field);
            }
            if !self.stream.is_null() {
                zfp::zfp_stream_close(self.stream);
            }
            if !self.bits.is_null() {
                zfp::stream_close(self.bits);
            }
        }
    }
}

/// Bits of the longest full header (magic, metadata, long mode).
const HEADER_BITS: usize = 32 + 52 + 64;

impl Header {
    /// The most bits decoding can read: per block the longest encoding of `maxprec` bit
    /// planes (at most two bits per value and one more per plane, after a short block
    /// header), capped by `maxbits` and padded to `minbits`.
    fn max_bits(&self) -> Option<usize> {
        let values = 4usize.pow(self.dims);
        let type_bits = if matches!(
            self.ty,
            zfp::zfp_type_zfp_type_int32 | zfp::zfp_type_zfp_type_float
        ) {
            32
        } else {
            64
        };
        let planes = self.maxprec.min(type_bits);
        let longest = 64 + planes * (2 * values + 1);
        let per_block = longest.min(self.maxbits).max(self.minbits);
        self.blocks
            .checked_mul(per_block)?
            .checked_add(HEADER_BITS + 64)
    }
}

/// `encoded` as 64-bit words, zero-padded to at least `bits` bits.
fn words(encoded: &[u8], bits: usize) -> Vec<u64> {
    let mut words = vec![0u64; encoded.len().div_ceil(8).max(bits.div_ceil(64))];
    for (w, chunk) in words.iter_mut().zip(encoded.chunks(8)) {
        let mut b = [0u8; 8];
        b[..chunk.len()].copy_from_slice(chunk);
        *w = u64::from_le_bytes(b);
    }
    words
}

impl BytesToBytes for Zfpy {
    fn name(&self) -> &str {
        &self.name
    }

    fn encoded_size(&self, decoded: Size) -> Size {
        decoded.compressed_bound()
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        let corrupt = |why: String| CodecError::corrupt(&self.name, why);
        let mut head = words(&encoded[..encoded.len().min(32)], HEADER_BITS + 64);
        let (_, header) =
            Reader::open(&mut head).ok_or_else(|| corrupt("no valid zfp header".into()))?;
        if header.ty != self.ty {
            return Err(corrupt(format!(
                "stream holds zfp type {}, the array type {}",
                header.ty, self.ty
            )));
        }
        // SAFETY: zfp_type_size only reads its argument.
        let size = unsafe { zfp::zfp_type_size(header.ty) };
        if header.count.checked_mul(size) != Some(out.len()) {
            return Err(corrupt(format!(
                "stream holds {} values of {size} bytes, the chunk {} bytes",
                header.count,
                out.len()
            )));
        }
        // Every block but the last fills at least `minbits`: a stream shorter than that is cut
        // (and padding it would allocate what a forged header asks for).
        if header
            .blocks
            .saturating_sub(1)
            .saturating_mul(header.minbits)
            > encoded.len().saturating_mul(8)
        {
            return Err(corrupt(format!(
                "stream of {} bytes is shorter than {} blocks of at least {} bits",
                encoded.len(),
                header.blocks,
                header.minbits
            )));
        }
        let max_bits = header
            .max_bits()
            .ok_or_else(|| corrupt("stream size overflows".into()))?;
        let mut all = words(encoded, max_bits);
        let (reader, _) =
            Reader::open(&mut all).ok_or_else(|| corrupt("no valid zfp header".into()))?;
        // SAFETY: `out` holds exactly the field's `count * size` bytes, contiguous (the field
        // has no strides), and outlives the call; the input buffer holds every bit the header's
        // mode can read.
        let consumed = unsafe {
            zfp::zfp_field_set_pointer(reader.field, out.as_mut_ptr().cast::<c_void>());
            zfp::zfp_decompress(reader.stream, reader.field)
        };
        if consumed == 0 {
            return Err(corrupt("zfp could not decode the stream".into()));
        }
        // zfpy's stream ends with the word holding its last bit: decoding ends there too.
        if consumed != encoded.len().next_multiple_of(8) {
            return Err(corrupt(format!(
                "stream of {} bytes, decoding used {consumed}",
                encoded.len()
            )));
        }
        Ok(out.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A chunk numcodecs' zfpy wrote (tests/fixtures/wild, by scripts/make_wild_fixtures.py).
    fn chunk(array: &str, key: &str) -> Vec<u8> {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/wild/zfpy_v2.zarr"
        );
        std::fs::read(format!("{dir}/{array}/{key}")).unwrap()
    }

    fn codec(dtype: DataType) -> Zfpy {
        Zfpy::build(&CodecSpec::new("zfpy", json!({})), &dtype).unwrap()
    }

    /// Every mode: the chunk decodes; cut short it fails; damaged it never crashes.
    #[test]
    fn damaged_streams_fail_or_decode_within_bounds() {
        for (array, key, dtype, len) in [
            ("rate_f8_2d", "0.0", DataType::Float(8), 16 * 4 * 8),
            (
                "precision_f4_3d",
                "0.0.0",
                DataType::Float(4),
                4 * 5 * 6 * 4,
            ),
            ("accuracy_f8_1d", "0", DataType::Float(8), 30 * 8),
            (
                "reversible_i4_4d",
                "0.0.0.0",
                DataType::Int(4),
                2 * 3 * 4 * 5 * 4,
            ),
            ("precision_i8_2d", "0.0", DataType::Int(8), 5 * 5 * 8),
        ] {
            let good = chunk(array, key);
            let c = codec(dtype);
            let mut out = vec![0u8; len];
            assert_eq!(c.decode(&good, &mut out), Ok(len), "{array}");
            for cut in [0, 4, good.len() / 2, good.len() - 8] {
                assert!(
                    c.decode(&good[..cut], &mut out).is_err(),
                    "{array} cut to {cut}"
                );
            }
            let mut wrong = vec![0u8; len + 8];
            assert!(c.decode(&good, &mut wrong).is_err(), "{array}: wrong size");
            for i in 0..good.len() {
                for flip in [0x01u8, 0x80, 0xff] {
                    let mut bad = good.clone();
                    bad[i] ^= flip;
                    let _ = c.decode(&bad, &mut out);
                }
            }
        }
    }

    #[test]
    fn refuses_other_types() {
        let good = chunk("rate_f8_2d", "0.0");
        let mut out = vec![0u8; 16 * 4 * 8];
        let err = codec(DataType::Int(8)).decode(&good, &mut out).unwrap_err();
        assert!(err.to_string().contains("zfp type"), "{err}");
        let spec = CodecSpec::new("zfpy", json!({}));
        assert!(Zfpy::build(&spec, &DataType::UInt(4)).is_err());
    }
}
