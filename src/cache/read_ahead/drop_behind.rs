//! Drop-behind for readers going through a file in order. Once such a reader is past the last
//! byte of a chunk, the kernel's page cache holds all it read of that chunk (the mount keeps
//! the page cache), so the decoded copy leaves the chunk cache and its buffer takes the next
//! chunk, unless another reader (another handle, `A.npy`, a selection) has used it since it was
//! loaded. A streaming read then works in a few recycled buffers instead of filling the cache
//! with fresh memory (whose first touch, page faults and zeroing, costs about as much as
//! decoding), and the cache keeps its room for data read out of order.

use super::stream::SEQUENTIAL_SLACK;
use std::collections::BTreeSet;

/// Most chunks remembered per open file (a reader touches a band of chunks at a time).
const MAX_PENDING: usize = 4096;

/// The chunks one sequential reader has touched and not yet passed.
#[derive(Debug, Default)]
pub struct DropBehind {
    /// (byte offset where the chunk's data ends in the file, chunk index), ordered by end.
    pending: BTreeSet<(u64, u64)>,
}

impl DropBehind {
    /// Remembers that the reader touched `chunk`, whose last byte ends the file at `end`.
    pub fn touched(&mut self, chunk: u64, end: u64) {
        if self.pending.len() < MAX_PENDING {
            self.pending.insert((end, chunk));
        }
    }

    /// The chunks a reader now at `offset` is done with, forgotten here. Requests of one
    /// reader arrive slightly out of order (the kernel reads ahead concurrently), so a chunk
    /// counts as passed only once the reader is [`SEQUENTIAL_SLACK`] beyond its end.
    pub fn passed(&mut self, offset: u64) -> Vec<u64> {
        let limit = offset.saturating_sub(SEQUENTIAL_SLACK);
        let mut done = Vec::new();
        while let Some(&(end, chunk)) = self.pending.first() {
            if end > limit {
                break;
            }
            self.pending.pop_first();
            done.push(chunk);
        }
        done
    }

    /// Forgets every chunk (the reader no longer goes in order).
    pub fn clear(&mut self) {
        self.pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_passed_once_the_reader_is_beyond_their_end_and_the_slack() {
        let mut d = DropBehind::default();
        let mib = 1 << 20;
        d.touched(0, 2 * mib);
        d.touched(1, 2 * mib);
        d.touched(2, 10 * mib);
        d.touched(0, 2 * mib);
        assert!(d.passed(5 * mib).is_empty(), "within the slack");
        assert_eq!(d.passed(6 * mib), vec![0, 1]);
        assert!(d.passed(7 * mib).is_empty(), "each chunk is passed once");
        d.clear();
        assert!(d.passed(u64::MAX).is_empty());
    }
}
