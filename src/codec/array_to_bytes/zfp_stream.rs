//! libzfp decoding shared by numcodecs' `zfpy` (a stream with its full header) and zarrs' `zfp`
//! (a headerless stream: field and mode come from the codec's metadata). libzfp is built by the
//! `zfp-sys-cc` crate. The field is the chunk in C order: zfp's x axis is the last dimension.
//!
//! libzfp reads its input without bounds checks, so the stream is copied into a buffer
//! zero-padded to the most bits the mode can read, and a stream that needed the padding, or
//! ended before the stream's last 64-bit word, is corrupt (zfp has no checksum: a stream cut
//! inside its last word can still decode).

use std::ffi::c_void;
use zfp_sys_cc as zfp;

/// The scalar types zfp codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Scalar {
    Int32,
    Int64,
    Float32,
    Float64,
}

impl Scalar {
    fn zfp_type(self) -> zfp::zfp_type {
        match self {
            Scalar::Int32 => zfp::zfp_type_zfp_type_int32,
            Scalar::Int64 => zfp::zfp_type_zfp_type_int64,
            Scalar::Float32 => zfp::zfp_type_zfp_type_float,
            Scalar::Float64 => zfp::zfp_type_zfp_type_double,
        }
    }

    /// Bytes per value.
    pub fn size(self) -> usize {
        match self {
            Scalar::Int32 | Scalar::Float32 => 4,
            Scalar::Int64 | Scalar::Float64 => 8,
        }
    }
}

/// zfp's compression modes, as zarrs' `zfp` codec configures them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Mode {
    /// `zfp_stream_set_params`.
    Expert {
        minbits: u32,
        maxbits: u32,
        maxprec: u32,
        minexp: i32,
    },
    /// Bits per value; zarrs sets it for 3-D blocks whatever the field's dimensions.
    FixedRate(f64),
    /// Bit planes kept.
    FixedPrecision(u32),
    /// Absolute error tolerance (floating-point types only).
    FixedAccuracy(f64),
    /// Lossless.
    Reversible,
}

/// Where the decoder learns the field and the mode.
pub(super) enum FieldSource<'a> {
    /// From the stream's full header (numcodecs' `zfpy`).
    Header,
    /// From the codec's metadata (zarrs' `zfp`): the mode and the chunk shape, C order, 1 to 4
    /// dimensions.
    Known { mode: Mode, shape: &'a [usize] },
}

/// What the stream holds, as libzfp sees it once set up.
struct Params {
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

/// Bits of the longest full header (magic, metadata, long mode).
const HEADER_BITS: usize = 32 + 52 + 64;

impl Reader {
    /// Opens `words` (which must outlive the reader) and sets field and mode from `layout`.
    fn open(words: &mut [u64], layout: &FieldSource, ty: Scalar) -> Option<(Reader, Params)> {
        // SAFETY: the buffer is valid for `len * 8` bytes while the reader lives; each object
        // is checked for null and freed once, in `drop`; the setters only write the objects.
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
            match layout {
                FieldSource::Header => {
                    let read =
                        zfp::zfp_read_header(reader.stream, reader.field, zfp::ZFP_HEADER_FULL);
                    if read == 0 {
                        return None;
                    }
                }
                FieldSource::Known { mode, shape } => reader.set(*mode, shape, ty)?,
            }
            let s = &*reader.stream;
            let params = Params {
                ty: zfp::zfp_field_type(reader.field),
                dims: zfp::zfp_field_dimensionality(reader.field),
                count: zfp::zfp_field_size(reader.field, std::ptr::null_mut()),
                blocks: zfp::zfp_field_blocks(reader.field),
                minbits: s.minbits as usize,
                maxbits: s.maxbits as usize,
                maxprec: s.maxprec as usize,
            };
            Some((reader, params))
        }
    }

    /// Sets the field to `shape` of `ty` and the stream to `mode`, as zarrs does when it encodes.
    ///
    /// # Safety
    /// The reader's stream and field must be valid.
    unsafe fn set(&self, mode: Mode, shape: &[usize], ty: Scalar) -> Option<()> {
        let (f, t) = (self.field, ty.zfp_type());
        // SAFETY: the caller guarantees valid objects; the setters only write them.
        unsafe {
            zfp::zfp_field_set_type(f, t);
            match *shape {
                [x] => zfp::zfp_field_set_size_1d(f, x),
                [y, x] => zfp::zfp_field_set_size_2d(f, x, y),
                [z, y, x] => zfp::zfp_field_set_size_3d(f, x, y, z),
                [w, z, y, x] => zfp::zfp_field_set_size_4d(f, x, y, z, w),
                _ => return None,
            }
            let s = self.stream;
            // zarrs ignores what the setters return (invalid expert parameters leave libzfp's
            // defaults): so does the decoder, to read what zarrs wrote.
            match mode {
                Mode::Expert {
                    minbits,
                    maxbits,
                    maxprec,
                    minexp,
                } => {
                    zfp::zfp_stream_set_params(s, minbits, maxbits, maxprec, minexp);
                }
                Mode::FixedRate(rate) => {
                    zfp::zfp_stream_set_rate(s, rate, t, 3, 0);
                }
                Mode::FixedPrecision(precision) => {
                    zfp::zfp_stream_set_precision(s, precision);
                }
                Mode::FixedAccuracy(tolerance) => {
                    zfp::zfp_stream_set_accuracy(s, tolerance);
                }
                Mode::Reversible => zfp::zfp_stream_set_reversible(s),
            }
        }
        Some(())
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

impl Params {
    /// The most bits decoding can read: per block the longest encoding of `maxprec` bit
    /// planes (at most two bits per value and one more per plane, after a short block
    /// header), capped by `maxbits` and padded to `minbits`; plus a header.
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

/// Why a zfp stream is corrupt.
#[derive(Debug, thiserror::Error)]
pub(super) enum CorruptStream {
    /// No header or field libzfp accepts.
    #[error("no valid zfp header or field")]
    NoField,
    /// The stream's type is not the array's.
    #[error("stream holds zfp type {stream}, the array type {array}")]
    Type {
        stream: zfp::zfp_type,
        array: zfp::zfp_type,
    },
    /// The stream's value count is not the chunk's.
    #[error("stream holds {stream} values, the chunk {chunk}")]
    Count { stream: usize, chunk: usize },
    /// Fewer bytes than the blocks take at least.
    #[error("stream of {len} bytes is shorter than {blocks} blocks of at least {minbits} bits")]
    Short {
        len: usize,
        blocks: usize,
        minbits: usize,
    },
    /// The largest stream the mode allows overflows the size type.
    #[error("stream size overflows")]
    Overflow,
    /// libzfp decoded nothing.
    #[error("zfp could not decode the stream")]
    Undecodable,
    /// Decoding ended before the stream's last word, or after it.
    #[error("stream of {len} bytes, decoding used {consumed}")]
    Length { len: usize, consumed: usize },
}

/// Decodes the zfp stream `encoded`, laid out as `layout` says, holding `count` values of `ty`,
/// into `out` (`count` values, native byte order, in 64-bit words so every type is aligned).
/// Errors say why the stream is corrupt.
pub(super) fn decode(
    encoded: &[u8],
    layout: &FieldSource,
    ty: Scalar,
    count: usize,
) -> Result<Vec<u64>, CorruptStream> {
    let mut head = words(&encoded[..encoded.len().min(32)], HEADER_BITS + 64);
    let (_, params) = Reader::open(&mut head, layout, ty).ok_or(CorruptStream::NoField)?;
    if params.ty != ty.zfp_type() {
        return Err(CorruptStream::Type {
            stream: params.ty,
            array: ty.zfp_type(),
        });
    }
    if params.count != count {
        return Err(CorruptStream::Count {
            stream: params.count,
            chunk: count,
        });
    }
    // Every block fills at least `minbits`: a stream shorter than that is cut (and padding it
    // would allocate what a forged `minbits` asks for).
    if params.blocks.saturating_mul(params.minbits) > encoded.len().saturating_mul(8) {
        return Err(CorruptStream::Short {
            len: encoded.len(),
            blocks: params.blocks,
            minbits: params.minbits,
        });
    }
    let max_bits = params.max_bits().ok_or(CorruptStream::Overflow)?;
    let mut all = words(encoded, max_bits);
    let (reader, _) = Reader::open(&mut all, layout, ty).ok_or(CorruptStream::NoField)?;
    let mut out = vec![0u64; (count * ty.size()).div_ceil(8)];
    // SAFETY: `out` holds the field's `count` values of its type, contiguous (the field has no
    // strides) and 8-byte aligned, and outlives the call; the input buffer holds every bit the
    // mode can read.
    let consumed = unsafe {
        zfp::zfp_field_set_pointer(reader.field, out.as_mut_ptr().cast::<c_void>());
        zfp::zfp_decompress(reader.stream, reader.field)
    };
    if consumed == 0 {
        return Err(CorruptStream::Undecodable);
    }
    // Both writers end the stream with the word holding its last bit: decoding ends there too.
    if consumed != encoded.len().next_multiple_of(8) {
        return Err(CorruptStream::Length {
            len: encoded.len(),
            consumed,
        });
    }
    Ok(out)
}

/// The most bytes a stream laid out as `layout` (a known field and mode) can take.
pub(super) fn max_stream_len(layout: &FieldSource, ty: Scalar) -> Option<usize> {
    let mut head = words(&[], HEADER_BITS + 64);
    let (_, params) = Reader::open(&mut head, layout, ty)?;
    Some(params.max_bits()?.div_ceil(8))
}

/// Copies the values [`decode`] gave, `size` bytes each, into `out` little-endian.
pub(super) fn copy_le(words: &[u64], size: usize, out: &mut [u8]) {
    let native = words.iter().flat_map(|w| w.to_ne_bytes());
    for (o, b) in out.iter_mut().zip(native) {
        *o = b;
    }
    if cfg!(target_endian = "big") {
        for value in out.chunks_exact_mut(size) {
            value.reverse();
        }
    }
}

/// Test support shared by both zfp codecs.
#[cfg(test)]
pub(super) mod testutil {
    use crate::codec::ArrayToBytes;

    /// A file of tests/fixtures/wild (a chunk a real writer wrote).
    pub fn wild_chunk(path: &str) -> Vec<u8> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/wild");
        std::fs::read(format!("{dir}/{path}")).unwrap()
    }

    /// `good` (a stream `codec` decodes to `len` bytes) decodes; cut at whole words, with a
    /// word appended, or into a buffer of the wrong size it fails; damaged it never crashes.
    pub fn check_damaged_streams(codec: &dyn ArrayToBytes, good: &[u8], len: usize, what: &str) {
        let mut out = vec![0u8; len];
        assert_eq!(codec.decode(good, &mut out), Ok(len), "{what}");
        // A stream cut inside its last word can still decode (zfp has no checksum).
        for cut in [0, 4, good.len() / 16 * 8, good.len() - 8] {
            assert!(
                codec.decode(&good[..cut], &mut out).is_err(),
                "{what} cut to {cut}"
            );
        }
        let mut longer = good.to_vec();
        longer.extend([0u8; 8]);
        assert!(
            codec.decode(&longer, &mut out).is_err(),
            "{what}: trailing word"
        );
        let mut wrong = vec![0u8; len + 8];
        assert!(
            codec.decode(good, &mut wrong).is_err(),
            "{what}: wrong size"
        );
        for i in 0..good.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut bad = good.to_vec();
                bad[i] ^= flip;
                let _ = codec.decode(&bad, &mut out);
            }
        }
    }
}
