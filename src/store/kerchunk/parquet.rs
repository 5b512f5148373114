//! kerchunk reference sets in Parquet (fsspec's `LazyReferenceMapper` layout): a directory with
//! `.zmetadata` (`{"metadata": {key: JSON}, "record_size": N}`) and, per array `VAR`, files
//! `VAR/refs.R.parq` of `record_size` rows with columns `path`, `offset`, `size` and `raw`. The
//! chunk with C-order number `i` is row `i % N` of file `i / N`. A row with `raw` holds the
//! bytes; one with a `path` names a target (offset and size 0: the whole file); one with
//! neither is a missing chunk, and so is every chunk of an absent file.
//!
//! Which record files exist is taken from the listing of the directory made at mount, where
//! the store can list: a file it does not show is absent, unasked; one it shows but that a read
//! finds absent is asked for again and counts as absent only once a fresh listing agrees (see
//! [`absent`]), never on one 404. Where the store cannot list (plain HTTP), a file is absent
//! once it is still absent when asked again after the pauses of [`absent::ask_again`]. An
//! absence found is kept with the record files read, so a missing file is asked for again only
//! once it has left them.

use crate::store::absent::{self, Recheck};
use crate::store::references::{list_references, listed_size, listed_tag, Catalog, Reference};
use crate::store::{accept_key, Entry, EntryKind, FlightLru, Store, StoreError, MAX_LISTED};
use parking_lot::Mutex;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The largest `.zmetadata` or record file read (a hostile one is not allocated in full).
const MAX_FILE: u64 = 1 << 30;
/// Bytes of decoded record files kept (their rows and inline data, as [`record_bytes`] counts
/// them).
const RECORDS_KEPT: u64 = 256 << 20;
/// Record files read at once while an array's chunks are listed, at most.
const LISTING_READS: usize = 8;

/// One row of a record file: what one chunk refers to.
type Row = Option<Reference>;

/// A record file as read: its rows, `None` when it is absent (removed since the listing at
/// mount, or no listing to tell), or why they cannot be read where that will not change (the
/// file is malformed or too large), kept so that the file is not read again for every lookup.
/// A failure that may pass (the network, a fault) is not kept: the next use asks again.
type Record = Result<Option<Arc<Vec<Row>>>, StoreError>;

/// What keeping an absent record file costs, about (its name and the LRU's bookkeeping).
const ABSENT_BYTES: u64 = 128;

/// The references of a Parquet reference directory.
pub struct ParquetCatalog {
    /// The directory's store.
    home: Arc<dyn Store>,
    what: String,
    /// Metadata documents by key (`.zgroup`, `VAR/.zarray`, ...), as JSON text.
    metadata: BTreeMap<String, Reference>,
    record_size: u64,
    /// The numbers of the record files the listing at mount showed, sorted, by array; `None`
    /// where the store cannot list.
    listed: Option<HashMap<String, Vec<u64>>>,
    records: FlightLru<String, Record, StoreError>,
    /// How long listing one array's chunks may take (its record files read).
    timeout: Duration,
}

/// True when `zmetadata` is the `.zmetadata` of a Parquet reference directory (it has a
/// `record_size`), not Zarr's consolidated metadata.
pub fn is_reference_index(zmetadata: &[u8]) -> bool {
    serde_json::from_slice::<Value>(zmetadata).is_ok_and(|v| v.get("record_size").is_some())
}

impl ParquetCatalog {
    /// Reads the `.zmetadata` of the directory `home` (shown as `what`), whose files a listing
    /// made just before showed to be `files` (`None`: the store cannot list). Listing an
    /// array's chunks may take `timeout`.
    pub fn open(
        home: Arc<dyn Store>,
        what: &str,
        files: Option<HashSet<String>>,
        timeout: Duration,
    ) -> Result<Self, StoreError> {
        let bad = |why: String| StoreError::Invalid(format!("{what}/.zmetadata: {why}"));
        let index = home
            .get_bounded(".zmetadata", MAX_FILE)?
            .ok_or_else(|| bad("missing".into()))?;
        let doc: Value = serde_json::from_slice(&index.bytes).map_err(|e| bad(e.to_string()))?;
        let record_size = doc
            .get("record_size")
            .and_then(Value::as_u64)
            .filter(|n| *n > 0)
            .ok_or_else(|| bad("no positive record_size".into()))?;
        let Some(Value::Object(listed)) = doc.get("metadata") else {
            return Err(bad("no metadata object".into()));
        };
        let metadata = listed
            .iter()
            .filter(|(key, _)| accept_key(what, key))
            .map(|(key, value)| {
                let text = super::text(value).into_bytes();
                (key.clone(), Reference::Inline(Arc::from(text)))
            })
            .collect();
        Ok(ParquetCatalog {
            home,
            what: what.to_string(),
            metadata,
            record_size,
            listed: files.map(|keys| record_numbers(&keys)),
            records: FlightLru::new(RECORDS_KEPT, record_bytes),
            timeout,
        })
    }

    /// The number of chunks along each axis of the array `field`, from its `.zarray`.
    fn chunk_counts(&self, field: &str) -> Option<Vec<u64>> {
        let Some(Reference::Inline(text)) = self.metadata.get(&format!("{field}/.zarray")) else {
            return None;
        };
        let zarray: Value = serde_json::from_slice(text).ok()?;
        let numbers = |name: &str| -> Option<Vec<u64>> {
            zarray
                .get(name)?
                .as_array()?
                .iter()
                .map(Value::as_u64)
                .collect()
        };
        let (shape, chunks) = (numbers("shape")?, numbers("chunks")?);
        if shape.len() != chunks.len() || chunks.contains(&0) {
            return None;
        }
        let counts: Vec<u64> = shape
            .iter()
            .zip(&chunks)
            .map(|(s, c)| s.div_ceil(*c))
            .collect();
        Some(if counts.is_empty() { vec![1] } else { counts })
    }

    /// The chunks the record files of array `field` refer to (none when `field` is no array):
    /// the record files listed at mount (every possible one where the store cannot list), read
    /// [`LISTING_READS`] at a time, within the catalog's timeout and [`MAX_LISTED`] chunks.
    fn chunk_entries(&self, field: &str) -> Result<Vec<Entry>, StoreError> {
        let Some(counts) = self.chunk_counts(field) else {
            return Ok(Vec::new());
        };
        let total = counts.iter().try_fold(1u64, |n, c| n.checked_mul(*c));
        let Some(total) = total else {
            return Ok(Vec::new());
        };
        let records = total.div_ceil(self.record_size);
        let listed: Option<&[u64]> = self.listed.as_ref().map(|listed| {
            let numbers = listed.get(field).map_or(&[][..], Vec::as_slice);
            &numbers[..numbers.partition_point(|n| *n < records)]
        });
        let count = listed.map_or(records, |n| n.len() as u64);
        let number = |i: u64| listed.map_or(i, |n| n[i as usize]);
        let deadline = Instant::now() + self.timeout;
        let (next, held) = (AtomicU64::new(0), AtomicUsize::new(0));
        let (out, failed) = (Mutex::new(Vec::new()), Mutex::new(None));
        let work = || loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= count || failed.lock().is_some() {
                break;
            }
            let got = if Instant::now() > deadline {
                // The server answers, but the listing as a whole takes too long.
                Err(StoreError::Remote {
                    what: format!("{}/{field}", self.what),
                    cause: format!(
                        "listing its chunks from its {count} record files takes longer than \
                         --timeout ({} s), {i} of them asked for; not listed",
                        self.timeout.as_secs_f64()
                    ),
                })
            } else {
                self.record(field, number(i))
            };
            let rows = match got {
                Ok(Some(rows)) => rows,
                Ok(None) => continue,
                Err(e) => {
                    failed.lock().get_or_insert(e);
                    break;
                }
            };
            let entries = entries_of(&counts, total, number(i) * self.record_size, &rows);
            if held.fetch_add(entries.len(), Ordering::Relaxed) + entries.len() > MAX_LISTED {
                failed.lock().get_or_insert(StoreError::TooMany {
                    what: format!("{}/{field}", self.what),
                    why: format!("more than {MAX_LISTED} chunks to list"),
                });
                break;
            }
            out.lock().extend(entries);
        };
        let threads = self.home.parallelism().clamp(1, LISTING_READS);
        std::thread::scope(|scope| {
            for _ in 1..(threads as u64).min(count) {
                // A thread that cannot start leaves its share to the others and this one.
                let _ = std::thread::Builder::new()
                    .name("parquet-list".into())
                    .spawn_scoped(scope, work);
            }
            work();
        });
        match failed.into_inner() {
            Some(e) => Err(e),
            None => Ok(out.into_inner()),
        }
    }

    /// The rows of record file `number` of array `field`, read on first use (once however
    /// many lookups want it at the same time); an absent file has none.
    fn record(&self, field: &str, number: u64) -> Result<Option<Arc<Vec<Row>>>, StoreError> {
        let file = format!("{field}/refs.{number}.parq");
        let listed = match &self.listed {
            Some(listed) => {
                let shown = listed
                    .get(field)
                    .is_some_and(|n| n.binary_search(&number).is_ok());
                if !shown {
                    return Ok(None);
                }
                true
            }
            None => false,
        };
        self.records.get_or_load(
            file.clone(),
            || self.bad(&file, &"its reader panicked"),
            || self.read_record(&file, listed),
        )?
    }

    /// Reads record file `file`; one the listing at mount showed (`listed`) but answered as
    /// absent is checked (see [`absent::recheck`]) before it counts as absent.
    fn read_record(&self, file: &str, listed: bool) -> Result<Record, StoreError> {
        let read = || -> Result<Option<Record>, StoreError> {
            match self.home.get_bounded(file, MAX_FILE) {
                Ok(Some(object)) => Ok(Some(
                    rows(&object.bytes, self.record_size)
                        .map(|rows| Some(Arc::new(rows)))
                        .map_err(|e| self.bad(file, &e)),
                )),
                Ok(None) => Ok(None),
                Err(e @ StoreError::TooLarge { .. }) => Ok(Some(Err(e))),
                Err(e) => Err(e),
            }
        };
        if let Some(record) = read()? {
            return Ok(record);
        }
        if !listed {
            // No listing to vouch for it: absent once asked again after the pauses (kept for
            // the mount, so one transient 404 must not decide).
            return Ok(absent::ask_again(file, read)?.unwrap_or(Ok(None)));
        }
        match absent::recheck(self.home.as_ref(), file, read)? {
            Recheck::Found(record) => Ok(record),
            Recheck::Removed => {
                log::info!(
                    "{}/{file}: removed since the directory was listed: its chunks read as missing",
                    self.what
                );
                Ok(Ok(None))
            }
            Recheck::Fault => Err(StoreError::Remote {
                what: format!("{}/{file}", self.what),
                cause: format!(
                    "listed, but answered {} times that it does not exist; a fault, its \
                     chunks not read as missing",
                    absent::ASKS
                ),
            }),
        }
    }

    /// The error for record file `file` that cannot be read as one.
    fn bad(&self, file: &str, e: &dyn std::fmt::Display) -> StoreError {
        StoreError::Invalid(format!("{}/{file}: not a reference record: {e}", self.what))
    }
}

/// The entries of the chunks the rows of one record file refer to, the first numbered `first`
/// among the `total` chunks of a grid of `counts` chunks along each axis.
fn entries_of(counts: &[u64], total: u64, first: u64, rows: &[Row]) -> Vec<Entry> {
    let mut entries = Vec::new();
    for (number, row) in (first..total).zip(rows.iter()) {
        let Some(reference) = row else { continue };
        let mut index = vec![0; counts.len()];
        let mut rest = number;
        for (i, n) in index.iter_mut().zip(counts).rev() {
            *i = rest % n;
            rest /= n;
        }
        let name: Vec<String> = index.iter().map(u64::to_string).collect();
        entries.push(Entry {
            name: name.join("."),
            kind: EntryKind::Object(listed_size(reference)),
            mtime: None,
            tag: Some(listed_tag(reference)),
        });
    }
    entries
}

/// The record files among `keys` (`VAR/refs.N.parq`), as their numbers by array, sorted.
fn record_numbers(keys: &HashSet<String>) -> HashMap<String, Vec<u64>> {
    let mut out: HashMap<String, Vec<u64>> = HashMap::new();
    for key in keys {
        let Some((field, name)) = key.rsplit_once('/') else {
            continue;
        };
        let number = name
            .strip_prefix("refs.")
            .and_then(|n| n.strip_suffix(".parq"))
            .and_then(|n| n.parse().ok());
        if let Some(number) = number {
            out.entry(field.to_string()).or_default().push(number);
        }
    }
    out.values_mut().for_each(|numbers| numbers.sort_unstable());
    out
}

/// What a decoded record file holds in memory, about: its rows and their inline data (URLs are
/// shared); a failure kept, its message; an absence, [`ABSENT_BYTES`].
fn record_bytes(record: &Record) -> u64 {
    record.as_ref().map_or_else(
        |e| e.to_string().len() as u64,
        |rows| {
            let Some(rows) = rows else {
                return ABSENT_BYTES;
            };
            let inline: usize = rows
                .iter()
                .map(|r| match r {
                    Some(Reference::Inline(b)) => b.len(),
                    _ => 0,
                })
                .sum();
            (rows.len() * std::mem::size_of::<Row>() + inline) as u64
        },
    )
}

/// Why a record file could not be read.
#[derive(Debug, thiserror::Error)]
enum BadRecord {
    /// Not a Parquet file arrow-rs can read.
    #[error(transparent)]
    Parquet(#[from] parquet::errors::ParquetError),
    /// An offset or size column that is not a count of bytes.
    #[error("{0}")]
    Number(String),
    /// A `raw` value after `base64:` that is not base64.
    #[error("bad base64 data in raw: {0}")]
    Base64(#[from] base64::DecodeError),
}

/// The references of one record file, in row order.
fn rows(bytes: &[u8], record_size: u64) -> Result<Vec<Row>, BadRecord> {
    let reader = SerializedFileReader::new(bytes::Bytes::copy_from_slice(bytes))?;
    let mut out = Vec::new();
    let mut urls: BTreeMap<String, Arc<str>> = BTreeMap::new();
    // A record holds `record_size` rows: rows past them are never looked up, and not decoded.
    for row in reader.get_row_iter(None)?.take(record_size as usize) {
        let row = row?;
        let (mut path, mut offset, mut size, mut raw) = (None, 0u64, 0u64, None);
        for (name, field) in row.get_column_iter() {
            let negative = |n: i64| BadRecord::Number(format!("{name} {n} is negative"));
            let number = || match field {
                Field::Long(n) => u64::try_from(*n).map_err(|_| negative(*n)),
                Field::Int(n) => u64::try_from(*n).map_err(|_| negative(i64::from(*n))),
                Field::Null => Ok(0),
                other => Err(BadRecord::Number(format!(
                    "{name} is {other:?}, not a number"
                ))),
            };
            match (name.as_str(), field) {
                ("path", Field::Str(s)) => path = Some(s.clone()),
                ("raw", Field::Bytes(b)) => raw = Some(b.data().to_vec()),
                ("raw", Field::Str(s)) => raw = Some(s.clone().into_bytes()),
                ("offset", _) => offset = number()?,
                ("size", _) => size = number()?,
                _ => {}
            }
        }
        out.push(match (raw, path) {
            (Some(raw), _) => Some(Reference::Inline(Arc::from(super::inline_data(raw)?))),
            (None, Some(path)) => {
                let url = urls
                    .entry(path)
                    .or_insert_with_key(|p| Arc::from(p.as_str()));
                let range = (offset, size) != (0, 0);
                Some(Reference::Target {
                    url: url.clone(),
                    range: range.then_some((offset, size)),
                    recorded: None,
                })
            }
            (None, None) => None,
        });
    }
    Ok(out)
}

impl Catalog for ParquetCatalog {
    fn lookup(&self, key: &str) -> Result<Option<Reference>, StoreError> {
        if let Some(r) = self.metadata.get(key) {
            return Ok(Some(r.clone()));
        }
        let Some((field, chunk)) = key.rsplit_once('/') else {
            return Ok(None);
        };
        let Some(counts) = self.chunk_counts(field) else {
            return Ok(None);
        };
        let index: Option<Vec<u64>> = chunk.split('.').map(|c| c.parse().ok()).collect();
        let Some(index) = index.filter(|i| i.len() == counts.len()) else {
            return Ok(None);
        };
        let mut number = 0u64;
        for (i, n) in index.iter().zip(&counts) {
            if i >= n {
                return Ok(None);
            }
            number = match number.checked_mul(*n).and_then(|m| m.checked_add(*i)) {
                Some(m) => m,
                None => return Ok(None),
            };
        }
        let record = number / self.record_size;
        // A missing record file holds no chunk (the fill value, as fsspec reads it); one too
        // short for the chunk is damaged.
        let Some(rows) = self.record(field, record)? else {
            return Ok(None);
        };
        let row = (number % self.record_size) as usize;
        match rows.get(row) {
            Some(reference) => Ok(reference.clone()),
            None => Err(StoreError::Invalid(format!(
                "{}/{field}/refs.{record}.parq: {} rows, none for chunk {chunk} (row {row})",
                self.what,
                rows.len()
            ))),
        }
    }

    /// The metadata documents below `prefix` and, for an array, its chunks (each tagged with
    /// its reference: the record files' content is in the listing).
    fn list_dir(&self, prefix: &str) -> Result<Vec<Entry>, StoreError> {
        let mut entries = list_references(&self.what, &self.metadata, prefix);
        entries.extend(self.chunk_entries(prefix)?);
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }
}
