//! kerchunk reference sets in Parquet (fsspec's `LazyReferenceMapper` layout): a directory with
//! `.zmetadata` (`{"metadata": {key: JSON}, "record_size": N}`) and, per array `VAR`, files
//! `VAR/refs.R.parq` of `record_size` rows with columns `path`, `offset`, `size` and `raw`. The
//! chunk with C-order number `i` is row `i % N` of file `i / N`. A row with `raw` holds the
//! bytes; one with a `path` names a target (offset and size 0: the whole file); one with
//! neither is a missing chunk, and so is every chunk of an absent file.

use crate::store::references::{list_references, listed_size, listed_tag, Catalog, Reference};
use crate::store::{accept_key, Entry, EntryKind, FlightLru, Store, StoreError};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The largest `.zmetadata` or record file read (a hostile one is not allocated in full).
const MAX_FILE: u64 = 1 << 30;
/// Record files kept decoded.
/// Bytes of decoded record files kept (their rows and inline data, as [`record_bytes`] counts
/// them).
const RECORDS_KEPT: u64 = 256 << 20;

/// One row of a record file: what one chunk refers to.
type Row = Option<Reference>;

/// The references of a Parquet reference directory.
pub struct ParquetCatalog {
    /// The directory's store.
    home: Arc<dyn Store>,
    what: String,
    /// Metadata documents by key (`.zgroup`, `VAR/.zarray`, ...), as JSON text.
    metadata: BTreeMap<String, Reference>,
    record_size: u64,
    records: FlightLru<String, Option<Arc<Vec<Row>>>, StoreError>,
}

/// True when `zmetadata` is the `.zmetadata` of a Parquet reference directory (it has a
/// `record_size`), not Zarr's consolidated metadata.
pub fn is_reference_index(zmetadata: &[u8]) -> bool {
    serde_json::from_slice::<Value>(zmetadata).is_ok_and(|v| v.get("record_size").is_some())
}

impl ParquetCatalog {
    /// Reads the `.zmetadata` of the directory `home` (shown as `what`).
    pub fn open(home: Arc<dyn Store>, what: &str) -> Result<Self, StoreError> {
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
            records: FlightLru::new(RECORDS_KEPT, record_bytes),
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

    /// The chunks the record files of array `field` refer to (none when `field` is no array).
    fn chunk_entries(&self, field: &str) -> Result<Vec<Entry>, StoreError> {
        let Some(counts) = self.chunk_counts(field) else {
            return Ok(Vec::new());
        };
        let total = counts.iter().try_fold(1u64, |n, c| n.checked_mul(*c));
        let Some(total) = total else {
            return Ok(Vec::new());
        };
        let mut entries = Vec::new();
        for file_number in 0..total.div_ceil(self.record_size) {
            let Some(rows) = self.record(&format!("{field}/refs.{file_number}.parq"))? else {
                continue;
            };
            let first = file_number * self.record_size;
            for (number, row) in (first..total).zip(rows.iter()) {
                let Some(reference) = row else { continue };
                let mut index = vec![0; counts.len()];
                let mut rest = number;
                for (i, n) in index.iter_mut().zip(&counts).rev() {
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
        }
        Ok(entries)
    }

    /// The rows of record file `file`, read on first use (once however many lookups want it
    /// at the same time); an absent file has none.
    fn record(&self, file: &str) -> Result<Option<Arc<Vec<Row>>>, StoreError> {
        let bad = |e: &dyn std::fmt::Display| {
            StoreError::Invalid(format!("{}/{file}: not a reference record: {e}", self.what))
        };
        self.records.get_or_load(
            file.to_string(),
            || bad(&"its reader panicked"),
            || match self.home.get_bounded(file, MAX_FILE)? {
                Some(object) => {
                    let rows = rows(&object.bytes, self.record_size).map_err(|e| bad(&e))?;
                    Ok(Some(Arc::new(rows)))
                }
                None => Ok(None),
            },
        )
    }
}

/// What a decoded record file holds in memory, about: its rows and their inline data (URLs are
/// shared).
fn record_bytes(rows: &Option<Arc<Vec<Row>>>) -> u64 {
    rows.as_ref().map_or(0, |rows| {
        let inline: usize = rows
            .iter()
            .map(|r| match r {
                Some(Reference::Inline(b)) => b.len(),
                _ => 0,
            })
            .sum();
        (rows.len() * std::mem::size_of::<Row>() + inline) as u64
    })
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
        let file = format!("{field}/refs.{}.parq", number / self.record_size);
        // A missing record file holds no chunk (the fill value, as fsspec reads it); one too
        // short for the chunk is damaged.
        let Some(rows) = self.record(&file)? else {
            return Ok(None);
        };
        let row = (number % self.record_size) as usize;
        match rows.get(row) {
            Some(reference) => Ok(reference.clone()),
            None => Err(StoreError::Invalid(format!(
                "{}/{file}: {} rows, none for chunk {chunk} (row {row})",
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
