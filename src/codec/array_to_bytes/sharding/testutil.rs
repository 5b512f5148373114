//! Test helpers: shards built by hand, their index encoded with `bytes` and `crc32c`.

use crate::meta::CodecSpec;
use serde_json::{json, Value};

/// Size of the encoded index of `n` inner chunks.
pub(crate) fn index_len(n: usize) -> usize {
    16 * n + 4
}

/// An encoded index of `(offset, nbytes)` entries.
pub(crate) fn index(entries: &[(u64, u64)]) -> Vec<u8> {
    let mut out: Vec<u8> = entries
        .iter()
        .flat_map(|&(o, n)| o.to_le_bytes().into_iter().chain(n.to_le_bytes()))
        .collect();
    out.extend(crc32c::crc32c(&out).to_le_bytes());
    out
}

/// A shard holding `chunks` (encoded inner chunks in C order; `None` for absent ones) one after
/// the other, with the index at the start or the end.
pub(crate) fn shard(chunks: &[Option<Vec<u8>>], at_start: bool) -> Vec<u8> {
    let mut offset = if at_start { index_len(chunks.len()) } else { 0 } as u64;
    let mut entries = Vec::new();
    let mut data = Vec::new();
    for chunk in chunks {
        entries.push(match chunk {
            Some(c) => (offset, c.len() as u64),
            None => (u64::MAX, u64::MAX),
        });
        if let Some(c) = chunk {
            data.extend_from_slice(c);
            offset += c.len() as u64;
        }
    }
    let mut index = index(&entries);
    if at_start {
        index.extend(data);
        index
    } else {
        data.extend(index);
        data
    }
}

/// A `sharding_indexed` spec with inner chunks of `chunk_shape` encoded with `codecs`.
pub(crate) fn spec(chunk_shape: &[u64], codecs: Value, at_start: bool) -> CodecSpec {
    CodecSpec::new(
        "sharding_indexed",
        json!({
            "chunk_shape": chunk_shape,
            "codecs": codecs,
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": if at_start { "start" } else { "end" },
        }),
    )
}
