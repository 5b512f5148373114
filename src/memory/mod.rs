//! Memory: how the daemon allocates, and the large buffers it reuses.
//!
//! Decoded chunks, fetched objects and FUSE replies are buffers of a megabyte or more. Fresh
//! memory costs a page fault per page, about as much as decoding a chunk, so the read path
//! writes into memory that is already mapped wherever it can:
//! - [`buffers`]: the spare buffers of evicted chunks, finished fetches and sent replies,
//!   within one budget sized by the chunk cache ([`size_for_cache`]);
//! - the global allocator ([`Allocator`], installed by the binary) and its ready memory
//!   ([`keep_ready_for_cache`]) for what the spares do not cover;
//! - [`tune_malloc`]: glibc's malloc, which the C codec libraries still use.

mod buffers;
pub mod filling;
mod huge_pages;

pub use buffers::Buffers;
pub use huge_pages::HugePageAlloc as Allocator;

/// The spares kept before [`size_for_cache`] is called, and added to the chunks' share after:
/// room for about eight fetches in flight.
const FETCH_SHARE: usize = 32 << 20;
/// The chunks' share of the spare budget: an eighth of the cache budget...
const CACHE_FRACTION: u64 = 8;
/// ...and at most this many bytes (also the most memory kept ready).
const CACHE_SHARE_MAX: u64 = 64 << 20;
/// The memory kept ready: a sixteenth of the cache budget.
const READY_FRACTION: u64 = 16;

static BUFFERS: Buffers = Buffers::new(FETCH_SHARE);

/// The process's spare buffers: the fetch stage, the chunk cache and the FUSE replies take
/// theirs from here and give them back.
pub fn buffers() -> &'static Buffers {
    &BUFFERS
}

/// Sizes the spare budget for a chunk cache of `cache_bytes`.
pub fn size_for_cache(cache_bytes: u64) {
    let chunks = (cache_bytes / CACHE_FRACTION).min(CACHE_SHARE_MAX) as usize;
    BUFFERS.set_budget(chunks + FETCH_SHARE);
}

/// Has the allocator keep a sixteenth of a chunk cache budget of `cache_bytes` (at most
/// 64 MiB) touched and ready for decoded chunks, on a thread of its own, so that reads do not
/// wait for the kernel to back fresh memory. The view calls it when the first data file is
/// opened, not at mount: a mount that only lists and stats holds none of it.
pub fn keep_ready_for_cache(cache_bytes: u64) {
    let bytes = (cache_bytes / READY_FRACTION).min(CACHE_SHARE_MAX) as usize;
    let spawned = std::thread::Builder::new()
        .name("ready-memory".into())
        .spawn(move || huge_pages::keep_ready(bytes));
    if let Err(e) = spawned {
        log::warn!("cannot start the thread that readies memory: {e}");
    }
}

/// Keeps the daemon's glibc malloc near the cache budget: few arenas, and blocks of 1 MiB and
/// more in their own mappings, returned to the system when freed instead of lingering in a
/// per-thread arena. Called before any thread is started.
pub fn tune_malloc() {
    // libc: mallopt(3) tunes glibc's malloc, not a syscall rustix wraps.
    // SAFETY: mallopt before any thread is started.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}
