//! The block map on disk (`KEY.map` while a file is written, `KEY.sum` once complete, and
//! `KEY.npysum`): one record per page of [`PAGE_BLOCKS`] blocks, each at its own place (page
//! `p` at `p * SLOT`), so a save writes only the pages that changed and a file of which little
//! was read takes little room (the map file is sparse like the backing file). A record holds
//! the CRC-32C of each block of its page, the bitmap of which are present, and a CRC-32C of
//! itself seeded with the format version, the backing file's size and the page number: a
//! torn record, a hole, or a record of another format or file is not one, and its blocks
//! count as absent.

use super::BLOCK;
use rustix::fs::SeekFrom;
use rustix::io::Errno;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// Blocks per page: a full record (checksums, bits and its own checksum) is one [`SLOT`].
pub const PAGE_BLOCKS: usize = 992;

/// Bytes between the starts of two records.
pub const SLOT: u64 = 4096;

/// Words of a page's bitmap in memory.
pub const WORDS: usize = PAGE_BLOCKS.div_ceil(64);

/// Seeds every record's own checksum; its last byte is the format version of the cache
/// directory's files (another version is never read: see [`super::Identity`]).
const MAGIC: &[u8; 8] = b"zarrfs\x00\x03";

/// Records read or written at a time.
const RECORDS_AT_ONCE: usize = 256;

/// One page of a block map: the checksums of its blocks and which are present.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub page: u64,
    /// One per block of the page (0 for an absent block).
    pub crcs: Vec<u32>,
    pub bits: [u64; WORDS],
}

/// Number of pages of the map of a file of `size` bytes.
pub fn pages(size: u64) -> u64 {
    size.div_ceil(BLOCK).div_ceil(PAGE_BLOCKS as u64)
}

/// Number of blocks in page `page` of a file of `size` bytes.
pub fn blocks_in(size: u64, page: u64) -> usize {
    let first = page * PAGE_BLOCKS as u64;
    size.div_ceil(BLOCK)
        .saturating_sub(first)
        .min(PAGE_BLOCKS as u64) as usize
}

fn record_len(blocks: usize) -> usize {
    4 * blocks + blocks.div_ceil(8) + 4
}

/// Bytes of the whole map of a file of `size` bytes (every page written).
pub fn file_len(size: u64) -> u64 {
    match pages(size) {
        0 => 0,
        n => (n - 1) * SLOT + record_len(blocks_in(size, n - 1)) as u64,
    }
}

/// The checksum of a record of page `page` of a file of `size` bytes whose body is `body`.
fn seal(size: u64, page: u64, body: &[u8]) -> u32 {
    let mut crc = crc32c::crc32c(MAGIC);
    crc = crc32c::crc32c_append(crc, &size.to_le_bytes());
    crc = crc32c::crc32c_append(crc, &page.to_le_bytes());
    crc32c::crc32c_append(crc, body)
}

impl Record {
    /// An empty page `page` of a file of `size` bytes.
    pub fn empty(size: u64, page: u64) -> Self {
        Record {
            page,
            crcs: vec![0; blocks_in(size, page)],
            bits: [0; WORDS],
        }
    }

    /// The record's bytes for a file of `size` bytes.
    pub fn encode(&self, size: u64) -> Vec<u8> {
        let n = self.crcs.len();
        let mut out = Vec::with_capacity(record_len(n));
        self.crcs
            .iter()
            .for_each(|c| out.extend_from_slice(&c.to_le_bytes()));
        let bits: Vec<u8> = self.bits.iter().flat_map(|w| w.to_le_bytes()).collect();
        out.extend_from_slice(&bits[..n.div_ceil(8)]);
        let crc = seal(size, self.page, &out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// The record of page `page` of a file of `size` bytes stored at the start of `bytes`;
    /// `None` when there is none (a hole, a torn write, another format or file).
    pub fn decode(size: u64, page: u64, bytes: &[u8]) -> Option<Self> {
        let n = blocks_in(size, page);
        let body = bytes.get(..record_len(n) - 4)?;
        let stored = bytes.get(body.len()..body.len() + 4)?;
        if u32::from_le_bytes(stored.try_into().ok()?) != seal(size, page, body) {
            return None;
        }
        let (crcs, bits) = body.split_at(4 * n);
        let mut record = Record::empty(size, page);
        for (slot, c) in record.crcs.iter_mut().zip(crcs.chunks_exact(4)) {
            *slot = u32::from_le_bytes(c.try_into().ok()?);
        }
        for (i, byte) in bits.iter().enumerate() {
            record.bits[i / 8] |= u64::from(*byte) << (8 * (i % 8));
        }
        Some(record)
    }

    /// True when block `i` of the page is present.
    pub fn has(&self, i: usize) -> bool {
        self.bits[i / 64] & (1 << (i % 64)) != 0
    }
}

/// Writes `records` (of a file of `size` bytes) into the map file `map`, each at its place.
pub fn write(map: &File, size: u64, records: &[Record]) -> io::Result<()> {
    for r in records {
        map.write_all_at(&r.encode(size), r.page * SLOT)?;
    }
    Ok(())
}

/// The valid records of the map file `map` of a file of `size` bytes, reading only where it
/// holds data (`SEEK_DATA`; a file system without it reads the whole file).
pub fn read_all(map: &File, size: u64) -> io::Result<Vec<Record>> {
    let len = map.metadata()?.len();
    let mut records = Vec::new();
    let mut buf = vec![0; RECORDS_AT_ONCE * SLOT as usize];
    let mut at = 0;
    while at < len {
        let data = match rustix::fs::seek(map, SeekFrom::Data(at)) {
            Ok(data) => data,
            Err(Errno::NXIO) => break,
            Err(e) => return Err(e.into()),
        };
        let hole = rustix::fs::seek(map, SeekFrom::Hole(data))?.min(len);
        let mut page = data / SLOT;
        while page * SLOT < hole && page < pages(size) {
            let from = page * SLOT;
            let n = ((len - from) as usize).min(buf.len());
            map.read_exact_at(&mut buf[..n], from)?;
            for (i, slot) in buf[..n].chunks(SLOT as usize).enumerate() {
                let p = page + i as u64;
                records.extend(Record::decode(size, p, slot).filter(|r| r.bits != [0; WORDS]));
            }
            page += n.div_ceil(SLOT as usize) as u64;
        }
        at = hole.max(page * SLOT);
    }
    Ok(records)
}

/// Calls `each(page, bytes)` with every page of the first `size` bytes of `data`, in order,
/// while it returns true.
fn each_page(data: &File, size: u64, mut each: impl FnMut(u64, &[u8]) -> bool) -> io::Result<()> {
    let page_bytes = PAGE_BLOCKS as u64 * BLOCK;
    let mut buf = vec![0; page_bytes.min(size) as usize];
    for page in 0..pages(size) {
        let from = page * page_bytes;
        let n = page_bytes.min(size - from) as usize;
        data.read_exact_at(&mut buf[..n], from)?;
        if !each(page, &buf[..n]) {
            break;
        }
    }
    Ok(())
}

/// Checks the first `size` bytes of `data` against the complete map `sums`, a page at a time:
/// the first block that is not present in it or does not match its checksum, `None` when all
/// do.
pub fn verify(sums: &File, data: &File, size: u64) -> io::Result<Option<u64>> {
    let mut bad = None;
    let mut slot = vec![0; SLOT as usize];
    let mut failed = Ok(());
    each_page(data, size, |page, bytes| {
        let first = page * PAGE_BLOCKS as u64;
        let n = record_len(blocks_in(size, page));
        if let Err(e) = sums.read_exact_at(&mut slot[..n], page * SLOT) {
            failed = Err(e);
            return false;
        }
        let Some(record) = Record::decode(size, page, &slot[..n]) else {
            bad = Some(first);
            return false;
        };
        let mismatch = bytes
            .chunks(BLOCK as usize)
            .enumerate()
            .find(|(i, block)| !record.has(*i) || record.crcs[*i] != crc32c::crc32c(block));
        bad = mismatch.map(|(i, _)| first + i as u64);
        bad.is_none()
    })?;
    failed.map(|()| bad)
}

/// Writes into `out` the complete map of the first `len` bytes of `data`.
pub fn write_of_file(data: &File, len: u64, out: &File) -> io::Result<()> {
    let mut pending = Vec::new();
    let mut written = Ok(());
    each_page(data, len, |page, bytes| {
        let mut record = Record::empty(len, page);
        for (i, block) in bytes.chunks(BLOCK as usize).enumerate() {
            record.crcs[i] = crc32c::crc32c(block);
            record.bits[i / 64] |= 1 << (i % 64);
        }
        pending.push(record);
        if pending.len() == RECORDS_AT_ONCE {
            written = write(out, len, &pending);
            pending.clear();
        }
        written.is_ok()
    })?;
    written.and_then(|()| write(out, len, &pending))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_and_a_torn_or_foreign_one_does_not() {
        let size = PAGE_BLOCKS as u64 * BLOCK + 3 * BLOCK + 100;
        assert_eq!((pages(size), blocks_in(size, 1)), (2, 4));
        assert_eq!(file_len(size), SLOT + 4 * 4 + 1 + 4);
        let mut r = Record::empty(size, 1);
        r.crcs[2] = 0xdead_beef;
        r.bits[0] = 0b100;
        let bytes = r.encode(size);
        assert_eq!(bytes.len(), 21);
        assert_eq!(Record::decode(size, 1, &bytes), Some(r.clone()));
        assert!(Record::decode(size, 0, &bytes).is_none(), "another page");
        assert!(
            Record::decode(size + 1, 1, &bytes).is_none(),
            "another file"
        );
        let mut torn = bytes.clone();
        torn[3] ^= 1;
        assert!(Record::decode(size, 1, &torn).is_none());
        assert!(Record::decode(size, 1, &[0; 21]).is_none(), "a hole");
        let full = Record::empty(size, 0);
        assert_eq!(full.encode(size).len(), SLOT as usize);
    }

    #[test]
    fn a_sparse_map_reads_back_only_its_written_records_and_verifies_a_file() {
        let size = 40 * PAGE_BLOCKS as u64 * BLOCK;
        let map = tempfile::tempfile().unwrap();
        let mut far = Record::empty(size, 37);
        far.bits[3] = 1;
        far.crcs[192] = 7;
        let mut near = Record::empty(size, 2);
        near.bits[0] = 1;
        write(&map, size, &[near.clone(), far.clone()]).unwrap();
        assert_eq!(read_all(&map, size).unwrap(), vec![near, far]);

        let len = 2 * PAGE_BLOCKS as u64 * BLOCK + 5000;
        let data = tempfile::tempfile().unwrap();
        let bytes: Vec<u8> = (0..len).map(|i| (i * 31 / 7) as u8).collect();
        data.write_all_at(&bytes, 0).unwrap();
        let sums = tempfile::tempfile().unwrap();
        write_of_file(&data, len, &sums).unwrap();
        assert_eq!(sums.metadata().unwrap().len(), file_len(len));
        assert_eq!(verify(&sums, &data, len).unwrap(), None);
        let flipped = 2 * PAGE_BLOCKS as u64 * BLOCK + 4097;
        data.write_all_at(&[!bytes[flipped as usize]], flipped)
            .unwrap();
        assert_eq!(
            verify(&sums, &data, len).unwrap(),
            Some(2 * PAGE_BLOCKS as u64 + 1)
        );
        // A record cleared: its first block fails.
        sums.write_all_at(&[0; 8], SLOT).unwrap();
        assert_eq!(verify(&sums, &data, len).unwrap(), Some(PAGE_BLOCKS as u64));
    }
}
