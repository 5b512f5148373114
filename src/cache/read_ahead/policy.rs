//! How far ahead of a reader to load (look-ahead windows that grow with a run of reads in
//! order), with how many fetches and decoders, and which chunks a sequential reader is done
//! with (drop-behind): decided from what the store says it is ([`Latency`]), nowhere else.

use super::drop_behind::DropBehind;
use super::stream::{Prediction, Stream};
use super::Limits;
use crate::store::Latency;

/// Fetches in flight for a store with network latency: enough to hide 100-200 ms per request
/// at a few hundred MB/s (object storage answers many requests at once).
const NETWORK_FETCHES: usize = 64;
/// How many times its run a reader of a store with network latency looks ahead: each round trip
/// the window can grow ninefold, so a few round trips reach the whole window.
const NETWORK_RAMP: u64 = 8;
/// Largest look-ahead window for a store with network latency (also at most a quarter of the
/// cache).
const NETWORK_WINDOW: u64 = 1 << 30;

/// How a mount reads ahead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadPolicy {
    /// What the store said it is.
    pub latency: Latency,
    /// Smallest look-ahead window of a confirmed sequential reader, in bytes (less when a
    /// quarter of the cache is less).
    pub min_window: u64,
    /// Largest look-ahead window, in bytes; it is also capped at a quarter of the cache budget.
    pub max_window: u64,
    /// How many times its run of reads in order a reader looks ahead (the window grows with
    /// the run until it reaches `max_window`).
    pub ramp: u64,
    /// How many bands of chunks (from the one it reads) a first read looks ahead at most: one
    /// for local stores (a reader of one frame does not pay for the next), two over the
    /// network (the next band is a round trip away when the reader gets there).
    pub first_bands: u32,
    /// Whether the look-ahead also doubles with every read in order (over the network, so
    /// that it hides the latency within a few reads).
    pub doubling: bool,
    /// Fetchers and decoders (no fetcher: no read-ahead).
    pub limits: Limits,
}

impl ReadPolicy {
    /// [`ReadPolicy::for_store`] for a local store with `workers` fetchers (0: no read-ahead).
    pub fn local(workers: usize) -> Self {
        Self::for_store(Latency::Local, workers)
    }

    /// The policy for a store of `latency` on a machine of `cores` cores, with a cache of
    /// `budget` bytes.
    ///
    /// Local stores: windows of two bands of chunks, at least 8 MiB, at most a quarter of the
    /// cache, one fetcher per core decoding what it fetched.
    ///
    /// Network latency: a window that grows with the run (see `Stream::record`) up to
    /// 1 GiB and a quarter of the cache whatever the chunk grid (latency, not the grid, decides
    /// how much must be asked for ahead), `NETWORK_FETCHES` fetches in flight with at most a
    /// quarter of the cache in their bytes, and one decoder per core.
    pub fn for_store(latency: Latency, cores: usize) -> Self {
        match latency {
            Latency::Local => ReadPolicy {
                latency,
                min_window: 8 << 20,
                max_window: u64::MAX,
                ramp: 2,
                first_bands: 1,
                doubling: false,
                limits: Limits {
                    fetchers: cores,
                    decoders: 0,
                    bytes_in_flight: u64::MAX,
                },
            },
            Latency::Network => ReadPolicy {
                latency,
                min_window: 8 << 20,
                max_window: NETWORK_WINDOW,
                ramp: NETWORK_RAMP,
                first_bands: 2,
                doubling: true,
                limits: Limits {
                    fetchers: NETWORK_FETCHES,
                    decoders: cores.max(1),
                    bytes_in_flight: u64::MAX,
                },
            },
        }
    }

    /// The state of a new reader (`page_cached`: the kernel caches what it reads).
    pub fn reader(&self, page_cached: bool) -> ReaderState {
        ReaderState::new(page_cached, Stream::new(self.ramp, self.doubling))
    }

    /// The limits for a cache of `budget` bytes: bytes in flight at most a quarter of it.
    pub fn limits(&self, budget: u64) -> Limits {
        Limits {
            bytes_in_flight: self.limits.bytes_in_flight.min(budget / 4),
            ..self.limits
        }
    }

    /// The look-ahead window for an array of `chunk`-byte chunks whose natural read-ahead (two
    /// bands of chunks) is `natural` bytes, with a cache of `budget` bytes: at most a quarter of
    /// the cache, so that chunks loaded ahead do not evict each other before they are read;
    /// 0 (no read-ahead) when that is less than one chunk.
    pub fn window(&self, natural: u64, chunk: u64, budget: u64) -> u64 {
        let cap = self.max_window.min(budget / 4);
        if cap < chunk.max(1) {
            return 0;
        }
        let wanted = match self.latency {
            Latency::Local => natural,
            Latency::Network => cap,
        };
        wanted.clamp(self.min_window.min(cap), cap)
    }

    /// How far ahead, in bytes, a walk through an array's chunks in an order known before it
    /// starts (the size scan of a variable-length array, its reads) has chunks of about `chunk`
    /// bytes loaded, with a cache of `budget` bytes. Over the network, the window of a reader
    /// (see [`ReadPolicy::window`]): each chunk is a round trip away. For a local store none:
    /// the walk loads each chunk itself when it comes to it, as reading one costs little more
    /// than the bytes it moves.
    pub fn walk_window(&self, chunk: u64, budget: u64) -> u64 {
        match self.latency {
            Latency::Local => 0,
            Latency::Network => self.window(chunk, chunk, budget),
        }
    }
}

/// What one open data file has been doing.
#[derive(Debug)]
pub struct ReaderState {
    stream: Stream,
    /// What to drop behind a sequential reader; `None` when the kernel does not cache its reads.
    behind: Option<DropBehind>,
}

impl ReaderState {
    /// A reader whose reads the kernel caches (`page_cached`), so drop-behind applies, looking
    /// ahead as `stream` does (see `Stream::record`).
    fn new(page_cached: bool, stream: Stream) -> Self {
        ReaderState {
            stream,
            behind: page_cached.then(DropBehind::default),
        }
    }

    /// True when the kernel caches this reader's reads.
    pub fn page_cached(&self) -> bool {
        self.behind.is_some()
    }

    /// What a finished fetch of this reader's chunks goes on to queue (see `Stream::beyond`).
    pub fn beyond(&self, window: u64) -> Prediction {
        self.stream.beyond(window)
    }

    /// Records a read at `offset` of `len` bytes that touched `now` (chunk, byte where its data
    /// ends; only walked for a page-cached reader); returns what to decode ahead within
    /// `window` (a first read stops at `first_limit`) and the chunks a sequential, page-cached
    /// reader has passed.
    pub fn after_read(
        &mut self,
        offset: u64,
        len: u64,
        window: u64,
        first_limit: u64,
        now: impl IntoIterator<Item = (u64, u64)>,
    ) -> (Prediction, Vec<u64>) {
        let prediction = self.stream.record(offset, len, window, first_limit);
        let Some(behind) = &mut self.behind else {
            return (prediction, Vec::new());
        };
        if !self.stream.in_order() {
            behind.clear();
        }
        for (chunk, end) in now {
            behind.touched(chunk, end);
        }
        let passed = if self.stream.is_sequential() {
            behind.passed(offset)
        } else {
            Vec::new()
        };
        (prediction, passed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_stay_between_the_policy_bounds_and_a_quarter_of_the_cache() {
        let mib = 1 << 20;
        let local = ReadPolicy::for_store(Latency::Local, 2);
        assert_eq!(local.window(mib, mib, 1 << 30), 8 * mib);
        assert_eq!(local.window(100 * mib, mib, 1 << 30), 100 * mib);
        assert_eq!(local.window(1 << 40, mib, 1 << 30), 256 * mib);
        assert_eq!(
            local.window(2 * mib, mib, 4 * mib),
            mib,
            "below the minimum: a quarter of a small cache"
        );
        assert_eq!(
            local.window(8 * mib, 2 * mib, 4 * mib),
            0,
            "a quarter of the cache is less than a chunk: no read-ahead"
        );
        let remote = ReadPolicy::for_store(Latency::Network, 2);
        assert_eq!(
            remote.window(mib, mib, 1 << 30),
            256 * mib,
            "latency, not the grid"
        );
        assert_eq!(remote.window(1 << 40, mib, 1 << 40), 1 << 30);
        assert_eq!(remote.window(mib, 4 * mib, 8 * mib), 0);
        assert_eq!(remote.limits(1 << 30).bytes_in_flight, 256 << 20);
        assert_eq!((remote.limits.fetchers, remote.limits.decoders), (64, 2));
    }

    #[test]
    fn walks_load_ahead_over_the_network_only() {
        let mib = 1 << 20;
        let remote = ReadPolicy::for_store(Latency::Network, 2);
        assert_eq!(remote.walk_window(mib, 1 << 30), 256 * mib);
        assert_eq!(remote.walk_window(mib, 2 * mib), 0, "less than a chunk");
        assert_eq!(ReadPolicy::local(2).walk_window(mib, 1 << 30), 0);
    }

    #[test]
    fn only_page_cached_sequential_readers_drop_behind() {
        let mib = 1 << 20;
        for cached in [true, false] {
            let mut r = ReadPolicy::local(2).reader(cached);
            let mut passed = Vec::new();
            for k in 0..12 {
                let (_, p) = r.after_read(k * mib, mib, 8 * mib, u64::MAX, [(k, (k + 1) * mib)]);
                passed.extend(p);
            }
            if cached {
                assert_eq!(passed, (0..7).collect::<Vec<_>>());
            } else {
                assert!(passed.is_empty());
            }
        }
    }
}
