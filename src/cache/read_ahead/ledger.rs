//! The one record of read-ahead work: one entry per chunk from the moment it is queued until it
//! is in the cache (or given up), so a chunk queued or loading is never queued again, and a
//! reader who needs a chunk finds out whether to wait for it, take its fetched bytes, or load it
//! itself.

use super::{Job, Key, Limits};
use crate::cache::ChunkId;
use crate::fetch::Encoded;
use crate::stats::{add, STATS};
use parking_lot::{Condvar, Mutex};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

/// Most chunks queued or loading at once; more are refused (and counted), never dropped unseen.
pub(super) const MAX_QUEUED: usize = 4096;
/// Most chunks fetched together (nearby inner chunks of one shard)...
const MAX_BATCH: usize = 64;
/// ...looked for this far down the queue.
const BATCH_LOOKAHEAD: usize = 256;

/// Where one chunk of the read-ahead is.
enum Phase {
    /// Waiting for a fetcher.
    Queued(Job),
    /// A fetcher waits on the store for it (`bytes` counted in flight).
    Fetching(u64),
    /// Fetched, waiting for a decoder (`bytes` counted in flight).
    Fetched(Job, Encoded),
    /// Being decoded into the cache.
    Decoding,
    /// Being loaded by this many readers (see [`Reading`]).
    Reading(u32),
}

/// A reader's hold on a chunk it loads (see [`Ledger::claim`]): until it is dropped, the
/// read-ahead neither queues the chunk nor fetches it again.
pub struct Reading<'a> {
    ledger: &'a Ledger,
    key: Key,
}

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        let mut state = self.ledger.state.lock();
        if let Some(Phase::Reading(readers)) = state.phases.get_mut(&self.key) {
            *readers -= 1;
            if *readers == 0 {
                state.phases.remove(&self.key);
            }
        }
    }
}

/// The chunks of one reader's prediction past what its reads queued, in the order it will read
/// them, within its window: each finished fetch of one of its chunks queues the next ones (see
/// [`super::Job::then`]), so the read-ahead goes on while the reader waits. Each read of the
/// reader replaces them.
#[derive(Default)]
pub struct Continuation(Mutex<VecDeque<Job>>);

impl Continuation {
    /// Replaces what is left with `jobs`, in order.
    pub fn replace(&self, jobs: impl IntoIterator<Item = Job>) {
        let mut left = self.0.lock();
        left.clear();
        left.extend(jobs);
    }

    /// Queues the next `count` chunks not cached (`cached`) or queued already, each going on
    /// with this continuation, until the ledger is full: a chunk it refuses stays first here,
    /// for the next finished fetch. Taking a chunk and queuing it is one step under this
    /// continuation's lock: a [`Continuation::replace`] (its reader read on, maybe straight
    /// past the chunk) waits for it, so a chunk the reader replaced away is never queued after
    /// it was read.
    pub(super) fn queue_next(
        self: &Arc<Self>,
        ledger: &Ledger,
        count: usize,
        cached: impl Fn(ChunkId) -> bool,
    ) {
        let mut left = self.0.lock();
        let mut queued = 0;
        // A full ledger stops the walk before a chunk is taken; one that fills meanwhile gives
        // the chunk back below.
        while queued < count && ledger.len() < MAX_QUEUED {
            let Some(job) = left.pop_front() else {
                return;
            };
            match ledger.queue(job.then(self.clone()), false, &cached) {
                Queued::Yes => queued += 1,
                Queued::Skipped => {}
                Queued::Full(mut job) => {
                    // Not back with a hold on this continuation: it would keep itself alive.
                    job.then = None;
                    left.push_front(job);
                    return;
                }
            }
        }
    }
}

/// What [`Ledger::queue`] did with a job.
pub(super) enum Queued {
    /// Queued.
    Yes,
    /// Its chunk is cached, queued or loading already: nothing to do.
    Skipped,
    /// Refused, the ledger being full (counted and logged): the job, back to its caller.
    Full(Job),
}

#[derive(Default)]
struct State {
    /// Each reader's [`Continuation`].
    continuations: HashMap<u64, Arc<Continuation>>,
    phases: HashMap<Key, Phase>,
    /// Chunks to fetch, in order; an id whose phase is no longer `Queued` is skipped.
    to_fetch: VecDeque<Key>,
    /// Fetched chunks to decode, in order of arrival.
    to_decode: VecDeque<Key>,
    /// Bytes of the chunks being fetched or waiting to be decoded, and of the requests
    /// carrying them (see [`Ledger::carry`]).
    in_flight: u64,
    /// Fetches under way.
    fetching: usize,
    /// The generation of the workers at work (see [`Ledger::begin`]): workers of another
    /// leave.
    generation: u64,
}

/// The read-ahead's chunks and the queues of its workers. Each kind of waiter has its own
/// condition variable, woken one at a time for one piece of work: dozens of idle fetchers are
/// not all woken for every chunk queued (on a busy machine, that alone delayed each request by
/// milliseconds).
#[derive(Default)]
pub struct Ledger {
    state: Mutex<State>,
    /// Readers waiting for a chunk being fetched or decoded.
    changed: Condvar,
    /// Fetchers waiting for a queued chunk, or for room in the bytes in flight.
    fetch_ready: Condvar,
    /// Decoders waiting for a fetched chunk.
    decode_ready: Condvar,
}

impl Ledger {
    /// Queues `job` (at the front with `urgent`: chunks a read waits for), unless its chunk is
    /// queued or loading already or `cached` says it is in the cache, or too many are queued.
    /// The cache is asked under the ledger's lock: a load leaves the ledger only once its chunk
    /// is cached, so a load ending meanwhile is seen one way or the other.
    pub(super) fn queue(&self, job: Job, urgent: bool, cached: impl Fn(ChunkId) -> bool) -> Queued {
        let mut state = self.state.lock();
        let id = job.key();
        if let Some(phase) = state.phases.get(&id) {
            // A queued chunk a read now waits for moves to the front (its old place is skipped).
            if urgent && matches!(phase, Phase::Queued(_)) {
                state.to_fetch.push_front(id);
            }
            add(&STATS.counters.prefetch_skipped, 1);
            return Queued::Skipped;
        }
        if cached(id.id) {
            add(&STATS.counters.prefetch_skipped, 1);
            return Queued::Skipped;
        }
        if state.phases.len() >= MAX_QUEUED {
            add(&STATS.counters.prefetch_refused, 1);
            log::debug!(
                "read-ahead: {MAX_QUEUED} chunks queued; chunk {} not queued",
                id.id.index
            );
            return Queued::Full(job);
        }
        state.phases.insert(id, Phase::Queued(job));
        if urgent {
            state.to_fetch.push_front(id);
        } else {
            state.to_fetch.push_back(id);
        }
        drop(state);
        self.fetch_ready.notify_one();
        Queued::Yes
    }

    /// Reader `reader`'s continuation, made at its first use.
    pub fn continuation(&self, reader: u64) -> Arc<Continuation> {
        let mut state = self.state.lock();
        state.continuations.entry(reader).or_default().clone()
    }

    /// Reader `reader` is gone: what is left of its continuation is not queued.
    pub fn forget(&self, reader: u64) {
        let left = self.state.lock().continuations.remove(&reader);
        if let Some(left) = left {
            left.replace([]);
        }
    }

    /// True when chunk `id` is queued or loading here.
    pub fn holds(&self, id: ChunkId) -> bool {
        self.state.lock().phases.contains_key(&Key::chunk(id))
    }

    /// Chunks queued or loading.
    pub fn len(&self) -> usize {
        self.state.lock().phases.len()
    }

    /// True when nothing is queued or loading.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What a reader who needs chunk `id` now gets from the read-ahead: the chunk's bytes when
    /// it fetched them (the reader decodes them), else nothing, and in both cases a hold on the
    /// chunk for as long as the reader loads it. A queued chunk is taken out of the queue (the
    /// reader loads it at once, behind no other work); for one being fetched or decoded, the
    /// reader waits until that is over (its own chunk, nothing else), then loads it (from the
    /// cache, normally). Readers of one chunk do not wait for each other.
    pub fn claim(&self, id: ChunkId) -> (Reading<'_>, Option<Encoded>) {
        let key = Key::chunk(id);
        let reading = Reading { ledger: self, key };
        let mut state = self.state.lock();
        loop {
            match state.phases.get_mut(&key) {
                Some(Phase::Fetching(_) | Phase::Decoding) => {
                    self.changed
                        .wait_for(&mut state, Duration::from_millis(100));
                }
                Some(Phase::Reading(readers)) => {
                    *readers += 1;
                    return (reading, None);
                }
                Some(Phase::Fetched(..)) => {
                    let Some(Phase::Fetched(job, encoded)) =
                        state.phases.insert(key, Phase::Reading(1))
                    else {
                        unreachable!("matched above")
                    };
                    state.in_flight = state.in_flight.saturating_sub(job.bytes);
                    drop(state);
                    self.fetch_ready.notify_one();
                    return (reading, Some(encoded));
                }
                Some(Phase::Queued(_)) | None => {
                    state.phases.insert(key, Phase::Reading(1));
                    return (reading, None);
                }
            }
        }
    }

    /// The current generation of workers (see [`Ledger::begin`]).
    #[cfg(test)]
    pub(super) fn generation(&self) -> u64 {
        self.state.lock().generation
    }

    /// Begins a new generation of workers, returned: the workers of older ones leave (see
    /// [`Ledger::close`]).
    pub(super) fn begin(&self) -> u64 {
        let generation = {
            let mut state = self.state.lock();
            state.generation += 1;
            state.generation
        };
        self.wake_all();
        generation
    }

    /// The next fetch for a fetcher of `generation`, waiting while there is none or the bytes
    /// in flight would pass `limits` (a fetch always starts when nothing else is in flight):
    /// the chunk first in the queue, and with decoders (a store with latency) the queued chunks
    /// of its group (its shard: see [`super::Source::group`]) that fit. `None` once its
    /// generation is closed.
    pub(super) fn next_fetch(&self, limits: &Limits, generation: u64) -> Option<Vec<Job>> {
        let mut state = self.state.lock();
        let mut waited = false;
        loop {
            if state.generation != generation {
                return None;
            }
            while let Some(&id) = state.to_fetch.front() {
                if matches!(state.phases.get(&id), Some(Phase::Queued(_))) {
                    break;
                }
                state.to_fetch.pop_front();
            }
            if let Some(&id) = state.to_fetch.front() {
                let bytes = match state.phases.get(&id) {
                    Some(Phase::Queued(job)) => job.bytes,
                    _ => unreachable!("the front is queued"),
                };
                let fits = state.in_flight.saturating_add(bytes) <= limits.bytes_in_flight
                    || state.in_flight == 0;
                if fits {
                    state.to_fetch.pop_front();
                    let Some(Phase::Queued(job)) = state.phases.insert(id, Phase::Fetching(bytes))
                    else {
                        unreachable!("the front is queued")
                    };
                    state.in_flight += bytes;
                    state.fetching += 1;
                    let mut batch = vec![job];
                    if limits.decoders > 0 {
                        take_group(&mut state, &mut batch, limits);
                    }
                    // More queued: the next idle fetcher looks at it (one at a time).
                    let more = !state.to_fetch.is_empty();
                    drop(state);
                    if more {
                        self.fetch_ready.notify_one();
                    }
                    return Some(batch);
                }
                if !waited {
                    waited = true;
                    add(&STATS.counters.prefetch_waits, 1);
                    log::debug!(
                        "read-ahead: {} bytes in flight, {} fetches; chunk {} waits",
                        state.in_flight,
                        state.fetching,
                        id.id.index
                    );
                }
            }
            self.fetch_ready
                .wait_for(&mut state, Duration::from_secs(1));
        }
    }

    /// The next fetched chunk for a decoder of `generation`, waiting while there is none;
    /// `None` once its generation is closed.
    pub(super) fn next_decode(&self, generation: u64) -> Option<(Job, Encoded)> {
        let mut state = self.state.lock();
        loop {
            if state.generation != generation {
                return None;
            }
            while let Some(id) = state.to_decode.pop_front() {
                if !matches!(state.phases.get(&id), Some(Phase::Fetched(..))) {
                    continue;
                }
                let Some(Phase::Fetched(job, encoded)) = state.phases.insert(id, Phase::Decoding)
                else {
                    unreachable!("matched above")
                };
                state.in_flight = state.in_flight.saturating_sub(job.bytes);
                drop(state);
                self.fetch_ready.notify_one();
                return Some((job, encoded));
            }
            self.decode_ready
                .wait_for(&mut state, Duration::from_secs(1));
        }
    }

    /// A fetcher's fetch of `job` is over. With `to_decoders` and bytes fetched, they wait for
    /// a decoder (`None` returned); else the fetcher loads the chunk itself, from the bytes it
    /// fetched or fetching them in the load (an array that fetches and decodes in one step).
    pub(super) fn fetched(
        &self,
        job: Job,
        encoded: Option<Encoded>,
        to_decoders: bool,
    ) -> Option<(Job, Option<Encoded>)> {
        let mut state = self.state.lock();
        state.fetching = state.fetching.saturating_sub(1);
        let id = job.key();
        match encoded {
            Some(encoded) if to_decoders => {
                state.phases.insert(id, Phase::Fetched(job, encoded));
                state.to_decode.push_back(id);
                drop(state);
                self.decode_ready.notify_one();
                // A reader waiting for it takes it over.
                self.changed.notify_all();
                None
            }
            encoded => {
                state.in_flight = state.in_flight.saturating_sub(job.bytes);
                state.phases.insert(id, Phase::Decoding);
                drop(state);
                self.fetch_ready.notify_one();
                Some((job, encoded))
            }
        }
    }

    /// Counts `bytes` fetched besides the chunks' own (a ranged read's whole span, gaps
    /// included) in flight until [`Ledger::carried`] of as many: later fetches wait for room.
    pub fn carry(&self, bytes: u64) {
        self.state.lock().in_flight += bytes;
    }

    /// `bytes` counted by [`Ledger::carry`] are handed out: room for other fetches.
    pub fn carried(&self, bytes: u64) {
        {
            let mut state = self.state.lock();
            state.in_flight = state.in_flight.saturating_sub(bytes);
        }
        self.fetch_ready.notify_one();
    }

    /// The read-ahead is done with chunk `id` (loaded, failed, or given up): readers waiting
    /// for it go on. Bytes still counted for it (a failed fetch) are released.
    pub(super) fn done(&self, id: Key) {
        let mut state = self.state.lock();
        let released = match state.phases.remove(&id) {
            Some(Phase::Fetching(bytes)) => {
                state.in_flight = state.in_flight.saturating_sub(bytes);
                state.fetching = state.fetching.saturating_sub(1);
                true
            }
            _ => false,
        };
        drop(state);
        self.changed.notify_all();
        if released {
            self.fetch_ready.notify_one();
        }
    }

    /// Stops the workers of `generation` (they return from [`Ledger::next_fetch`] and
    /// [`Ledger::next_decode`]), unless a newer generation began, whose workers go on; what
    /// they queued stays, for readers to take over or later workers to load.
    pub(super) fn close(&self, generation: u64) {
        let mut state = self.state.lock();
        if state.generation == generation {
            state.generation += 1;
            drop(state);
            self.wake_all();
        }
    }

    fn wake_all(&self) {
        self.changed.notify_all();
        self.fetch_ready.notify_all();
        self.decode_ready.notify_all();
    }
}

/// Adds to `batch` (one job, already fetching) the queued chunks of its array and group found
/// near the front of the queue, while their bytes fit in `limits`.
fn take_group(state: &mut State, batch: &mut Vec<Job>, limits: &Limits) {
    let first = &batch[0];
    let Some(group) = group_of(first, first.id.index) else {
        return;
    };
    let first = first.key();
    let mut mates = Vec::new();
    for &id in state.to_fetch.iter().take(BATCH_LOOKAHEAD) {
        if mates.len() + 1 >= MAX_BATCH {
            break;
        }
        let Some(Phase::Queued(job)) = state.phases.get(&id) else {
            continue;
        };
        let (same, index) = (id.claimable == first.claimable, id.id.index);
        if !same || id.id.array != first.id.array || group_of(job, index) != Some(group) {
            continue;
        }
        // A chunk moved to the front is in the queue twice: its bytes are counted once.
        if mates.iter().any(|&(mate, _)| mate == id) {
            continue;
        }
        if state.in_flight.saturating_add(job.bytes) > limits.bytes_in_flight {
            break;
        }
        state.in_flight += job.bytes;
        mates.push((id, job.bytes));
    }
    for (id, bytes) in mates {
        if let Some(Phase::Queued(job)) = state.phases.insert(id, Phase::Fetching(bytes)) {
            state.fetching += 1;
            batch.push(job);
        }
    }
}

/// The group of chunk `index` of `job`'s source. It is asked with the first chunk of a batch
/// already counted as fetching, so a source that panics is taken as grouping nothing: the
/// batch goes on alone instead of its chunk staying "being fetched" with no fetcher.
fn group_of(job: &Job, index: u64) -> Option<u64> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job.source.group(index)))
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::super::{Job, Limits, ReadAhead};
    use super::*;
    use crate::cache::ChunkCache;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;
    use std::time::Instant;

    fn uncached(_: ChunkId) -> bool {
        false
    }

    /// Queues `job` with nothing cached; true when it was queued.
    fn queue(ledger: &Ledger, job: Job, urgent: bool) -> bool {
        matches!(ledger.queue(job, urgent, uncached), Queued::Yes)
    }

    fn id(index: u64) -> ChunkId {
        ChunkId { array: 7, index }
    }

    /// Waits until `ledger` is empty; fails after 20 s (read-ahead work was lost).
    fn wait_until_empty(ledger: &Ledger) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !ledger.is_empty() {
            assert!(Instant::now() < deadline, "read-ahead work was lost");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// What a [`TestSource`] does to load chunk `index` into a cache.
    type LoadChunk = Box<dyn Fn(&ChunkCache, u64) + Send + Sync>;

    /// A source for the tests: its chunks fetch and decode in one step (`load`), grouped as
    /// `group` says.
    struct TestSource {
        group: fn(u64) -> Option<u64>,
        load: LoadChunk,
    }

    impl super::super::Source for TestSource {
        fn fetch(
            &self,
            _cache: &ChunkCache,
            indexes: &[u64],
            landed: crate::fetch::Landed<'_, Option<Encoded>>,
        ) {
            (0..indexes.len()).for_each(|at| landed(at, Ok(None)));
        }

        fn group(&self, index: u64) -> Option<u64> {
            (self.group)(index)
        }

        fn load(&self, cache: &ChunkCache, index: u64, _encoded: Option<Encoded>) {
            (self.load)(cache, index);
        }
    }

    /// A source counting the chunks it loads in `runs`.
    fn counting_source(runs: &Arc<AtomicU32>) -> TestSource {
        let runs = runs.clone();
        TestSource {
            group: |_| None,
            load: Box::new(move |_, _| {
                runs.fetch_add(1, Ordering::SeqCst);
            }),
        }
    }

    fn counting(id: ChunkId, runs: &Arc<AtomicU32>) -> Job {
        Job::chunk(id, 1, Arc::new(counting_source(runs)))
    }

    #[test]
    fn a_chunk_is_queued_once_and_a_full_queue_refuses_where_it_is_counted() {
        let ledger = Ledger::default();
        let runs = Arc::new(AtomicU32::new(0));
        assert!(queue(&ledger, counting(id(0), &runs), false));
        assert!(
            !queue(&ledger, counting(id(0), &runs), false),
            "queued twice"
        );
        assert!(
            !queue(&ledger, counting(id(0), &runs), true),
            "queued twice"
        );
        for i in 1..MAX_QUEUED as u64 {
            assert!(queue(&ledger, counting(id(i), &runs), false));
        }
        let refused = || STATS.counters.prefetch_refused.load(Ordering::Relaxed);
        let before = refused();
        assert!(!queue(&ledger, counting(id(u64::MAX), &runs), false));
        assert!(refused() > before, "a refusal is counted");
        assert_eq!(ledger.len(), MAX_QUEUED);
    }

    #[test]
    fn a_chunk_moved_to_the_front_is_fetched_and_counted_in_flight_once() {
        let ledger = Ledger::default();
        let grouped: Arc<dyn super::super::Source> = Arc::new(TestSource {
            group: |_| Some(0),
            load: Box::new(|_, _| {}),
        });
        let job = |i| Job::chunk(id(i), 10, grouped.clone());
        for i in 0..4 {
            assert!(queue(&ledger, job(i), false));
        }
        // A read now waits for chunks 1 to 3: they move to the front, their old places stay.
        for i in (1..4).rev() {
            assert!(!queue(&ledger, job(i), true));
        }
        let limits = Limits {
            fetchers: 1,
            decoders: 1,
            bytes_in_flight: 1000,
        };
        let batch = ledger.next_fetch(&limits, ledger.generation()).unwrap();
        let mut fetched: Vec<u64> = batch.iter().map(|job| job.id.index).collect();
        fetched.sort();
        assert_eq!(fetched, [0, 1, 2, 3]);
        assert_eq!(ledger.state.lock().in_flight, 40, "each chunk's bytes once");
        for job in batch {
            ledger.done(job.key());
        }
        assert_eq!(ledger.state.lock().in_flight, 0, "all released");
    }

    #[test]
    fn bytes_a_request_carries_count_in_flight_until_handed_out() {
        let ledger = Arc::new(Ledger::default());
        let runs = Arc::new(AtomicU32::new(0));
        ledger.carry(10);
        assert!(queue(&ledger, counting(id(0), &runs), false));
        let limits = Limits {
            fetchers: 1,
            decoders: 1,
            bytes_in_flight: 10,
        };
        let fetcher = {
            let ledger = ledger.clone();
            std::thread::spawn(move || ledger.next_fetch(&limits, ledger.generation()).is_some())
        };
        std::thread::sleep(Duration::from_millis(100));
        let queued = matches!(
            ledger.state.lock().phases.get(&Key::chunk(id(0))),
            Some(Phase::Queued(_))
        );
        assert!(queued, "fetched with no room in flight");
        ledger.carried(10);
        assert!(fetcher.join().unwrap(), "fetched once handed out");
        assert_eq!(ledger.state.lock().in_flight, 1);
    }

    #[test]
    fn a_source_whose_grouping_panics_still_has_its_chunks_fetched() {
        let ledger = Ledger::default();
        let source: Arc<dyn super::super::Source> = Arc::new(TestSource {
            group: |index| panic!("no group for chunk {index}"),
            load: Box::new(|_, _| {}),
        });
        for i in 0..2 {
            assert!(queue(&ledger, Job::chunk(id(i), 10, source.clone()), false));
        }
        let limits = Limits {
            fetchers: 1,
            decoders: 1,
            bytes_in_flight: 1000,
        };
        for i in 0..2 {
            let batch = ledger.next_fetch(&limits, ledger.generation()).unwrap();
            let fetched: Vec<u64> = batch.iter().map(|job| job.id.index).collect();
            assert_eq!(fetched, [i], "each alone, in order");
            ledger.done(batch[0].key());
        }
        assert!(ledger.is_empty());
        assert_eq!(ledger.state.lock().in_flight, 0, "all released");
    }

    #[test]
    fn other_work_on_a_chunk_is_neither_taken_over_nor_waited_for_by_its_readers() {
        let ledger = Ledger::default();
        let runs = Arc::new(AtomicU32::new(0));
        let counted = runs.clone();
        let fill = Job::run(id(3), 1, move || {
            counted.fetch_add(1, Ordering::SeqCst);
        });
        assert!(queue(&ledger, fill, false));
        assert!(!ledger.holds(id(3)));
        assert!(ledger.claim(id(3)).1.is_none());
        assert_eq!(ledger.len(), 1, "still queued for a worker");
        assert!(
            queue(&ledger, counting(id(3), &runs), false),
            "a load of it is apart"
        );
    }

    #[test]
    fn a_chunk_a_reader_loads_is_not_queued_until_it_is_done() {
        let ledger = Ledger::default();
        let runs = Arc::new(AtomicU32::new(0));
        // Queued, then taken over by a reader; and not known to the ledger, then read.
        assert!(queue(&ledger, counting(id(0), &runs), false));
        for chunk in [id(0), id(1)] {
            let first = ledger.claim(chunk);
            let second = ledger.claim(chunk);
            assert!(
                !queue(&ledger, counting(chunk, &runs), false),
                "queued while read"
            );
            drop(first);
            assert!(
                !queue(&ledger, counting(chunk, &runs), true),
                "queued while read"
            );
            drop(second);
            assert!(!ledger.holds(chunk));
            assert!(queue(&ledger, counting(chunk, &runs), false));
        }
    }

    #[test]
    fn a_continuation_queues_its_next_chunks_in_order_each_once() {
        let cache = ChunkCache::new(1 << 20);
        let runs = Arc::new(AtomicU32::new(0));
        let then = cache.ledger().continuation(1);
        then.replace((0..6).map(|i| counting(id(i), &runs)));
        assert!(queue(cache.ledger(), counting(id(1), &runs), false));
        // Chunk 1 is queued already: passed over, never queued twice.
        super::super::go_on(&cache, &then);
        let held: Vec<u64> = (0..6).filter(|&i| cache.ledger().holds(id(i))).collect();
        assert_eq!(held, [0, 1, 2]);
        super::super::go_on(&cache, &then);
        let held: Vec<u64> = (0..6).filter(|&i| cache.ledger().holds(id(i))).collect();
        assert_eq!(held, [0, 1, 2, 3, 4]);
        // The reader is gone: the rest is not queued.
        cache.ledger().forget(1);
        super::super::go_on(&cache, &then);
        assert_eq!(cache.ledger().len(), 5);
    }

    #[test]
    fn a_chunk_the_ledger_refuses_as_it_fills_stays_next_in_its_continuation() {
        let cache = Arc::new(ChunkCache::new(1 << 20));
        let ledger = cache.ledger();
        let runs = Arc::new(AtomicU32::new(0));
        let filler = |i: u64| id(1 << 40 | i);
        for i in 0..MAX_QUEUED as u64 - 1 {
            assert!(queue(ledger, counting(filler(i), &runs), false));
        }
        // Another reader's chunks keep the ledger one short of full and full in turn, so that
        // it fills between a continuation's look at its room and its chunk's queuing.
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let other = {
            let (cache, runs, stop) = (cache.clone(), runs.clone(), stop.clone());
            std::thread::spawn(move || {
                // Its chunks in the ledger: next - (MAX_QUEUED - 1) to next - 1.
                let mut next = MAX_QUEUED as u64 - 1;
                while !stop.load(Ordering::Relaxed) {
                    if queue(cache.ledger(), counting(filler(next), &runs), false) {
                        std::thread::yield_now();
                        let oldest = filler(next + 1 - MAX_QUEUED as u64);
                        cache.ledger().done(Key::chunk(oldest));
                        next += 1;
                    }
                    std::thread::yield_now();
                }
            })
        };
        const CHUNKS: u64 = 2_000;
        let then = ledger.continuation(1);
        then.replace((0..CHUNKS).map(|i| counting(id(i), &runs)));
        let (mut front, deadline) = (0, Instant::now() + Duration::from_secs(20));
        while front < CHUNKS && Instant::now() < deadline {
            super::super::go_on(&cache, &then);
            let next = then.0.lock().front().map_or(CHUNKS, |job| job.id.index);
            // Every chunk taken from the continuation is in the ledger: none was dropped.
            for i in front..next {
                assert!(ledger.holds(id(i)), "chunk {i} taken, not queued");
                ledger.done(Key::chunk(id(i)));
            }
            front = next;
        }
        stop.store(true, Ordering::Relaxed);
        other.join().unwrap();
        assert_eq!(front, CHUNKS, "the continuation went on to its end");
        assert!(then.0.lock().iter().all(|job| job.then.is_none()));
    }

    #[test]
    fn every_queued_chunk_is_loaded_by_a_worker_or_taken_by_a_reader() {
        let cache = Arc::new(ChunkCache::new(1 << 20));
        let runs = Arc::new(AtomicU32::new(0));
        for i in 0..100 {
            assert!(queue(cache.ledger(), counting(id(i), &runs), i % 2 == 0));
        }
        // Readers take ten queued chunks over before any worker runs.
        for i in 0..10 {
            let (reading, encoded) = cache.ledger().claim(id(i * 10));
            assert!(encoded.is_none());
            drop(reading);
            assert!(!cache.ledger().holds(id(i * 10)));
        }
        let limits = Limits {
            fetchers: 3,
            decoders: 2,
            bytes_in_flight: 2,
        };
        let pool = ReadAhead::start(cache.clone(), limits);
        wait_until_empty(cache.ledger());
        assert_eq!(runs.load(Ordering::SeqCst), 90, "each chunk once");
        drop(pool);
    }

    #[test]
    fn an_older_read_ahead_let_go_late_leaves_the_newer_workers_at_work() {
        let cache = Arc::new(ChunkCache::new(1 << 20));
        let runs = Arc::new(AtomicU32::new(0));
        let limits = Limits {
            fetchers: 2,
            decoders: 1,
            bytes_in_flight: u64::MAX,
        };
        // A handle still held elsewhere when the mount started new workers.
        let older = ReadAhead::start(cache.clone(), limits);
        let newer = ReadAhead::start(cache.clone(), limits);
        drop(older);
        for i in 0..10 {
            assert!(queue(cache.ledger(), counting(id(i), &runs), false));
        }
        wait_until_empty(cache.ledger());
        assert_eq!(runs.load(Ordering::SeqCst), 10, "each chunk once");
        drop(newer);
    }

    /// A source of one group whose fetch answers for its first chunk, then waits until `go`
    /// (5 s at most, then counted in `gave_up`) before it answers for the others.
    #[derive(Default)]
    struct Staggered {
        go: Mutex<bool>,
        opened: Condvar,
        gave_up: AtomicU32,
    }

    impl super::super::Source for Staggered {
        fn fetch(
            &self,
            _cache: &ChunkCache,
            indexes: &[u64],
            landed: crate::fetch::Landed<'_, Option<Encoded>>,
        ) {
            landed(0, Ok(None));
            let mut go = self.go.lock();
            let deadline = Instant::now() + Duration::from_secs(5);
            while !*go {
                if self.opened.wait_until(&mut go, deadline).timed_out() {
                    self.gave_up.fetch_add(1, Ordering::SeqCst);
                    break;
                }
            }
            drop(go);
            (1..indexes.len()).for_each(|at| landed(at, Ok(None)));
        }

        fn group(&self, _index: u64) -> Option<u64> {
            Some(0)
        }

        fn load(&self, cache: &ChunkCache, index: u64, _encoded: Option<Encoded>) {
            let keep = crate::cache::Keep::Whole(0);
            let _ = cache.get_or_load(id(index), crate::cache::User::ReadAhead, keep, |_| {
                Ok(false)
            });
        }
    }

    #[test]
    fn a_reader_waits_for_its_own_chunk_of_a_batch_not_for_the_rest() {
        // Chunks 0 and 1 are fetched together; the fetch answers for 1 only once the reader of
        // 0 has it.
        let cache = Arc::new(ChunkCache::new(1 << 20));
        let source = Arc::new(Staggered::default());
        for i in 0..2 {
            assert!(queue(
                cache.ledger(),
                Job::chunk(id(i), 1, source.clone()),
                false
            ));
        }
        let limits = Limits {
            fetchers: 1,
            decoders: 1,
            bytes_in_flight: u64::MAX,
        };
        let pool = ReadAhead::start(cache.clone(), limits);
        let deadline = Instant::now() + Duration::from_secs(20);
        let fetching = |i| {
            let state = cache.ledger().state.lock();
            matches!(
                state.phases.get(&Key::chunk(id(i))),
                Some(Phase::Fetching(_))
            )
        };
        while !fetching(1) {
            assert!(Instant::now() < deadline, "the batch was never fetched");
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(cache.ledger().claim(id(0)));
        assert!(cache.contains(id(0)), "chunk 0 loaded by the read-ahead");
        *source.go.lock() = true;
        source.opened.notify_all();
        wait_until_empty(cache.ledger());
        assert_eq!(
            source.gave_up.load(Ordering::SeqCst),
            0,
            "the reader waited"
        );
        assert!(cache.contains(id(1)));
        drop(pool);
    }

    #[test]
    fn a_reader_going_on_in_order_never_has_a_chunk_it_passed_loaded_again() {
        // As the view does for a page-cached reader of whole chunks: before each read, the next
        // chunk is asked for at the front, the chunks past it become the continuation, and the
        // chunk passed leaves the cache; a chunk not cached is then read straight into the
        // reply (no cache entry). Each chunk must be loaded once, by a worker or the reader.
        const CHUNKS: usize = 20_000;
        let cache = Arc::new(ChunkCache::new(64 << 20));
        let loads = Arc::new((0..CHUNKS).map(|_| AtomicU32::new(0)).collect::<Vec<_>>());
        // Loads each chunk into the cache, counting the loads per chunk.
        let counted = loads.clone();
        let source: Arc<dyn super::super::Source> = Arc::new(TestSource {
            group: |_| None,
            load: Box::new(move |cache, index| {
                let _ = cache.get_or_load(
                    id(index),
                    crate::cache::User::ReadAhead,
                    crate::cache::Keep::Whole(1),
                    |target| {
                        counted[index as usize].fetch_add(1, Ordering::SeqCst);
                        if let crate::codec::Target::Owned(out) = target {
                            out.push(1);
                        }
                        Ok(true)
                    },
                );
            }),
        });
        let job = |i: usize| Job::chunk(id(i as u64), 1, source.clone());
        let limits = Limits {
            fetchers: 4,
            decoders: 2,
            bytes_in_flight: u64::MAX,
        };
        let pool = ReadAhead::start(cache.clone(), limits);
        let then = pool.continuation(1);
        for r in 0..CHUNKS {
            then.replace((r + 2..(r + 10).min(CHUNKS)).map(job));
            if r + 1 < CHUNKS {
                pool.submit_urgent(job(r + 1).then(then.clone()));
            }
            if r > 0 {
                cache.discard(id(r as u64 - 1), 1);
            }
            if !cache.contains(id(r as u64)) {
                let (reading, _) = cache.ledger().claim(id(r as u64));
                if !cache.contains(id(r as u64)) {
                    loads[r].fetch_add(1, Ordering::SeqCst);
                }
                drop(reading);
            }
        }
        pool.forget(1);
        wait_until_empty(cache.ledger());
        drop(pool);
        let twice: Vec<(usize, u32)> = (0..CHUNKS)
            .map(|i| (i, loads[i].load(Ordering::SeqCst)))
            .filter(|&(_, n)| n != 1)
            .collect();
        assert_eq!(twice, [], "chunks loaded other than once");
    }
}
