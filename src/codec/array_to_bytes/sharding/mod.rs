//! `sharding_indexed`: a shard holds a grid of inner chunks, each encoded with the inner codecs,
//! and an index of where each one lies (at the start or the end of the shard).
//!
//! [`ShardingCodec`] decodes the index and single inner chunks, so a reader can fetch just the
//! byte ranges it needs (see `ShardedArray`), and also whole shards held in memory (for shards
//! nested inside shards).
//!
//! The files: `config` (the codec's configuration), `index` (a shard's index), `chain` (the
//! chain around `sharding_indexed`, and whole chunks or shards held in memory), `ranged`
//! ([`ShardedArray`], which readers use to fetch inner chunks by range).

mod chain;
mod config;
mod index;
mod ranged;
#[cfg(test)]
pub(crate) mod testutil;

pub use index::ShardIndex;
pub use ranged::ShardedArray;

use self::chain::{ChunkDecoder, SHARDING};
use self::config::{parse_codecs, parse_shape};
use self::index::{encoded_index_len, ENTRY_BYTES};
use crate::codec::config::{bad, get_str};
use crate::codec::{copy_box, step_in, ChunkRepr, CodecError, Pipeline};
use crate::meta::{CodecSpec, DataType, MAX_CHUNK_BYTES};
use std::ops::Range;

/// The sharding codec for shards of one shape (as it reaches the codec) and element type.
pub(crate) struct ShardingCodec {
    /// Shard shape in elements.
    shard_shape: Vec<u64>,
    /// Elements in a shard.
    shard_elements: usize,
    /// Inner chunk shape in elements.
    inner_shape: Vec<u64>,
    /// Inner chunks per shard along each axis.
    grid: Vec<u64>,
    /// One element of fill value, for the inner chunks a shard does not hold; none for
    /// variable-length elements, whose shards are read by inner chunk only (the reader fills
    /// an absent one).
    fill: Option<Vec<u8>>,
    /// Decoder of one inner chunk.
    inner: ChunkDecoder,
    /// Decoder of the index.
    index: Pipeline,
    /// Encoded size of the index in bytes.
    index_len: u64,
    /// True when the index is at the start of the shard, false when at its end.
    index_at_start: bool,
}

impl ShardingCodec {
    /// Builds the codec from its configuration for shards of form `shard`; `fill` is one
    /// element of fill value. The inner chunk shape must divide the shard shape.
    pub fn build(spec: &CodecSpec, shard: &ChunkRepr, fill: &[u8]) -> Result<Self, CodecError> {
        let inner_shape = parse_shape(spec)?;
        let divides = inner_shape.len() == shard.shape.len()
            && inner_shape
                .iter()
                .zip(&shard.shape)
                .all(|(&i, &s)| s % i == 0);
        if !divides {
            return Err(bad(
                spec,
                format!(
                    "inner chunk shape {inner_shape:?} does not divide the shard shape {:?}",
                    shard.shape
                ),
            ));
        }
        let shard_elements = shard.count(SHARDING)?;
        shard.byte_len(SHARDING)?;
        let whole_fill = match shard.dtype.is_variable() {
            true => None,
            false if fill.len() == shard.dtype.size() => Some(fill.to_vec()),
            false => return Err(bad(spec, "the fill value does not match the element size")),
        };
        let grid: Vec<u64> = inner_shape
            .iter()
            .zip(&shard.shape)
            .map(|(&i, &s)| s / i)
            .collect();
        let inner = ChunkDecoder::new(
            &parse_codecs(spec, "codecs")?,
            &shard.dtype,
            fill,
            &inner_shape,
        )?;
        // The index is read whole: as large as a chunk at most (a shard of 2^40 inner chunks
        // would have a 16 TiB index, which a hostile store could make zarrfs allocate).
        let too_large = || {
            bad(
                spec,
                format!(
                    "the index of {grid:?} inner chunks is larger than {} GiB",
                    MAX_CHUNK_BYTES >> 30
                ),
            )
        };
        let entries = crate::meta::element_count(&grid);
        if entries
            .and_then(|n| n.checked_mul(ENTRY_BYTES as u64))
            .is_none_or(|len| len > MAX_CHUNK_BYTES)
        {
            return Err(too_large());
        }
        let index_codecs = parse_codecs(spec, "index_codecs")?;
        let mut index_shape = grid.clone();
        index_shape.push(2);
        let index = Pipeline::new(&index_codecs, &DataType::UInt(8), &index_shape)?;
        let chunks = index.decoded_len() / ENTRY_BYTES;
        let index_len = encoded_index_len(&index_codecs, chunks)? as u64;
        if index_len > MAX_CHUNK_BYTES {
            return Err(too_large());
        }
        let index_at_start = match get_str(spec, "index_location")? {
            Some("start") => true,
            None | Some("end") => false,
            Some(other) => return Err(bad(spec, format!("unknown index_location '{other}'"))),
        };
        Ok(ShardingCodec {
            shard_shape: shard.shape.clone(),
            shard_elements,
            inner_shape,
            grid,
            fill: whole_fill,
            inner,
            index,
            index_len,
            index_at_start,
        })
    }

    /// Shape of an inner chunk.
    pub fn inner_shape(&self) -> &[u64] {
        &self.inner_shape
    }

    /// Inner chunks per shard along each axis.
    pub fn grid(&self) -> &[u64] {
        &self.grid
    }

    /// Length of the encoded index, and whether it is at the start of the shard (else the end).
    pub fn index_place(&self) -> (u64, bool) {
        (self.index_len, self.index_at_start)
    }

    /// Where the encoded index lies in a shard of `shard_size` bytes.
    pub fn index_range(&self, shard_size: u64) -> Result<Range<u64>, CodecError> {
        let len = self.index_len;
        if shard_size < len {
            return Err(CodecError::corrupt(
                SHARDING,
                format!("the {shard_size}-byte shard is shorter than its {len}-byte index"),
            ));
        }
        Ok(if self.index_at_start {
            0..len
        } else {
            shard_size - len..shard_size
        })
    }

    /// Decodes the index (the bytes at [`ShardingCodec::index_range`]) of a shard of
    /// `shard_size` bytes, checking every entry lies inside the shard.
    pub fn decode_index(&self, encoded: &[u8], shard_size: u64) -> Result<ShardIndex, CodecError> {
        let mut index = Vec::new();
        self.index.decode(encoded, &mut index)?;
        ShardIndex::parse(&index, shard_size)
    }

    /// The most bytes any form of one inner chunk takes (see
    /// [`ChunkDecoder::largest_form_len`]).
    pub fn inner_largest_form_len(&self) -> Option<usize> {
        self.inner.largest_form_len()
    }

    /// Refuses variable-length inner chunks whose serialized form exceeds `max` bytes.
    pub fn limit_decoded(mut self, max: usize) -> Self {
        self.inner = self.inner.limit_decoded(max);
        self
    }

    /// Decodes one inner chunk.
    pub fn decode_inner(&self, encoded: &[u8]) -> Result<Vec<u8>, CodecError> {
        self.inner.decode(encoded)
    }

    /// Decodes a whole shard held in memory; absent inner chunks read as the fill value.
    pub fn decode(&self, shard: &[u8]) -> Result<Vec<u8>, CodecError> {
        let context = |what: String| {
            move |e: CodecError| CodecError::corrupt(SHARDING, format!("{what}: {e}"))
        };
        let Some(fill) = &self.fill else {
            return Err(CodecError::unsupported(
                SHARDING,
                "a whole shard of variable-length elements (a shard inside a shard)",
            ));
        };
        let size = shard.len() as u64;
        let range = self.index_range(size)?;
        let index = self
            .decode_index(&shard[range.start as usize..range.end as usize], size)
            .map_err(context("index".into()))?;
        let es = fill.len();
        let mut out = if index.has_missing() {
            fill.repeat(self.shard_elements)
        } else {
            vec![0u8; self.shard_elements * es]
        };
        let mut coords = vec![0u64; self.grid.len()];
        for i in 0..index.len() {
            if let Some(r) = index.get(i) {
                let chunk = self
                    .decode_inner(&shard[r.start as usize..r.end as usize])
                    .map_err(context(format!("inner chunk {i}")))?;
                let origin: Vec<u64> = coords
                    .iter()
                    .zip(&self.inner_shape)
                    .map(|(c, s)| c * s)
                    .collect();
                let (inner, shard) = (&self.inner_shape, &self.shard_shape);
                copy_box((&chunk, inner, &[]), (&mut out, shard, &origin), inner, es);
            }
            step_in(&mut coords, &[], &self.grid);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::array_to_bytes::sharding::testutil::{index, shard, spec};
    use serde_json::json;
    use std::sync::Arc;

    /// The `rows`×`cols` block at (`y`, `x`) of the 2-D `u16` array whose element (i, j) is
    /// `i * 100 + j`, little-endian.
    fn block(y: u64, x: u64, rows: u64, cols: u64) -> Vec<u8> {
        let mut out = Vec::new();
        for i in y..y + rows {
            for j in x..x + cols {
                out.extend(((i * 100 + j) as u16).to_le_bytes());
            }
        }
        out
    }

    /// The four 2×2 inner chunks of the 4×4 array, in C order.
    fn inner_chunks() -> Vec<Option<Vec<u8>>> {
        [(0, 0), (0, 2), (2, 0), (2, 2)]
            .iter()
            .map(|&(y, x)| Some(block(y, x, 2, 2)))
            .collect()
    }

    fn codec(at_start: bool) -> ShardingCodec {
        let repr = ChunkRepr::new(vec![4, 4], DataType::UInt(2));
        let spec = spec(&[2, 2], json!(["bytes"]), at_start);
        ShardingCodec::build(&spec, &repr, &7u16.to_le_bytes()).unwrap()
    }

    #[test]
    fn decodes_whole_shards_with_the_index_at_either_end() {
        for at_start in [false, true] {
            let codec = codec(at_start);
            assert_eq!(
                codec.decode(&shard(&inner_chunks(), at_start)).unwrap(),
                block(0, 0, 4, 4)
            );
            let mut chunks = inner_chunks();
            chunks[1] = None;
            let mut expected = block(0, 0, 4, 4);
            for row in 0..2 {
                expected[row * 8 + 4..row * 8 + 8].copy_from_slice(&[7, 0, 7, 0]);
            }
            assert_eq!(codec.decode(&shard(&chunks, at_start)).unwrap(), expected);
        }
    }

    #[test]
    fn damaged_shards_are_errors() {
        let codec = codec(false);
        let good = shard(&inner_chunks(), false);
        let mut flipped = good.clone();
        *flipped.last_mut().unwrap() ^= 1;
        let err = codec.decode(&flipped).unwrap_err().to_string();
        assert!(err.contains("index") && err.contains("crc32c"), "{err}");
        let mut beyond = good[..32].to_vec();
        beyond.extend(index(&[(0, 8), (8, 8), (16, 8), (24, 1000)]));
        let err = codec.decode(&beyond).unwrap_err().to_string();
        assert!(
            err.contains("index entry 3 (offset 24, 1000 bytes)"),
            "{err}"
        );
        let err = codec.decode(&good[..20]).unwrap_err().to_string();
        assert!(err.contains("shorter than its 68-byte index"), "{err}");
        let mut chunks = inner_chunks();
        chunks[3] = Some(vec![1, 2, 3]);
        let err = codec
            .decode(&shard(&chunks, false))
            .unwrap_err()
            .to_string();
        assert!(err.contains("inner chunk 3"), "{err}");
    }

    #[test]
    fn shards_nest() {
        // Each 2×4 inner chunk of the 4×4 shard is itself a shard of 1×2 chunks.
        let inner = spec(&[1, 2], json!(["bytes"]), true);
        let outer = spec(
            &[2, 4],
            json!([{"name": inner.name, "configuration": *inner.config}]),
            false,
        );
        let sub_shards = [0, 2]
            .iter()
            .map(|&y| {
                let sub: Vec<_> = [(0, 0), (0, 2), (1, 0), (1, 2)]
                    .iter()
                    .map(|&(dy, x)| Some(block(y + dy, x, 1, 2)))
                    .collect();
                Some(shard(&sub, true))
            })
            .collect::<Vec<_>>();
        let decoder = ChunkDecoder::new(&[outer], &DataType::UInt(2), &[0, 0], &[4, 4]).unwrap();
        assert_eq!(
            decoder.decode(&shard(&sub_shards, false)).unwrap(),
            block(0, 0, 4, 4)
        );
    }

    #[test]
    fn bad_configurations_are_refused() {
        let repr = ChunkRepr::new(vec![4, 6], DataType::UInt(2));
        let build = |spec: CodecSpec| {
            ShardingCodec::build(&spec, &repr, &[0, 0])
                .err()
                .unwrap()
                .to_string()
        };
        let err = build(spec(&[3, 3], json!(["bytes"]), false));
        assert!(
            err.contains("[3, 3] does not divide the shard shape [4, 6]"),
            "{err}"
        );
        assert!(build(spec(&[2], json!(["bytes"]), false)).contains("does not divide"));
        for (key, value, expected) in [
            ("index_location", json!("middle"), "middle"),
            ("codecs", json!([17]), "must be a list of codecs"),
            ("chunk_shape", json!([0, 2]), "positive integers"),
        ] {
            let mut bad = spec(&[2, 2], json!(["bytes"]), false);
            Arc::make_mut(&mut bad.config)[key] = value;
            assert!(build(bad).contains(expected), "{key}");
        }
    }

    #[test]
    fn indexes_larger_than_a_chunk_are_refused() {
        // 2^40 inner chunks of one element: a 16 TiB index.
        let repr = ChunkRepr::new(vec![1 << 40], DataType::UInt(1));
        let spec = CodecSpec::new(
            SHARDING,
            json!({"chunk_shape": [1], "index_location": "start"}),
        );
        let err = ShardingCodec::build(&spec, &repr, &[0]).err().unwrap();
        assert!(err.to_string().contains("larger than 4 GiB"), "{err}");
        // 2^28 entries of 16 bytes are 4 GiB, the most accepted: with the default crc32c, 4
        // bytes too many.
        let repr = ChunkRepr::new(vec![1 << 28], DataType::UInt(1));
        assert!(ShardingCodec::build(&spec, &repr, &[0]).is_err());
        let bare = json!({"chunk_shape": [1], "index_codecs": ["bytes"]});
        assert!(ShardingCodec::build(&CodecSpec::new(SHARDING, bare), &repr, &[0]).is_ok());
    }

    #[test]
    fn an_inner_chunk_size_true_is_one() {
        let repr = ChunkRepr::new(vec![2, 4], DataType::UInt(2));
        let spec = CodecSpec::new(SHARDING, json!({"chunk_shape": [true, 2]}));
        let codec = ShardingCodec::build(&spec, &repr, &[0, 0]).unwrap();
        assert_eq!(codec.inner_shape(), [1, 2]);
    }

    #[test]
    fn absent_codec_lists_take_zarr_python_defaults() {
        let repr = ChunkRepr::new(vec![4, 4], DataType::UInt(2));
        let spec = CodecSpec::new(SHARDING, json!({"chunk_shape": [2, 2]}));
        let codec = ShardingCodec::build(&spec, &repr, &[0, 0]).unwrap();
        assert_eq!(
            codec.decode(&shard(&inner_chunks(), false)).unwrap(),
            block(0, 0, 4, 4)
        );
    }
}
