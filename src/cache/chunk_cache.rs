//! The LRU of decoded chunks and shard indexes with single-flight loading: both share one
//! byte budget, so `--cache-size` bounds them together.

use super::decoding::DecodingRoom;
use super::read_ahead::Ledger;
use super::users::Users;
use super::{ChunkData, ChunkError, Panicked, User};
use crate::codec::{Need, ShardIndex, Target};
use crate::fetch::{ShardIndexIfStored, StoredIndex};
use crate::memory::filling::FillingBuffer;
use crate::memory::{self, Buffers};
use crate::stats::{add, STATS};
use crate::store::{CacheStats, FlightLru};
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Bytes charged per cached entry on top of its data (bookkeeping, absent-chunk markers).
const ENTRY_OVERHEAD: u64 = 96;

/// Identifies one chunk: the array's number in the view and the chunk's linear grid index.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub struct ChunkId {
    /// The array's number.
    pub array: u32,
    /// Linear (C-order) index of the chunk in the array's chunk grid.
    pub index: u64,
}

/// What the cache holds under one key.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
enum Key {
    Chunk(ChunkId),
    /// The index of the shard with this store key, of array number N.
    Index(u32, Arc<str>),
    /// The decoded stored chunk with this store key, of array number N, out of which a
    /// rectilinear grid's read chunks are cut.
    Stored(u32, Arc<str>),
}

#[derive(Clone)]
enum Entry {
    /// A chunk, and who has used it since it was loaded.
    Chunk(ChunkData, Arc<Users>),
    Index(ShardIndexIfStored),
}

type Outcome = Result<ChunkData, ChunkError>;

/// Where [`ChunkCache::get_or_load`] has a chunk loaded.
pub enum Keep<'w> {
    /// Into a buffer of the loader's making, kept once loaded; the load holds about that many
    /// bytes (0: not known ahead, as for variable-length elements).
    Whole(u64),
    /// Into a buffer of that many bytes, decoded front to back: meanwhile readers use the part
    /// decoded (through [`ChunkCache::growing`]), and the watcher sees it grow.
    Growing(usize, &'w mut dyn FnMut(&[u8])),
}

/// Decoded chunks and shard indexes bounded by one byte budget, with the buffers of evicted
/// chunks kept for reuse.
pub struct ChunkCache {
    lru: FlightLru<Key, Entry, ChunkError>,
    /// Where the buffers of evicted chunks go, and new ones come from.
    buffers: &'static Buffers,
    /// Chunks the read-ahead workers loaded that no reader has asked for yet (bounded by
    /// [`PREFETCHED_MAX`]), to count read-ahead hits.
    prefetched: Mutex<HashSet<ChunkId>>,
    /// False until the first chunk is marked: readers skip the lock until then.
    any_prefetched: AtomicBool,
    /// The chunks being decoded front to back, whose decoded part readers may use already, and
    /// their users.
    growing: Mutex<HashMap<ChunkId, Growing>>,
    /// The chunks the read-ahead has queued or is loading.
    ledger: Ledger,
    /// The bytes of chunks being decoded, within the same budget as those kept.
    decoding: DecodingRoom,
}

/// A chunk being decoded front to back, and its users.
type Growing = (Arc<FillingBuffer>, Arc<Users>);

/// Unlists a growing chunk when its load returns (or panics).
struct Unlist<'a> {
    cache: &'a ChunkCache,
    id: ChunkId,
    chunk: Arc<FillingBuffer>,
}

impl Drop for Unlist<'_> {
    fn drop(&mut self) {
        self.cache.growing.lock().remove(&self.id);
    }
}

/// The error of a load that panicked.
fn panicked(what: String) -> ChunkError {
    ChunkError::new(Panicked(what))
}

/// Read-ahead loads remembered for counting hits; beyond, the oldest are forgotten all at once.
const PREFETCHED_MAX: usize = 1 << 16;

fn charge(entry: &Entry) -> u64 {
    ENTRY_OVERHEAD
        + match entry {
            // What the buffer holds, not the chunk's length: a reused buffer may be larger.
            Entry::Chunk(data, _) => data.as_ref().map_or(0, |d| d.capacity() as u64),
            Entry::Index(index) => index
                .as_ref()
                .map_or(0, |i| ShardIndex::ENTRY_BYTES * i.index.len() as u64),
        }
}

impl ChunkCache {
    /// A cache holding at most `budget` bytes of decoded chunks and shard indexes.
    pub fn new(budget: u64) -> Self {
        memory::size_for_cache(budget);
        Self::with_buffers(budget, memory::buffers())
    }

    fn with_buffers(budget: u64, buffers: &'static Buffers) -> Self {
        let lru = FlightLru::new(budget, charge).on_evict(move |entry: Entry| {
            // Only a buffer no reader still holds can be reused.
            if let Entry::Chunk(Some(data), _) = entry {
                if let Ok(buf) = Arc::try_unwrap(data) {
                    buffers.give(buf);
                }
            }
        });
        ChunkCache {
            lru,
            buffers,
            prefetched: Mutex::default(),
            any_prefetched: AtomicBool::new(false),
            growing: Mutex::default(),
            ledger: Ledger::default(),
            decoding: DecodingRoom::new(budget),
        }
    }

    /// The chunks the read-ahead has queued or is loading: a reader asks it before loading a
    /// chunk itself (see [`Ledger::claim`]).
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// The byte budget.
    pub fn budget(&self) -> u64 {
        self.lru.budget()
    }

    /// True when an entry of `data_bytes` bytes can be kept: one larger than the whole budget
    /// never is, so it would be loaded again on every read.
    pub fn fits(&self, data_bytes: u64) -> bool {
        data_bytes.saturating_add(ENTRY_OVERHEAD) <= self.budget()
    }

    /// Current counters.
    pub fn stats(&self) -> CacheStats {
        self.lru.stats()
    }

    /// True when the chunk is cached or being loaded (the read-ahead uses this to skip work).
    pub fn contains(&self, id: ChunkId) -> bool {
        self.lru.contains(&Key::Chunk(id))
    }

    /// Notes that the read-ahead workers loaded chunk `id`: the next reader of it is a hit.
    pub fn mark_prefetched(&self, id: ChunkId) {
        self.any_prefetched.store(true, Ordering::Relaxed);
        let mut set = self.prefetched.lock();
        if set.len() >= PREFETCHED_MAX {
            set.clear();
        }
        set.insert(id);
    }

    /// Drops chunk `id` unless a reader other than those through file handle `fh` has used it
    /// since it was loaded (drop-behind: `fh` is done with it), recycling its buffer unless a
    /// reader still holds it.
    pub fn discard(&self, id: ChunkId, fh: u64) {
        let unshared = |entry: &Entry| matches!(entry, Entry::Chunk(_, users) if users.only(fh));
        self.lru.remove_if(&Key::Chunk(id), unshared);
    }

    /// The chunk `id` for `user`, from the cache, from a load already under way, or by running
    /// `load` on the target `keep` says (true: the chunk exists, and is in the target). A panic
    /// inside `load` becomes an error for every waiting reader.
    pub fn get_or_load(
        &self,
        id: ChunkId,
        user: User,
        keep: Keep,
        load: impl FnOnce(Target) -> Result<bool, ChunkError>,
    ) -> Outcome {
        if self.any_prefetched.load(Ordering::Relaxed) && self.prefetched.lock().remove(&id) {
            add(&STATS.counters.prefetch_hits, 1);
        }
        let entry = self.lru.get_or_load(
            Key::Chunk(id),
            || panicked(format!("chunk {}: decoder panicked", id.index)),
            || {
                let _room = self.decoding.take(match keep {
                    Keep::Whole(bytes) => bytes,
                    Keep::Growing(len, _) => len as u64,
                });
                let users = Arc::new(Users::default());
                let data = self.load(id, keep, load, &users)?;
                Ok(Entry::Chunk(data, users))
            },
        )?;
        match entry {
            Entry::Chunk(data, users) => {
                users.add(user);
                Ok(data)
            }
            Entry::Index(_) => unreachable!("chunk keys hold chunks"),
        }
    }

    /// Runs `load` on the target `keep` says, listing a growing chunk (and its `users`) while
    /// it decodes.
    fn load(
        &self,
        id: ChunkId,
        keep: Keep,
        load: impl FnOnce(Target) -> Result<bool, ChunkError>,
        users: &Arc<Users>,
    ) -> Outcome {
        let (len, watch) = match keep {
            Keep::Whole(_) => {
                let mut out = Vec::new();
                return Ok(load(Target::Owned(&mut out))?.then(|| Arc::new(out)));
            }
            Keep::Growing(len, watch) => (len, watch),
        };
        let chunk = Arc::new(FillingBuffer::new(self.buffers.take(len)));
        self.growing
            .lock()
            .insert(id, (chunk.clone(), users.clone()));
        let listed = Unlist {
            cache: self,
            id,
            chunk,
        };
        // Dropped unfinished (an error, a panic), the filler releases the readers.
        let mut filler = listed.chunk.claim(0).expect("a new buffer is unclaimed");
        if !load(Target::Room(filler.target(), Need::Front(len, watch)))? {
            return Ok(None);
        }
        filler.finish();
        // Finished, the buffer is whole; were it not, the chunk is an error, never absent
        // (which would read as its fill value).
        let whole = listed.chunk.whole().ok_or_else(|| {
            ChunkError::new(std::io::Error::other(format!(
                "chunk {}: decoded, but its buffer is not whole",
                id.index
            )))
        })?;
        Ok(Some(whole))
    }

    /// Chunk `id`, for `user`, while [`ChunkCache::get_or_load`] decodes it growing.
    pub fn growing(&self, id: ChunkId, user: User) -> Option<Arc<FillingBuffer>> {
        let (chunk, users) = self.growing.lock().get(&id).cloned()?;
        users.add(user);
        Some(chunk)
    }

    /// The index of shard `key` of array number `array`, kept like a chunk.
    pub fn get_or_load_index(
        &self,
        array: u32,
        key: &str,
        load: impl FnOnce() -> Result<ShardIndexIfStored, ChunkError>,
    ) -> Result<ShardIndexIfStored, ChunkError> {
        let entry = self.lru.get_or_load(
            Key::Index(array, Arc::from(key)),
            || panicked(format!("shard {key}: index decoder panicked")),
            || load().map(Entry::Index),
        )?;
        match entry {
            Entry::Index(index) => Ok(index),
            Entry::Chunk(..) => unreachable!("index keys hold indexes"),
        }
    }

    /// Drops the index of shard `key` of array number `array` if it is `stale` (one loaded
    /// since is kept).
    pub fn forget_index(&self, array: u32, key: &str, stale: &Arc<StoredIndex>) {
        self.lru.remove_if(
            &Key::Index(array, Arc::from(key)),
            |entry| matches!(entry, Entry::Index(Some(index)) if Arc::ptr_eq(index, stale)),
        );
    }

    /// The decoded stored chunk `key` of array number `array` (a rectilinear grid's, holding
    /// several read chunks), kept like a chunk.
    pub fn get_or_load_stored(
        &self,
        array: u32,
        key: &str,
        load: impl FnOnce() -> Outcome,
    ) -> Outcome {
        let entry = self.lru.get_or_load(
            Key::Stored(array, Arc::from(key)),
            || panicked(format!("chunk {key}: decoder panicked")),
            || load().map(|data| Entry::Chunk(data, Arc::default())),
        )?;
        match entry {
            Entry::Chunk(data, _) => Ok(data),
            Entry::Index(_) => unreachable!("stored chunk keys hold chunks"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;
    use std::sync::Arc;

    fn id(index: u64) -> ChunkId {
        ChunkId { array: 0, index }
    }

    fn data(n: usize) -> Outcome {
        Ok(Some(Arc::new(vec![7; n])))
    }

    /// A loader of `n` bytes of 7 into an owned target.
    fn owned(n: usize) -> impl FnOnce(Target) -> Result<bool, ChunkError> {
        move |target| match target {
            Target::Owned(out) => {
                *out = vec![7; n];
                Ok(true)
            }
            Target::Room(..) => panic!("a whole load"),
        }
    }

    #[test]
    fn chunks_being_decoded_stay_within_the_budget() {
        // Eight readers of eight chunks of 4000 bytes at once, with room for two.
        let cache = ChunkCache::new(10_000);
        let (now, most) = (AtomicU64::new(0), AtomicU64::new(0));
        std::thread::scope(|s| {
            for i in 0..8 {
                let (cache, now, most) = (&cache, &now, &most);
                s.spawn(move || {
                    let loaded =
                        cache.get_or_load(id(i), User::ReadAhead, Keep::Whole(4000), |target| {
                            let held = now.fetch_add(4000, Ordering::SeqCst) + 4000;
                            most.fetch_max(held, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(20));
                            now.fetch_sub(4000, Ordering::SeqCst);
                            owned(4000)(target)
                        });
                    assert_eq!(loaded.unwrap().unwrap().len(), 4000);
                });
            }
        });
        assert!(most.load(Ordering::SeqCst) <= 8000, "{most:?}");
    }

    #[test]
    fn stays_within_its_budget_and_evicts_least_recent() {
        let cache = ChunkCache::new(3 * (1000 + ENTRY_OVERHEAD));
        for i in 0..3 {
            cache
                .get_or_load(id(i), User::ReadAhead, Keep::Whole(1000), owned(1000))
                .unwrap();
        }
        cache
            .get_or_load(id(0), User::ReadAhead, Keep::Whole(1000), |_| {
                panic!("0 is cached")
            })
            .unwrap();
        cache
            .get_or_load(id(3), User::ReadAhead, Keep::Whole(1000), owned(1000))
            .unwrap();
        assert!(cache.stats().used <= cache.budget());
        assert!(cache.contains(id(0)) && !cache.contains(id(1)));
        // Larger than the whole budget: returned, not kept.
        assert_eq!(
            cache
                .get_or_load(id(9), User::ReadAhead, Keep::Whole(1000), owned(10_000))
                .unwrap()
                .unwrap()
                .len(),
            10_000
        );
        assert!(!cache.contains(id(9)));
    }

    #[test]
    fn discarded_chunks_leave_and_their_buffers_are_recycled() {
        let buffers = Box::leak(Box::new(Buffers::new(1 << 20)));
        let cache = ChunkCache::with_buffers(1 << 20, buffers);
        cache
            .get_or_load(id(1), User::ReadAhead, Keep::Whole(1000), owned(1000))
            .unwrap();
        let held = cache
            .get_or_load(id(2), User::ReadAhead, Keep::Whole(1000), owned(1000))
            .unwrap();
        cache.discard(id(1), 1);
        cache.discard(id(2), 1);
        assert_eq!(cache.stats().used, 0);
        assert!(!cache.contains(id(1)) && !cache.contains(id(2)));
        assert_eq!(buffers.take(1000), vec![7; 1000], "1's buffer is recycled");
        assert_eq!(buffers.take(1000), vec![0; 1000], "2's is still held");
        drop(held);
    }

    #[test]
    fn chunks_are_charged_for_the_memory_they_hold() {
        let buffers = Box::leak(Box::new(Buffers::new(1 << 20)));
        let cache = ChunkCache::with_buffers(1 << 20, buffers);
        // A spare of 1900 bytes is too large for a chunk of 1000 that stays in the cache.
        buffers.give(Vec::with_capacity(1900));
        let growing = cache.get_or_load(
            id(1),
            User::ReadAhead,
            Keep::Growing(1000, &mut |_| {}),
            |target| {
                let Target::Room(mut target, _) = target else {
                    panic!("a growing load")
                };
                target.undecoded(0, 1000).fill(1);
                target.decoded(1000);
                Ok(true)
            },
        );
        let held = growing.unwrap().unwrap().capacity() as u64;
        assert_eq!(held, 1000, "a buffer of about its length");
        // A loader's own buffer is charged for its capacity.
        cache
            .get_or_load(id(2), User::ReadAhead, Keep::Whole(1000), |target| {
                let Target::Owned(out) = target else {
                    panic!("a whole load")
                };
                *out = Vec::with_capacity(5000);
                out.resize(1000, 2);
                Ok(true)
            })
            .unwrap();
        assert_eq!(cache.stats().used, held + 5000 + 2 * ENTRY_OVERHEAD);
    }

    #[test]
    fn a_growing_chunk_is_readable_while_it_decodes_and_cached_once_whole() {
        let cache = Arc::new(ChunkCache::new(1 << 20));
        let (half, go) = (
            Arc::new(std::sync::Barrier::new(2)),
            Arc::new(std::sync::Barrier::new(2)),
        );
        let loader = {
            let (cache, half, go) = (cache.clone(), half.clone(), go.clone());
            std::thread::spawn(move || {
                cache.get_or_load(
                    id(1),
                    User::ReadAhead,
                    Keep::Growing(1000, &mut |_| {}),
                    |target| {
                        let Target::Room(mut target, _) = target else {
                            panic!("a growing load")
                        };
                        target.undecoded(0, 500).fill(1);
                        target.decoded(500);
                        half.wait();
                        go.wait();
                        target.undecoded(500, 1000).fill(2);
                        target.decoded(1000);
                        Ok(true)
                    },
                )
            })
        };
        half.wait();
        let growing = cache
            .growing(id(1), User::Reader(1))
            .expect("listed while it decodes");
        assert_eq!(growing.wait_prefix(400).map(<[u8]>::len), Some(500));
        go.wait();
        assert_eq!(growing.wait_prefix(1000).unwrap()[999], 2);
        let whole = loader.join().unwrap().unwrap().unwrap();
        assert!(whole[..500].iter().all(|&b| b == 1) && whole[500..].iter().all(|&b| b == 2));
        assert!(
            cache.growing(id(1), User::Reader(1)).is_none(),
            "unlisted once loaded"
        );
        assert_eq!(
            cache
                .get_or_load(id(1), User::ReadAhead, Keep::Whole(1000), |_| panic!(
                    "cached"
                ))
                .unwrap(),
            Some(whole)
        );
        // A decoder that panics unlists its chunk and releases its readers.
        let err = cache
            .get_or_load(
                id(2),
                User::ReadAhead,
                Keep::Growing(10, &mut |_| {}),
                |_| panic!("boom"),
            )
            .unwrap_err();
        assert!(err.to_string().contains("panicked"), "{err}");
        assert!(cache.growing(id(2), User::Reader(1)).is_none());
    }

    fn index(entries: usize) -> Result<ShardIndexIfStored, ChunkError> {
        let decoded = vec![0u8; 16 * entries];
        let index = ShardIndex::parse(&decoded, 0).unwrap();
        Ok(Some(Arc::new(StoredIndex { index, tag: None })))
    }

    #[test]
    fn shard_indexes_share_the_budget_with_chunks() {
        let cache = ChunkCache::new(2 * (1000 + ENTRY_OVERHEAD));
        cache
            .get_or_load(id(0), User::ReadAhead, Keep::Whole(1000), owned(1000))
            .unwrap();
        cache.get_or_load_index(0, "s", || index(60)).unwrap();
        cache
            .get_or_load_index(0, "s", || panic!("the index is cached"))
            .unwrap();
        assert_eq!(cache.stats().used, 1000 + 960 + 2 * ENTRY_OVERHEAD);
        cache
            .get_or_load(id(1), User::ReadAhead, Keep::Whole(1000), owned(1000))
            .unwrap();
        assert!(cache.stats().used <= cache.budget());
        assert!(!cache.contains(id(0)), "the chunk made room");
        assert_eq!(cache.get_or_load_index(1, "absent", || Ok(None)), Ok(None));
        let err = cache
            .get_or_load_index(0, "e", || panic!("boom"))
            .unwrap_err();
        assert!(err.to_string().contains("index decoder panicked"), "{err}");
    }

    #[test]
    fn stored_chunks_are_kept_apart_from_read_chunks_within_the_budget() {
        let cache = ChunkCache::new(2 * (1000 + ENTRY_OVERHEAD));
        cache
            .get_or_load(id(0), User::ReadAhead, Keep::Whole(1000), owned(1000))
            .unwrap();
        let stored = cache.get_or_load_stored(0, "c/0", || data(1000)).unwrap();
        assert_eq!(stored.unwrap().len(), 1000);
        cache
            .get_or_load_stored(0, "c/0", || panic!("the stored chunk is cached"))
            .unwrap();
        assert!(cache.contains(id(0)), "a key space of its own");
        assert_eq!(cache.get_or_load_stored(1, "c/0", || Ok(None)), Ok(None));
        assert!(cache.stats().used <= cache.budget());
    }

    #[test]
    fn errors_and_panics_reach_the_reader_and_are_not_cached() {
        let cache = ChunkCache::new(1 << 20);
        let err = cache
            .get_or_load(id(1), User::ReadAhead, Keep::Whole(1000), |_| {
                Err(ChunkError::new(super::super::Panicked("corrupt".into())))
            })
            .unwrap_err();
        assert_eq!(err.to_string(), "corrupt");
        let err = cache
            .get_or_load(id(1), User::ReadAhead, Keep::Whole(1000), |_| {
                panic!("boom")
            })
            .unwrap_err();
        assert!(err.to_string().contains("panicked"));
        assert!(cache
            .get_or_load(id(1), User::ReadAhead, Keep::Whole(1000), owned(3))
            .is_ok());
    }
}
