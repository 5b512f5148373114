//! [`ArrayChain`]: the array→array codecs of a chain (transpose, delta, scale_offset, ...),
//! built for one chunk form and decoded last to first.

use super::registry::build_array_to_array;
use super::{ArrayToArray, ChunkRepr, CodecError};
use crate::meta::CodecSpec;
use crate::stats::STATS;

/// Array→array codecs in chain order, each with the byte length of its decoded form.
#[derive(Default)]
pub(crate) struct ArrayChain(Vec<(Box<dyn ArrayToArray>, usize)>);

impl ArrayChain {
    /// Builds `specs` for chunks of `decoded` form; returns the chain and the form it encodes
    /// chunks to. `check` sees each codec's spec, decoded form and encoded form first, and may
    /// refuse it.
    pub fn build(
        specs: &[CodecSpec],
        decoded: &ChunkRepr,
        check: impl Fn(&CodecSpec, &ChunkRepr, &ChunkRepr) -> Result<(), CodecError>,
    ) -> Result<(Self, ChunkRepr), CodecError> {
        let mut repr = decoded.clone();
        let mut codecs = Vec::with_capacity(specs.len());
        for spec in specs {
            let (codec, encoded) = build_array_to_array(spec, &repr)?;
            check(spec, &repr, &encoded)?;
            codecs.push((codec, repr.byte_len(&spec.name)?));
            repr = encoded;
        }
        Ok((ArrayChain(codecs), repr))
    }

    /// True when the chain has no codec.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// One decoded element `fill` as the chain encodes it (see [`ArrayToArray::encode_fill`]).
    pub fn encode_fill(&self, fill: &[u8]) -> Result<Vec<u8>, CodecError> {
        let mut fill = fill.to_vec();
        for (codec, _) in &self.0 {
            fill = codec.encode_fill(&fill)?;
        }
        Ok(fill)
    }

    /// Whether each codec decodes element by element, in chain order.
    pub fn elementwise(&self) -> impl Iterator<Item = bool> + '_ {
        self.0.iter().map(|(codec, _)| codec.elementwise())
    }

    /// The codecs' names, in chain order.
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.0.iter().map(|(codec, _)| codec.name())
    }

    /// The byte lengths of the decoded forms, one per codec.
    pub fn form_lens(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().map(|(_, len)| *len)
    }

    /// Decodes `data` (in the chain's encoded form) into `out`, which holds exactly the decoded
    /// form of the first codec.
    pub fn decode_into(&self, data: &[u8], out: &mut [u8]) -> Result<(), CodecError> {
        let Some(((first, _), rest)) = self.0.split_first() else {
            if data.len() != out.len() {
                let sizes = format!("{} bytes into {}", data.len(), out.len());
                return Err(CodecError::bad_config("array→array codecs", sizes));
            }
            out.copy_from_slice(data);
            return Ok(());
        };
        let mut held: Option<Vec<u8>> = None;
        for (codec, len) in rest.iter().rev() {
            let mut next = vec![0u8; *len];
            let current = held.as_deref().unwrap_or(data);
            STATS.decode(codec.name(), || codec.decode(current, &mut next), |_| *len)?;
            held = Some(next);
        }
        let len = out.len();
        let current = held.as_deref().unwrap_or(data);
        STATS.decode(first.name(), || first.decode(current, out), |_| len)
    }

    /// Decodes `data` (in the chain's encoded form) back to its decoded form.
    pub fn decode(&self, data: Vec<u8>) -> Result<Vec<u8>, CodecError> {
        let Some((_, len)) = self.0.first() else {
            return Ok(data);
        };
        let mut out = vec![0u8; *len];
        self.decode_into(&data, &mut out)?;
        Ok(out)
    }
}
