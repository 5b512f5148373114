//! numcodecs `shuffle`: byte shuffle. The encoded form holds byte 0 of every element, then byte
//! 1 of every element, and so on. `elementsize` absent is numcodecs' default, 4, in a v2 chain
//! (`shuffle`), and the size of the elements the codec sees for zarr-python 3's
//! `numcodecs.shuffle` (which fills it in so); 0 (netCDF-c writes it) is that size too.
//! Trailing bytes that do not fill an element are stored as they are (HDF5's rule; numcodecs
//! never writes them).

use crate::codec::config::get_usize;
use crate::codec::{out_prefix, BytesToBytes, CodecError, Size, StoredElem};
use crate::meta::CodecSpec;

/// The `shuffle` codec.
pub(crate) struct Shuffle {
    name: String,
    elementsize: usize,
}

impl Shuffle {
    /// From a config with `elementsize`.
    pub fn build(spec: &CodecSpec, elem: &StoredElem) -> Result<Self, CodecError> {
        let elementsize = match get_usize(spec, "elementsize")? {
            // numcodecs' `Shuffle(elementsize=4)`, which a v2 config without the key makes.
            None if spec.name == "shuffle" => 4,
            None | Some(0) => elem.dtype.size(),
            Some(n) => n,
        };
        Ok(Shuffle {
            name: spec.name.clone(),
            elementsize,
        })
    }
}

impl BytesToBytes for Shuffle {
    fn name(&self) -> &str {
        &self.name
    }

    fn encoded_size(&self, decoded: Size) -> Size {
        decoded
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        unshuffle(
            encoded,
            out_prefix(&self.name, out, encoded.len())?,
            self.elementsize,
        );
        Ok(encoded.len())
    }
}

/// Undoes a byte shuffle of `src` (elements of `size` bytes) into `dst` of the same length.
pub(crate) fn unshuffle(src: &[u8], dst: &mut [u8], size: usize) {
    let count = if size > 1 { src.len() / size } else { 0 };
    if count == 0 {
        dst.copy_from_slice(src);
        return;
    }
    let body = count * size;
    match size {
        2 => unshuffle_n::<2>(&src[..body], &mut dst[..body]),
        4 => unshuffle_n::<4>(&src[..body], &mut dst[..body]),
        8 => unshuffle_n::<8>(&src[..body], &mut dst[..body]),
        16 => unshuffle_n::<16>(&src[..body], &mut dst[..body]),
        _ => {
            for (j, plane) in src[..body].chunks_exact(count).enumerate() {
                for (i, &byte) in plane.iter().enumerate() {
                    dst[i * size + j] = byte;
                }
            }
        }
    }
    dst[body..].copy_from_slice(&src[body..]);
}

/// [`unshuffle`] for a fixed element size: gathers one element from the `N` byte planes at a
/// time, so writes are sequential.
fn unshuffle_n<const N: usize>(src: &[u8], dst: &mut [u8]) {
    let count = src.len() / N;
    let planes: [&[u8]; N] = std::array::from_fn(|j| &src[j * count..(j + 1) * count]);
    for (i, element) in dst.chunks_exact_mut(N).enumerate() {
        for (j, byte) in element.iter_mut().enumerate() {
            *byte = planes[j][i];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unshuffles_every_size_with_leftovers() {
        for size in 1..=17 {
            for count in [0usize, 1, 5, 64] {
                let len = size * count + size / 2;
                let plain: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
                let mut shuffled = plain.clone();
                for i in 0..count {
                    for j in 0..size {
                        shuffled[j * count + i] = plain[i * size + j];
                    }
                }
                let mut out = vec![0u8; len];
                unshuffle(&shuffled, &mut out, size);
                assert_eq!(out, plain, "size {size} count {count}");
            }
        }
    }

    #[test]
    fn elementsize_absent_is_numcodecs_default_in_v2() {
        let decode = |name: &str| {
            let spec = CodecSpec::new(name, serde_json::json!({"id": "shuffle"}));
            let s = Shuffle::build(&spec, &StoredElem::le(crate::meta::DataType::Int(2))).unwrap();
            // numcodecs' `get_codec({"id": "shuffle"}).encode` of int16 1, 258, ..., 1800.
            let encoded = [1, 3, 5, 7, 0, 2, 4, 6, 2, 4, 6, 8, 1, 3, 5, 7];
            let mut out = [0u8; 16];
            s.decode(&encoded, &mut out).unwrap();
            out
        };
        let plain: Vec<u8> = (0..8i16)
            .flat_map(|i| (i * 257 + 1).to_le_bytes())
            .collect();
        assert_eq!(decode("shuffle"), plain[..]);
        // zarr-python 3 fills in the element size, 2, when it writes `numcodecs.shuffle`.
        let v3 = [1, 2, 3, 4, 5, 6, 7, 8, 0, 1, 2, 3, 4, 5, 6, 7];
        assert_eq!(decode("numcodecs.shuffle"), v3);
    }

    #[test]
    fn rejects_oversize_input() {
        let s = Shuffle {
            name: "shuffle".into(),
            elementsize: 4,
        };
        let mut out = [0u8; 8];
        assert!(s.decode(&[0; 12], &mut out).is_err());
    }
}
