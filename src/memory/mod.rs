//! Memory: how the daemon allocates, and the large buffers it reuses.
//!
//! Decoded chunks, fetched objects and FUSE replies are buffers of a megabyte or more. Fresh
//! memory costs a page fault per page, about as much as decoding a chunk, so the read path
//! writes into memory that is already mapped wherever it can:
//! - [`buffers`]: the spare buffers of evicted chunks, finished fetches, sent replies and
//!   gathered selections let go, within one budget sized by the chunk cache ([`size_for_cache`]);
//! - the global allocator ([`Allocator`], installed by the binary): jemalloc, for what the
//!   spares do not cover, with the options in [`malloc_conf`] (chosen against an allocator of
//!   our own, BENCHMARKS.md "Allocator") and its blocks of 2 MiB and more on huge-page
//!   boundaries;
//! - [`tune_malloc`]: glibc's malloc, which the C codec libraries still use (the Rust
//!   allocator's symbols are jemalloc's own, prefixed, so C code keeps calling glibc);
//! - [`filling`]: buffers read while they are written (a chunk as it decodes, a selection as
//!   its chunks arrive), with their unsafe code in one file.

mod allocator;
mod buffers;
pub mod filling;

pub use allocator::Allocator;
pub use buffers::Buffers;

/// The spares kept before [`size_for_cache`] is called, and added to the chunks' share after:
/// room for about eight fetches in flight.
const FETCH_SHARE: usize = 32 << 20;
/// The chunks' share of the spare budget: an eighth of the cache budget...
const CACHE_FRACTION: u64 = 8;
/// ...and at most this many bytes.
const CACHE_SHARE_MAX: u64 = 64 << 20;

/// The allocation policy: jemalloc's options, read at its first allocation (the environment
/// variable `_RJEM_MALLOC_CONF` adds to them, for measuring).
/// - `oversize_threshold:2097152`: blocks of 2 MiB and more (decoded chunks, fetched objects,
///   gathered selections) come from one arena of their own that returns freed memory to the
///   kernel at once (jemalloc's default threshold is 8 MiB, above our 4 MiB chunks). The hot
///   large buffers are kept by [`buffers`], so the allocator need not keep any; otherwise
///   each of jemalloc's arenas (four per CPU) holds freed chunks for its 10 s decay time.
/// - transparent huge pages left at jemalloc's default (not `thp:always`): with them every
///   arena extent a thread touches becomes resident in 2 MiB pages, which raised the daemon's
///   peak memory past the bound of a long read through a small cache, without a speed gain on
///   the full reads (BENCHMARKS.md has the measurements).
#[allow(non_upper_case_globals)]
#[export_name = "_rjem_malloc_conf"]
pub static malloc_conf: &[u8] = b"oversize_threshold:2097152\0";

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
