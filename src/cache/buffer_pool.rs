//! Buffers of evicted chunks, kept for the next decode of the same size: decoding into memory
//! that is already mapped saves the page faults and zeroing of a fresh allocation.

use parking_lot::Mutex;

/// A bounded stack of spare buffers.
pub struct BufferPool {
    spare: Mutex<Vec<Vec<u8>>>,
    max_bytes: usize,
}

impl BufferPool {
    /// A pool holding at most `max_bytes` of spare buffers.
    pub fn new(max_bytes: usize) -> Self {
        BufferPool {
            spare: Mutex::new(Vec::new()),
            max_bytes,
        }
    }

    /// A buffer of exactly `len` bytes: a spare one of that length (old contents), or a new one
    /// (zeros).
    pub fn take(&self, len: usize) -> Vec<u8> {
        let mut spare = self.spare.lock();
        match spare.iter().position(|b| b.len() == len) {
            Some(i) => spare.swap_remove(i),
            None => vec![0; len],
        }
    }

    /// Keeps `buf` for reuse, unless the pool is full.
    pub fn give(&self, buf: Vec<u8>) {
        let mut spare = self.spare.lock();
        let held: usize = spare.iter().map(Vec::len).sum();
        if held + buf.len() <= self.max_bytes {
            spare.push(buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_buffers_of_the_same_length_within_its_bound() {
        let pool = BufferPool::new(10);
        let mut a = pool.take(4);
        a[0] = 9;
        pool.give(a);
        assert_eq!(pool.take(4)[0], 9, "the spare buffer comes back");
        assert_eq!(pool.take(4), vec![0; 4], "none spare: a fresh one");
        pool.give(vec![1; 8]);
        pool.give(vec![1; 8]);
        assert_eq!(pool.take(8), vec![1; 8]);
        assert_eq!(
            pool.take(8),
            vec![0; 8],
            "the second did not fit in the bound"
        );
    }
}
