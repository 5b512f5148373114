//! Large buffers kept for reuse: writing into memory that is already mapped saves the page
//! faults of a fresh allocation, which cost about as much as decoding a chunk.

use super::allocator::HUGE_PAGE;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// An empty buffer with room for `room` bytes. A large one (placed on a 2 MiB boundary by
/// [`super::Allocator`]) is backed by transparent huge pages where the kernel allows them on
/// request (`madvise` mode) over its whole 2 MiB pages: its first touch then costs one fault per
/// 2 MiB instead of one per 4 KiB, which on a chunk-sized buffer is about as much time as
/// decoding into it (BENCHMARKS.md, "Allocator"). Only such buffers ask: for all of the
/// allocator's memory, huge pages made every arena's touched memory resident in 2 MiB pieces.
pub fn room_for(room: usize) -> Vec<u8> {
    let buf = Vec::with_capacity(room);
    let start = (buf.as_ptr() as usize).next_multiple_of(HUGE_PAGE);
    let end = (buf.as_ptr() as usize + buf.capacity()) / HUGE_PAGE * HUGE_PAGE;
    if end > start {
        // SAFETY: the range lies inside the buffer's own allocation, which nothing else uses;
        // the advice changes how its pages are backed, never their contents. It may fail
        // (huge pages disabled): then the pages are ordinary ones.
        let _ = unsafe {
            rustix::mm::madvise(
                start as *mut std::ffi::c_void,
                end - start,
                rustix::mm::Advice::LinuxHugepage,
            )
        };
    }
    buf
}

/// Spare buffers within one byte budget (counted by capacity).
pub struct Buffers {
    spare: Mutex<Spare>,
    budget: AtomicUsize,
}

#[derive(Default)]
struct Spare {
    bufs: Vec<Vec<u8>>,
    /// The capacity of `bufs`, summed.
    held: usize,
}

impl Buffers {
    /// Buffers holding at most `budget` bytes of spares.
    pub const fn new(budget: usize) -> Self {
        Buffers {
            spare: Mutex::new(Spare {
                bufs: Vec::new(),
                held: 0,
            }),
            budget: AtomicUsize::new(budget),
        }
    }

    /// Holds at most `budget` bytes of spares from now on (the excess is freed).
    pub fn set_budget(&self, budget: usize) {
        self.budget.store(budget, Ordering::Relaxed);
        let mut spare = self.spare.lock();
        while spare.held > budget {
            let Some(buf) = spare.bufs.pop() else { break };
            spare.held -= buf.capacity();
        }
    }

    /// A buffer of `len` bytes: the spare with the least room that has enough and at most an
    /// eighth more (a decoded chunk may stay in the cache a long while, charged for its room:
    /// it should not pin a larger spare), or a new one (zeros). A spare keeps the bytes it held
    /// (zeros past them): the caller overwrites all of it before anyone reads it.
    pub fn take(&self, len: usize) -> Vec<u8> {
        let mut buf = self
            .spare_with_room_up_to(len, len.saturating_add(len / 8))
            .unwrap_or_else(|| room_for(len));
        buf.resize(len, 0);
        buf
    }

    /// An empty buffer to append to: the spare with the least room that holds `room` bytes,
    /// or a new one with that room.
    pub fn take_empty(&self, room: usize) -> Vec<u8> {
        let mut buf = self.spare_with_room(room).unwrap_or_else(|| room_for(room));
        buf.clear();
        buf
    }

    /// An empty buffer with room for `room` bytes and at most twice that: a spare, or a new
    /// one. For buffers held a while, which should not pin a much larger spare.
    pub fn take_about(&self, room: usize) -> Vec<u8> {
        let mut buf = self
            .spare_with_room_up_to(room, room.saturating_mul(2))
            .unwrap_or_else(|| room_for(room));
        buf.clear();
        buf
    }

    fn spare_with_room(&self, room: usize) -> Option<Vec<u8>> {
        self.spare_with_room_up_to(room, usize::MAX)
    }

    fn spare_with_room_up_to(&self, room: usize, most: usize) -> Option<Vec<u8>> {
        let mut spare = self.spare.lock();
        let fit = spare
            .bufs
            .iter()
            .enumerate()
            .filter(|(_, b)| (room..=most).contains(&b.capacity()))
            .min_by_key(|(_, b)| b.capacity())
            .map(|(i, _)| i)?;
        let buf = spare.bufs.swap_remove(fit);
        spare.held -= buf.capacity();
        Some(buf)
    }

    /// Keeps `buf` for reuse, unless that would exceed the budget.
    pub fn give(&self, buf: Vec<u8>) {
        let room = buf.capacity();
        if room == 0 {
            return;
        }
        let budget = self.budget.load(Ordering::Relaxed);
        let mut spare = self.spare.lock();
        if spare.held + room <= budget {
            spare.held += room;
            spare.bufs.push(buf);
        }
    }

    /// Bytes held in spares.
    pub fn held(&self) -> usize {
        self.spare.lock().held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_the_buffer_given_back() {
        let buffers = Buffers::new(1 << 20);
        let a = buffers.take(4000);
        let at = a.as_ptr();
        buffers.give(a);
        let b = buffers.take(4000);
        assert_eq!(b.as_ptr(), at, "the spare comes back");
        assert_eq!(buffers.held(), 0);
        let fresh = buffers.take(4000);
        assert_ne!(fresh.as_ptr(), at, "none spare: a new one");
        assert_eq!(fresh, vec![0; 4000]);
    }

    #[test]
    fn takes_the_smallest_spare_that_fits_and_not_one_an_eighth_larger() {
        let buffers = Buffers::new(1 << 20);
        let (big, small, larger) = (vec![1u8; 2400], vec![2u8; 2000], vec![3u8; 2200]);
        let (small_at, larger_at) = (small.as_ptr(), larger.as_ptr());
        for buf in [big, small, larger] {
            buffers.give(buf);
        }
        let (first, second) = (buffers.take(2000), buffers.take(2000));
        assert_eq!((first.as_ptr(), second.as_ptr()), (small_at, larger_at));
        let third = buffers.take(2000);
        assert_eq!(
            third.capacity(),
            2000,
            "2400 is over an eighth more: a new one"
        );
        assert_eq!(buffers.held(), 2400);
    }

    #[test]
    fn takes_about_the_room_asked_for() {
        let buffers = Buffers::new(1 << 20);
        let (big, near) = (
            Vec::<u8>::with_capacity(9000),
            Vec::<u8>::with_capacity(5000),
        );
        let near_at = near.as_ptr();
        buffers.give(big);
        assert_eq!(
            buffers.take_about(4000).capacity(),
            4000,
            "9000 is more than twice"
        );
        buffers.give(near);
        let got = buffers.take_about(4000);
        assert_eq!((got.as_ptr(), got.len()), (near_at, 0));
        assert_eq!(buffers.held(), 9000);
    }

    #[test]
    fn holds_no_more_than_its_budget() {
        let buffers = Buffers::new(10_000);
        buffers.give(Vec::with_capacity(6000));
        buffers.give(Vec::with_capacity(6000));
        assert_eq!(buffers.held(), 6000, "the second did not fit");
        buffers.give(Vec::with_capacity(4000));
        assert_eq!(buffers.held(), 10_000);
        buffers.set_budget(5000);
        assert!(buffers.held() <= 5000, "a smaller budget frees the excess");
        buffers.set_budget(0);
        assert_eq!(buffers.held(), 0);
        buffers.give(vec![1; 10]);
        assert_eq!(buffers.held(), 0);
    }

    #[test]
    fn a_reused_buffer_shows_no_bytes_beyond_what_it_held() {
        let buffers = Buffers::new(1 << 20);
        let mut a = Vec::with_capacity(100);
        a.extend_from_slice(&[9; 10]);
        buffers.give(a);
        // Grown within its capacity: the part it never held reads as zeros.
        let b = buffers.take(90);
        assert_eq!(b.capacity(), 100);
        assert_eq!(&b[..10], &[9; 10]);
        assert_eq!(&b[10..], &[0; 80]);
        buffers.give(b);
        // Empty for appending, as fetches and replies use it: nothing of before is seen.
        let mut c = buffers.take_empty(60);
        assert!(c.is_empty() && c.capacity() == 100);
        c.extend_from_slice(b"abc");
        assert_eq!(c, b"abc");
    }
}
