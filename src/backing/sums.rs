//! Integrity of backing files: a CRC-32C of every [`BLOCK`], recorded as the block is written
//! (saved with the bitmap while a file is written, in `KEY.sum` once complete) and checked
//! before the bytes are served again.

use super::BLOCK;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// Starts every saved checksum list; the last byte is the format version of the cache
/// directory's files (another version is never read: see [`super::Identity`]).
const MAGIC: &[u8; 8] = b"zarrfs\x00\x02";

/// Bytes verified per read of a whole file.
const PIECE: u64 = 1 << 20;

/// The checksums of the blocks of a file of a given size (0 for a block not written yet).
#[derive(Clone)]
pub struct Sums {
    crcs: Vec<u32>,
}

impl Sums {
    /// No block written yet, for a file of `size` bytes.
    pub fn new(size: u64) -> Self {
        Sums {
            crcs: vec![0; size.div_ceil(BLOCK) as usize],
        }
    }

    /// The checksum list saved as the start of `bytes` for a file of `size` bytes, and the rest
    /// of `bytes`; `None` when it is of another format or size.
    pub fn parse(size: u64, bytes: &[u8]) -> Option<(Self, &[u8])> {
        let blocks = size.div_ceil(BLOCK) as usize;
        let rest = bytes.strip_prefix(MAGIC)?;
        let len = blocks.checked_mul(4)?;
        if rest.len() < len {
            return None;
        }
        let (list, rest) = rest.split_at(len);
        let crcs = list
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap_or_default()))
            .collect();
        Some((Sums { crcs }, rest))
    }

    /// The bytes to save.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(MAGIC.len() + 4 * self.crcs.len());
        out.extend_from_slice(MAGIC);
        self.crcs
            .iter()
            .for_each(|c| out.extend_from_slice(&c.to_le_bytes()));
        out
    }

    /// Records the blocks `first..` held by `bytes` (which start at block `first`; a last
    /// block shorter than [`BLOCK`] only at the end of the file).
    pub fn record(&mut self, first: u64, bytes: &[u8]) {
        for (i, block) in bytes.chunks(BLOCK as usize).enumerate() {
            if let Some(slot) = self.crcs.get_mut(first as usize + i) {
                *slot = crc32c::crc32c(block);
            }
        }
    }

    /// The first block among `first..` held by `bytes` whose checksum is not the one recorded.
    pub fn mismatch(&self, first: u64, bytes: &[u8]) -> Option<u64> {
        bytes
            .chunks(BLOCK as usize)
            .enumerate()
            .find(|(i, block)| {
                self.crcs.get(first as usize + i).copied() != Some(crc32c::crc32c(block))
            })
            .map(|(i, _)| first + i as u64)
    }

    /// The checksums of the first `size` bytes of `file`.
    pub fn of_file(file: &File, size: u64) -> io::Result<Self> {
        let mut sums = Sums::new(size);
        each_piece(file, size, |at, bytes| {
            sums.record(at / BLOCK, bytes);
            true
        })?;
        Ok(sums)
    }

    /// Reads the first `size` bytes of `file`: the first block whose checksum is not the one
    /// recorded, or `None` when all match.
    pub fn verify(&self, file: &File, size: u64) -> io::Result<Option<u64>> {
        let mut bad = None;
        each_piece(file, size, |at, bytes| {
            bad = self.mismatch(at / BLOCK, bytes);
            bad.is_none()
        })?;
        Ok(bad)
    }
}

/// Calls `each(offset, bytes)` with the first `size` bytes of `file`, a [`PIECE`] at a time,
/// while it returns true.
fn each_piece(file: &File, size: u64, mut each: impl FnMut(u64, &[u8]) -> bool) -> io::Result<()> {
    let mut buf = vec![0; PIECE.min(size) as usize];
    let mut at = 0;
    while at < size {
        let n = PIECE.min(size - at) as usize;
        file.read_exact_at(&mut buf[..n], at)?;
        if !each(at, &buf[..n]) {
            break;
        }
        at += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flipped_byte_is_found_in_its_block_and_a_saved_list_reads_back() {
        let size = 3 * BLOCK + 100;
        let bytes: Vec<u8> = (0..size).map(|i| (i * 7) as u8).collect();
        let mut sums = Sums::new(size);
        sums.record(0, &bytes);
        assert_eq!(sums.mismatch(0, &bytes), None);
        let mut flipped = bytes.clone();
        flipped[(2 * BLOCK + 5) as usize] ^= 1;
        assert_eq!(sums.mismatch(0, &flipped), Some(2));
        assert_eq!(sums.mismatch(3, &bytes[3 * BLOCK as usize..]), None);

        let mut saved = sums.to_bytes();
        saved.extend_from_slice(b"rest");
        let (back, rest) = Sums::parse(size, &saved).unwrap();
        assert_eq!((back.crcs, rest), (sums.crcs.clone(), &b"rest"[..]));
        assert!(Sums::parse(size + BLOCK, &saved[..saved.len() - 4]).is_none());
        let mut old = saved.clone();
        old[7] = 1;
        assert!(Sums::parse(size, &old).is_none());

        let file = tempfile::tempfile().unwrap();
        file.write_all_at(&flipped, 0).unwrap();
        assert_eq!(sums.verify(&file, size).unwrap(), Some(2));
        assert_eq!(
            Sums::of_file(&file, size)
                .unwrap()
                .verify(&file, size)
                .unwrap(),
            None
        );
    }
}
