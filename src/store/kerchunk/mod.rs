//! kerchunk reference sets as stores: a JSON file (versions 0 and 1) or a Parquet directory
//! (fsspec's layout), whose keys read inline data or byte ranges of other files.

mod json;
mod parquet;
mod templates;

pub use self::parquet::is_reference_index;

use super::references::ReferenceStore;
use super::{RemoteOptions, Store, StoreError};
use std::sync::Arc;

/// The largest JSON reference set read.
const MAX_JSON: u64 = 4 << 30;

/// The JSON reference set `key` of `home`, found at `location` (a path or URL).
pub fn open_json(
    home: Arc<dyn Store>,
    key: &str,
    location: &str,
    remote: &RemoteOptions,
) -> Result<ReferenceStore, StoreError> {
    let bytes = home
        .get_bounded(key, MAX_JSON)?
        .ok_or_else(|| StoreError::Invalid(format!("{location}: not found")))?;
    let catalog = json::JsonCatalog::parse(location, &bytes.bytes)?;
    ReferenceStore::new(Box::new(catalog), home, location, remote)
}

/// The Parquet reference directory `home`, found at `location`.
pub fn open_parquet(
    home: Arc<dyn Store>,
    location: &str,
    remote: &RemoteOptions,
) -> Result<ReferenceStore, StoreError> {
    let catalog = parquet::ParquetCatalog::open(home.clone(), location)?;
    ReferenceStore::new(Box::new(catalog), home, location, remote)
}

/// A JSON value as text: a string as it is, anything else as JSON (fsspec accepts both).
fn text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
