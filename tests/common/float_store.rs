//! A small uncompressed Zarr v2 array whose values a test can change (staleness tests).

use std::path::Path;

/// Elements of the array `a`.
pub const N: usize = 4096;
/// Elements per chunk.
pub const CHUNK: usize = 1000;

/// Writes group `root` with array `a` of N float64 values `i * scale`, in chunks of CHUNK.
pub fn write_store(root: &Path, scale: f64) {
    write_floats(root, "a", (N, CHUNK), scale);
}

/// Writes into group `root` array `name` of `n` float64 values `i * scale`, in chunks of
/// `chunk` (`(n, chunk)`); returns its bytes as `A` serves them.
pub fn write_floats(root: &Path, name: &str, (n, chunk): (usize, usize), scale: f64) -> Vec<u8> {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(root.join(".zgroup"), r#"{"zarr_format":2}"#).unwrap();
    std::fs::write(
        dir.join(".zarray"),
        format!(
            r#"{{"zarr_format":2,"shape":[{n}],"chunks":[{chunk}],"dtype":"<f8","compressor":null,"fill_value":0.0,"filters":null,"order":"C"}}"#
        ),
    )
    .unwrap();
    let all: Vec<u8> = (0..n)
        .flat_map(|i| (i as f64 * scale).to_le_bytes())
        .collect();
    for (c, bytes) in all.chunks(chunk * 8).enumerate() {
        let mut bytes = bytes.to_vec();
        bytes.resize(chunk * 8, 0);
        std::fs::write(dir.join(c.to_string()), bytes).unwrap();
    }
    all
}

/// The bytes of `a` as served.
pub fn expected(scale: f64) -> Vec<u8> {
    (0..N)
        .flat_map(|i| (i as f64 * scale).to_le_bytes())
        .collect()
}

/// Number of files in `dir` ending in `.ext`.
pub fn files(dir: &Path, ext: &str) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == ext)
        })
        .count()
}

/// True when a lock file of `dir` is held (by a writer of the cache dir: it cannot be locked
/// here). A writer lets its lock go once its file is complete.
pub fn lock_held(dir: &Path) -> bool {
    use rustix::fs::{flock, FlockOperation};
    std::fs::read_dir(dir).unwrap().flatten().any(|e| {
        let is_lock = e.path().extension().is_some_and(|x| x == "lock");
        let file = is_lock
            .then(|| std::fs::File::open(e.path()).ok())
            .flatten();
        file.is_some_and(|f| flock(&f, FlockOperation::NonBlockingLockExclusive).is_err())
    })
}

/// The (first) file in `dir` ending in `.ext`.
pub fn file_with_ext(dir: &Path, ext: &str) -> std::path::PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == ext))
        .unwrap_or_else(|| panic!("no .{ext} file in {}", dir.display()))
}
