//! [`ShardedArray`]: the geometry and decoders a reader needs to read a sharded array inner chunk
//! by inner chunk, fetching only the byte ranges of a shard it needs.
//!
//! The array is read in a grid of inner chunks over the whole array (the *read grid*). Before
//! `sharding_indexed` may come `transpose`, which permutes the shard's axes (an inner chunk of
//! the transposed shard is still a box of the array, transposed), and codecs that decode element
//! by element (`scale_offset`, numcodecs' `fixedscaleoffset`, ...), which decode an inner chunk
//! as they decode the whole shard. Other array→array codecs (`delta`) change whole shards and
//! are refused. An inner chunk a shard does not hold reads as the array's fill value, as an
//! absent shard does: zarr-python fills it with the fill value encoded by those codecs and
//! decodes that, so an array whose fill value does not come back through them is refused.

use super::chain::{before_sharding, split_at_sharding, SHARDING};
use super::ShardingCodec;
use crate::codec::array_chain::ArrayChain;
use crate::codec::registry::build_array_to_array;
use crate::codec::{ChunkRepr, CodecError, ShardIndex};
use crate::meta::{CodecSpec, DataType};
use std::ops::Range;

/// How to read one sharded array by inner chunks.
pub struct ShardedArray {
    /// The sharding codec, for the shard as the codecs before it leave it.
    codec: ShardingCodec,
    /// Axis `i` of the codec's (transposed) shard is array axis `perm[i]`.
    perm: Vec<usize>,
    /// Inner chunk shape in the array's axis order: the read grid's chunk shape.
    read_shape: Vec<u64>,
    /// Inner chunks per shard along each array axis.
    per_shard: Vec<u64>,
    /// The transposes before the sharding codec, built for one inner chunk.
    before: ArrayChain,
}

impl ShardedArray {
    /// The sharded reading of an array with codec chain `codecs`, elements of `dtype`, fill
    /// value `fill` (one element) and chunk (shard) shape `shard_shape`; `None` when the chain
    /// does not shard.
    pub fn new(
        codecs: &[CodecSpec],
        dtype: &DataType,
        fill: &[u8],
        shard_shape: &[u64],
    ) -> Result<Option<Self>, CodecError> {
        let Some((before, spec)) = split_at_sharding(codecs)? else {
            return Ok(None);
        };
        let ndim = shard_shape.len();
        let (one, _, inner_fill) =
            before_sharding(before, &ChunkRepr::new(vec![1; ndim], dtype.clone()), fill)?;
        let mut stages = before.iter().zip(one.elementwise());
        if let Some((other, _)) =
            stages.find(|(c, elementwise)| c.name != "transpose" && !elementwise)
        {
            return Err(CodecError::unsupported(
                SHARDING,
                &format!(
                    "codec '{}' before sharding_indexed changes whole shards; only transpose \
                     and codecs working element by element can come before it",
                    other.name
                ),
            ));
        }
        if one.decode(inner_fill.clone())? != fill {
            return Err(CodecError::unsupported(
                SHARDING,
                "the fill value does not come back through the codecs before \
                 sharding_indexed, so zarr-python reads the inner chunks a shard does not hold \
                 as another value, which zarrfs does not",
            ));
        }
        let transposes: Vec<CodecSpec> = before
            .iter()
            .filter(|c| c.name == "transpose")
            .cloned()
            .collect();
        let perm = permutation(&transposes, ndim)?;
        let shard = ChunkRepr::new(
            perm.iter().map(|&a| shard_shape[a]).collect(),
            dtype.clone(),
        );
        let codec = ShardingCodec::build(spec, &shard, &inner_fill)?;
        let mut read_shape = vec![0; perm.len()];
        let mut per_shard = vec![0; perm.len()];
        for (i, &a) in perm.iter().enumerate() {
            read_shape[a] = codec.inner_shape()[i];
            per_shard[a] = codec.grid()[i];
        }
        let chunk = ChunkRepr::new(read_shape.clone(), dtype.clone());
        let (before, _, _) = before_sharding(before, &chunk, fill)?;
        Ok(Some(ShardedArray {
            codec,
            perm,
            read_shape,
            per_shard,
            before,
        }))
    }

    /// The read grid's chunk shape: the inner chunk shape, in the array's axis order.
    pub fn read_chunk_shape(&self) -> &[u64] {
        &self.read_shape
    }

    /// For the inner chunk at read-grid index `idx`: the grid index of its shard and its number
    /// in that shard's index.
    pub fn locate(&self, idx: &[u64]) -> (Vec<u64>, usize) {
        let shard = idx
            .iter()
            .zip(&self.per_shard)
            .map(|(i, n)| i / n)
            .collect();
        let inner = self
            .perm
            .iter()
            .zip(self.codec.grid())
            .fold(0u64, |acc, (&a, &n)| acc * n + idx[a] % self.per_shard[a]);
        (shard, inner as usize)
    }

    /// Length of the encoded index, and whether it is at the start of the shard (else the end).
    pub fn index_place(&self) -> (u64, bool) {
        self.codec.index_place()
    }

    /// Where the encoded index lies in a shard of `shard_size` bytes.
    pub fn index_range(&self, shard_size: u64) -> Result<Range<u64>, CodecError> {
        self.codec.index_range(shard_size)
    }

    /// Decodes the index of a shard of `shard_size` bytes.
    pub fn decode_index(&self, encoded: &[u8], shard_size: u64) -> Result<ShardIndex, CodecError> {
        self.codec.decode_index(encoded, shard_size)
    }

    /// The most bytes any form of one inner chunk takes; `None` when unknown.
    pub fn inner_largest_form_len(&self) -> Option<usize> {
        self.codec.inner_largest_form_len()
    }

    /// Refuses variable-length inner chunks whose serialized form exceeds `max` bytes.
    pub fn limit_decoded(mut self, max: usize) -> Self {
        self.codec = self.codec.limit_decoded(max);
        self
    }

    /// Decodes one inner chunk into the read chunk: C order in the array's axis order.
    pub fn decode_inner(&self, encoded: &[u8]) -> Result<Vec<u8>, CodecError> {
        self.before.decode(self.codec.decode_inner(encoded)?)
    }
}

/// The axis permutation the `transpose` codecs `specs` apply together, found by letting them
/// transpose a shape whose extents are the axis numbers (plus one).
fn permutation(specs: &[CodecSpec], ndim: usize) -> Result<Vec<usize>, CodecError> {
    let mut labels = ChunkRepr::new((1..=ndim as u64).collect(), DataType::UInt(1));
    for spec in specs {
        labels = build_array_to_array(spec, &labels)?.1;
    }
    Ok(labels.shape.iter().map(|&l| l as usize - 1).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::array_to_bytes::sharding::chain::ChunkDecoder;
    use crate::codec::array_to_bytes::sharding::testutil::{shard, spec};
    use serde_json::json;

    fn transpose(order: &[usize]) -> CodecSpec {
        CodecSpec::new("transpose", json!({ "order": order }))
    }

    /// Element (y, x) of the 4×6 test array.
    fn at(y: u64, x: u64) -> u8 {
        (y * 10 + x) as u8
    }

    #[test]
    fn a_transpose_before_sharding_reads_by_inner_chunk() {
        // The shard is stored transposed (6×4), in inner chunks of 3×2: 2×3 boxes of the array.
        let codecs = [transpose(&[1, 0]), spec(&[3, 2], json!(["bytes"]), false)];
        let chunks: Vec<_> = [(0, 0), (0, 2), (3, 0), (3, 2)]
            .iter()
            .map(|&(x0, y0)| {
                let stored = (x0..x0 + 3).flat_map(|x| (y0..y0 + 2).map(move |y| at(y, x)));
                Some(stored.collect::<Vec<u8>>())
            })
            .collect();
        let encoded = shard(&chunks, false);
        let array = ShardedArray::new(&codecs, &DataType::UInt(1), &[0], &[4, 6])
            .unwrap()
            .unwrap();
        assert_eq!(array.read_chunk_shape(), &[2, 3]);
        let index = array
            .decode_index(&encoded[encoded.len() - 68..], encoded.len() as u64)
            .unwrap();
        for (ry, rx) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
            let (shard_idx, inner) = array.locate(&[ry, rx]);
            assert_eq!((shard_idx, inner), (vec![0, 0], (rx * 2 + ry) as usize));
            let r = index.get(inner).unwrap();
            let decoded = array
                .decode_inner(&encoded[r.start as usize..r.end as usize])
                .unwrap();
            let expected: Vec<u8> = (2 * ry..2 * ry + 2)
                .flat_map(|y| (3 * rx..3 * rx + 3).map(move |x| at(y, x)))
                .collect();
            assert_eq!(decoded, expected, "read chunk ({ry}, {rx})");
        }
        let whole = ChunkDecoder::new(&codecs, &DataType::UInt(1), &[0], &[4, 6]).unwrap();
        let expected: Vec<u8> = (0..4).flat_map(|y| (0..6).map(move |x| at(y, x))).collect();
        assert_eq!(whole.decode(&encoded).unwrap(), expected);
    }

    #[test]
    fn locates_inner_chunks_across_shards() {
        let codecs = [spec(&[2, 3], json!(["bytes"]), true)];
        let array = ShardedArray::new(&codecs, &DataType::Int(4), &[0; 4], &[4, 6])
            .unwrap()
            .unwrap();
        assert_eq!(array.locate(&[0, 0]), (vec![0, 0], 0));
        assert_eq!(array.locate(&[1, 1]), (vec![0, 0], 3));
        assert_eq!(array.locate(&[3, 2]), (vec![1, 1], 2));
        assert_eq!(array.locate(&[2, 5]), (vec![1, 2], 1));
    }

    #[test]
    fn chains_without_sharding_or_with_other_codecs_before_it() {
        let plain = [CodecSpec::new("bytes", json!({}))];
        assert!(ShardedArray::new(&plain, &DataType::UInt(1), &[0], &[4])
            .unwrap()
            .is_none());
        let delta = CodecSpec::new("delta", json!({"dtype": "<u1"}));
        let codecs = [delta, spec(&[2], json!(["bytes"]), false)];
        let err = ShardedArray::new(&codecs, &DataType::UInt(1), &[0], &[4])
            .err()
            .unwrap();
        assert!(matches!(err, CodecError::Unsupported(_)), "{err}");
        assert!(
            err.to_string().contains("'delta' before sharding_indexed"),
            "{err}"
        );
    }

    #[test]
    fn elementwise_codecs_before_sharding_decode_inner_chunks() {
        let scale = |offset: f64, scale: f64| {
            CodecSpec::new("scale_offset", json!({"offset": offset, "scale": scale}))
        };
        let codecs = [scale(1.0, 4.0), spec(&[2], json!(["bytes"]), false)];
        let fill = 1.5f64.to_le_bytes();
        let array = ShardedArray::new(&codecs, &DataType::Float(8), &fill, &[4])
            .unwrap()
            .unwrap();
        let stored: Vec<u8> = [2.0f64, -4.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let decoded: Vec<u8> = [1.5f64, 0.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(array.decode_inner(&stored).unwrap(), decoded);
        // (0 - 0.1) * 3 / 3 + 0.1 is not 0: zarr-python reads it for absent inner chunks.
        let codecs = [scale(0.1, 3.0), spec(&[2], json!(["bytes"]), false)];
        let err = ShardedArray::new(&codecs, &DataType::Float(8), &[0; 8], &[4]).err();
        assert!(
            matches!(&err, Some(CodecError::Unsupported(m)) if m.contains("fill value")),
            "{err:?}"
        );
    }

    #[test]
    fn transposes_compose() {
        assert_eq!(permutation(&[transpose(&[2, 0, 1])], 3), Ok(vec![2, 0, 1]));
        let twice = [transpose(&[1, 2, 0]), transpose(&[2, 0, 1])];
        assert_eq!(permutation(&twice, 3), Ok(vec![0, 1, 2]));
        assert_eq!(permutation(&[], 0), Ok(vec![]));
    }
}
