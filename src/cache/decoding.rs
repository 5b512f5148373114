//! The bytes of chunks being decoded, bounded by the cache's budget: a chunk takes memory from
//! its first decoded byte, before the cache holds it, so without a bound many readers of
//! different chunks at once could hold many times `--cache-size` in decodes under way.

use parking_lot::{Condvar, Mutex};

/// Room for decodes under way: at most `budget` bytes of them, or one of any size.
pub struct DecodingRoom {
    budget: u64,
    taken: Mutex<u64>,
    freed: Condvar,
}

/// One decode's room, given back when dropped.
pub struct Room<'a> {
    room: &'a DecodingRoom,
    bytes: u64,
}

impl DecodingRoom {
    /// Room for `budget` bytes of decodes under way.
    pub fn new(budget: u64) -> Self {
        DecodingRoom {
            budget,
            taken: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    /// Room for a decode of `bytes`, waiting until the decodes under way leave enough (a decode
    /// never waits when none is under way, so each wait ends when those under way end).
    pub fn take(&self, bytes: u64) -> Room<'_> {
        let mut taken = self.taken.lock();
        while *taken > 0 && taken.saturating_add(bytes) > self.budget {
            self.freed.wait(&mut taken);
        }
        *taken += bytes;
        Room { room: self, bytes }
    }
}

impl Drop for Room<'_> {
    fn drop(&mut self) {
        *self.room.taken.lock() -= self.bytes;
        self.room.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decode_larger_than_the_budget_goes_alone() {
        let room = DecodingRoom::new(1000);
        let big = room.take(5000);
        assert_eq!(*room.taken.lock(), 5000);
        std::thread::scope(|s| {
            let small = s.spawn(|| *room.take(10).room.taken.lock());
            // The small one waits while the large one is under way.
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert!(!small.is_finished());
            drop(big);
            assert_eq!(small.join().unwrap(), 10);
        });
        assert_eq!(*room.taken.lock(), 0);
    }
}
