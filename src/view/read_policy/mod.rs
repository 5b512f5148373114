//! The read policy, in one place: how far ahead of a reader to decode (look-ahead windows that
//! grow with a run of reads in order), how many workers decode ahead, and which chunks a
//! sequential reader is done with (drop-behind).
//!
//! [`ReadPolicy`] holds the numbers; [`ReadPolicy::local`] suits local disks, and a store with
//! network latency passes a smaller first window, a larger cap and more workers in flight
//! ([`ReadPolicy::remote`]), like mountpoint-s3's prefetcher.

mod drop_behind;
mod stream;

pub use drop_behind::DropBehind;
pub use stream::{Prediction, Stream};

/// Prefetch jobs that may wait per worker with [`ReadPolicy::local`].
const LOCAL_QUEUE_PER_WORKER: usize = 16;

/// How a mount reads ahead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadPolicy {
    /// Smallest look-ahead window of a confirmed sequential reader, in bytes.
    pub min_window: u64,
    /// Largest look-ahead window, in bytes; it is also capped at a quarter of the cache budget.
    pub max_window: u64,
    /// Threads decoding ahead (0: no prefetch).
    pub workers: usize,
    /// Prefetch jobs that may wait (more are dropped, not queued).
    pub queue_depth: usize,
    /// Whether a page-cached read may decode a whole chunk straight into its reply, keeping no
    /// decoded copy: for local stores, where decoding again is cheap; not for remote ones,
    /// where it costs a request and the chunk cache must keep serving when the server is down.
    pub decode_into_reply: bool,
}

impl ReadPolicy {
    /// For local stores: windows from 8 MiB up to a quarter of the cache (two bands of chunks
    /// where that is more), `workers` threads (one per core), 16 jobs queued per worker.
    pub fn local(workers: usize) -> Self {
        ReadPolicy {
            min_window: 8 << 20,
            max_window: u64::MAX,
            workers,
            queue_depth: LOCAL_QUEUE_PER_WORKER * workers.max(1),
            decode_into_reply: true,
        }
    }

    /// For stores with network latency: a window starting at 2 MiB that doubles with the run
    /// (see [`Stream::record`]) up to 256 MiB (and a quarter of the cache), and `in_flight`
    /// workers each waiting on one request.
    pub fn remote(in_flight: usize) -> Self {
        ReadPolicy {
            min_window: 2 << 20,
            max_window: 256 << 20,
            workers: in_flight,
            queue_depth: 4 * in_flight.max(1),
            decode_into_reply: false,
        }
    }

    /// The look-ahead window for an array whose natural read-ahead (two bands of chunks) is
    /// `natural` bytes, with a cache of `budget` bytes.
    pub fn window(&self, natural: u64, budget: u64) -> u64 {
        let cap = self.max_window.min(budget / 4).max(self.min_window);
        natural.clamp(self.min_window, cap)
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
    /// A reader whose reads the kernel caches (`page_cached`), so drop-behind applies.
    pub fn new(page_cached: bool) -> Self {
        ReaderState {
            stream: Stream::default(),
            behind: page_cached.then(DropBehind::default),
        }
    }

    /// True when the kernel caches this reader's reads.
    pub fn page_cached(&self) -> bool {
        self.behind.is_some()
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
        let local = ReadPolicy::local(2);
        assert_eq!(local.window(1 << 20, 1 << 30), 8 << 20);
        assert_eq!(local.window(100 << 20, 1 << 30), 100 << 20);
        assert_eq!(local.window(1 << 40, 1 << 30), 256 << 20);
        assert_eq!(
            local.window(1 << 40, 1 << 20),
            8 << 20,
            "never below the minimum"
        );
        let remote = ReadPolicy::remote(32);
        assert_eq!(remote.window(1 << 20, 1 << 30), 2 << 20);
        assert_eq!(remote.window(1 << 40, 1 << 40), 256 << 20);
        assert_eq!(remote.queue_depth, 128);
    }

    #[test]
    fn only_page_cached_sequential_readers_drop_behind() {
        let mib = 1 << 20;
        for cached in [true, false] {
            let mut r = ReaderState::new(cached);
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
