//! The system allocator, watched per thread (tests of one binary run in parallel: each watches
//! its own thread): the bytes a thread holds and their peak, and its largest single allocation.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

/// The system allocator, counting as the module doc says.
pub struct CountingAlloc;

fn count(delta: isize, size: usize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
    let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
}

// SAFETY: every call is forwarded to the system allocator unchanged; counting allocates nothing.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize, layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize, layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize), 0);
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as isize - layout.size() as isize, new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// The most bytes this thread held at once while running `f`, above what it held before.
pub fn peak_allocation<T>(f: impl FnOnce() -> T) -> usize {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let out = f();
    let peak = PEAK.with(Cell::get);
    drop(out);
    (peak - base).max(0) as usize
}

/// The largest allocation of this thread since the last call, and resets it.
pub fn take_largest_allocation() -> usize {
    LARGEST.with(|l| l.replace(0))
}

/// What `f` returns, and the bytes this thread holds after it above what it held before (what
/// `f` allocated and kept, in its result or elsewhere).
pub fn kept_allocation<T>(f: impl FnOnce() -> T) -> (T, isize) {
    let base = LIVE.with(Cell::get);
    let out = f();
    (out, LIVE.with(Cell::get) - base)
}
