//! Which blocks of a backing file being written are present, and their checksums, by page
//! (see `records`): only pages holding a present block take memory, and only the pages changed
//! since the last save are saved again, so both grow with what was read, not with the array.

use super::records::{Record, PAGE_BLOCKS, WORDS};
use super::BLOCK;
use std::collections::HashMap;

/// A page in memory: its record, and the bits its last saved record claims.
struct Page {
    now: Record,
    saved: [u64; WORDS],
    dirty: bool,
}

/// The presence bitmap and checksums of a file of a given size.
pub struct BlockMap {
    size: u64,
    blocks: u64,
    pages: HashMap<u64, Page>,
    present: u64,
}

/// The page of block `b`, and its place in it.
fn place(b: u64) -> (u64, usize) {
    (b / PAGE_BLOCKS as u64, (b % PAGE_BLOCKS as u64) as usize)
}

fn count(bits: &[u64; WORDS]) -> u64 {
    bits.iter().map(|w| u64::from(w.count_ones())).sum()
}

impl BlockMap {
    /// No block present, for a file of `size` bytes.
    pub fn new(size: u64) -> Self {
        BlockMap {
            size,
            blocks: size.div_ceil(BLOCK),
            pages: HashMap::new(),
            present: 0,
        }
    }

    /// The map the saved `records` describe (read back from the map file).
    pub fn from_saved(size: u64, saved: Vec<Record>) -> Self {
        let mut map = BlockMap::new(size);
        for now in saved {
            map.present += count(&now.bits);
            let page = Page {
                saved: now.bits,
                now,
                dirty: false,
            };
            map.pages.insert(page.now.page, page);
        }
        map
    }

    /// True when no block is present.
    pub fn is_empty(&self) -> bool {
        self.present == 0
    }

    /// True when block `b` is present.
    pub fn has(&self, b: u64) -> bool {
        let (p, i) = place(b);
        self.pages.get(&p).is_some_and(|page| page.now.has(i))
    }

    /// True when every block is present.
    pub fn is_full(&self) -> bool {
        self.present == self.blocks
    }

    /// Records the blocks `first..` that `bytes` hold whole (they start at block `first`; a
    /// last block shorter than [`BLOCK`] only at the end of the file) as present, with their
    /// checksums.
    pub fn record(&mut self, first: u64, bytes: &[u8]) {
        for (k, block) in bytes.chunks(BLOCK as usize).enumerate() {
            let b = first + k as u64;
            if b >= self.blocks {
                break;
            }
            let (p, i) = place(b);
            let size = self.size;
            let page = self.pages.entry(p).or_insert_with(|| Page {
                now: Record::empty(size, p),
                saved: [0; WORDS],
                dirty: false,
            });
            page.now.crcs[i] = crc32c::crc32c(block);
            if !page.now.has(i) {
                page.now.bits[i / 64] |= 1 << (i % 64);
                self.present += 1;
            }
            page.dirty = true;
        }
    }

    /// Marks block `b` absent (its bytes failed their checksum).
    pub fn unset(&mut self, b: u64) {
        let (p, i) = place(b);
        if let Some(page) = self.pages.get_mut(&p).filter(|page| page.now.has(i)) {
            page.now.bits[i / 64] &= !(1 << (i % 64));
            page.dirty = true;
            self.present -= 1;
        }
    }

    /// The first block among `first..` held by `bytes` that is not present or whose checksum is
    /// not the one recorded.
    pub fn mismatch(&self, first: u64, bytes: &[u8]) -> Option<u64> {
        bytes
            .chunks(BLOCK as usize)
            .enumerate()
            .map(|(k, block)| (first + k as u64, block))
            .find(|&(b, block)| {
                let (p, i) = place(b);
                let page = self.pages.get(&p).filter(|page| page.now.has(i));
                page.is_none_or(|page| page.now.crcs[i] != crc32c::crc32c(block))
            })
            .map(|(b, _)| b)
    }

    /// The records of the pages changed since the last call, which count as saved from now
    /// on (see [`BlockMap::saved`]).
    pub fn take_changed(&mut self) -> Vec<Record> {
        let mut changed: Vec<Record> = self
            .pages
            .values_mut()
            .filter(|page| page.dirty)
            .map(|page| {
                page.dirty = false;
                page.now.clone()
            })
            .collect();
        changed.sort_by_key(|r| r.page);
        changed
    }

    /// Notes that `records` (from [`BlockMap::take_changed`]) could not be saved: their pages
    /// count as changed again (saved at the next save).
    pub fn changed_again(&mut self, records: &[Record]) {
        for r in records {
            if let Some(page) = self.pages.get_mut(&r.page) {
                page.dirty = true;
            }
        }
    }

    /// Notes that `records` (from [`BlockMap::take_changed`]) are on disk.
    pub fn saved(&mut self, records: &[Record]) {
        for r in records {
            if let Some(page) = self.pages.get_mut(&r.page) {
                page.saved = r.bits;
            }
        }
    }

    /// Forgets every block the saved map does not claim; returns where they are, as runs of
    /// blocks `from..to` (the pages not in memory whole: a resumed file may hold bytes there
    /// that no map claims).
    pub fn forget_unsaved(&mut self) -> Vec<(u64, u64)> {
        for page in self.pages.values_mut() {
            page.now.bits = page.saved;
            page.dirty = false;
        }
        self.pages.retain(|_, page| page.saved != [0; WORDS]);
        self.present = self.pages.values().map(|page| count(&page.saved)).sum();
        self.absent_runs(0, self.blocks)
    }

    /// The runs of blocks among `from..to` that are not present.
    pub fn absent_runs(&self, from: u64, to: u64) -> Vec<(u64, u64)> {
        let mut runs: Vec<(u64, u64)> = Vec::new();
        let mut b = from;
        while b < to {
            let (p, _) = place(b);
            let page_end = ((p + 1) * PAGE_BLOCKS as u64).min(to);
            let absent_to = match self.pages.get(&p) {
                // A whole page absent at once.
                None => page_end,
                Some(_) if !self.has(b) => b + 1,
                Some(_) => {
                    b += 1;
                    continue;
                }
            };
            match runs.last_mut() {
                Some(last) if last.1 == b => last.1 = absent_to,
                _ => runs.push((b, absent_to)),
            }
            b = absent_to;
        }
        runs
    }

    /// Number of pages in memory.
    #[cfg(test)]
    fn pages_held(&self) -> usize {
        self.pages.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backing::records;

    #[test]
    fn memory_and_saves_grow_with_what_was_written_not_with_the_file() {
        let size = 1 << 40;
        let mut map = BlockMap::new(size);
        assert_eq!(records::pages(size), 270_601);
        let bytes = vec![7u8; 2 * BLOCK as usize];
        map.record(5_000_000, &bytes);
        assert_eq!(map.pages_held(), 1);
        assert!(map.has(5_000_000) && map.has(5_000_001) && !map.has(5_000_002));
        let changed = map.take_changed();
        assert_eq!(changed.len(), 1);
        assert!(map.take_changed().is_empty(), "nothing changed since");
        map.saved(&changed);
        map.record(10, &bytes[..BLOCK as usize]);
        assert_eq!(map.take_changed().len(), 1);
        assert_eq!(map.mismatch(5_000_000, &bytes), None);
        assert_eq!(map.mismatch(5_000_001, &[1; 4096]), Some(5_000_001));
        assert_eq!(map.mismatch(11, &bytes[..4096]), Some(11), "absent");
        // Block 10 was never saved: forgotten, with everything else but 5,000,000..5,000,002.
        let last = size / BLOCK;
        assert_eq!(
            map.forget_unsaved(),
            vec![(0, 5_000_000), (5_000_002, last)]
        );
        assert!(!map.has(10) && map.has(5_000_001));
        assert_eq!(map.present, 2);
    }

    #[test]
    fn the_last_short_block_completes_the_map() {
        let size = 2 * BLOCK + 10;
        let mut map = BlockMap::new(size);
        map.record(0, &vec![1; size as usize]);
        assert!(map.is_full());
        map.unset(2);
        assert!(!map.is_full());
        assert_eq!(map.absent_runs(0, 3), vec![(2, 3)]);
        let back = BlockMap::from_saved(size, map.take_changed());
        assert!(back.has(1) && !back.has(2));
    }
}
