//! Decoding ahead: a pool of worker threads, one per core, that loads chunks into the cache
//! before they are read. The queue is bounded and jobs for chunks already cached or loading are
//! dropped, so prefetch never piles up work or memory.

use super::{ChunkCache, ChunkId};
use crate::stats::{add, STATS};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

/// A load to run: fills the cache entry of `id` (through [`ChunkCache::get_or_load`]).
pub struct Job {
    /// The chunk the job loads.
    pub id: ChunkId,
    /// The work; errors are logged by whoever reads the chunk later.
    pub run: Box<dyn FnOnce() + Send>,
}

/// The worker pool.
pub struct Prefetcher {
    queue: SyncSender<Job>,
    cache: Arc<ChunkCache>,
}

impl Prefetcher {
    /// Starts `workers` threads serving at most `depth` queued jobs.
    pub fn new(cache: Arc<ChunkCache>, workers: usize, depth: usize) -> Self {
        let (queue, jobs) = sync_channel::<Job>(depth);
        let jobs = Arc::new(Mutex::new(jobs));
        for i in 0..workers.max(1) {
            let jobs = jobs.clone();
            let cache = cache.clone();
            let _ = std::thread::Builder::new()
                .name(format!("prefetch-{i}"))
                .spawn(move || worker(&jobs, &cache));
        }
        Prefetcher { queue, cache }
    }

    /// Queues `job` unless its chunk is cached or loading, or the queue is full.
    pub fn submit(&self, job: Job) {
        if self.cache.contains(job.id) {
            add(&STATS.counters.prefetch_skipped, 1);
            return;
        }
        match self.queue.try_send(job) {
            Ok(()) | Err(TrySendError::Full(_)) => {}
            Err(TrySendError::Disconnected(_)) => log::debug!("prefetch workers are gone"),
        }
    }
}

fn worker(jobs: &Mutex<Receiver<Job>>, cache: &ChunkCache) {
    loop {
        let job = {
            let rx = jobs.lock().unwrap_or_else(|p| p.into_inner());
            rx.recv()
        };
        match job {
            Ok(job) => {
                add(&STATS.counters.prefetch_loads, 1);
                (job.run)();
                if cache.contains(job.id) {
                    cache.mark_prefetched(job.id);
                }
            }
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::{Duration, Instant};

    #[test]
    fn workers_fill_the_cache_and_skip_cached_chunks() {
        let cache = Arc::new(ChunkCache::new(1 << 20));
        let pool = Prefetcher::new(cache.clone(), 2, 16);
        let runs = Arc::new(AtomicU32::new(0));
        for index in 0..4 {
            let (cache, runs) = (cache.clone(), runs.clone());
            let id = ChunkId { array: 0, index };
            pool.submit(Job {
                id,
                run: Box::new(move || {
                    runs.fetch_add(1, Ordering::SeqCst);
                    let _ = cache.get_or_load(id, || Ok(Some(Arc::new(vec![1; 10]))));
                }),
            });
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while (0..4).any(|index| !cache.contains(ChunkId { array: 0, index })) {
            assert!(Instant::now() < deadline, "prefetch did not run");
            std::thread::sleep(Duration::from_millis(5));
        }
        pool.submit(Job {
            id: ChunkId { array: 0, index: 0 },
            run: Box::new(|| panic!("cached already")),
        });
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(runs.load(Ordering::SeqCst), 4);
        // A reader of a chunk the workers loaded counts a read-ahead hit (once the worker has
        // noted its load).
        let hits = || STATS.counters.prefetch_hits.load(Ordering::Relaxed);
        let before = hits();
        while hits() == before {
            assert!(Instant::now() < deadline, "no read-ahead hit counted");
            let _ = cache.get_or_load(ChunkId { array: 0, index: 1 }, || panic!("cached"));
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
