//! `vlen-utf8` and `vlen-bytes` (numcodecs `VLenUTF8`/`VLenBytes`, Zarr v3 `vlen-utf8`/`vlen-bytes`):
//! a little-endian u32 item count, then for each item a u32 length and its bytes.
//!
//! A decoded chunk is held as an index plus the item bytes, so any item is found in O(1):
//! `[count: u64][offsets: u64 × (count + 1)][item bytes]`, offsets relative to the item bytes.
//!
//! A `transpose` may come first: a v2 object array of order `F` (numcodecs serializes its items
//! in memory order, so F order), or a v3 chain that permutes the axes. The items of a flat
//! serialization are put back in C order after decoding; `json2` and `msgpack2` nest their
//! items by dimension in logical order already.

use super::object::ObjectCodec;
use crate::codec::array_to_array::transpose::parse_order;
use crate::codec::registry::{build_bytes_to_bytes, build_object};
use crate::codec::{BytesToBytes, CodecError, StoredElem};
use crate::meta::{CodecSpec, DataType};
use crate::stats::STATS;

const U64: usize = 8;
/// First output buffer for a decompressor whose output size is unknown.
const FIRST_GUESS: usize = 1 << 20;
/// Largest serialized variable-length chunk accepted by default (decompression bombs stop
/// here); [`VlenPipeline::limit`] lowers it to what the reader can keep.
const MAX_SERIALIZED: usize = 1 << 30;

/// The chain of a variable-length array: its `vlen-*` codec, then bytes→bytes codecs.
pub(crate) struct VlenPipeline {
    name: String,
    object: ObjectCodec,
    items: usize,
    /// For a flat serialization behind a `transpose`: the chunk's shape and, per axis, the step
    /// in the serialized chunk's items.
    transposed: Option<(Vec<usize>, Vec<usize>)>,
    bytes_to_bytes: Vec<Box<dyn BytesToBytes>>,
    /// Largest serialized chunk accepted.
    max_serialized: usize,
}

impl VlenPipeline {
    /// Builds the chain for chunks of `chunk_shape` elements.
    pub fn new(codecs: &[CodecSpec], chunk_shape: &[u64]) -> Result<Self, CodecError> {
        let (order, codecs) = match codecs.split_first() {
            Some((t, rest)) if t.name == "transpose" => {
                (Some(parse_order(t, chunk_shape.len())?), rest)
            }
            _ => (None, codecs),
        };
        let Some((first, rest)) = codecs.split_first() else {
            return Err(CodecError::bad_config(
                "vlen",
                "a variable-length array needs a vlen codec",
            ));
        };
        let object = build_object(first)?;
        let items = chunk_shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(usize::try_from(d).ok()?))
            .ok_or_else(|| CodecError::bad_config(&first.name, "chunk shape too large"))?;
        // The item count fits in usize, so every axis length does.
        let shape: Vec<usize> = chunk_shape.iter().map(|&d| d as usize).collect();
        let transposed = order
            .filter(|_| object.flat())
            .map(|order| (strides(&shape, &order), shape));
        let elem = StoredElem::le(DataType::UInt(1));
        let bytes_to_bytes = rest
            .iter()
            .map(|spec| build_bytes_to_bytes(spec, &elem))
            .collect::<Result<_, _>>()?;
        Ok(VlenPipeline {
            name: first.name.clone(),
            object,
            items,
            transposed,
            bytes_to_bytes,
            max_serialized: MAX_SERIALIZED,
        })
    }

    /// Accepts serialized chunks of at most `max` bytes (and never more than 1 GiB).
    pub fn limit(&mut self, max: usize) {
        self.max_serialized = max.min(MAX_SERIALIZED);
    }

    /// The vlen codec's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Decodes one stored chunk into the item index and bytes.
    pub fn decode(&self, encoded: &[u8]) -> Result<Vec<u8>, CodecError> {
        let mut data = encoded.to_vec();
        for codec in self.bytes_to_bytes.iter().rev() {
            if let Some(payload) = codec.payload(&data)? {
                data = data[payload].to_vec();
                continue;
            }
            let run = || decode_unsized(codec.as_ref(), &data, self.max_serialized);
            data = STATS.decode(codec.name(), run, Vec::len)?;
        }
        let run = || self.object.decode(&self.name, &data, self.items);
        let decoded = STATS.decode(&self.name, run, Vec::len)?;
        Ok(match &self.transposed {
            Some((strides, shape)) => {
                let items: Vec<&[u8]> = c_order(shape, strides, self.items)
                    .map(|q| item(&decoded, q).unwrap_or_default())
                    .collect();
                index(&items)
            }
            None => decoded,
        })
    }
}

/// Per axis of a chunk of `shape` stored with its axes permuted by `order` (a `transpose`:
/// stored shape[i] = shape[order[i]]), the step between neighbours along it in the stored
/// chunk's C order.
fn strides(shape: &[usize], order: &[usize]) -> Vec<usize> {
    let mut stride = vec![0usize; shape.len()];
    let mut step = 1usize;
    for &axis in order.iter().rev() {
        stride[axis] = step;
        step = step.saturating_mul(shape[axis]);
    }
    stride
}

/// The stored positions of the `items` elements of a chunk of `shape`, in C order, given the
/// [`strides`] of its axes.
fn c_order<'a>(
    shape: &'a [usize],
    strides: &'a [usize],
    items: usize,
) -> impl Iterator<Item = usize> + 'a {
    let mut at = vec![0usize; shape.len()];
    let mut pos = 0usize;
    (0..items).map(move |_| {
        let here = pos;
        for axis in (0..shape.len()).rev() {
            at[axis] += 1;
            pos += strides[axis];
            if at[axis] < shape[axis] {
                break;
            }
            pos -= strides[axis] * shape[axis];
            at[axis] = 0;
        }
        here
    })
}

/// Runs a decompressor whose output size is unknown: tries growing buffers, up to
/// `max` bytes; the last attempt's error is the answer.
fn decode_unsized(
    codec: &dyn BytesToBytes,
    input: &[u8],
    max: usize,
) -> Result<Vec<u8>, CodecError> {
    if let Some(n) = codec.stated_size(input) {
        if n > max {
            return Err(CodecError::corrupt(
                codec.name(),
                format!("header gives {n} bytes, more than the limit of {max}"),
            ));
        }
        let mut out = vec![0u8; n];
        let written = codec.decode(input, &mut out)?;
        out.truncate(written);
        return Ok(out);
    }
    let mut cap = FIRST_GUESS.max(input.len().saturating_mul(8)).min(max);
    loop {
        let mut out = vec![0u8; cap];
        match codec.decode(input, &mut out) {
            Ok(n) if n < cap || cap == max => {
                out.truncate(n);
                return Ok(out);
            }
            Err(e) if cap == max => return Err(e),
            _ => cap = cap.saturating_mul(4).min(max),
        }
    }
}

/// Decodes one encoded chunk that must hold `items` elements.
pub fn decode(codec: &str, encoded: &[u8], items: usize) -> Result<Vec<u8>, CodecError> {
    let corrupt = |reason: String| CodecError::corrupt(codec, reason);
    let read_u32 = |at: usize| -> Result<usize, CodecError> {
        encoded
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .ok_or_else(|| corrupt(format!("truncated at byte {at}")))
    };
    let count = read_u32(0)?;
    if count != items {
        return Err(corrupt(format!(
            "holds {count} items, the chunk has {items}"
        )));
    }
    // Every item takes at least its 4-byte length, so a count beyond that is corrupt.
    if count > encoded.len() / 4 {
        return Err(corrupt(format!(
            "{count} items cannot fit in {} bytes",
            encoded.len()
        )));
    }
    let header = U64 * (count + 2);
    let mut out = Vec::with_capacity(header + encoded.len());
    out.extend_from_slice(&(count as u64).to_le_bytes());
    out.resize(header, 0);
    let mut at = 4;
    for i in 0..count {
        let len = read_u32(at)?;
        at += 4;
        let item = encoded
            .get(at..at + len)
            .ok_or_else(|| corrupt(format!("item {i} of {len} bytes runs past the end")))?;
        at += len;
        out.extend_from_slice(item);
        let end = (out.len() - header) as u64;
        out[U64 * (i + 2)..U64 * (i + 3)].copy_from_slice(&end.to_le_bytes());
    }
    Ok(out)
}

/// Bytes of the index of a decoded chunk of `count` items: the least it takes, with no item
/// bytes.
pub fn index_bytes(count: usize) -> usize {
    U64 * (count + 2)
}

/// The item index of `items` (what [`decode`] produces from a serialized chunk).
pub(crate) fn index<T: AsRef<[u8]>>(items: &[T]) -> Vec<u8> {
    let header = index_bytes(items.len());
    let total: usize = items.iter().map(|i| i.as_ref().len()).sum();
    let mut out = Vec::with_capacity(header + total);
    out.extend_from_slice(&(items.len() as u64).to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes());
    let mut end = 0u64;
    for item in items {
        end += item.as_ref().len() as u64;
        out.extend_from_slice(&end.to_le_bytes());
    }
    for item in items {
        out.extend_from_slice(item.as_ref());
    }
    out
}

fn u64_at(buf: &[u8], at: usize) -> Option<usize> {
    buf.get(at..at + U64)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as usize)
}

/// Item `i` of a decoded chunk.
pub fn item(decoded: &[u8], i: usize) -> Option<&[u8]> {
    let count = u64_at(decoded, 0)?;
    if i >= count {
        return None;
    }
    let header = index_bytes(count);
    let (start, end) = (
        u64_at(decoded, U64 * (i + 1))?,
        u64_at(decoded, U64 * (i + 2))?,
    );
    decoded.get(header + start..header + end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(items: &[&[u8]]) -> Vec<u8> {
        let mut out = (items.len() as u32).to_le_bytes().to_vec();
        for it in items {
            out.extend((it.len() as u32).to_le_bytes());
            out.extend_from_slice(it);
        }
        out
    }

    #[test]
    fn round_trips_items() {
        let items: [&[u8]; 4] = [b"", "é".as_bytes(), b"line1\nline2", b"\xff\x00"];
        let decoded = decode("vlen-utf8", &encode(&items), 4).unwrap();
        for (i, want) in items.iter().enumerate() {
            assert_eq!(item(&decoded, i), Some(*want));
        }
        assert_eq!(index(&items), decoded);
        assert_eq!(item(&decoded, 4), None);
    }

    #[test]
    fn decompresses_without_knowing_the_size() {
        let items: Vec<Vec<u8>> = (0..5000)
            .map(|i| format!("item {i} {}", "x".repeat(i % 300)).into_bytes())
            .collect();
        let refs: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
        let raw = encode(&refs);
        let packed = zstd::bulk::compress(&raw, 3).unwrap();
        let codecs = [
            CodecSpec::new("vlen-utf8", serde_json::json!({})),
            CodecSpec::new("zstd", serde_json::json!({})),
        ];
        let p = VlenPipeline::new(&codecs, &[5000]).unwrap();
        let decoded = p.decode(&packed).unwrap();
        assert_eq!(item(&decoded, 4321), Some(items[4321].as_slice()));
        assert!(p.decode(&packed[..packed.len() / 2]).is_err());
        let wrong = [CodecSpec::new("bytes", serde_json::json!({}))];
        assert!(VlenPipeline::new(&wrong, &[3]).is_err());
    }

    #[test]
    fn flat_items_behind_a_transpose_come_back_in_c_order() {
        // zarr-python 3.4.2: a v2 `|O` array of order F, shape and chunks (2, 3), vlen-utf8,
        // [["a", "bb", "ccc"], ["dddd", "e", "ff"]]: its chunk lists the items in F order.
        let stored = encode(&[b"a", b"dddd", b"bb", b"e", b"ccc", b"ff"]);
        let transpose = CodecSpec::new("transpose", serde_json::json!({"order": [1, 0]}));
        let pipeline = |object: &str| {
            let codecs = [
                transpose.clone(),
                CodecSpec::new(object, serde_json::json!({})),
            ];
            VlenPipeline::new(&codecs, &[2, 3]).unwrap()
        };
        let want: [&[u8]; 6] = [b"a", b"bb", b"ccc", b"dddd", b"e", b"ff"];
        assert_eq!(pipeline("vlen-utf8").decode(&stored).unwrap(), index(&want));
        // numcodecs' JSON nests the items by dimension, in logical order, whatever the order.
        let json = br#"[["a","bb","ccc"],["dddd","e","ff"],"|O",[2,3]]"#;
        assert_eq!(pipeline("json2").decode(json).unwrap(), index(&want));
    }

    #[test]
    fn c_order_walks_any_permutation() {
        let shape = [2usize, 3, 4];
        for order in [[0, 1, 2], [2, 1, 0], [1, 2, 0], [2, 0, 1]] {
            let stored: Vec<usize> = order.iter().map(|&a| shape[a]).collect();
            let got: Vec<usize> = c_order(&shape, &strides(&shape, &order), 24).collect();
            let mut want = Vec::new();
            for i in 0..2 {
                for j in 0..3 {
                    for k in 0..4 {
                        let d = [i, j, k];
                        let e: Vec<usize> = order.iter().map(|&a| d[a]).collect();
                        want.push((e[0] * stored[1] + e[1]) * stored[2] + e[2]);
                    }
                }
            }
            assert_eq!(got, want, "{order:?}");
        }
    }

    #[test]
    fn refuses_corrupt_input() {
        let good = encode(&[b"abc", b"de"]);
        assert!(decode("vlen-bytes", &good, 3).is_err());
        assert!(decode("vlen-bytes", &good[..good.len() - 1], 2).is_err());
        let mut huge = good.clone();
        huge[4] = 0xff;
        assert!(decode("vlen-bytes", &huge, 2).is_err());
        assert!(decode("vlen-bytes", &[0xff, 0xff, 0xff, 0x7f], 0x7fff_ffff).is_err());
    }
}
