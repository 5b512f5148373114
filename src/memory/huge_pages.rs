//! The daemon's allocator: the system one, except that blocks of 2 MiB or more (decoded
//! chunks, selection buffers, fetched objects) are mapped on their own, aligned to 2 MiB and
//! marked for transparent huge pages. A fresh 4 MiB chunk buffer then costs two page faults
//! instead of 1,024, a cost comparable to decoding the chunk (figures in BENCHMARKS.md,
//! "Reading the numbers").
//!
//! A first touch can still be slow: on a VM whose balloon reports free memory to the host, the
//! host takes back free huge pages about a second after they are freed, and getting one back
//! costs more than decoding into it. So the allocator keeps some
//! memory ready: [`keep_ready`] maps and touches it once, off the read path, and freed blocks
//! refill it before anything goes back to the kernel. A huge block is then assembled from ready
//! 2 MiB pieces by moving their page tables (`mremap`), without copying or faulting.

use rustix::mm::{
    madvise, mmap_anonymous, mremap_fixed, munmap, Advice, MapFlags, MremapFlags, ProtFlags,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Blocks this large and larger are mapped on their own.
const HUGE: usize = 2 << 20;
const PAGE: usize = 4096;

/// Most ready pieces kept (128 MiB).
const READY_MAX: usize = 64;

/// The allocator (see the module doc); `main` installs it as the global allocator.
pub struct HugePageAlloc;

/// Whether [`HugePageAlloc`] has allocated in this process (is the global allocator).
static IN_USE: AtomicBool = AtomicBool::new(false);

/// Touched pieces of 2 MiB (addresses, aligned to 2 MiB) waiting to be used.
struct Ready {
    pieces: [usize; READY_MAX],
    len: usize,
    /// How many pieces freed blocks may refill.
    keep: usize,
}

/// A std `Mutex`, not parking_lot's like the rest of the crate: this is the global allocator,
/// and parking_lot's slow path may allocate.
static READY: Mutex<Ready> = Mutex::new(Ready {
    pieces: [0; READY_MAX],
    len: 0,
    keep: 0,
});

fn ready() -> std::sync::MutexGuard<'static, Ready> {
    READY.lock().unwrap_or_else(|p| p.into_inner())
}

fn mark_in_use() {
    if !IN_USE.load(Ordering::Relaxed) {
        IN_USE.store(true, Ordering::Relaxed);
    }
}

/// Keeps about `bytes` of memory mapped and touched for the allocator's next huge blocks, and
/// returns once it is. Does nothing unless [`HugePageAlloc`] is the global allocator. See
/// [`super::keep_ready_for_cache`].
pub(super) fn keep_ready(bytes: usize) {
    let want = (bytes / HUGE).min(READY_MAX);
    if !IN_USE.load(Ordering::Relaxed) {
        return;
    }
    let have = {
        let mut r = ready();
        r.keep = want;
        r.len
    };
    if have >= want {
        return;
    }
    let len = (want - have) * HUGE;
    let at = map(len);
    if at.is_null() {
        return;
    }
    touch(at, len);
    let mut r = ready();
    let mut off = 0;
    while off < len && r.len < r.keep {
        let n = r.len;
        r.pieces[n] = at as usize + off;
        r.len += 1;
        off += HUGE;
    }
    drop(r);
    if off < len {
        // SAFETY: the part of the fresh mapping no piece was taken from.
        let _ = unsafe { munmap(at.add(off).cast(), len - off) };
    }
}

/// Makes the kernel back `len` bytes at `at` now.
fn touch(at: *mut u8, len: usize) {
    // SAFETY: `at..at + len` is a fresh writable mapping of ours.
    unsafe {
        if madvise(at.cast(), len, Advice::LinuxPopulateWrite).is_err() {
            for off in (0..len).step_by(PAGE) {
                ptr::write_volatile(at.add(off), 0);
            }
        }
    }
}

fn is_huge(layout: &Layout) -> bool {
    layout.size() >= HUGE && layout.align() <= PAGE
}

fn mapped_len(size: usize) -> usize {
    size.next_multiple_of(PAGE)
}

/// Maps `size` bytes (zeroed) starting at a multiple of 2 MiB and asks for huge pages; null
/// when the kernel has no room.
fn map(size: usize) -> *mut u8 {
    let len = mapped_len(size);
    let Some(span) = len.checked_add(HUGE) else {
        return ptr::null_mut();
    };
    // SAFETY: a fresh anonymous private mapping; only its own parts are unmapped below.
    unsafe {
        let rw = ProtFlags::READ | ProtFlags::WRITE;
        let Ok(at) = mmap_anonymous(ptr::null_mut(), span, rw, MapFlags::PRIVATE) else {
            return ptr::null_mut();
        };
        let start = at as usize;
        let aligned = start.next_multiple_of(HUGE);
        if aligned > start {
            let _ = munmap(at, aligned - start);
        }
        let tail = start + span - (aligned + len);
        if tail > 0 {
            let _ = munmap((aligned + len) as *mut c_void, tail);
        }
        // Advice only: without transparent huge pages the block works the same.
        let _ = madvise(aligned as *mut c_void, len, Advice::LinuxHugepage);
        aligned as *mut u8
    }
}

/// A huge block of `size` bytes: a fresh mapping whose whole 2 MiB pieces are, as far as there
/// are ready ones, moved in from [`READY`] (zeroed when `zeroed`).
fn take(size: usize, zeroed: bool) -> *mut u8 {
    let at = map(size);
    if at.is_null() {
        return at;
    }
    let mut taken = [0usize; READY_MAX];
    let n = {
        let mut r = ready();
        let n = (mapped_len(size) / HUGE).min(r.len);
        r.len -= n;
        let from = r.len;
        taken[..n].copy_from_slice(&r.pieces[from..from + n]);
        n
    };
    for (i, &piece) in taken[..n].iter().enumerate() {
        let to = at as usize + i * HUGE;
        // SAFETY: `piece` is a ready piece nobody else holds; `to` lies in the fresh mapping,
        // whose untouched pages there the move replaces.
        unsafe {
            let (piece, to) = (piece as *mut c_void, to as *mut c_void);
            let moved = mremap_fixed(piece, HUGE, HUGE, MremapFlags::MAYMOVE, to);
            if moved.is_err() {
                // Put fresh memory back where the move may have unmapped it; drop the piece.
                let _ = munmap(piece, HUGE);
                let rw = ProtFlags::READ | ProtFlags::WRITE;
                let fixed = mmap_anonymous(to, HUGE, rw, MapFlags::PRIVATE | MapFlags::FIXED);
                if fixed.is_err() {
                    let _ = munmap(at.cast(), mapped_len(size));
                    for &left in &taken[i + 1..n] {
                        let _ = munmap(left as *mut c_void, HUGE);
                    }
                    return ptr::null_mut();
                }
            } else if zeroed {
                ptr::write_bytes(to as *mut u8, 0, HUGE);
            }
        }
    }
    at
}

/// Releases the huge block at `at`: its whole 2 MiB pieces refill [`READY`] as far as it has
/// room, the rest goes back to the kernel.
fn give(at: *mut u8, size: usize) {
    let len = mapped_len(size);
    let mut kept = 0;
    {
        let mut r = ready();
        while kept + HUGE <= len && r.len < r.keep {
            let n = r.len;
            r.pieces[n] = at as usize + kept;
            r.len += 1;
            kept += HUGE;
        }
    }
    if kept < len {
        // SAFETY: the part of the block no piece was kept from.
        let _ = unsafe { munmap(at.add(kept).cast(), len - kept) };
    }
}

// SAFETY: huge blocks are mappings aligned to 2 MiB (so to any `align` up to a page) whose
// pages are fresh (zero) or moved in from ready pieces (zeroed for `alloc_zeroed`); released,
// each 2 MiB piece of one is either kept ready, owned by nobody else, or unmapped. Every other
// block is the system allocator's. A layout is classified the same way at allocation and at
// release, since both get the same layout.
unsafe impl GlobalAlloc for HugePageAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        mark_in_use();
        if is_huge(&layout) {
            take(layout.size(), false)
        } else {
            System.alloc(layout)
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        mark_in_use();
        if is_huge(&layout) {
            take(layout.size(), true)
        } else {
            System.alloc_zeroed(layout)
        }
    }

    unsafe fn dealloc(&self, at: *mut u8, layout: Layout) {
        if is_huge(&layout) {
            give(at, layout.size());
        } else {
            System.dealloc(at, layout)
        }
    }

    unsafe fn realloc(&self, at: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = Layout::from_size_align_unchecked(new_size, layout.align());
        if !is_huge(&layout) && !is_huge(&new) {
            return System.realloc(at, layout, new_size);
        }
        if is_huge(&layout) && is_huge(&new) && mapped_len(new_size) == mapped_len(layout.size()) {
            return at;
        }
        let moved = self.alloc(new);
        if !moved.is_null() {
            ptr::copy_nonoverlapping(at, moved, layout.size().min(new_size));
            self.dealloc(at, layout);
        }
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(size: usize) -> Layout {
        Layout::from_size_align(size, 8).unwrap()
    }

    /// The tests share [`READY`]: one at a time.
    fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        static LOCK: Mutex<()> = Mutex::new(());
        LOCK.lock().unwrap_or_else(|p| p.into_inner())
    }

    #[test]
    fn ready_pieces_make_up_huge_blocks_zeroed_and_come_back_when_freed() {
        let _one = one_at_a_time();
        let a = HugePageAlloc;
        unsafe {
            a.dealloc(a.alloc(layout(1)), layout(1));
            keep_ready(3 * HUGE);
            let r = ready();
            assert_eq!((r.len, r.keep), (3, 3));
            drop(r);
            // Dirty the ready pieces, as a freed chunk would leave them.
            for i in 0..3 {
                ptr::write_bytes(ready().pieces[i] as *mut u8, 0xAB, HUGE);
            }
            let l = layout(2 * HUGE + 10);
            let p = a.alloc_zeroed(l);
            assert_eq!(p as usize % HUGE, 0);
            assert_eq!(ready().len, 1, "two whole pieces were moved in");
            let bytes = std::slice::from_raw_parts_mut(p, l.size());
            assert!(bytes.iter().all(|&b| b == 0), "moved pieces are zeroed");
            bytes.fill(7);
            let q = a.alloc(layout(HUGE));
            assert_eq!(*q, 0xAB, "alloc takes a ready piece as it is");
            assert_eq!(ready().len, 0);
            let r = a.alloc_zeroed(layout(HUGE));
            assert_eq!(*r, 0, "none ready: fresh memory");
            a.dealloc(p, l);
            assert_eq!(ready().len, 2, "a freed block refills what it can");
            a.dealloc(q, layout(HUGE));
            a.dealloc(r, layout(HUGE));
            assert_eq!(ready().len, 3, "up to what is kept");
            keep_ready(0);
            let s = a.alloc(layout(3 * HUGE));
            assert_eq!(ready().len, 0);
            std::slice::from_raw_parts_mut(s, 3 * HUGE).fill(1);
            a.dealloc(s, layout(3 * HUGE));
            assert_eq!(ready().len, 0, "nothing kept: back to the kernel");
        }
    }

    #[test]
    fn huge_blocks_are_aligned_zeroed_and_survive_growing_and_shrinking() {
        let _one = one_at_a_time();
        let a = HugePageAlloc;
        unsafe {
            let l = layout(HUGE + 10);
            let p = a.alloc_zeroed(l);
            assert!(!p.is_null());
            assert_eq!(p as usize % HUGE, 0);
            let bytes = std::slice::from_raw_parts_mut(p, l.size());
            assert!(bytes.iter().all(|&b| b == 0));
            bytes[0] = 1;
            bytes[l.size() - 1] = 2;
            // Grown past the mapping, then shrunk below the threshold: the bytes follow.
            let g = a.realloc(p, l, 3 * HUGE);
            assert_eq!((*g, *g.add(l.size() - 1)), (1, 2));
            let s = a.realloc(g, layout(3 * HUGE), 100);
            assert_eq!(*s, 1);
            a.dealloc(s, layout(100));
        }
    }

    #[test]
    fn small_blocks_are_the_system_allocators() {
        let _one = one_at_a_time();
        let a = HugePageAlloc;
        unsafe {
            let l = layout(1000);
            let p = a.alloc(l);
            *p = 7;
            let g = a.realloc(p, l, HUGE);
            assert_eq!((*g, g as usize % HUGE), (7, 0));
            a.dealloc(g, layout(HUGE));
        }
    }
}
