//! The soak (issue 25): 8 readers for a bounded time against mounts with a small cache (local
//! directories and a store over HTTP), every byte read compared with what the writer's own
//! reader says, the daemons' resident memory sampled throughout. It runs
//! `ZARRFS_SOAK_SECONDS` (20 s by default; CI sets 60).

mod common;
use common::mount::{fuse_ready, Mount};
use common::servers;
use common::{expected_bytes, load_manifest, StoreCase};
use parking_lot::Mutex;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const READERS: usize = 8;
/// Small against the data (the demo store alone decodes to 276 KiB): chunks are evicted and
/// decoded again all the time.
const CACHE_SIZE: &str = "64K";
/// Largest read, in bytes.
const MAX_READ: u64 = 96 << 10;
/// What a daemon may hold with this cache: its threads, reply buffers and code, far below
/// what a leak or an unbounded read would reach in the soak's time.
const RSS_BOUND_KIB: u64 = 256 << 10;
/// How much later samples may exceed the first half's peak.
const RSS_DRIFT_KIB: u64 = 32 << 10;

fn soak_time() -> Duration {
    let secs = std::env::var("ZARRFS_SOAK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    Duration::from_secs(secs)
}

/// One array file of a mount and its expected bytes.
struct Target {
    path: PathBuf,
    expected: Arc<Vec<u8>>,
}

fn targets(mount: &Mount, case: &StoreCase) -> Vec<Target> {
    case.healthy_arrays()
        .filter(|n| n.text.is_none())
        .map(|n| Target {
            path: mount.join(&case.file_of(n)),
            expected: Arc::new(expected_bytes(n).1),
        })
        .filter(|t| !t.expected.is_empty())
        .collect()
}

fn case(manifest: &str, name: &str) -> StoreCase {
    load_manifest(manifest)
        .into_iter()
        .find(|c| c.name == name)
        .unwrap()
}

/// xorshift64: the readers' choices, reproducible from the seed printed on failure.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Reads random ranges of random targets until `stop`; returns the mismatches it saw.
fn reader(
    seed: u64,
    targets: Arc<Vec<Target>>,
    stop: Arc<AtomicBool>,
    reads: Arc<AtomicU64>,
) -> Vec<String> {
    let mut rng = seed;
    let mut wrong = Vec::new();
    let mut buf = Vec::new();
    while !stop.load(Ordering::Relaxed) && wrong.len() < 10 {
        let t = &targets[next(&mut rng) as usize % targets.len()];
        let size = t.expected.len() as u64;
        let offset = next(&mut rng) % size;
        let len = 1 + next(&mut rng) % MAX_READ.min(size - offset);
        // Half the reads bypass the page cache, so the daemon answers each of them.
        let direct = next(&mut rng) & 1 == 0;
        let mut options = std::fs::OpenOptions::new();
        options.read(true);
        if direct {
            options.custom_flags(libc::O_DIRECT);
        }
        buf.resize(len as usize, 0);
        let got = options
            .open(&t.path)
            .and_then(|f| f.read_exact_at(&mut buf, offset));
        let want = &t.expected[offset as usize..(offset + len) as usize];
        match got {
            Ok(()) if buf == want => {}
            Ok(()) => {
                let at = buf.iter().zip(want).position(|(a, b)| a != b).unwrap();
                wrong.push(format!(
                    "{}: {len} bytes at {offset} (direct {direct}, seed {seed}): first wrong byte at {}",
                    t.path.display(),
                    offset as usize + at
                ));
            }
            Err(e) => wrong.push(format!(
                "{}: {len} bytes at {offset} (direct {direct}, seed {seed}): {e}",
                t.path.display()
            )),
        }
        reads.fetch_add(1, Ordering::Relaxed);
    }
    wrong
}

fn vm_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

#[test]
fn eight_readers_with_a_small_cache_read_only_right_bytes_in_bounded_memory() {
    if !fuse_ready() {
        return;
    }
    let args = ["--cache-size", CACHE_SIZE];
    let demo = case("manifest.json", "demo");
    let codecs = case("manifest.json", "v3_codecs");
    let sharded = case("dialects/manifest.json", "sharding_v3");
    let remote = case("dialects/manifest.json", "consolidated_v3_zarr3");
    let http = servers::http_server(&common::fixtures_dir().join("dialects"));
    let url = format!(
        "{}/{}",
        http.url,
        remote.store.file_name().unwrap().to_string_lossy()
    );
    let mounts = [
        (Mount::new(&demo.store, &args), &demo),
        (Mount::new(&codecs.store, &args), &codecs),
        (Mount::new(&sharded.store, &args), &sharded),
        (Mount::new(Path::new(&url), &args), &remote),
    ];
    let all: Vec<Target> = mounts.iter().flat_map(|(m, c)| targets(m, c)).collect();
    assert!(all.len() > 20, "{} arrays", all.len());
    let all = Arc::new(all);
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let seed0 = std::process::id() as u64 * 0x9e37_79b9 + 1;
    let readers: Vec<_> = (0..READERS as u64)
        .map(|i| {
            let (all, stop, reads) = (all.clone(), stop.clone(), reads.clone());
            std::thread::spawn(move || reader(seed0 + i, all, stop, reads))
        })
        .collect();
    let pids: Vec<u32> = mounts.iter().map(|(m, _)| m.pid()).collect();
    let samples = Arc::new(Mutex::new(vec![Vec::new(); pids.len()]));
    let started = Instant::now();
    while started.elapsed() < soak_time() {
        std::thread::sleep(Duration::from_millis(250));
        let mut s = samples.lock();
        for (i, pid) in pids.iter().enumerate() {
            s[i].push(vm_rss_kib(*pid));
        }
    }
    stop.store(true, Ordering::Relaxed);
    let wrong: Vec<String> = readers
        .into_iter()
        .flat_map(|r| r.join().unwrap())
        .collect();
    let reads = reads.load(Ordering::Relaxed);
    let samples = samples.lock();
    for ((m, c), rss) in mounts.iter().zip(samples.iter()) {
        let peak = rss.iter().max().copied().unwrap_or(0);
        let early = rss[..rss.len() / 2].iter().max().copied().unwrap_or(0);
        let late = rss[rss.len() / 2..].iter().max().copied().unwrap_or(0);
        eprintln!(
            "{}: VmRSS first {} KiB, peak {peak} KiB, first half peak {early} KiB, second half \
             peak {late} KiB ({} samples)",
            c.name,
            rss.first().unwrap_or(&0),
            rss.len()
        );
        assert!(peak < RSS_BOUND_KIB, "{}: VmRSS reached {peak} KiB", c.name);
        assert!(
            late <= early + RSS_DRIFT_KIB,
            "{}: VmRSS grew from {early} to {late} KiB",
            c.name
        );
        assert!(m.path().exists());
    }
    eprintln!(
        "{reads} reads by {READERS} readers in {:?}",
        started.elapsed()
    );
    assert!(
        wrong.is_empty(),
        "{} bad reads:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(reads > 100, "only {reads} reads");
}
