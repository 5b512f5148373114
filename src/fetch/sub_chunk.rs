//! Copying one box out of a decoded chunk: a read chunk of a rectilinear grid out of the stored
//! chunk that holds it (see [`crate::meta::ChunkGrid`]).

/// Copies the box of `shape` at `offset` inside `src` (C order, of `src_shape`, elements of
/// `elem` bytes) into `out` (exactly that box, C order).
pub fn copy_box(
    src: &[u8],
    src_shape: &[u64],
    offset: &[u64],
    shape: &[u64],
    elem: usize,
    out: &mut [u8],
) {
    let n = shape.len();
    let row = shape.last().map_or(1, |&r| r as usize) * elem;
    if row == 0 {
        return;
    }
    // Element strides of the source.
    let mut stride = vec![1u64; n];
    for ax in (0..n.saturating_sub(1)).rev() {
        stride[ax] = stride[ax + 1] * src_shape[ax + 1];
    }
    let mut idx = vec![0u64; n.saturating_sub(1)];
    for dst in out.chunks_exact_mut(row) {
        let at: u64 = (0..n)
            .map(|ax| (offset[ax] + idx.get(ax).copied().unwrap_or(0)) * stride[ax])
            .sum();
        let at = at as usize * elem;
        dst.copy_from_slice(&src[at..at + row]);
        // On to the next row, carrying outwards.
        for ax in (0..idx.len()).rev() {
            idx[ax] += 1;
            if idx[ax] < shape[ax] {
                break;
            }
            idx[ax] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_a_box() {
        // A 4x5 chunk of u8 values 0..20; the 2x3 box at (1, 2).
        let src: Vec<u8> = (0..20).collect();
        let mut out = [0u8; 6];
        copy_box(&src, &[4, 5], &[1, 2], &[2, 3], 1, &mut out);
        assert_eq!(out, [7, 8, 9, 12, 13, 14]);
        // Two-byte elements, one dimension.
        let mut out = [0u8; 4];
        copy_box(&src, &[10], &[3], &[2], 2, &mut out);
        assert_eq!(out, [6, 7, 8, 9]);
        // 0-d: the one element.
        let mut out = [0u8; 2];
        copy_box(&src[..2], &[], &[], &[], 2, &mut out);
        assert_eq!(out, [0, 1]);
    }
}
