//! Decoding chunks: a codec chain turned into one [`Pipeline`], and the codecs it is made of.
//!
//! [`Pipeline::new`] turns a codec chain (Zarr v3 order; the v2 parser maps v2 metadata onto the
//! same form) into decoders; [`Pipeline::decode`] turns one stored chunk
//! into its elements (C order, little-endian) where its [`Target`] says.
//!
//! A chain is any number of array→array codecs, one array→bytes codec, then any number of
//! bytes→bytes codecs; decoding runs it backwards. The codecs are grouped by that kind, one file
//! each, as zarrs groups them:
//! - `array_to_array`: `transpose`, `scale_offset`, `cast_value` (`ArrayToArray`);
//! - `array_to_bytes`: `bytes`, `packbits`, `zfp`, `zfpy` (`ArrayToBytes`), and sharding and
//!   the variable-length codecs, which readers and `vlen` drive themselves;
//! - `bytes_to_bytes`: compressors, checksums, `shuffle`, `base64` (`BytesToBytes`);
//! - `filters`: the numcodecs filters, bytes→bytes codecs that also sit before the array→bytes
//!   codec, where one adapter places them.
//!
//! `registry` holds the one table of names, kinds and constructors that every chain is built
//! from; `prefix_decode` decodes the start of a compressed chunk progressively; `config`,
//! `numtype` and `error` serve all codecs.

mod array_chain;
pub(crate) mod array_to_array;
pub(crate) mod array_to_bytes;
pub(crate) mod bytes_to_bytes;
mod c_order;
mod config;
mod error;
pub(crate) mod filters;
mod numtype;
mod pipeline;
mod prefix_decode;
mod registry;
#[cfg(test)]
mod testutil;

pub use crate::memory::filling::DecodeTarget;
#[cfg(test)]
pub(crate) use array_to_bytes::sharding::testutil as sharding_testutil;
pub use array_to_bytes::sharding::{ShardIndex, ShardedArray};
pub use array_to_bytes::vlen;
pub(crate) use c_order::{copy_box, step_in};
pub use error::CodecError;
pub(crate) use numtype::NumType;
pub use pipeline::{Need, Pipeline, Target};
pub(crate) use prefix_decode::Prefix;

use crate::meta::DataType;
use array_to_bytes::bytes::Bytes;
use filters::Elements;
use std::ops::Range;

/// Shape and element type of a chunk at one point of the chain (array→array codecs may change
/// both: `transpose` permutes the shape, `astype` changes the type, `packbits` both).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ChunkRepr {
    /// Chunk shape in elements.
    pub shape: Vec<u64>,
    /// Element type.
    pub dtype: DataType,
}

impl ChunkRepr {
    /// A chunk of `shape` holding `dtype` elements.
    pub fn new(shape: Vec<u64>, dtype: DataType) -> Self {
        ChunkRepr { shape, dtype }
    }

    /// Number of elements.
    pub fn count(&self, codec: &str) -> Result<usize, CodecError> {
        self.shape
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?))
            .ok_or_else(|| CodecError::bad_config(codec, "chunk element count overflows"))
    }

    /// Size in bytes.
    pub fn byte_len(&self, codec: &str) -> Result<usize, CodecError> {
        self.count(codec)?
            .checked_mul(self.dtype.size())
            .ok_or_else(|| CodecError::bad_config(codec, "chunk byte size overflows"))
    }
}

/// The element type and stored byte order a bytes→bytes codec sees (the array→bytes codec's,
/// or the encoded type of the numcodecs filter before it): filters without a `dtype`,
/// `shuffle` with `elementsize` 0, `pcodec` and `zfpy` take it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StoredElem {
    /// Element type.
    pub dtype: DataType,
    /// True if the elements are stored big-endian.
    pub big_endian: bool,
}

impl StoredElem {
    /// Elements of `dtype` stored little-endian.
    pub fn le(dtype: DataType) -> Self {
        StoredElem {
            dtype,
            big_endian: false,
        }
    }
}

/// How many bytes a bytes→bytes decoder must produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Size {
    /// Exactly this many.
    Exact(usize),
    /// At most this many (after a codec whose encoded size is not fixed, e.g. two compressors).
    AtMost(usize),
}

impl Size {
    /// The largest allowed size.
    pub fn max(self) -> usize {
        match self {
            Size::Exact(n) | Size::AtMost(n) => n,
        }
    }

    /// The size `f` gives for this size's bound, as exact or as bounded as this one.
    pub fn map(self, f: impl FnOnce(usize) -> usize) -> Size {
        match self {
            Size::Exact(n) => Size::Exact(f(n)),
            Size::AtMost(n) => Size::AtMost(f(n)),
        }
    }

    /// An upper bound for the compressed form of data of this size (generous: it only caps
    /// allocations for chains that compress twice).
    pub fn compressed_bound(self) -> Size {
        let n = self.max();
        Size::AtMost(n.saturating_add(n / 2).saturating_add(4096))
    }

    /// Checks that a decoder produced an allowed number of bytes.
    pub fn check(self, codec: &str, produced: usize) -> Result<(), CodecError> {
        match self {
            Size::Exact(n) if produced != n => Err(CodecError::corrupt(
                codec,
                format!("decoded to {produced} bytes, expected {n}"),
            )),
            Size::AtMost(n) if produced > n => Err(CodecError::corrupt(
                codec,
                format!("decoded to {produced} bytes, more than the limit of {n}"),
            )),
            _ => Ok(()),
        }
    }
}

/// The first `n` bytes of a decoder's output `out`; more than `out` holds is corrupt data.
pub(crate) fn out_prefix<'a>(
    codec: &str,
    out: &'a mut [u8],
    n: usize,
) -> Result<&'a mut [u8], CodecError> {
    out.get_mut(..n)
        .ok_or_else(|| CodecError::corrupt(codec, format!("{n} bytes exceed the expected size")))
}

/// An array→array codec (`transpose`, numcodecs filters before the array→bytes codec).
pub(crate) trait ArrayToArray: Send + Sync {
    /// Codec name, for error messages.
    fn name(&self) -> &str;
    /// Decodes `encoded` (the chunk in this codec's encoded representation, little-endian) into
    /// `out` (the decoded representation). Both lengths were fixed when the chain was built.
    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<(), CodecError>;
    /// True when each decoded element comes from its own encoded element alone, wherever it
    /// lies: the codec then decodes an inner chunk of a shard after it as it decodes the whole
    /// shard.
    fn elementwise(&self) -> bool {
        false
    }
    /// One decoded element `fill` as the codec encodes it: the fill value of the chunks a
    /// shard after the codec does not hold, as zarr-python resolves it through the codecs
    /// before `sharding_indexed` (`scale_offset` encodes it; `transpose` and the numcodecs
    /// filters keep it).
    fn encode_fill(&self, fill: &[u8]) -> Result<Vec<u8>, CodecError> {
        Ok(fill.to_vec())
    }
}

/// An array→bytes codec: turns the serialized chunk into the chunk's little-endian elements.
pub(crate) trait ArrayToBytes: Send + Sync {
    /// Codec name, for error messages.
    fn name(&self) -> &str;
    /// The size of the serialized form of `decoded` bytes of elements.
    fn encoded_size(&self, decoded: Size) -> Size;
    /// Decodes the serialized chunk `encoded` into the start of `out` (the elements); returns
    /// how many bytes it wrote. Output that would not fit in `out` is an error (`Corrupt`).
    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError>;
    /// The `bytes` codec, whose serialized form is the elements themselves in a stored byte
    /// order: the codec before it then writes straight into the output, which
    /// [`Bytes::decode_in_place`] finishes. `None` for codecs with a form of their own.
    fn in_place(&self) -> Option<&Bytes> {
        None
    }
}

/// A bytes→bytes codec (compressors, checksums, `shuffle`, the numcodecs filters).
pub(crate) trait BytesToBytes: Send + Sync {
    /// Codec name, for error messages.
    fn name(&self) -> &str;
    /// The size of the encoded form of data of size `decoded`; by default a compressor's
    /// (whose output size is not fixed) [`Size::compressed_bound`].
    fn encoded_size(&self, decoded: Size) -> Size {
        decoded.compressed_bound()
    }
    /// Decodes `encoded` into the start of `out`; returns how many bytes it wrote. Output that
    /// would not fit in `out` is an error (`Corrupt`), never a larger allocation.
    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError>;
    /// The decoded size `encoded` states in its own header, for formats that have one (blosc,
    /// lz4 with its size prefix, zstd frames with a content size); `None` when unknown.
    fn stated_size(&self, encoded: &[u8]) -> Option<usize> {
        let _ = encoded;
        None
    }
    /// For codecs whose decoded form is a slice of the encoded form (checksums): verifies
    /// `encoded` and returns that slice's range, so the pipeline need not copy.
    fn payload(&self, encoded: &[u8]) -> Result<Option<Range<usize>>, CodecError> {
        let _ = encoded;
        Ok(None)
    }
    /// For the numcodecs filters, which zarr-python 3 also places before the array→bytes codec:
    /// the element types they decode between. `None` for codecs that only see bytes.
    fn elements(&self) -> Option<Elements> {
        None
    }
    /// For compressors whose chunks decode front first (see `prefix_decode`): which kind.
    fn progressive(&self) -> Option<Prefix> {
        None
    }
}
