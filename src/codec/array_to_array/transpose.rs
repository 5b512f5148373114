//! `transpose`: the chunk is stored with its axes permuted by `order` (encoded shape[i] =
//! shape[order[i]]). `order` is a permutation list, or `"C"` / `"F"` as in the v3 drafts.
//!
//! Decoding reads the encoded chunk sequentially and scatters it into C order. Axes of length 1
//! are dropped and axes that stay adjacent in the output are merged first, so e.g. a 3-D
//! permutation that keeps the last axis becomes row copies, and the rest runs as cache-blocked
//! 2-D tiles.

use crate::codec::config::{bad, field};
use crate::codec::{ArrayToArray, ChunkRepr, CodecError};
use crate::meta::CodecSpec;

/// Side of the square tiles of the 2-D kernel, in elements.
const TILE: usize = 32;

/// The `transpose` codec for one chunk shape.
#[derive(Debug)]
pub(crate) struct Transpose {
    elem_size: usize,
    /// Encoded axes after simplification: `(length, output stride in elements)`, outermost first.
    dims: Vec<(usize, usize)>,
}

impl Transpose {
    /// From a config with `order`, for chunks of `decoded` form; returns the encoded form too.
    pub fn build(
        spec: &CodecSpec,
        decoded: &ChunkRepr,
    ) -> Result<(Transpose, ChunkRepr), CodecError> {
        let ndim = decoded.shape.len();
        let order = parse_order(spec, ndim)?;
        let empty = decoded.byte_len(&spec.name)? == 0;
        // The element count fits in usize, so (unless it is 0) every dimension and stride does.
        let shape: Vec<usize> = decoded.shape.iter().map(|&d| d as usize).collect();
        let mut strides = vec![1usize; ndim];
        for i in (0..ndim.saturating_sub(1)).rev() {
            strides[i] = strides[i + 1].saturating_mul(shape[i + 1]);
        }
        let mut dims: Vec<(usize, usize)> = Vec::with_capacity(ndim);
        for &axis in order.iter().filter(|_| !empty) {
            let (len, stride) = (shape[axis], strides[axis]);
            if len == 1 {
                continue;
            }
            match dims.last_mut() {
                Some(last) if last.1 == stride * len => *last = (last.0 * len, stride),
                _ => dims.push((len, stride)),
            }
        }
        let encoded = ChunkRepr::new(
            order.iter().map(|&a| decoded.shape[a]).collect(),
            decoded.dtype.clone(),
        );
        Ok((
            Transpose {
                elem_size: decoded.dtype.size(),
                dims,
            },
            encoded,
        ))
    }
}

/// The permutation of `ndim` axes in a config's `order`.
pub(crate) fn parse_order(spec: &CodecSpec, ndim: usize) -> Result<Vec<usize>, CodecError> {
    let value = field(spec, "order").ok_or_else(|| bad(spec, "missing 'order'"))?;
    let order: Vec<usize> = match value.as_str() {
        Some("C") => (0..ndim).collect(),
        Some("F") => (0..ndim).rev().collect(),
        _ => value
            .as_array()
            .and_then(|list| {
                list.iter()
                    .map(|v| v.as_u64().and_then(|n| usize::try_from(n).ok()))
                    .collect()
            })
            .ok_or_else(|| bad(spec, format!("'order' must be a list of axes, got {value}")))?,
    };
    let mut seen = vec![false; ndim];
    let is_permutation = order.len() == ndim
        && order
            .iter()
            .all(|&a| a < ndim && !std::mem::replace(&mut seen[a], true));
    if !is_permutation {
        return Err(bad(
            spec,
            format!("'order' {value} is not a permutation of {ndim} axes"),
        ));
    }
    Ok(order)
}

impl ArrayToArray for Transpose {
    fn name(&self) -> &str {
        "transpose"
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<(), CodecError> {
        if encoded.len() != out.len() {
            return Err(CodecError::corrupt(
                "transpose",
                format!("{} bytes for a {}-byte chunk", encoded.len(), out.len()),
            ));
        }
        match self.dims.as_slice() {
            [] | [(_, 1)] => out.copy_from_slice(encoded),
            [.., (_, 1)] => self.scatter(encoded, out, 1),
            _ => self.scatter(encoded, out, 2.min(self.dims.len())),
        }
        Ok(())
    }
}

impl Transpose {
    /// Walks the outer axes (all but the last `inner`) with an odometer and runs the kernel for
    /// the inner axes on each contiguous block of the encoded chunk.
    fn scatter(&self, encoded: &[u8], out: &mut [u8], inner: usize) {
        let es = self.elem_size;
        let (outer, kernel) = self.dims.split_at(self.dims.len() - inner);
        let block: usize = kernel.iter().map(|d| d.0).product::<usize>() * es;
        if block == 0 {
            return;
        }
        let mut index = vec![0usize; outer.len()];
        let mut base = 0usize;
        for src in encoded.chunks_exact(block) {
            match *kernel {
                [(n, 1)] => out[base * es..(base + n) * es].copy_from_slice(src),
                [b] => tile_dispatch(es, src, out, base, (1, 0), b),
                [a, b] => tile_dispatch(es, src, out, base, a, b),
                _ => {}
            }
            for (k, &(len, stride)) in outer.iter().enumerate().rev() {
                index[k] += 1;
                base += stride;
                if index[k] < len {
                    break;
                }
                index[k] = 0;
                base -= stride * len;
            }
        }
    }
}

/// [`tile`] with the common element sizes as constants.
fn tile_dispatch(
    es: usize,
    src: &[u8],
    out: &mut [u8],
    base: usize,
    a: (usize, usize),
    b: (usize, usize),
) {
    match es {
        1 => tile(1, src, out, base, a, b),
        2 => tile(2, src, out, base, a, b),
        4 => tile(4, src, out, base, a, b),
        8 => tile(8, src, out, base, a, b),
        16 => tile(16, src, out, base, a, b),
        _ => tile(es, src, out, base, a, b),
    }
}

/// Copies the row-major `na` × `nb` block `src` to `out`, element (i, j) going to element
/// `base + i * sa + j * sb`, in cache-sized tiles.
#[inline(always)]
fn tile(
    es: usize,
    src: &[u8],
    out: &mut [u8],
    base: usize,
    (na, sa): (usize, usize),
    (nb, sb): (usize, usize),
) {
    for a0 in (0..na).step_by(TILE) {
        for b0 in (0..nb).step_by(TILE) {
            let b1 = (b0 + TILE).min(nb);
            for i in a0..(a0 + TILE).min(na) {
                let src_row = &src[(i * nb + b0) * es..(i * nb + b1) * es];
                let mut d = (base + i * sa + b0 * sb) * es;
                for element in src_row.chunks_exact(es) {
                    out[d..d + es].copy_from_slice(element);
                    d += sb * es;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::DataType;
    use serde_json::json;

    /// Reference transpose: element by element through full index arithmetic.
    fn naive(shape: &[usize], order: &[usize], es: usize, encoded: &[u8]) -> Vec<u8> {
        let n: usize = shape.iter().product();
        let enc_shape: Vec<usize> = order.iter().map(|&a| shape[a]).collect();
        let mut out = vec![0u8; n * es];
        for flat in 0..n {
            let mut rem = flat;
            let mut idx = vec![0; shape.len()];
            for k in (0..shape.len()).rev() {
                idx[k] = rem % shape[k];
                rem /= shape[k];
            }
            let mut e = 0;
            for (i, &a) in order.iter().enumerate() {
                e = e * enc_shape[i] + idx[a];
            }
            out[flat * es..(flat + 1) * es].copy_from_slice(&encoded[e * es..(e + 1) * es]);
        }
        out
    }

    #[test]
    fn matches_reference_for_many_shapes() {
        let cases: &[(&[u64], &[usize])] = &[
            (&[3, 1, 40], &[2, 1, 0]),
            (&[1, 1], &[1, 0]),
            (&[33, 17], &[1, 0]),
            (&[5, 4, 3, 2], &[3, 1, 0, 2]),
            (&[5, 4, 3, 2], &[0, 1, 3, 2]),
            (&[2, 3, 4, 5], &[1, 2, 3, 0]),
            (&[7], &[0]),
            (&[0, 3], &[1, 0]),
            (&[2, 0, u64::MAX, u64::MAX], &[3, 2, 1, 0]),
        ];
        for es in [1usize, 2, 3, 4, 8, 16] {
            for &(shape, order) in cases {
                let repr = ChunkRepr::new(shape.to_vec(), DataType::Raw(es));
                let spec = CodecSpec::new("transpose", json!({ "order": order }));
                let (t, enc) = Transpose::build(&spec, &repr).unwrap();
                assert_eq!(
                    enc.shape,
                    order.iter().map(|&a| shape[a]).collect::<Vec<_>>()
                );
                let len = repr.byte_len("t").unwrap();
                let encoded: Vec<u8> = (0..len).map(|i| (i * 13 % 251) as u8).collect();
                let mut out = vec![0u8; len];
                t.decode(&encoded, &mut out).unwrap();
                let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
                assert_eq!(
                    out,
                    naive(&dims, order, es, &encoded),
                    "{shape:?} {order:?} {es}"
                );
            }
        }
    }

    #[test]
    fn order_is_validated() {
        let repr = ChunkRepr::new(vec![2, 3], DataType::Int(4));
        for order in [
            json!([0]),
            json!([0, 0]),
            json!([0, 2]),
            json!("X"),
            json!(null),
        ] {
            let spec = CodecSpec::new("transpose", json!({ "order": order }));
            assert!(Transpose::build(&spec, &repr).is_err(), "{order}");
        }
        let spec = CodecSpec::new("transpose", json!({"order": "F"}));
        let (_, enc) = Transpose::build(&spec, &repr).unwrap();
        assert_eq!(enc.shape, [3, 2]);
        let (t, _) = Transpose::build(&spec, &repr).unwrap();
        assert!(t.decode(&[0; 4], &mut [0; 24]).is_err());
    }
}
