//! The index of one shard: where each inner chunk's bytes lie, as `(offset, nbytes)` pairs of
//! little-endian `u64` in C order of the shard's inner chunk grid; `(2^64-1, 2^64-1)` marks an
//! inner chunk absent from the shard.

use crate::codec::registry::{build_bytes_to_bytes, is_array_to_bytes};
use crate::codec::{CodecError, Size, StoredElem};
use crate::meta::{CodecSpec, DataType};
use std::ops::Range;

/// The offset and length of an inner chunk the shard does not hold.
const MISSING: u64 = u64::MAX;

/// Bytes per index entry: offset and length, 8 bytes each.
pub(crate) const ENTRY_BYTES: usize = 16;

/// A decoded shard index whose entries all lie inside the shard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardIndex {
    /// `(offset, nbytes)` per inner chunk; `None` for absent ones.
    entries: Vec<Option<(u64, u64)>>,
}

impl ShardIndex {
    /// Bytes one entry takes once decoded (offset and length).
    pub const ENTRY_BYTES: u64 = 16;

    /// Parses a decoded index (`ENTRY_BYTES` per inner chunk) of a shard of `shard_size` bytes.
    /// An entry reaching past the shard's end is an error, so no entry can cause a read (or an
    /// allocation) larger than the shard.
    pub(crate) fn parse(decoded: &[u8], shard_size: u64) -> Result<Self, CodecError> {
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        let entries = decoded
            .chunks_exact(ENTRY_BYTES)
            .enumerate()
            .map(|(i, pair)| {
                let (offset, nbytes) = (word(&pair[..8]), word(&pair[8..]));
                if offset == MISSING && nbytes == MISSING {
                    return Ok(None);
                }
                match offset.checked_add(nbytes) {
                    Some(end) if end <= shard_size => Ok(Some((offset, nbytes))),
                    _ => Err(CodecError::corrupt(
                        "sharding_indexed",
                        format!(
                            "index entry {i} (offset {offset}, {nbytes} bytes) reaches past the \
                             end of the {shard_size}-byte shard"
                        ),
                    )),
                }
            })
            .collect::<Result<_, _>>()?;
        Ok(ShardIndex { entries })
    }

    /// Byte range of inner chunk `i` in the shard, or `None` when the shard does not hold it.
    pub fn get(&self, i: usize) -> Option<Range<u64>> {
        self.entries
            .get(i)
            .copied()
            .flatten()
            .map(|(offset, n)| offset..offset + n)
    }

    /// Number of inner chunks the index covers.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the index covers no inner chunk.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// True when some inner chunk is absent.
    pub fn has_missing(&self) -> bool {
        self.entries.iter().any(Option::is_none)
    }
}

/// The encoded size of an index of `chunks` entries under `index_codecs`: the index is read
/// before anything else of a shard, so its codecs must have a fixed size (`bytes`, `transpose`,
/// checksums) — compressors are refused.
pub(crate) fn encoded_index_len(
    index_codecs: &[CodecSpec],
    chunks: usize,
) -> Result<usize, CodecError> {
    let decoded = chunks.checked_mul(ENTRY_BYTES).ok_or_else(|| {
        CodecError::bad_config("sharding_indexed", "the shard index size overflows")
    })?;
    let elem = StoredElem::le(DataType::UInt(8));
    let mut size = Size::Exact(decoded);
    for spec in index_codecs {
        if is_array_to_bytes(&spec.name) || spec.name == "transpose" {
            continue;
        }
        size = match build_bytes_to_bytes(spec, &elem)?.encoded_size(size) {
            Size::Exact(n) => Size::Exact(n),
            Size::AtMost(_) => {
                return Err(CodecError::unsupported(
                    "sharding_indexed",
                    &format!(
                    "index codec '{}' has no fixed encoded size, so the index cannot be located",
                    spec.name
                ),
                ))
            }
        };
    }
    Ok(size.max())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn encode(entries: &[(u64, u64)]) -> Vec<u8> {
        entries
            .iter()
            .flat_map(|&(o, n)| o.to_le_bytes().into_iter().chain(n.to_le_bytes()))
            .collect()
    }

    #[test]
    fn parses_present_and_missing_entries() {
        let index = ShardIndex::parse(&encode(&[(0, 10), (MISSING, MISSING), (10, 5)]), 15);
        let index = index.unwrap();
        assert_eq!(index.len(), 3);
        assert_eq!(index.get(0), Some(0..10));
        assert_eq!(index.get(1), None);
        assert_eq!(index.get(2), Some(10..15));
        assert_eq!(index.get(3), None);
        assert!(index.has_missing() && !index.is_empty());
    }

    #[test]
    fn entries_beyond_the_shard_are_errors() {
        for entry in [(10, 6), (MISSING, 1), (1, MISSING), (16, 0)] {
            let err = ShardIndex::parse(&encode(&[entry]), 15).unwrap_err();
            assert!(err.to_string().contains("past the end"), "{err}");
        }
    }

    #[test]
    fn index_sizes() {
        let bytes = CodecSpec::new("bytes", json!({"endian": "little"}));
        let crc = CodecSpec::new("crc32c", json!({}));
        assert_eq!(encoded_index_len(&[bytes.clone(), crc], 4), Ok(68));
        assert_eq!(encoded_index_len(std::slice::from_ref(&bytes), 4), Ok(64));
        let zstd = CodecSpec::new("zstd", json!({}));
        let err = encoded_index_len(&[bytes, zstd], 4).unwrap_err();
        assert!(matches!(err, CodecError::Unsupported(_)), "{err}");
        assert!(encoded_index_len(&[], usize::MAX).is_err());
    }
}
