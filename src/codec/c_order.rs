//! Walking boxes of C-order arrays: the next index of a box, and copying a box between arrays.
//! A box's corner given as an empty slice is the origin.

/// Advances `idx` to the next index of the box `lo..hi` (per axis) in C order, carrying
/// outwards; false, with `idx` back at `lo`, after the box's last index.
pub(crate) fn step_in(idx: &mut [u64], lo: &[u64], hi: &[u64]) -> bool {
    for ax in (0..idx.len()).rev() {
        idx[ax] += 1;
        if idx[ax] < hi[ax] {
            return true;
        }
        idx[ax] = lo.get(ax).copied().unwrap_or(0);
    }
    false
}

/// Copies the box of `shape` at `src_at` inside the C-order array `src` of `src_shape` to
/// `dst_at` inside the C-order array `dst` of `dst_shape`, row by row; elements are `elem` bytes.
pub(crate) fn copy_box(
    (src, src_shape, src_at): (&[u8], &[u64], &[u64]),
    (dst, dst_shape, dst_at): (&mut [u8], &[u64], &[u64]),
    shape: &[u64],
    elem: usize,
) {
    let (row, outer) = match shape.split_last() {
        Some((&last, outer)) => (last as usize * elem, outer),
        None => (elem, shape),
    };
    if row == 0 || outer.contains(&0) {
        return;
    }
    // The byte offset of the box's row `pos` in an array of `array` holding the box at `at`.
    let offset = |array: &[u64], at: &[u64], pos: &[u64]| {
        let i = array.iter().enumerate().fold(0, |acc, (ax, &n)| {
            let get = |v: &[u64]| v.get(ax).copied().unwrap_or(0);
            acc * n + get(at) + get(pos)
        });
        i as usize * elem
    };
    let mut pos = vec![0u64; outer.len()];
    loop {
        let (s, d) = (
            offset(src_shape, src_at, &pos),
            offset(dst_shape, dst_at, &pos),
        );
        dst[d..d + row].copy_from_slice(&src[s..s + row]);
        if !step_in(&mut pos, &[], outer) {
            return;
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
        copy_box(
            (&src, &[4, 5], &[1, 2]),
            (&mut out, &[2, 3], &[]),
            &[2, 3],
            1,
        );
        assert_eq!(out, [7, 8, 9, 12, 13, 14]);
        // And back into a 3x4 array at (1, 1).
        let mut back = [0u8; 12];
        copy_box(
            (&out, &[2, 3], &[]),
            (&mut back, &[3, 4], &[1, 1]),
            &[2, 3],
            1,
        );
        assert_eq!(back, [0, 0, 0, 0, 0, 7, 8, 9, 0, 12, 13, 14]);
        // Two-byte elements, one dimension.
        let mut out = [0u8; 4];
        copy_box((&src, &[10], &[3]), (&mut out, &[2], &[]), &[2], 2);
        assert_eq!(out, [6, 7, 8, 9]);
        // 0-d: the one element.
        let mut out = [0u8; 2];
        copy_box((&src[..2], &[], &[]), (&mut out, &[], &[]), &[], 2);
        assert_eq!(out, [0, 1]);
    }
}
