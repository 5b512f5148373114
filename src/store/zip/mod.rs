//! A store inside a zip file (zarr-python's `ZipStore`, or any zip of a store directory), local
//! or an object of a remote store ([`ZipBytes`]).
//!
//! The central directory is read once at open, and only it: a member's local header is read on
//! its first read (so a bad one fails that member alone, and a remote zip opens in a few
//! requests whatever its number of members). Reads are checked against each member's CRC-32
//! ([`member`]).

mod bytes;
mod member;

pub use bytes::ZipBytes;

use super::{accept_key, check_key, Entry, EntryKind, Object, ObjectMeta, Store, StoreError};
use bytes::Cursor;
use member::{Member, Reader};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;
use zip::{CompressionMethod, ZipArchive};

/// A member's version tag: its content's CRC-32, as far as a zip tells one.
fn crc_tag(crc32: u32) -> String {
    format!("crc32:{crc32:08x}")
}

/// A read-only view of the members of one zip file.
pub struct ZipStore {
    reader: Reader,
    members: BTreeMap<String, Member>,
    dirs: BTreeMap<String, ()>,
    mtime: SystemTime,
}

impl ZipStore {
    /// Opens `path` and reads its central directory.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let opened = super::safe_open::open_path(path)
            .map_err(|e| StoreError::io(path.display().to_string(), e))?;
        Self::from_opened(path, opened)
    }

    /// The zip file `opened` (checked on its descriptor: a regular file), shown as `path`.
    pub(super) fn from_opened(
        path: &Path,
        opened: super::safe_open::Opened,
    ) -> Result<Self, StoreError> {
        let what = path.display().to_string();
        if opened.is_dir() {
            return Err(StoreError::Invalid(format!(
                "{what}: a directory, not a zip file"
            )));
        }
        let mtime = opened.mtime().unwrap_or(SystemTime::UNIX_EPOCH);
        Self::read(what, Arc::new(opened.file), mtime)
    }

    /// Reads the central directory of the zip file in `bytes` (named `what` in messages, last
    /// modified at `mtime`).
    pub fn read(
        what: String,
        bytes: Arc<dyn ZipBytes>,
        mtime: SystemTime,
    ) -> Result<Self, StoreError> {
        let size = bytes.size().map_err(|e| StoreError::io(&what, e))?;
        // The end record lies in the last 22 bytes plus its comment (at most 64 KiB). The zip
        // crate would look for it back to the start of the file, one read at a time: for a
        // large remote object that is not a zip, hours of requests.
        let tail_len = size.min(22 + u64::from(u16::MAX));
        let mut tail = vec![0u8; tail_len as usize];
        bytes
            .read_exact_at(&mut tail, size - tail_len)
            .map_err(|e| StoreError::io(&what, e))?;
        if !tail.windows(4).any(|w| w == b"PK\x05\x06") {
            return Err(StoreError::Invalid(format!(
                "{what}: not a zip file: no end of central directory in its last {tail_len} bytes"
            )));
        }
        let meta = ZipArchive::new(Cursor::new(&*bytes, size))
            .map_err(|e| StoreError::Invalid(format!("{what}: not a readable zip file: {e}")))?
            .metadata();
        let mut members = BTreeMap::new();
        let mut dirs = BTreeMap::new();
        for index in 0..meta.len() {
            // The central directory only: no read.
            let m = meta
                .entry(index)
                .map_err(|e| StoreError::Invalid(format!("{what}: member {index}: {e}")))?;
            let name = match m.name() {
                Ok(name) => name.trim_start_matches("./").to_string(),
                Err(e) => {
                    log::warn!("{what}: member {index} left out: its name: {e}");
                    continue;
                }
            };
            if m.is_dir() {
                let dir = name.trim_end_matches('/');
                if !dir.is_empty() && accept_key(&what, dir) {
                    dirs.insert(dir.to_string(), ());
                }
                continue;
            }
            if !accept_key(&what, &name) {
                continue;
            }
            // Read in place only when its bytes are the member as it is: not encrypted
            // (the zip crate refuses those, with no password), and as long as it says.
            let in_place = m.compression() == CompressionMethod::Stored
                && !m.encrypted()
                && m.compressed_size() == m.size();
            let mtime = m.last_modified().and_then(zip_time);
            let member = Member::new(index, in_place, m.size(), mtime, m.crc32());
            // Later members of the same name replace earlier ones, as zip readers do.
            members.insert(name, member);
        }
        if let Some(top) = single_top_folder(&members) {
            log::info!("{what}: the store is the zip's one top folder {top:?}");
            members = strip_folder(members, &top);
            dirs = strip_folder(dirs, &top);
        }
        for name in members.keys() {
            let mut p = name.as_str();
            while let Some((parent, _)) = p.rsplit_once('/') {
                dirs.insert(parent.to_string(), ());
                p = parent;
            }
        }
        Ok(ZipStore {
            reader: Reader::new(what, bytes, size, meta),
            members,
            dirs,
            mtime,
        })
    }
}

/// Metadata objects one of which marks the root group of a store (a top folder holding only
/// `.zarray` is an array of an implicit root group, and stays where it is).
const ROOT_MARKERS: [&str; 4] = ["zarr.json", ".zgroup", ".zmetadata", ".nczarr"];

/// `"store.zarr/"` when every member lies in that one folder, the zip's root holds no metadata and
/// the folder does: what `zip -r store.zip store.zarr` makes and netCDF-c's zips look like.
fn single_top_folder(members: &BTreeMap<String, Member>) -> Option<String> {
    let (first, _) = members.first_key_value()?;
    let top = format!("{}/", first.split_once('/')?.0);
    let all_inside = members.keys().all(|k| k.starts_with(&top));
    let marked = ROOT_MARKERS
        .iter()
        .any(|m| members.contains_key(&format!("{top}{m}")));
    (all_inside && marked).then_some(top)
}

/// The entries of `map` inside `folder` (`"a/"`), renamed relative to it; the folder itself and
/// anything outside it are left out.
fn strip_folder<V>(map: BTreeMap<String, V>, folder: &str) -> BTreeMap<String, V> {
    map.into_iter()
        .filter_map(|(k, v)| {
            let rest = k.strip_prefix(folder)?;
            (!rest.is_empty()).then(|| (rest.to_string(), v))
        })
        .collect()
}

/// Converts a zip (MS-DOS) timestamp, taken as UTC, to a `SystemTime`.
fn zip_time(t: zip::DateTime) -> Option<SystemTime> {
    let day = chrono::NaiveDate::from_ymd_opt(t.year().into(), t.month().into(), t.day().into())?;
    let time = day.and_hms_opt(t.hour().into(), t.minute().into(), t.second().into())?;
    Some(time.and_utc().into())
}

impl Store for ZipStore {
    fn get_bounded(&self, key: &str, max: u64) -> Result<Option<Object>, StoreError> {
        check_key(key)?;
        let Some(m) = self.members.get(key) else {
            return Ok(None);
        };
        super::too_large(key, m.size, max)?;
        let bytes = self.reader.read(key, m, 0, u64::MAX)?;
        Ok(Some(Object {
            bytes,
            mtime: m.mtime,
        }))
    }

    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Option<Vec<u8>>, StoreError> {
        check_key(key)?;
        match self.members.get(key) {
            Some(m) => self.reader.read(key, m, start, len).map(Some),
            None => Ok(None),
        }
    }

    fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        check_key(key)?;
        Ok(self.members.get(key).map(|m| ObjectMeta {
            size: m.size,
            mtime: m.mtime,
            tag: Some(crc_tag(m.crc32)),
        }))
    }

    fn list_dir(&self, prefix: &str) -> Result<Vec<Entry>, StoreError> {
        check_key(prefix)?;
        let base = super::join_key(prefix, "");
        // Every folder holding a member is in `dirs`: the members here are the objects.
        let mut out: BTreeMap<String, Entry> = BTreeMap::new();
        for (name, m) in self.members.range(base.clone()..) {
            let Some(rest) = name.strip_prefix(&base) else {
                break;
            };
            if !rest.contains('/') {
                let entry = Entry {
                    name: rest.to_string(),
                    kind: EntryKind::Object(m.size),
                    mtime: m.mtime,
                    tag: Some(crc_tag(m.crc32)),
                };
                out.insert(entry.name.clone(), entry);
            }
        }
        for dir in self.dirs.range(base.clone()..).map(|(d, _)| d) {
            let Some(rest) = dir.strip_prefix(&base) else {
                break;
            };
            if !rest.is_empty() && !rest.contains('/') {
                out.entry(rest.to_string()).or_insert(Entry {
                    name: rest.to_string(),
                    kind: EntryKind::Prefix,
                    mtime: None,
                    tag: None,
                });
            }
        }
        Ok(out.into_values().collect())
    }

    fn mtime(&self) -> SystemTime {
        self.mtime
    }

    fn describe(&self) -> String {
        self.reader.what.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::listed_names as names;
    use std::io::Write;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn zip_of(names: &[&str]) -> ZipStore {
        let mut buf = std::io::Cursor::new(Vec::new());
        {
            let mut w = zip::ZipWriter::new(&mut buf);
            let opts = zip::write::SimpleFileOptions::default();
            for name in names {
                if let Some(dir) = name.strip_suffix('/') {
                    w.add_directory(dir, opts).unwrap();
                } else {
                    w.start_file(*name, opts).unwrap();
                    w.write_all(name.as_bytes()).unwrap();
                }
            }
            w.finish().unwrap();
        }
        let bytes: Arc<dyn ZipBytes> = Arc::new(Bytes(buf.into_inner()));
        ZipStore::read("t.zip".into(), bytes, SystemTime::UNIX_EPOCH).unwrap()
    }

    #[test]
    fn a_member_rewritten_with_its_size_and_time_has_another_version() {
        // Writers with fixed times (Python's ZipInfo, reproducible builds) leave only the
        // CRC-32 to tell two versions of a same-size member apart.
        let zip = |content: &[u8]| {
            let mut buf = std::io::Cursor::new(Vec::new());
            let mut w = zip::ZipWriter::new(&mut buf);
            let opts = zip::write::SimpleFileOptions::default()
                .last_modified_time(zip::DateTime::default());
            w.start_file("a/0", opts).unwrap();
            w.write_all(content).unwrap();
            w.finish().unwrap();
            let bytes: Arc<dyn ZipBytes> = Arc::new(Bytes(buf.into_inner()));
            ZipStore::read("t.zip".into(), bytes, SystemTime::UNIX_EPOCH).unwrap()
        };
        let (old, new) = (zip(b"day 1"), zip(b"day 2"));
        let (a, b) = (
            &old.list_dir("a").unwrap()[0],
            &new.list_dir("a").unwrap()[0],
        );
        assert_eq!((&a.kind, a.mtime), (&b.kind, b.mtime));
        assert_ne!(a.tag, b.tag);
        assert_eq!(old.head("a/0").unwrap().unwrap().tag, a.tag);
    }

    struct Bytes(Vec<u8>);

    impl ZipBytes for Bytes {
        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
            let start = offset as usize;
            buf.copy_from_slice(&self.0[start..start + buf.len()]);
            Ok(())
        }

        fn size(&self) -> std::io::Result<u64> {
            Ok(self.0.len() as u64)
        }
    }

    /// Bytes that count the reads made of them, and the bytes read.
    struct Counted(Bytes, AtomicU64, AtomicU64);

    impl Counted {
        fn new(bytes: Vec<u8>) -> Arc<Self> {
            Arc::new(Counted(Bytes(bytes), AtomicU64::new(0), AtomicU64::new(0)))
        }

        fn reads(&self) -> u64 {
            self.1.load(Ordering::Relaxed)
        }

        fn bytes_read(&self) -> u64 {
            self.2.load(Ordering::Relaxed)
        }
    }

    impl ZipBytes for Counted {
        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
            self.1.fetch_add(1, Ordering::Relaxed);
            self.2.fetch_add(buf.len() as u64, Ordering::Relaxed);
            self.0.read_exact_at(buf, offset)
        }

        fn size(&self) -> std::io::Result<u64> {
            self.0.size()
        }
    }

    /// A zip of member `m` holding `content`, compressed by `method`.
    fn one_member(method: CompressionMethod, content: &[u8]) -> Vec<u8> {
        let mut buf = std::io::Cursor::new(Vec::new());
        let mut w = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default().compression_method(method);
        w.start_file("m", opts).unwrap();
        w.write_all(content).unwrap();
        w.finish().unwrap();
        buf.into_inner()
    }

    /// 1 MiB that compresses to about half: values 0..16 of a linear congruential generator.
    fn half_random() -> Vec<u8> {
        let mut x = 1u32;
        (0..1 << 20)
            .map(|_| {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (x >> 28) as u8
            })
            .collect()
    }

    #[test]
    fn the_parts_of_a_compressed_member_cost_one_inflation() {
        // A shard's index and its 64 inner chunks, read as a shard reader does.
        let content = half_random();
        let zip = one_member(CompressionMethod::Deflated, &content);
        let bytes = Counted::new(zip.clone());
        let z = ZipStore::read("t.zip".into(), bytes.clone(), SystemTime::UNIX_EPOCH).unwrap();
        let opened = bytes.bytes_read();
        let (suffix, meta) = z.get_suffix("m", 1024).unwrap().unwrap();
        assert_eq!(
            (&suffix[..], meta.size),
            (&content[content.len() - 1024..], 1 << 20)
        );
        for i in (0..64u64).rev() {
            let part = z.get_range("m", i << 14, 1 << 14).unwrap().unwrap();
            assert_eq!(part, content[(i << 14) as usize..((i + 1) << 14) as usize]);
        }
        // The compressed member, read once (and its local header).
        let read = bytes.bytes_read() - opened;
        assert!(
            read < zip.len() as u64 + 4096,
            "{read} bytes read of {}",
            zip.len()
        );
    }

    #[test]
    fn a_stored_member_is_checked_once_before_parts_of_it_are_served() {
        let content = half_random();
        let zip = one_member(CompressionMethod::Stored, &content);
        let bytes = Counted::new(zip.clone());
        let z = ZipStore::read("t.zip".into(), bytes.clone(), SystemTime::UNIX_EPOCH).unwrap();
        let opened = bytes.bytes_read();
        for i in 0..64u64 {
            let part = z.get_range("m", i << 14, 1 << 14).unwrap().unwrap();
            assert_eq!(part, content[(i << 14) as usize..((i + 1) << 14) as usize]);
        }
        // Checked once (1 MiB), then the parts (1 MiB), and the local header.
        let read = bytes.bytes_read() - opened;
        assert!(read < (2 << 20) + 4096, "{read} bytes read");
        // One byte changed: no part of it is served, not even one far from that byte.
        let mut bad = zip;
        let header = |at: usize| u16::from_le_bytes([bad[at], bad[at + 1]]) as usize;
        let data_start = 30 + header(26) + header(28);
        bad[data_start + 1000] ^= 1;
        let z = ZipStore::read("t.zip".into(), Arc::new(Bytes(bad)), SystemTime::UNIX_EPOCH);
        let z = z.unwrap();
        for _ in 0..2 {
            let e = z.get_range("m", 900_000, 16).unwrap_err().to_string();
            assert!(e.contains("t.zip:m: ") && e.contains("CRC-32"), "{e}");
        }
        assert!(z.get("m").is_err());
    }

    #[test]
    fn a_file_with_no_end_record_near_its_end_is_refused_after_one_read() {
        // An end record 1 MiB before the end (as in a zip with data appended): not found.
        let mut data = vec![0u8; 2 << 20];
        data[1 << 20..(1 << 20) + 4].copy_from_slice(b"PK\x05\x06");
        let bytes = Counted::new(data);
        let err = ZipStore::read("t.zip".into(), bytes.clone(), SystemTime::UNIX_EPOCH)
            .err()
            .unwrap();
        assert!(
            err.to_string().contains("no end of central directory"),
            "{err}"
        );
        assert_eq!(bytes.reads(), 1);
    }

    #[test]
    fn an_encrypted_member_is_not_served_as_it_is_stored() {
        let mut buf = std::io::Cursor::new(Vec::new());
        {
            let mut w = zip::ZipWriter::new(&mut buf);
            let stored = zip::write::SimpleFileOptions::default()
                .compression_method(CompressionMethod::Stored);
            w.start_file("a", stored).unwrap();
            w.write_all(b"secret").unwrap();
            w.finish().unwrap();
        }
        let mut bytes = buf.into_inner();
        // Marked encrypted (general purpose bit 0) in its local and central headers.
        bytes[6] |= 1;
        let central = bytes.windows(4).position(|w| w == b"PK\x01\x02").unwrap();
        bytes[central + 8] |= 1;
        let z = ZipStore::read(
            "t.zip".into(),
            Arc::new(Bytes(bytes)),
            SystemTime::UNIX_EPOCH,
        )
        .unwrap();
        let got = z.get("a");
        assert!(got.is_err(), "{:?}", got.map(|o| o.map(|o| o.bytes)));
    }

    #[test]
    fn one_top_folder_holding_a_store_is_the_root() {
        let z = zip_of(&[
            "s.zarr/",
            "s.zarr/.zgroup",
            "s.zarr/v/",
            "s.zarr/v/.zarray",
            "s.zarr/v/0",
        ]);
        assert_eq!(names(&z, ""), [".zgroup", "v"]);
        assert_eq!(z.get("v/0").unwrap().unwrap().bytes, b"s.zarr/v/0");
        assert!(z.get("s.zarr/.zgroup").unwrap().is_none());
        // Not a store folder, or not the only one: left as it is.
        let array = zip_of(&["a/.zarray", "a/0"]);
        assert_eq!(names(&array, ""), ["a"]);
        let two = zip_of(&["s/.zgroup", "t/.zgroup"]);
        assert_eq!(names(&two, ""), ["s", "t"]);
        let rooted = zip_of(&[".zgroup", "s/.zgroup"]);
        assert_eq!(names(&rooted, ""), [".zgroup", "s"]);
    }

    #[test]
    fn zip_times_are_utc_seconds() {
        use std::time::Duration;
        let t = zip::DateTime::from_date_and_time(2024, 3, 1, 12, 30, 10).unwrap();
        // 2024-03-01T12:30:10Z
        assert_eq!(
            zip_time(t),
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_709_296_210))
        );
    }
}
