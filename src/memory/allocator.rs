//! The global allocator: jemalloc, with blocks of 2 MiB and more placed on 2 MiB boundaries, so
//! that a large buffer asking for transparent huge pages ([`super::buffers`]) gets them from its
//! first byte: a fresh 2 MiB chunk is then one page fault instead of 512.

use std::alloc::{GlobalAlloc, Layout};
use tikv_jemallocator::Jemalloc;

/// Transparent huge pages' size.
pub(super) const HUGE_PAGE: usize = 2 << 20;

/// jemalloc, with blocks of 2 MiB and more aligned to 2 MiB.
pub struct Allocator;

/// What jemalloc is asked for a block the caller describes with `layout`: a large block aligned
/// to a huge page. It depends on `layout` alone, so a block is freed as it was allocated.
fn placed(layout: Layout) -> Layout {
    if layout.size() >= HUGE_PAGE && layout.align() < HUGE_PAGE {
        Layout::from_size_align(layout.size(), HUGE_PAGE).unwrap_or(layout)
    } else {
        layout
    }
}

// SAFETY: every block goes to jemalloc, allocated, resized and freed with the layout `placed`
// derives from the caller's, which is the same for every call about one block (resizing across
// the threshold moves the block); a larger alignment than asked for satisfies the caller.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for the caller; `placed` keeps the size, never lowers the alignment.
        unsafe { Jemalloc.alloc(placed(layout)) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        unsafe { Jemalloc.alloc_zeroed(placed(layout)) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated with `placed(layout)` (see `alloc` and `realloc`).
        unsafe { Jemalloc.dealloc(ptr, placed(layout)) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = placed(layout);
        let Ok(asked) = Layout::from_size_align(new_size, layout.align()) else {
            return std::ptr::null_mut();
        };
        let new = placed(asked);
        if new.align() == old.align() {
            // SAFETY: `ptr` was allocated with `old`; jemalloc keeps the alignment it is given.
            return unsafe { Jemalloc.realloc(ptr, old, new_size) };
        }
        // SAFETY: a new block for `new`; the old one, allocated with `old`, holds
        // `layout.size()` initialised bytes, the new one room for `new_size`.
        unsafe {
            let moved = Jemalloc.alloc(new);
            if !moved.is_null() {
                std::ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size));
                Jemalloc.dealloc(ptr, old);
            }
            moved
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_blocks_are_placed_on_huge_page_boundaries() {
        let small = Layout::from_size_align(HUGE_PAGE - 1, 8).unwrap();
        assert_eq!(placed(small), small);
        let large = Layout::from_size_align(HUGE_PAGE, 1).unwrap();
        assert_eq!(placed(large).align(), HUGE_PAGE);
        assert_eq!(placed(large).size(), HUGE_PAGE);
        let a = Allocator;
        // SAFETY: blocks allocated, grown and shrunk across the threshold and beyond it, and
        // freed with the layouts they have at each step.
        unsafe {
            let p = a.alloc(small);
            assert!(!p.is_null());
            p.write_bytes(7, small.size());
            let q = a.realloc(p, small, 3 * HUGE_PAGE);
            assert_eq!(
                q as usize % HUGE_PAGE,
                0,
                "grown past the threshold: moved and aligned"
            );
            assert_eq!(*q.add(HUGE_PAGE - 2), 7, "the bytes moved with it");
            let big = Layout::from_size_align(3 * HUGE_PAGE, 8).unwrap();
            q.add(3 * HUGE_PAGE - 1).write(9);
            let q = a.realloc(q, big, 7 * HUGE_PAGE);
            assert_eq!(
                q as usize % HUGE_PAGE,
                0,
                "grown while large: still aligned"
            );
            assert_eq!((*q, *q.add(3 * HUGE_PAGE - 1)), (7, 9));
            let bigger = Layout::from_size_align(7 * HUGE_PAGE, 8).unwrap();
            let q = a.realloc(q, bigger, 3 * HUGE_PAGE);
            let r = a.realloc(q, big, 100);
            assert_eq!(*r.add(99), 7);
            a.dealloc(r, Layout::from_size_align(100, 8).unwrap());
            for _ in 0..8 {
                let b = a.alloc(large);
                assert_eq!(b as usize % HUGE_PAGE, 0);
                a.dealloc(b, large);
            }
            let z = a.alloc_zeroed(large);
            assert_eq!(z as usize % HUGE_PAGE, 0);
            assert_eq!(*z.add(HUGE_PAGE - 1), 0);
            a.dealloc(z, large);
        }
    }
}
