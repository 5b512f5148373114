//! Chains around `sharding_indexed`: finding it in a codec chain, the array→array codecs before
//! it, and [`ChunkDecoder`], which decodes a whole chunk held in memory whether it is a plain
//! chunk or a shard (the inner chunks of a shard may themselves be shards).

use super::ShardingCodec;
use crate::codec::array_chain::ArrayChain;
use crate::codec::{ChunkRepr, CodecError, Pipeline};
use crate::meta::{CodecSpec, DataType};

/// The codec name of sharding.
pub(crate) const SHARDING: &str = "sharding_indexed";

/// Splits `codecs` at `sharding_indexed` into the array→array codecs before it and its spec;
/// `None` when the chain has no sharding codec. Codecs after it would transform whole shards,
/// which would defeat reading inner chunks by range, so they are refused.
pub(crate) fn split_at_sharding(
    codecs: &[CodecSpec],
) -> Result<Option<(&[CodecSpec], &CodecSpec)>, CodecError> {
    let Some(at) = codecs.iter().position(|c| c.name == SHARDING) else {
        return Ok(None);
    };
    if let Some(after) = codecs.get(at + 1) {
        return Err(CodecError::unsupported(
            SHARDING,
            &format!(
                "codec '{}' after sharding_indexed would transform whole shards",
                after.name
            ),
        ));
    }
    Ok(Some((&codecs[..at], &codecs[at])))
}

/// The array→array codecs before `sharding_indexed` (`specs`), for chunks of `decoded` form
/// whose fill value is `fill` (one element); returns them, the form of the shard they leave and
/// the fill value of the inner chunks it does not hold: `fill` encoded by them, as zarr-python
/// resolves it. Codecs that change the element type are refused.
pub(crate) fn before_sharding(
    specs: &[CodecSpec],
    decoded: &ChunkRepr,
    fill: &[u8],
) -> Result<(ArrayChain, ChunkRepr, Vec<u8>), CodecError> {
    let (chain, shard) = ArrayChain::build(specs, decoded, |spec, decoded, encoded| {
        if encoded.dtype != decoded.dtype {
            return Err(CodecError::unsupported(
                &spec.name,
                "a codec before sharding_indexed must not change the data type",
            ));
        }
        Ok(())
    })?;
    let fill = chain.encode_fill(fill)?;
    Ok((chain, shard, fill))
}

/// Decodes one whole encoded chunk held in memory: through a [`Pipeline`], or — for a chain
/// holding `sharding_indexed` — through the sharding codec, then the array→array codecs before it.
pub(crate) enum ChunkDecoder {
    /// A chain without sharding.
    Plain(Pipeline),
    /// A chain whose array→bytes codec is `sharding_indexed`.
    Sharded {
        /// The array→array codecs before the sharding codec.
        before: ArrayChain,
        /// The sharding codec, built for the shard as those codecs leave it.
        codec: Box<ShardingCodec>,
    },
}

impl ChunkDecoder {
    /// The decoder of `codecs` for chunks of `shape` elements of `dtype`; `fill` (one element)
    /// fills the inner chunks a shard does not hold.
    pub fn new(
        codecs: &[CodecSpec],
        dtype: &DataType,
        fill: &[u8],
        shape: &[u64],
    ) -> Result<Self, CodecError> {
        let Some((before, spec)) = split_at_sharding(codecs)? else {
            return Pipeline::new(codecs, dtype, shape).map(ChunkDecoder::Plain);
        };
        let decoded = ChunkRepr::new(shape.to_vec(), dtype.clone());
        let (before, shard, inner_fill) = before_sharding(before, &decoded, fill)?;
        let codec = Box::new(ShardingCodec::build(spec, &shard, &inner_fill)?);
        Ok(ChunkDecoder::Sharded { before, codec })
    }

    /// The most bytes any form of one chunk takes through the chain (see
    /// [`Pipeline::largest_form_len`]); `None` when unknown (variable-length elements, or a
    /// shard of its own, whose index and inner encodings add to it).
    pub fn largest_form_len(&self) -> Option<usize> {
        match self {
            ChunkDecoder::Plain(pipeline) => pipeline.largest_form_len(),
            ChunkDecoder::Sharded { .. } => None,
        }
    }

    /// Refuses variable-length chunks whose serialized form exceeds `max` bytes (see
    /// [`Pipeline::limit_decoded`]), in a shard of its own too.
    pub fn limit_decoded(self, max: usize) -> Self {
        match self {
            ChunkDecoder::Plain(pipeline) => ChunkDecoder::Plain(pipeline.limit_decoded(max)),
            ChunkDecoder::Sharded { before, codec } => ChunkDecoder::Sharded {
                before,
                codec: Box::new(codec.limit_decoded(max)),
            },
        }
    }

    /// Decodes one chunk: C order, little-endian, of exactly the chunk's size.
    pub fn decode(&self, encoded: &[u8]) -> Result<Vec<u8>, CodecError> {
        match self {
            ChunkDecoder::Plain(pipeline) => {
                let mut out = Vec::new();
                pipeline.decode(encoded, &mut out).map(|()| out)
            }
            ChunkDecoder::Sharded { before, codec } => before.decode(codec.decode(encoded)?),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(name: &str) -> CodecSpec {
        CodecSpec::new(name, json!({}))
    }

    #[test]
    fn splits_at_the_sharding_codec() {
        let t = CodecSpec::new("transpose", json!({"order": [1, 0]}));
        assert_eq!(split_at_sharding(&[spec("bytes")]), Ok(None));
        let chain = [t.clone(), spec(SHARDING)];
        let (before, at) = split_at_sharding(&chain).unwrap().unwrap();
        assert_eq!((before, at), (&[t][..], &chain[1]));
        let err = split_at_sharding(&[spec(SHARDING), spec("gzip")]).unwrap_err();
        assert!(err.to_string().contains("'gzip' after sharding"), "{err}");
    }

    #[test]
    fn type_changing_codecs_before_sharding_are_refused() {
        let astype = CodecSpec::new("astype", json!({"encode_dtype": "<f4"}));
        let repr = ChunkRepr::new(vec![4], DataType::Float(8));
        let err = before_sharding(&[astype], &repr, &[0; 8]).err().unwrap();
        assert!(matches!(err, CodecError::Unsupported(_)), "{err}");
    }
}
