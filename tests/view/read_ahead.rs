//! The read-ahead over a store with latency (a [`FaultyStore`] that waits before every chunk
//! request), through the view's read entry: every chunk is requested once however the reads and
//! the read-ahead meet, nothing queued is lost, and a read waits for its own chunks only, never
//! behind the read-ahead's queue or another array's slow requests.

use crate::synth;

use parking_lot::{Condvar, Mutex};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zarrfs::cache::read_ahead::ReadPolicy;
use zarrfs::meta::LoadOptions;
use zarrfs::store::{Fault, FaultyStore, Latency, Layer, MemoryStore, Request, Store, StoreError};
use zarrfs::view::{from_store, IoCause, View, ViewError};

/// Counts the data requests (ranges) made per key, and those the read-ahead's fetch threads
/// made.
struct PerKey {
    inner: FaultyStore,
    ranges: Mutex<HashMap<String, u32>>,
    read_ahead: AtomicU32,
}

impl PerKey {
    fn count(&self, key: &str) {
        *self.ranges.lock().entry(key.to_string()).or_default() += 1;
        let thread = std::thread::current();
        if thread.name().is_some_and(|n| n.starts_with("fetch-")) {
            self.read_ahead.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Requests made for keys under `prefix`.
    fn total(&self, prefix: &str) -> u32 {
        let ranges = self.ranges.lock();
        ranges
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(_, &n)| n)
            .sum()
    }

    /// Keys under `prefix` requested more than once.
    fn repeated(&self, prefix: &str) -> Vec<(String, u32)> {
        let ranges = self.ranges.lock();
        let mut out: Vec<_> = ranges
            .iter()
            .filter(|(k, &n)| k.starts_with(prefix) && n > 1)
            .map(|(k, &n)| (k.clone(), n))
            .collect();
        out.sort();
        out
    }
}

impl Layer for PerKey {
    type Step = ();

    fn inner(&self) -> Result<&dyn Store, StoreError> {
        Ok(&self.inner)
    }

    /// Counts the range requests (chunks and shard indexes), not whole gets or heads.
    fn before(&self, request: &Request<'_>) -> Result<(), StoreError> {
        if let Request::Range { key, .. } | Request::Suffix { key, .. } = request {
            self.count(key);
        }
        Ok(())
    }

    /// A network store, whatever the store under it: the read-ahead this file tests.
    fn latency(&self) -> Latency {
        Latency::Network
    }
}

/// Two zstd arrays of 64 chunks (`slow/`, whose chunk requests wait `delay`, its first chunk's
/// `first` more, and `fast/`) and
/// a sharded one (`sharded/`: 4 shards of 8 inner chunks, one shard absent) behind a [`PerKey`]
/// store, with a view reading ahead as the store's latency says, with
/// `fetchers` fetches in flight.
fn setup(
    delay: Duration,
    first: Duration,
    fetchers: usize,
) -> (View, Arc<PerKey>, Vec<synth::Synth>) {
    let mut mem = MemoryStore::new();
    mem.insert("zarr.json", r#"{"zarr_format": 3, "node_type": "group"}"#);
    let arrays = vec![
        synth::zstd_u16(&mut mem, 1, "slow", [512, 256], [8, 256]),
        synth::zstd_u16(&mut mem, 2, "fast", [512, 256], [8, 256]),
        synth::sharded_u32(&mut mem, 3, "sharded", [128, 256], [32, 256], [4, 256]),
    ];
    let faulty = FaultyStore::new(Arc::new(mem))
        .with("slow/c/", 1, Fault::Latency(delay))
        .with("slow/c/0/0", 1, Fault::Latency(first));
    let store = Arc::new(PerKey {
        inner: faulty,
        ranges: Mutex::default(),
        read_ahead: AtomicU32::new(0),
    });
    let shared: Arc<dyn Store> = store.clone();
    let mut view = from_store(shared, "root", 64 << 20, &LoadOptions::default()).unwrap();
    let mut policy = ReadPolicy::for_store(Store::latency(store.as_ref()), 2);
    policy.limits.fetchers = fetchers;
    view.set_read_policy(policy);
    (view, store, arrays)
}

/// Reads all of `path` in order through one handle, `step` bytes at a time.
fn read_in_order(view: &View, path: &str, step: u32) -> Vec<u8> {
    let ino = view.resolve(path).unwrap();
    let fh = view.open(ino).unwrap();
    let size = view.getattr(ino).unwrap().size;
    let mut out = Vec::new();
    let mut at = 0;
    while at < size {
        view.read_into(ino, fh, at, step, &mut out).unwrap();
        at += u64::from(step);
    }
    view.release(fh);
    out
}

/// Reads `ino` through handle `fh` from `at` to its end, 4 KiB at a time, comparing each read
/// with `expected`.
fn assert_reads_on(view: &View, ino: u64, fh: u64, mut at: u64, expected: &[u8]) {
    let mut out = Vec::new();
    while at < expected.len() as u64 {
        out.clear();
        view.read_into(ino, fh, at, 4096, &mut out).unwrap();
        assert!(out == expected[at as usize..at as usize + 4096], "at {at}");
        at += 4096;
    }
}

fn wait_until_idle(view: &View) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !view.cache().ledger().is_empty() {
        assert!(Instant::now() < deadline, "read-ahead work never finished");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn every_chunk_is_requested_once_and_no_read_ahead_work_is_lost() {
    let (view, store, arrays) = setup(Duration::from_millis(20), Duration::ZERO, 64);
    let view = Arc::new(view);
    // Two readers at once, one per array, each read two chunks long.
    let readers: Vec<_> = arrays[..2]
        .iter()
        .map(|a| {
            let (view, path) = (view.clone(), a.path.clone());
            std::thread::spawn(move || read_in_order(&view, &path, 8192))
        })
        .collect();
    for (reader, array) in readers.into_iter().zip(&arrays) {
        assert!(reader.join().unwrap() == array.expected, "{}", array.path);
    }
    wait_until_idle(&view);
    for a in &arrays[..2] {
        assert_eq!(
            store.repeated(&format!("{}/c/", a.path)),
            vec![],
            "{}",
            a.path
        );
    }
    // The sharded array: at most one request per shard index and per inner chunk (fewer when
    // nearby inner chunks come together).
    assert!(read_in_order(&view, "sharded", 8192) == arrays[2].expected);
    wait_until_idle(&view);
    let requests = store.total("sharded/c/");
    assert!(
        requests <= 4 + 32,
        "{requests} requests for 4 shards of 8 inner chunks"
    );
    // The read-ahead fetched chunks (the readers did not fetch everything themselves).
    let loads = store.read_ahead.load(Ordering::Relaxed);
    assert!(loads > 0, "no read-ahead load");
}

#[test]
fn a_read_waits_for_its_own_chunks_not_behind_the_queue_or_a_slow_array() {
    // One fetcher and 400 ms per slow chunk: the queue a sequential reader sets up takes
    // about 10 s to drain.
    let (view, store, arrays) = setup(Duration::from_millis(400), Duration::ZERO, 1);
    let slow = view.resolve("slow").unwrap();
    let fh = view.open(slow).unwrap();
    let mut out = Vec::new();
    // Three reads of four chunks each: confirmed in order, the reader has its next 24 chunks
    // queued (twice the run).
    for k in 0..3 {
        view.read_into(slow, fh, k * 16384, 16384, &mut out)
            .unwrap();
    }
    assert!(
        view.cache().ledger().len() > 15,
        "the sequential reader did not queue its window ({} queued)",
        view.cache().ledger().len()
    );
    // The last chunk queued, far behind: read at once, not after the queue (most of which is
    // still to be fetched when it returns).
    let before = store.total("slow/c/");
    let last = view.read(slow, 35 * 4096, 4096).unwrap();
    assert!(last == arrays[0].expected[35 * 4096..36 * 4096]);
    let fetched = store.total("slow/c/") - before;
    assert!(
        fetched < 8,
        "the read returned after {fetched} more slow fetches"
    );
    // The fast array does not wait for the slow one's requests at all.
    assert!(read_in_order(&view, "fast", 65536) == arrays[1].expected);
    let fetched = store.total("slow/c/") - before;
    assert!(
        fetched < 12,
        "the fast array was read after {fetched} more slow fetches"
    );
    view.release(fh);
}

#[test]
fn finished_fetches_go_on_with_the_prediction_while_the_reader_waits_for_its_first_chunk() {
    // Chunk 0 answers after 4 s, the other 63 after 50 ms each.
    let (view, store, arrays) = setup(Duration::from_millis(50), Duration::from_secs(4), 64);
    let view = Arc::new(view);
    let slow = view.resolve("slow").unwrap();
    let fh = view.open(slow).unwrap();
    let first = {
        let view = view.clone();
        std::thread::spawn(move || {
            let mut out = Vec::new();
            view.read_into(slow, fh, 0, 4096, &mut out).unwrap();
            out
        })
    };
    // Two more reads in order (as the kernel's readahead sends them, while the first waits)
    // confirm the reader: its prediction reaches chunk 26 of 64, the rest of its window is
    // left for finished fetches to queue.
    std::thread::sleep(Duration::from_millis(100));
    let mut out = Vec::new();
    for k in 1..3 {
        view.read_into(slow, fh, k * 4096, 4096, &mut out).unwrap();
    }
    assert!(out == arrays[0].expected[4096..3 * 4096]);
    // No read comes while the first waits, yet the last chunk of the window is requested.
    while store.total("slow/c/63/") == 0 && !first.is_finished() {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        !first.is_finished(),
        "chunk 63 not requested while the reader waited for chunk 0"
    );
    assert!(first.join().unwrap() == arrays[0].expected[..4096]);
    // The rest reads right, and every chunk was requested once.
    assert_reads_on(&view, slow, fh, 3 * 4096, &arrays[0].expected);
    view.release(fh);
    wait_until_idle(&view);
    assert_eq!(store.repeated("slow/c/"), vec![]);
    assert_eq!(store.total("slow/c/"), 64);
}

#[test]
fn a_first_read_at_the_start_of_a_data_file_over_the_network_asks_for_the_whole_window() {
    // 64 chunks of 4 KiB, well inside the window (a quarter of the 64 MiB cache); each chunk
    // request waits 50 ms.
    let (view, store, arrays) = setup(Duration::from_millis(50), Duration::ZERO, 64);
    let slow = view.resolve("slow").unwrap();
    let fh = view.open(slow).unwrap();
    let mut out = Vec::new();
    view.read_into(slow, fh, 0, 4096, &mut out).unwrap();
    assert!(out == arrays[0].expected[..4096]);
    // No further read: the whole file is requested, each chunk once, by the first read's
    // prediction alone.
    wait_until_idle(&view);
    assert_eq!(
        store.total("slow/c/"),
        64,
        "chunks requested after one read at offset 0"
    );
    assert_eq!(store.repeated("slow/c/"), vec![]);
    // Every chunk reads right, from the cache.
    assert_reads_on(&view, slow, fh, 4096, &arrays[0].expected);
    assert_eq!(store.total("slow/c/"), 64);
    view.release(fh);
    // A first read elsewhere looks ahead as before: its own bands, not the whole window.
    let fast = view.resolve("fast").unwrap();
    let fh = view.open(fast).unwrap();
    view.read_into(fast, fh, 32 * 4096, 4096, &mut out).unwrap();
    wait_until_idle(&view);
    assert!(
        store.total("fast/c/") < 16,
        "{} chunks requested after one read in the middle",
        store.total("fast/c/")
    );
    view.release(fh);
}

#[test]
fn a_read_of_the_npy_header_alone_reads_no_data_ahead() {
    // `np.load(mmap_mode=...)` reads the header first: over the network, a first read of the
    // data at offset 0 would ask for the whole window.
    let (view, store, arrays) = setup(Duration::from_millis(20), Duration::ZERO, 64);
    let npy = view.resolve("slow.npy").unwrap();
    let fh = view.open(npy).unwrap();
    let mut out = Vec::new();
    view.read_into(npy, fh, 0, 128, &mut out).unwrap();
    wait_until_idle(&view);
    assert_eq!(store.total("slow/c/"), 0, "chunks requested for the header");
    // A read of the header and the first data bytes counts as a read of those bytes only.
    out.clear();
    view.read_into(npy, fh, 0, 128 + 4096, &mut out).unwrap();
    assert!(out[128..] == arrays[0].expected[..4096]);
    view.release(fh);
}

#[test]
fn a_selection_let_go_before_its_open_is_gathered_with_its_queued_work() {
    // A cache of 32 KiB gathers selections of up to 8 KiB and keeps 2 KiB of them unopened.
    // `sel[0:16,:]` (2 KiB over 16 chunks) is gathered from its lookup on, its chunks queued
    // for one worker at 100 ms a request; looking up `sel[16:32,:]` then lets its buffer go,
    // before it is opened. The work queued for it must fill the buffer its open makes, not
    // the one let go: each chunk is fetched once, except one a worker was fetching then.
    let mut mem = MemoryStore::new();
    mem.insert("zarr.json", r#"{"zarr_format": 3, "node_type": "group"}"#);
    let sel = synth::zstd_u16(&mut mem, 4, "sel", [64, 64], [8, 8]);
    let faulty = FaultyStore::new(Arc::new(mem)).with(
        "sel/c/",
        1,
        Fault::Latency(Duration::from_millis(100)),
    );
    let store = Arc::new(PerKey {
        inner: faulty,
        ranges: Mutex::default(),
        read_ahead: AtomicU32::new(0),
    });
    let shared: Arc<dyn Store> = store.clone();
    let mut view = from_store(shared, "root", 32 << 10, &LoadOptions::default()).unwrap();
    view.set_read_policy(ReadPolicy::local(1));
    let x = view.resolve("sel[0:16,:]").unwrap();
    view.resolve("sel[16:32,:]").unwrap();
    let fh = view.open(x).unwrap();
    let mut out = Vec::new();
    for at in (0..2048).step_by(512) {
        view.read_into(x, fh, at, 512, &mut out).unwrap();
    }
    view.release(fh);
    assert!(out == sel.expected[..2048], "sel[0:16,:]");
    wait_until_idle(&view);
    let requests = store.total("sel/c/0/") + store.total("sel/c/1/");
    assert!(
        (16..=17).contains(&requests),
        "{requests} requests for the 16 chunks of sel[0:16,:]"
    );
}

#[test]
fn a_small_cache_reads_ahead_no_more_than_it_keeps() {
    // 64 raw chunks of 1 MiB through a 4 MiB cache: a window of 8 MiB would load chunks that
    // evict each other before they are read, and read them again.
    let mut mem = MemoryStore::new();
    mem.insert("zarr.json", r#"{"zarr_format": 3, "node_type": "group"}"#);
    let big = synth::raw_rows_u8(&mut mem, 5, "big", [1024, 1 << 16]);
    let store = Arc::new(PerKey {
        inner: FaultyStore::new(Arc::new(mem)),
        ranges: Mutex::default(),
        read_ahead: AtomicU32::new(0),
    });
    let shared: Arc<dyn Store> = store.clone();
    let mut view = from_store(shared, "root", 4 << 20, &LoadOptions::default()).unwrap();
    view.set_read_policy(ReadPolicy::local(2));
    assert!(read_in_order(&view, "big", 256 << 10) == big.expected);
    wait_until_idle(&view);
    assert_eq!(store.repeated("big/c/"), vec![]);
    assert_eq!(store.total("big/c/"), 64);
}

/// Counts the requests for the chunks of `strings/` (gets, ranges, suffixes) per key, and the
/// most of them in flight at once, over a store that reports itself remote.
struct Flights {
    inner: FaultyStore,
    per_key: Mutex<HashMap<String, u32>>,
    now: Arc<AtomicU32>,
    most: AtomicU32,
    /// What the store says it is.
    latency: Latency,
    /// Keys of the chunks whose requests by the read-ahead's fetch threads go through; `None`:
    /// all (see [`Flights::hold`]).
    through: Mutex<Option<HashSet<String>>>,
    opened: Condvar,
}

/// One request in flight, counted out when it is over.
#[derive(Default)]
struct Flight(Option<Arc<AtomicU32>>);

impl Drop for Flight {
    fn drop(&mut self) {
        if let Some(now) = &self.0 {
            now.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Layer for Flights {
    type Step = Flight;

    fn inner(&self) -> Result<&dyn Store, StoreError> {
        Ok(&self.inner)
    }

    fn before(&self, request: &Request<'_>) -> Result<Flight, StoreError> {
        let key = request.key();
        let data = matches!(
            request,
            Request::Get(_) | Request::Range { .. } | Request::Suffix { .. }
        );
        let chunk = key.strip_prefix("strings/").is_some_and(|name| {
            name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_digit() || c == '.')
        });
        if !data || !chunk {
            return Ok(Flight(None));
        }
        let fetch = std::thread::current()
            .name()
            .is_some_and(|n| n.starts_with("fetch-"));
        let mut through = self.through.lock();
        while fetch && through.as_ref().is_some_and(|keys| !keys.contains(key)) {
            self.opened.wait(&mut through);
        }
        drop(through);
        *self.per_key.lock().entry(key.to_string()).or_default() += 1;
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        Ok(Flight(Some(self.now.clone())))
    }

    fn latency(&self) -> Latency {
        self.latency
    }
}

impl Flights {
    /// A store of `latency` counting the requests to `inner`.
    fn new(inner: FaultyStore, latency: Latency) -> Arc<Self> {
        Arc::new(Flights {
            inner,
            per_key: Mutex::default(),
            now: Arc::default(),
            most: AtomicU32::new(0),
            latency,
            through: Mutex::new(None),
            opened: Condvar::new(),
        })
    }

    /// From now on, holds the read-ahead's requests for chunks not let through: what it queued
    /// stays queued or in flight, to be counted without depending on how fast it goes.
    fn hold(&self) {
        *self.through.lock() = Some(HashSet::new());
    }

    /// Lets the read-ahead's requests for chunk `strings/{chunk}` through.
    fn let_through(&self, chunk: usize) {
        if let Some(keys) = self.through.lock().as_mut() {
            keys.insert(format!("strings/{chunk}"));
        }
        self.opened.notify_all();
    }

    /// Lets every request through.
    fn open(&self) {
        *self.through.lock() = None;
        self.opened.notify_all();
    }

    /// Forgets the requests counted so far.
    fn reset(&self) {
        self.per_key.lock().clear();
        self.most.store(0, Ordering::SeqCst);
    }

    /// Keys requested more than once.
    fn repeated(&self) -> Vec<(String, u32)> {
        let per_key = self.per_key.lock();
        let mut out: Vec<_> = per_key
            .iter()
            .filter(|(_, &n)| n > 1)
            .map(|(k, &n)| (k.clone(), n))
            .collect();
        out.sort();
        out
    }

    /// Keys requested other than once, of the `keys` the scan needs.
    fn not_once(&self, keys: &[String]) -> Vec<(String, u32)> {
        let per_key = self.per_key.lock();
        let mut odd: Vec<(String, u32)> = keys
            .iter()
            .map(|k| (k.clone(), per_key.get(k).copied().unwrap_or(0)))
            .filter(|&(_, n)| n != 1)
            .collect();
        odd.extend(
            per_key
                .iter()
                .filter(|(k, _)| !keys.contains(k))
                .map(|(k, &n)| (k.clone(), n)),
        );
        odd
    }
}

/// The string array of the fixture `dialects/vlen_v2_zarr2.zarr` (3 x 4 elements in chunks of
/// 2 x 2, vlen-utf8 and blosc, written by zarr-python; its last row of chunks absent, fill value
/// "NA"), tiled: rows 0-1 (its stored chunks, as stored) `tiles` times, then its last row
/// (absent chunks). Behind a [`Flights`] store whose chunk requests each wait `delay`
/// (`damaged`: the chunk of that key read cut short), viewed reading ahead as over
/// the network. Returns the view, the store, the chunk keys, and the expected `strings` and
/// `strings.npy`.
struct Tiled {
    view: View,
    store: Arc<Flights>,
    keys: Vec<String>,
    text: Vec<u8>,
    npy: Vec<u8>,
}

fn tiled(tiles: u64, delay: Duration, damaged: Option<&str>) -> Tiled {
    let fixture = crate::common::fixtures_dir().join("dialects");
    let dir = fixture.join("vlen_v2_zarr2.zarr/strings");
    let expected = fixture.join("expected/vlen_v2_zarr2");
    let rows = 2 * tiles + 1;
    let mut zarray: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join(".zarray")).unwrap()).unwrap();
    zarray["shape"] = serde_json::json!([rows, 4]);
    let mut mem = MemoryStore::new();
    mem.insert(".zgroup", r#"{"zarr_format": 2}"#);
    mem.insert("strings/.zarray", zarray.to_string());
    let chunk = |c: u32| std::fs::read(dir.join(format!("0.{c}"))).unwrap();
    let mut keys = Vec::new();
    for t in 0..=tiles {
        for c in 0..2 {
            let key = format!("strings/{t}.{c}");
            if t < tiles {
                mem.insert(&key, chunk(c));
            }
            keys.push(key);
        }
    }
    // The text: one line per element; rows 0-1 are its first 8 lines, the last row the rest.
    let text = std::fs::read(expected.join("strings.txt")).unwrap();
    let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
    assert_eq!(lines.len(), 12);
    let mut tiled_text = lines[..8].concat().repeat(tiles as usize);
    tiled_text.extend(lines[8..].concat());
    // `A.npy`: cells as wide as in the fixture's (the same elements), after a header of the
    // tiled shape.
    let npy = std::fs::read(expected.join("strings.npy")).unwrap();
    let start = match npy[6] {
        1 => 10 + u16::from_le_bytes([npy[8], npy[9]]) as usize,
        _ => 12 + u32::from_le_bytes(npy[8..12].try_into().unwrap()) as usize,
    };
    let cells = &npy[start..];
    let width = cells.len() / 12;
    let dtype = zarrfs::meta::DataType::Unicode(width / 4);
    let mut tiled_npy = zarrfs::view::npy_header(&dtype, &[rows, 4]);
    tiled_npy.extend(cells[..8 * width].repeat(tiles as usize));
    tiled_npy.extend(&cells[8 * width..]);
    let mut faulty = FaultyStore::new(Arc::new(mem)).with("strings/", 1, Fault::Latency(delay));
    if let Some(key) = damaged {
        faulty = faulty.with(key, 1, Fault::ShortRead);
    }
    let store = Flights::new(faulty, Latency::Network);
    let shared: Arc<dyn Store> = store.clone();
    let mut view = from_store(shared, "root", 64 << 20, &LoadOptions::default()).unwrap();
    view.set_read_policy(ReadPolicy::for_store(Latency::Network, 2));
    Tiled {
        view,
        store,
        keys,
        text: tiled_text,
        npy: tiled_npy,
    }
}

/// All of file `path`, read `step` bytes at a time until a read comes back empty.
fn read_to_end(view: &View, path: &str, step: u32) -> Vec<u8> {
    let ino = view.resolve(path).unwrap();
    let mut out = Vec::new();
    loop {
        let before = out.len();
        view.read_into(ino, 0, out.len() as u64, step, &mut out)
            .unwrap();
        if out.len() == before {
            return out;
        }
    }
}

#[test]
fn the_size_scan_of_a_string_array_has_many_chunks_in_flight_each_requested_once() {
    // 514 chunks of 4 strings: the `stat` scans them on the spot (at most SYNC_SCAN_MAX).
    let t = tiled(256, Duration::from_millis(5), None);
    let ino = t.view.resolve("strings").unwrap();
    let attr = t.view.getattr(ino).unwrap();
    assert_eq!((attr.size, attr.exact), (t.text.len() as u64, true));
    let most = t.store.most.load(Ordering::SeqCst);
    assert!(most >= 8, "{most} chunk requests in flight at most");
    wait_until_idle(&t.view);
    assert_eq!(
        t.store.not_once(&t.keys),
        vec![],
        "each chunk requested once"
    );
    assert!(read_to_end(&t.view, "strings", 4096) == t.text, "strings");
    assert!(
        read_to_end(&t.view, "strings.npy", 4096) == t.npy,
        "strings.npy"
    );
    let npy = t.view.resolve("strings.npy").unwrap();
    assert_eq!(t.view.getattr(npy).unwrap().size, t.npy.len() as u64);
    wait_until_idle(&t.view);
    assert_eq!(t.store.not_once(&t.keys), vec![], "read from the cache");
}

#[test]
fn a_scan_on_the_sizer_thread_reads_ahead_too() {
    // More than SYNC_SCAN_MAX elements: `stat` hands the scan to the sizer thread, and a read
    // waits for it (or takes it over).
    let t = tiled(8192, Duration::from_millis(1), None);
    let ino = t.view.resolve("strings").unwrap();
    let attr = t.view.getattr(ino).unwrap();
    assert_eq!((attr.size, attr.exact), (0, false), "scanned apart");
    // Nothing reads: the sizer thread scans alone, until `stat` shows the size.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let attr = loop {
        let attr = t.view.getattr(ino).unwrap();
        if attr.exact {
            break attr;
        }
        assert!(std::time::Instant::now() < deadline, "the scan never ended");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(attr.size, t.text.len() as u64);
    let most = t.store.most.load(Ordering::SeqCst);
    assert!(most >= 8, "{most} chunk requests in flight at most");
    assert!(
        read_to_end(&t.view, "strings", 1 << 20) == t.text,
        "strings"
    );
    wait_until_idle(&t.view);
    assert_eq!(
        t.store.not_once(&t.keys),
        vec![],
        "each chunk requested once"
    );
    assert!(
        read_to_end(&t.view, "strings.npy", 1 << 20) == t.npy,
        "strings.npy"
    );
}

#[test]
fn the_scan_of_a_selection_of_a_string_array_reads_ahead_too() {
    // The odd rows: row 1 of each tile, in its 512 stored chunks.
    let t = tiled(256, Duration::from_millis(5), None);
    let lines: Vec<&[u8]> = t.text.split_inclusive(|&b| b == b'\n').collect();
    let odd = lines[4..8].concat().repeat(256);
    let sel = t.view.resolve("strings[1::2]").unwrap();
    assert_eq!(t.view.getattr(sel).unwrap().size, odd.len() as u64);
    let most = t.store.most.load(Ordering::SeqCst);
    assert!(most >= 8, "{most} chunk requests in flight at most");
    assert!(read_to_end(&t.view, "strings[1::2]", 4096) == odd);
    wait_until_idle(&t.view);
    let stored = &t.keys[..t.keys.len() - 2];
    assert_eq!(
        t.store.not_once(stored),
        vec![],
        "each chunk requested once"
    );
}

#[test]
fn a_damaged_chunk_met_by_a_scan_reading_ahead_fails_its_file_with_eio() {
    let t = tiled(256, Duration::from_millis(1), Some("strings/100.1"));
    let ino = t.view.resolve("strings").unwrap();
    let attr = t.view.getattr(ino).unwrap();
    assert_eq!((attr.size, attr.exact), (0, false), "the scan failed");
    let corrupt = Err(ViewError::Io(IoCause::Corrupt));
    assert_eq!(t.view.read(ino, 0, 4096), corrupt);
    let npy = t.view.resolve("strings.npy").unwrap();
    assert_eq!(t.view.read(npy, 0, 4096), corrupt);
    wait_until_idle(&t.view);
}

/// Elements in [`long_strings`]'s array, and in each of its chunks.
const LONG: u64 = 1 << 17;
const LONG_CHUNK: u64 = 2048;

/// A string array of [`LONG`] elements in 64 chunks (vlen-utf8, no compression: about 100 KiB
/// of text and 120 KiB decoded each, so that a read of 128 KiB meets one chunk or two, and a
/// window of a quarter of the cache holds 8), larger than the 4 MiB cache of the view returned,
/// over a [`Flights`] store of `latency` whose chunk requests each wait `delay`, read ahead as
/// `latency` says. Returns the view, the store, the chunk keys, and the expected `strings` and
/// `strings.npy`.
fn long_strings(latency: Latency, delay: Duration) -> Tiled {
    let items: Vec<String> = (0..LONG)
        .map(|i| format!("s{i}-{}", "é".repeat(i as usize % 37)))
        .collect();
    let mut mem = MemoryStore::new();
    mem.insert(".zgroup", r#"{"zarr_format": 2}"#);
    let zarray = serde_json::json!({
        "zarr_format": 2, "shape": [LONG], "chunks": [LONG_CHUNK], "dtype": "|O",
        "compressor": null, "fill_value": "", "filters": [{"id": "vlen-utf8"}], "order": "C",
    });
    mem.insert("strings/.zarray", zarray.to_string());
    let mut keys = Vec::new();
    for (c, chunk) in items.chunks(LONG_CHUNK as usize).enumerate() {
        let mut bytes = (chunk.len() as u32).to_le_bytes().to_vec();
        for item in chunk {
            bytes.extend((item.len() as u32).to_le_bytes());
            bytes.extend(item.as_bytes());
        }
        let key = format!("strings/{c}");
        mem.insert(&key, bytes);
        keys.push(key);
    }
    let text: Vec<u8> = items
        .iter()
        .flat_map(|i| format!("{i}\n").into_bytes())
        .collect();
    let width = items.iter().map(|i| i.chars().count()).max().unwrap();
    let dtype = zarrfs::meta::DataType::Unicode(width);
    let mut npy = zarrfs::view::npy_header(&dtype, &[LONG]);
    for item in &items {
        let cell: Vec<u8> = item
            .chars()
            .flat_map(|c| (c as u32).to_le_bytes())
            .collect();
        npy.extend(&cell);
        npy.resize(npy.len() + 4 * width - cell.len(), 0);
    }
    let store = Flights::new(
        FaultyStore::new(Arc::new(mem)).with("strings/", 1, Fault::Latency(delay)),
        latency,
    );
    let shared: Arc<dyn Store> = store.clone();
    let mut view = from_store(shared, "root", 4 << 20, &LoadOptions::default()).unwrap();
    view.set_read_policy(ReadPolicy::for_store(latency, 2));
    Tiled {
        view,
        store,
        keys,
        text,
        npy,
    }
}

/// The size of file `path` once scanned (by the sizer thread for a large array).
fn scanned_size(view: &View, path: &str) -> u64 {
    let ino = view.resolve(path).unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let attr = view.getattr(ino).unwrap();
        if attr.exact {
            return attr.size;
        }
        assert!(Instant::now() < deadline, "the scan of {path} never ended");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// All of file `path`, read front to back through one handle, `step` bytes at a time, until a
/// read comes back empty.
fn read_through_handle(view: &View, path: &str, step: u32) -> Vec<u8> {
    let ino = view.resolve(path).unwrap();
    let fh = view.open(ino).unwrap();
    let mut out = Vec::new();
    loop {
        let before = out.len();
        view.read_into(ino, fh, out.len() as u64, step, &mut out)
            .unwrap();
        if out.len() == before {
            break;
        }
    }
    view.release(fh);
    out
}

/// The bytes of file `path` of [`long_strings`] (whose contents are `expected`) holding each
/// chunk's elements, in order: a read of one walks that chunk alone (its text starts and ends
/// at marks of the index, every 1024 elements).
fn chunk_ranges(path: &str, expected: &[u8]) -> Vec<(u64, u64)> {
    if path.ends_with(".npy") {
        let header = match expected[6] {
            1 => 10 + u16::from_le_bytes([expected[8], expected[9]]) as u64,
            _ => 12 + u32::from_le_bytes(expected[8..12].try_into().unwrap()) as u64,
        };
        let chunk = (expected.len() as u64 - header) / LONG * LONG_CHUNK;
        let end = |k: u64| header + k * chunk;
        return (0..LONG / LONG_CHUNK)
            .map(|k| (if k == 0 { 0 } else { end(k) }, end(k + 1)))
            .collect();
    }
    let lines: Vec<&[u8]> = expected.split_inclusive(|&b| b == b'\n').collect();
    // Each read must lie within one chunk (the gate holds the others' fetches).
    assert_eq!(lines.len() % (LONG / LONG_CHUNK) as usize, 0, "{path}");
    let per = lines.len() / (LONG / LONG_CHUNK) as usize;
    let mut at = 0;
    lines
        .chunks(per)
        .map(|chunk| {
            let len: usize = chunk.iter().map(|l| l.len()).sum();
            at += len as u64;
            (at - len as u64, at)
        })
        .collect()
}

/// Reads the bytes of chunk `k` of file `path` of `t` (see [`chunk_ranges`]), its fetch let
/// through, and compares them with `expected`; returns the chunks then queued or loading: those
/// the read-ahead was asked for and the gate holds, past the chunks read so far.
fn read_chunk(t: &Tiled, path: &str, expected: &[u8], k: usize) -> usize {
    let ino = t.view.resolve(path).unwrap();
    let (from, to) = chunk_ranges(path, expected)[k];
    t.store.let_through(k);
    let mut out = Vec::new();
    t.view
        .read_into(ino, 0, from, (to - from) as u32, &mut out)
        .unwrap();
    assert!(
        out == expected[from as usize..to as usize],
        "{path}: chunk {k}"
    );
    t.view.cache().ledger().len()
}

/// `t` once its `path` is scanned and nothing is in flight, holding the read-ahead's requests.
fn scanned_and_held(t: &Tiled, path: &str, expected: &[u8]) {
    assert_eq!(scanned_size(&t.view, path), expected.len() as u64, "{path}");
    wait_until_idle(&t.view);
    t.store.reset();
    t.store.hold();
}

#[test]
fn reads_in_order_of_a_string_array_the_cache_no_longer_holds_keep_chunks_queued_ahead() {
    let t = long_strings(Latency::Network, Duration::ZERO);
    let lines: Vec<&[u8]> = t.text.split_inclusive(|&b| b == b'\n').collect();
    let odd: Vec<u8> = lines
        .iter()
        .skip(1)
        .step_by(2)
        .flat_map(|l| l.to_vec())
        .collect();
    for (path, expected) in [
        ("strings", &t.text),
        ("strings.npy", &t.npy),
        ("strings[1::2]", &odd),
    ] {
        // The size scan reads every chunk through the cache, which keeps the last ones only.
        scanned_and_held(&t, path, expected);
        // A reader in order, one chunk a read: the chunks after each read are queued (the gate
        // holds them), as many as the window has room for, up to those the scan left cached.
        for k in 0..40 {
            let ahead = read_chunk(&t, path, expected, k);
            assert!(ahead >= 6, "{path}: {ahead} chunks queued after chunk {k}");
        }
        t.store.open();
        wait_until_idle(&t.view);
        assert_eq!(t.store.repeated(), vec![], "{path}: chunks requested again");
        assert!(
            read_through_handle(&t.view, path, 128 << 10) == *expected,
            "{path}"
        );
        wait_until_idle(&t.view);
    }
    assert_eq!(t.keys.len(), 64);
}

#[test]
fn two_readers_of_a_string_array_at_different_places_both_keep_chunks_queued_ahead() {
    let t = long_strings(Latency::Network, Duration::ZERO);
    scanned_and_held(&t, "strings", &t.text);
    // One `cat` gets as far as chunk 9, another starts at chunk 32; then their reads alternate.
    let mut ahead = 0;
    for k in 0..10 {
        ahead = read_chunk(&t, "strings", &t.text, k);
    }
    assert!(ahead >= 6, "{ahead} chunks queued for the first reader");
    read_chunk(&t, "strings", &t.text, 32);
    for r in 0..10 {
        read_chunk(&t, "strings", &t.text, 10 + r);
        let ahead = read_chunk(&t, "strings", &t.text, 33 + r);
        assert!(
            ahead >= 12,
            "{ahead} chunks queued for both readers, round {r}"
        );
    }
    t.store.open();
    wait_until_idle(&t.view);
    assert_eq!(t.store.repeated(), vec![], "chunks requested again");
}

#[test]
fn a_string_array_read_whole_and_read_again_queues_ahead_again() {
    let t = long_strings(Latency::Network, Duration::ZERO);
    assert_eq!(scanned_size(&t.view, "strings"), t.text.len() as u64);
    let ino = t.view.resolve("strings").unwrap();
    let read_whole = || {
        t.store.open();
        let size = t.text.len() as u32;
        assert!(
            t.view.read(ino, 0, size).unwrap() == t.text,
            "one read of it all"
        );
        wait_until_idle(&t.view);
        t.store.hold();
    };
    // Read again from the beginning (a second `cat`): the chunks after the first are queued.
    read_whole();
    let ahead = read_chunk(&t, "strings", &t.text, 0);
    assert!(ahead >= 6, "{ahead} chunks queued after the first");
    // Read again from well inside (the cache no longer holds those chunks): the second read
    // goes on from the first and queues the chunks after it.
    read_whole();
    read_chunk(&t, "strings", &t.text, 10);
    let ahead = read_chunk(&t, "strings", &t.text, 11);
    assert!(ahead >= 6, "{ahead} chunks queued after chunk 11");
    t.store.open();
    wait_until_idle(&t.view);
}

#[test]
fn reads_of_a_string_array_on_a_local_store_read_nothing_ahead() {
    let t = long_strings(Latency::Local, Duration::from_millis(5));
    assert_eq!(scanned_size(&t.view, "strings"), t.text.len() as u64);
    for (path, expected) in [("strings", &t.text), ("strings.npy", &t.npy)] {
        t.store.reset();
        assert!(
            read_through_handle(&t.view, path, 128 << 10) == *expected,
            "{path}"
        );
        let most = t.store.most.load(Ordering::SeqCst);
        assert_eq!(most, 1, "{path}: chunk requests in flight at most");
        assert_eq!(t.store.not_once(&t.keys), vec![], "{path}: each chunk once");
    }
}
