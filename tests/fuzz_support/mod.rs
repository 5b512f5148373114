//! Mutation fuzzing over the fixture corpus (cargo-fuzz needs a nightly toolchain, which this
//! project does not use): real chunk objects and metadata documents, mutated with a seeded RNG,
//! fed to the decoders and parsers for a bounded time per target (`ZARRFS_FUZZ_SECONDS`, default
//! 3). A panic, an error that is not typed as such, or an allocation beyond the bound is a
//! finding; findings are written to `target/fuzz-findings/` to be committed under
//! `tests/fixtures/fuzz/`, where every input is replayed on every run.
#![allow(dead_code)]

#[path = "../common/counting_alloc.rs"]
mod counting_alloc;
pub use counting_alloc::{take_largest_allocation, CountingAlloc};

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The largest allocation a decoder or parser may make on fuzzed input: the fixtures' chunks
/// are small, so anything near this comes from a length read out of hostile bytes.
pub const MAX_ALLOCATION: usize = 256 << 20;

/// Caps this test process's address space at 4 GiB, so an input that makes the code under
/// test allocate without bound aborts this process instead of pressing the machine.
pub fn cap_memory() {
    let cap = rustix::process::Rlimit {
        current: Some(4 << 30),
        maximum: None,
    };
    let _ = rustix::process::setrlimit(rustix::process::Resource::As, cap);
}

/// How long each target runs.
pub fn budget() -> Duration {
    let secs = std::env::var("ZARRFS_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(3.0);
    Duration::from_secs_f64(secs)
}

/// A small deterministic generator (splitmix64).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Integers that break length and offset arithmetic.
const EXTREMES: [u64; 9] = [
    0,
    1,
    0x7f,
    0xff,
    0x7fff_ffff,
    0xffff_ffff,
    0x8000_0000_0000_0000,
    u64::MAX,
    u64::MAX - 7,
];

/// `input` with one to four random mutations: bit flips, bytes set, truncation, extension,
/// splices of its own bytes, and 2/4/8-byte fields set to extreme values.
pub fn mutate(input: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut b = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let n = b.len();
        match rng.below(7) {
            0 if n > 0 => {
                let i = rng.below(n);
                b[i] ^= 1 << rng.below(8);
            }
            1 if n > 0 => {
                let i = rng.below(n);
                b[i] = [0, 0xff, 0x80, rng.next() as u8][rng.below(4)];
            }
            2 => b.truncate(rng.below(n + 1)),
            3 => {
                let extra = rng.below(64);
                b.extend((0..extra).map(|_| rng.next() as u8));
            }
            4 if n > 0 => {
                let (from, len) = (rng.below(n), 1 + rng.below(32));
                let piece: Vec<u8> = b[from..(from + len).min(n)].to_vec();
                let at = rng.below(n + 1);
                b.splice(at..at, piece);
            }
            5 if n >= 8 => {
                let width = [2, 4, 8][rng.below(3)];
                let at = rng.below(n - width + 1);
                let v = EXTREMES[rng.below(EXTREMES.len())];
                b[at..at + width].copy_from_slice(&v.to_le_bytes()[..width]);
            }
            _ => {
                if n > 0 {
                    let at = rng.below(n);
                    b.truncate(at);
                }
            }
        }
    }
    b
}

/// Every file under `dir`, recursively, sorted.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(p),
                Ok(t) if t.is_file() => out.push(p),
                _ => {}
            }
        }
    }
    out.sort();
    out
}

/// The fixture directory.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Runs `one` on mutations of the corpus until the budget is spent (at least once over every
/// corpus entry); returns what was found: (corpus entry, mutated input, what went wrong).
pub fn run<T>(
    corpus: &[T],
    seed: u64,
    mut one: impl FnMut(&T, &mut Rng) -> Option<(Vec<u8>, String)>,
) -> (u64, Vec<(usize, Vec<u8>, String)>) {
    let mut rng = Rng(seed);
    let deadline = Instant::now() + budget();
    let (mut runs, mut found) = (0u64, Vec::new());
    while runs < corpus.len() as u64 || Instant::now() < deadline {
        let i = (runs % corpus.len() as u64) as usize;
        if let Some((input, why)) = one(&corpus[i], &mut rng) {
            found.push((i, input, why));
        }
        runs += 1;
    }
    (runs, found)
}

/// Saves a finding under `target/fuzz-findings/<target>/` for committing as a fixture.
pub fn save_finding(target: &str, name: &str, input: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/fuzz-findings")
        .join(target);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, input).unwrap();
    path
}

/// The committed inputs under `tests/fixtures/<folder>/<store>/<key with ~ for />`: (path
/// relative to the folder, store name, key, bytes).
pub fn committed(folder: &str) -> Vec<(String, String, String, Vec<u8>)> {
    let dir = fixtures().join(folder);
    let inputs = files_under(&dir);
    assert!(!inputs.is_empty(), "{}: no committed inputs", dir.display());
    inputs
        .into_iter()
        .map(|input| {
            let rel = input.strip_prefix(&dir).unwrap();
            let mut parts = rel.iter().map(|p| p.to_string_lossy().into_owned());
            let store = parts.next().unwrap();
            let key = parts.next().unwrap().replace('~', "/");
            let bytes = std::fs::read(&input).unwrap();
            (rel.display().to_string(), store, key, bytes)
        })
        .collect()
}
