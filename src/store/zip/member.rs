//! Reading the members of a zip file: no byte of a member is served before the whole member has
//! matched the CRC-32 its central directory gives.
//!
//! - A stored member (all zarr-python's `ZipStore` writes) is read in place. A read of all of it
//!   is checked on the bytes read; a read of part of it (a shard's index, its inner chunks) is
//!   served once the whole member has been checked, streamed, once (the outcome is kept).
//! - A compressed member is inflated by the `zip` crate, which never inflates more than its
//!   declared size. A read of part of one inflates it whole, once, into a cache of at most
//!   [`INFLATED_KEPT`] bytes that later reads take their parts from: the inner chunks of a
//!   compressed shard cost one inflation, not one each. A larger member is read whole only.

use super::bytes::{Ahead, Cursor, ZipBytes};
use crate::store::{FlightLru, StoreError};
use parking_lot::Mutex;
use std::io::Read;
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;
use zip::read::ZipArchiveMetadata;
use zip::ZipReadOptions;

/// Bytes of inflated compressed members kept for reads of their parts, at most; a compressed
/// member larger than this is read whole only.
const INFLATED_KEPT: u64 = 256 << 20;
/// A stored member is checked in reads of this many bytes.
const CHECK_BLOCK: u64 = 4 << 20;
/// The first read of a stored member reads its local header with its bytes: the header's 30
/// bytes, its name and an extra field of up to this many bytes (a longer one costs a read more).
const EXTRA_GUESS: u64 = 1024;

/// One member, as the central directory tells it (its local header is read on its first read).
pub(super) struct Member {
    /// Its place in the central directory.
    pub index: usize,
    /// Its bytes are the member as it is: stored, not encrypted, as long as it says.
    pub in_place: bool,
    /// Its size, uncompressed.
    pub size: u64,
    /// Its modification time, as the zip gives it.
    pub mtime: Option<SystemTime>,
    /// The CRC-32 of its content.
    pub crc32: u32,
    /// Where its bytes start in the zip, from its local header.
    data_start: OnceLock<u64>,
    /// Whether the whole member matched its CRC-32, once known; held while a stored member is
    /// checked, so that readers at once check it once.
    checked: Mutex<Option<bool>>,
}

impl Member {
    /// A member not read yet.
    pub fn new(
        index: usize,
        in_place: bool,
        size: u64,
        mtime: Option<SystemTime>,
        crc32: u32,
    ) -> Self {
        Member {
            index,
            in_place,
            size,
            mtime,
            crc32,
            data_start: OnceLock::new(),
            checked: Mutex::new(None),
        }
    }
}

/// Reads the members of one zip file.
pub(super) struct Reader {
    /// The zip, for messages.
    pub what: String,
    bytes: Arc<dyn ZipBytes>,
    /// The zip's size.
    size: u64,
    meta: Arc<ZipArchiveMetadata>,
    /// Inflated compressed members, least recently used out first.
    kept: FlightLru<usize, Arc<Vec<u8>>, StoreError>,
    /// Held while a compressed member is inflated: one at a time, so that what is kept and
    /// what is being inflated stay within twice [`INFLATED_KEPT`].
    filling: Mutex<()>,
}

impl Reader {
    /// Reads the members of `meta`, the central directory of the zip in `bytes`.
    pub fn new(
        what: String,
        bytes: Arc<dyn ZipBytes>,
        size: u64,
        meta: Arc<ZipArchiveMetadata>,
    ) -> Self {
        Reader {
            what,
            bytes,
            size,
            meta,
            kept: FlightLru::new(INFLATED_KEPT, |m| m.len() as u64),
            filling: Mutex::new(()),
        }
    }

    /// `len` bytes of member `m` (named `key`) from `start`, fewer at its end.
    pub fn read(&self, key: &str, m: &Member, start: u64, len: u64) -> Result<Vec<u8>, StoreError> {
        if *m.checked.lock() == Some(false) {
            return Err(self.invalid(
                key,
                format_args!(
                    "CRC-32 not the {:08x} of the zip's central directory (found by an earlier \
                     read): corrupt member, not served",
                    m.crc32
                ),
            ));
        }
        let end = start.saturating_add(len).min(m.size);
        let start = start.min(end);
        let whole = start == 0 && end == m.size;
        if !m.in_place {
            if whole {
                return self.inflate(key, m);
            }
            let all = self.inflated(key, m)?;
            return Ok(all[start as usize..end as usize].to_vec());
        }
        if whole {
            let (_, buf) = self.locate(key, m, m.size)?;
            self.settle(key, m, crc32fast::hash(&buf))?;
            return Ok(buf);
        }
        let (at, _) = self.locate(key, m, 0)?;
        self.check_in_place(key, m, at)?;
        self.read_at(key, at + start, end - start)
    }

    /// Where the bytes of stored member `m` start, and the first `want` of them. The first time,
    /// both come from one read: its local header is read with them (an error for that member
    /// alone when the header is not one, or the member runs past the zip's end).
    fn locate(&self, key: &str, m: &Member, want: u64) -> Result<(u64, Vec<u8>), StoreError> {
        if let Some(&at) = m.data_start.get() {
            return Ok((at, self.read_at(key, at, want)?));
        }
        let entry = self.meta.entry(m.index).map_err(|e| self.invalid(key, e))?;
        let header = entry.header_start();
        let past_end = || {
            self.invalid(
                key,
                format_args!(
                    "its {} bytes run past the end of the zip ({} bytes)",
                    m.size, self.size
                ),
            )
        };
        if header.saturating_add(30).saturating_add(m.size) > self.size {
            return Err(past_end());
        }
        let guess = 30 + entry.name_raw().len() as u64 + EXTRA_GUESS + want;
        let mut ahead = self.read_at(key, header, guess.min(self.size - header))?;
        let bytes = Ahead {
            bytes: &*self.bytes,
            at: header,
            ahead: &ahead,
        };
        let at = entry
            .with_reader(&mut Cursor::new(&bytes, self.size), ZipReadOptions::new())
            .map_err(|e| self.invalid(key, format_args!("local header: {e}")))?
            .data_start()
            // Known once the reader is made.
            .unwrap_or(u64::MAX);
        if at.checked_add(m.size).is_none_or(|end| end > self.size) {
            return Err(past_end());
        }
        let at = *m.data_start.get_or_init(|| at);
        let from = (at - header) as usize;
        if ahead.len() < from + want as usize {
            return Ok((at, self.read_at(key, at, want)?));
        }
        ahead.truncate(from + want as usize);
        ahead.drain(..from);
        Ok((at, ahead))
    }

    /// `len` bytes of the zip at `at`.
    fn read_at(&self, key: &str, at: u64, len: u64) -> Result<Vec<u8>, StoreError> {
        let mut buf = vec![0u8; len as usize];
        self.bytes
            .read_exact_at(&mut buf, at)
            .map_err(|e| StoreError::io(self.name(key), e))?;
        Ok(buf)
    }

    /// Checks the whole of stored member `m` (at `at`) against its CRC-32, streamed, unless an
    /// earlier read did.
    fn check_in_place(&self, key: &str, m: &Member, at: u64) -> Result<(), StoreError> {
        let mut checked = m.checked.lock();
        if *checked == Some(true) {
            return Ok(());
        }
        let mut hasher = crc32fast::Hasher::new();
        let mut buf = vec![0u8; m.size.min(CHECK_BLOCK) as usize];
        let mut done = 0;
        while done < m.size {
            let n = (m.size - done).min(CHECK_BLOCK) as usize;
            self.bytes
                .read_exact_at(&mut buf[..n], at + done)
                .map_err(|e| StoreError::io(self.name(key), e))?;
            hasher.update(&buf[..n]);
            done += n as u64;
        }
        let got = hasher.finalize();
        *checked = Some(got == m.crc32);
        self.mismatch(key, m, got)
    }

    /// Compressed member `m`, inflated whole (never beyond its declared size) and checked.
    fn inflate(&self, key: &str, m: &Member) -> Result<Vec<u8>, StoreError> {
        let mut buf = Vec::new();
        buf.try_reserve_exact(m.size as usize).map_err(|_| {
            self.invalid(
                key,
                format_args!("{} bytes inflated: more than can be allocated", m.size),
            )
        })?;
        let mut cursor = Cursor::new(&*self.bytes, self.size);
        // The CRC-32 is checked here, to name both values in the message.
        let options = ZipReadOptions::new().ignore_crc32(true);
        self.meta
            .entry(m.index)
            .and_then(|entry| entry.with_reader(&mut cursor, options))
            .map_err(|e| self.invalid(key, e))?
            .read_to_end(&mut buf)
            .map_err(|e| self.invalid(key, format_args!("inflating: {e}")))?;
        if buf.len() as u64 != m.size {
            *m.checked.lock() = Some(false);
            return Err(self.invalid(
                key,
                format_args!(
                    "inflates to {} bytes, not the {} the zip's central directory says: corrupt \
                     member, not served",
                    buf.len(),
                    m.size
                ),
            ));
        }
        self.settle(key, m, crc32fast::hash(&buf))?;
        Ok(buf)
    }

    /// Compressed member `m` inflated whole, from the cache or into it; refused when larger than
    /// the cache.
    fn inflated(&self, key: &str, m: &Member) -> Result<Arc<Vec<u8>>, StoreError> {
        if m.size > INFLATED_KEPT {
            return Err(self.invalid(
                key,
                format_args!(
                    "a compressed member of {} bytes is read in part only up to {INFLATED_KEPT} \
                     bytes (it is inflated whole to check it); store large shards uncompressed \
                     in a zip, as zarr-python's ZipStore does",
                    m.size
                ),
            ));
        }
        self.kept.get_or_load(
            m.index,
            || self.invalid(key, "its inflation panicked"),
            || {
                let _one = self.filling.lock();
                self.inflate(key, m).map(Arc::new)
            },
        )
    }

    /// Checks `got`, the CRC-32 of the whole of member `m`, and keeps a mismatch.
    fn settle(&self, key: &str, m: &Member, got: u32) -> Result<(), StoreError> {
        if got != m.crc32 {
            *m.checked.lock() = Some(false);
        }
        self.mismatch(key, m, got)
    }

    /// An error when `got` is not member `m`'s CRC-32.
    fn mismatch(&self, key: &str, m: &Member, got: u32) -> Result<(), StoreError> {
        if got == m.crc32 {
            return Ok(());
        }
        Err(self.invalid(
            key,
            format_args!(
                "CRC-32 {got:08x}, not the {:08x} of the zip's central directory: corrupt \
                 member, not served",
                m.crc32
            ),
        ))
    }

    fn name(&self, key: &str) -> String {
        format!("{}:{key}", self.what)
    }

    fn invalid(&self, key: &str, cause: impl std::fmt::Display) -> StoreError {
        StoreError::Invalid(format!("{}: {cause}", self.name(key)))
    }
}
