//! Which blocks of a backing file are present.

use super::BLOCK;

/// One bit per [`BLOCK`] of a file of `size` bytes.
pub struct Bitmap {
    bits: Vec<u8>,
    blocks: u64,
    present: u64,
}

impl Bitmap {
    /// An empty bitmap for a file of `size` bytes.
    pub fn new(size: u64) -> Self {
        let blocks = size.div_ceil(BLOCK);
        Bitmap {
            bits: vec![0; blocks.div_ceil(8) as usize],
            blocks,
            present: 0,
        }
    }

    /// The bitmap stored as `bytes`, or `None` when it does not fit a file of `size` bytes.
    pub fn from_bytes(size: u64, bytes: Vec<u8>) -> Option<Self> {
        let mut map = Bitmap::new(size);
        if bytes.len() != map.bits.len() {
            return None;
        }
        map.bits = bytes;
        map.present = (0..map.blocks).filter(|&b| map.has(b)).count() as u64;
        Some(map)
    }

    /// The bytes to store.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bits
    }

    /// True when block `b` is present.
    pub fn has(&self, b: u64) -> bool {
        b < self.blocks && self.bits[(b / 8) as usize] & (1 << (b % 8)) != 0
    }

    /// Marks block `b` present.
    pub fn set(&mut self, b: u64) {
        if b < self.blocks && !self.has(b) {
            self.bits[(b / 8) as usize] |= 1 << (b % 8);
            self.present += 1;
        }
    }

    /// Marks block `b` absent (its bytes failed their checksum).
    pub fn unset(&mut self, b: u64) {
        if self.has(b) {
            self.bits[(b / 8) as usize] &= !(1 << (b % 8));
            self.present -= 1;
        }
    }

    /// True when every block is present.
    pub fn is_full(&self) -> bool {
        self.present == self.blocks
    }
}
