//! A zip store that is one object of a remote store: its central directory is read on first
//! use (after the mount command has daemonized), in 64 KiB blocks; members are then read by
//! byte range, as from a local zip.

use super::zip::{ZipBytes, ZipStore};
use super::{Latency, Layer, ObjectMeta, Store, StoreError};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

/// Reads below this size go through the block cache (the `zip` crate reads the central
/// directory in small pieces).
const BLOCK: u64 = 64 << 10;
/// Blocks kept.
const BLOCKS_KEPT: usize = 16;

/// The bytes of one remote object, read by range, small reads through a few cached blocks.
struct ObjectBytes {
    store: Arc<dyn Store>,
    key: String,
    /// The object's URL, for messages.
    url: String,
    /// The version opened: every read must come from it.
    pinned: ObjectMeta,
    blocks: Mutex<VecDeque<(u64, Arc<Vec<u8>>)>>,
}

impl ObjectBytes {
    fn range(&self, start: u64, len: u64) -> std::io::Result<Vec<u8>> {
        match self.store.get_range_versioned(&self.key, start, len) {
            Ok(Some((_, seen))) if !seen.same_version(&self.pinned) => {
                Err(std::io::Error::other(format!(
                    "{}: replaced since it was opened (now {}); remount to read the new version",
                    self.url,
                    seen.tag.as_deref().unwrap_or("another size or time")
                )))
            }
            Ok(Some((bytes, _))) if bytes.len() as u64 == len => Ok(bytes),
            Ok(Some(_)) => Err(std::io::Error::other(format!(
                "{}: shorter than its size",
                self.url
            ))),
            Ok(None) => Err(std::io::Error::other(format!("{}: gone", self.url))),
            Err(e) => Err(std::io::Error::other(e)),
        }
    }

    fn block(&self, index: u64) -> std::io::Result<Arc<Vec<u8>>> {
        let cached = |blocks: &VecDeque<(u64, Arc<Vec<u8>>)>| {
            blocks
                .iter()
                .find(|(i, _)| *i == index)
                .map(|(_, b)| b.clone())
        };
        if let Some(b) = cached(&self.blocks.lock()) {
            return Ok(b);
        }
        let start = index * BLOCK;
        let b = Arc::new(self.range(start, BLOCK.min(self.pinned.size - start))?);
        let mut blocks = self.blocks.lock();
        if blocks.len() == BLOCKS_KEPT {
            blocks.pop_front();
        }
        blocks.push_back((index, b.clone()));
        Ok(b)
    }
}

impl ZipBytes for ObjectBytes {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let len = buf.len() as u64;
        if offset
            .checked_add(len)
            .is_none_or(|end| end > self.pinned.size)
        {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        if len >= BLOCK {
            buf.copy_from_slice(&self.range(offset, len)?);
            return Ok(());
        }
        let mut done = 0;
        while done < buf.len() {
            let at = offset + done as u64;
            let block = self.block(at / BLOCK)?;
            let from = (at % BLOCK) as usize;
            let n = (block.len() - from).min(buf.len() - done);
            buf[done..done + n].copy_from_slice(&block[from..from + n]);
            done += n;
        }
        Ok(())
    }

    fn size(&self) -> std::io::Result<u64> {
        Ok(self.pinned.size)
    }
}

/// A zip file at `key` of a remote store (`""`: the store's own URL), opened on first use.
pub struct RemoteZip {
    store: Arc<dyn Store>,
    key: String,
    url: String,
    /// The opened zip, or why it could not be opened (given to every later call).
    zip: OnceLock<Result<ZipStore, StoreError>>,
}

impl RemoteZip {
    /// The zip file `key` of `store`, shown as `url`. No request is made yet.
    pub fn new(store: Box<dyn Store>, key: &str, url: &str) -> Self {
        RemoteZip {
            store: Arc::from(store),
            key: key.to_string(),
            url: url.to_string(),
            zip: OnceLock::new(),
        }
    }
}

/// Every call goes to the opened zip, but for what the remote store says of itself.
impl Layer for RemoteZip {
    type Step = ();

    /// The opened zip (its central directory read on the first call).
    fn inner(&self) -> Result<&dyn Store, StoreError> {
        let opened = self.zip.get_or_init(|| {
            let meta = self
                .store
                .head(&self.key)?
                .ok_or_else(|| StoreError::Invalid(format!("{}: no such object", self.url)))?;
            let bytes = ObjectBytes {
                store: self.store.clone(),
                key: self.key.clone(),
                url: self.url.clone(),
                pinned: meta.clone(),
                blocks: Mutex::new(VecDeque::new()),
            };
            let mtime = meta.mtime.unwrap_or(SystemTime::UNIX_EPOCH);
            ZipStore::read(self.url.clone(), Arc::new(bytes), mtime)
        });
        match opened {
            Ok(zip) => Ok(zip),
            Err(e) => Err(e.clone()),
        }
    }

    fn parallelism(&self) -> usize {
        self.store.parallelism()
    }

    fn latency(&self) -> Latency {
        self.store.latency()
    }

    fn mtime(&self) -> SystemTime {
        self.zip
            .get()
            .and_then(|z| z.as_ref().ok())
            .map_or(SystemTime::UNIX_EPOCH, |z| z.mtime())
    }

    fn describe(&self) -> String {
        self.url.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{CountingStore, Fault, FaultyStore, MemoryStore};
    use std::io::Write;

    /// A zip of a small `a/.zarray` and a 200,000-byte member `a/0` of bytes `(i + seed) % 251`,
    /// both stored.
    fn zip_of(seed: u32) -> Vec<u8> {
        let mut buf = std::io::Cursor::new(Vec::new());
        let mut w = zip::ZipWriter::new(&mut buf);
        let stored = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        w.start_file("a/.zarray", stored).unwrap();
        w.write_all(b"{\"zarr_format\": 2}").unwrap();
        let big: Vec<u8> = (0..200_000u32).map(|i| ((i + seed) % 251) as u8).collect();
        w.start_file("a/0", stored).unwrap();
        w.write_all(&big).unwrap();
        w.finish().unwrap();
        buf.into_inner()
    }

    #[test]
    fn a_zip_replaced_after_it_was_opened_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.zip");
        std::fs::write(&path, zip_of(0)).unwrap();
        let store = crate::store::DirStore::new(dir.path()).unwrap();
        let z = RemoteZip::new(Box::new(store), "x.zip", "file:///x.zip");
        let want: Vec<u8> = (70_000..170_000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(z.get_range("a/0", 70_000, 100_000).unwrap().unwrap(), want);
        // Same size and layout, other bytes, written a second later: the old offsets would
        // read the new bytes.
        let later = std::fs::metadata(&path).unwrap().modified().unwrap()
            + std::time::Duration::from_secs(1);
        std::fs::write(&path, zip_of(1)).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(later)
            .unwrap();
        let refused = z.get_range("a/0", 70_000, 100_000).unwrap_err().to_string();
        assert!(
            refused.contains("replaced since it was opened"),
            "{refused}"
        );
    }

    #[test]
    fn reads_a_zip_held_as_one_object() {
        let mut mem = MemoryStore::new();
        mem.insert("data/x.zip", zip_of(0));
        let z = RemoteZip::new(Box::new(mem), "data/x.zip", "mem://data/x.zip");
        assert_eq!(
            z.get("a/.zarray").unwrap().unwrap().bytes,
            b"{\"zarr_format\": 2}"
        );
        let chunk = z.get_range("a/0", 70_000, 100_000).unwrap().unwrap();
        let want: Vec<u8> = (70_000..170_000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(chunk, want);
        assert_eq!(z.list_dir("").unwrap()[0].name, "a");
        assert!(z.get("b").unwrap().is_none());
        let missing = RemoteZip::new(Box::new(MemoryStore::new()), "y.zip", "mem://y.zip");
        assert!(missing
            .get("a")
            .unwrap_err()
            .to_string()
            .contains("no such object"));
        // The remote store's own error, every time (not turned into another kind).
        let failing = FaultyStore::new(Arc::new(MemoryStore::new())).with("y.zip", 1, Fault::Error);
        let z = RemoteZip::new(Box::new(failing), "y.zip", "mem://y.zip");
        for _ in 0..2 {
            assert!(matches!(z.get("a"), Err(StoreError::Io { .. })));
        }
    }

    #[test]
    fn a_zip_opens_in_a_few_requests_whatever_its_members() {
        // 200 stored members of 64 KiB: each local header lies in a block of its own.
        let mut buf = std::io::Cursor::new(Vec::new());
        let mut w = zip::ZipWriter::new(&mut buf);
        let stored = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        for i in 0..200u8 {
            w.start_file(format!("a/{i}"), stored).unwrap();
            w.write_all(&[i; 64 << 10]).unwrap();
        }
        w.finish().unwrap();
        let mut mem = MemoryStore::new();
        mem.insert("x.zip", buf.into_inner());
        let (counting, counts) = CountingStore::new(Box::new(mem));
        let z = RemoteZip::new(Box::new(counting), "x.zip", "mem://x.zip");
        assert_eq!(z.list_dir("a").unwrap().len(), 200);
        let opened = counts.requests();
        assert!(opened <= 4, "{opened} requests to open");
        // A member's local header is read with its bytes, in one request.
        assert_eq!(z.get("a/150").unwrap().unwrap().bytes, [150; 64 << 10]);
        assert_eq!(counts.requests() - opened, 1);
    }
}
