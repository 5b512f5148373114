//! A copy of a fixture store with a variable-length string array whose chunks a test can
//! change (staleness tests of `--cache-dir` for text files).

use std::path::Path;

/// The string array of the store (3 x 4 elements in chunks of 2 x 2; the last row's chunks
/// are absent: fill value "NA").
pub const ARRAY: &str = "strings";

/// The fixture store (zarr-python 2, vlen-utf8, blosc) and its expected text.
const STORE: &str = "dialects/vlen_v2_zarr2.zarr";
const TEXT: &str = "dialects/expected/vlen_v2_zarr2/strings.txt";
const NPY: &str = "dialects/expected/vlen_v2_zarr2/strings.npy";

/// Copies the store to `root` (a directory that exists).
pub fn copy_store(root: &Path) {
    super::servers::copy_tree(&super::fixtures_dir().join(STORE), root);
}

/// The text of the array as served.
pub fn expected() -> Vec<u8> {
    std::fs::read(super::fixtures_dir().join(TEXT)).unwrap()
}

/// The array's `A.npy` as served (numpy's `<U n`).
pub fn expected_npy() -> Vec<u8> {
    std::fs::read(super::fixtures_dir().join(NPY)).unwrap()
}

/// Writes chunk (0, 1) over chunk (0, 0) of the copy at `root` (a new size and mtime).
pub fn change_chunk(root: &Path) {
    let dir = root.join(ARRAY);
    std::fs::copy(dir.join("0.1"), dir.join("0.0")).unwrap();
}

/// The text once [`change_chunk`] has run: elements (r, c) of rows 0-1, columns 0-1 are those
/// of (r, c + 2).
pub fn expected_changed() -> Vec<u8> {
    let text = expected();
    let mut lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
    assert_eq!(lines.len(), 12);
    for r in 0..2 {
        for c in 0..2 {
            lines[r * 4 + c] = lines[r * 4 + c + 2];
        }
    }
    lines.concat()
}
