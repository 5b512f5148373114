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
    let missing = || StoreError::Invalid(format!("{location}: not found"));
    // Its version first: a file replaced before it is read shows a newer version next time.
    let version = home.head(key)?.ok_or_else(missing)?;
    let bytes = home.get_bounded(key, MAX_JSON)?.ok_or_else(missing)?;
    let catalog = json::JsonCatalog::parse(location, &bytes.bytes)?;
    Ok(
        ReferenceStore::new(Box::new(catalog), home, location, remote)?
            .with_version(format!("kerchunk {}", version.token())),
    )
}

/// The Parquet reference directory `home`, found at `location`.
pub fn open_parquet(
    home: Arc<dyn Store>,
    location: &str,
    remote: &RemoteOptions,
) -> Result<ReferenceStore, StoreError> {
    let missing = || StoreError::Invalid(format!("{location}/.zmetadata: missing"));
    // Its version first: rewritten with the references, it names their version.
    let version = home.head(".zmetadata")?.ok_or_else(missing)?;
    let catalog = parquet::ParquetCatalog::open(home.clone(), location)?;
    Ok(
        ReferenceStore::new(Box::new(catalog), home, location, remote)?
            .with_version(format!("kerchunk parquet {}", version.token())),
    )
}

/// A JSON value as text: a string as it is, anything else as JSON (fsspec accepts both).
fn text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::DirStore;
    use std::time::{Duration, SystemTime};

    #[test]
    fn a_rewritten_reference_file_is_another_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("refs.json");
        let write = |target: &str, secs| {
            let refs = format!(r#"{{"version": 1, "refs": {{"a/0": ["{target}", 0, 8]}}}}"#);
            std::fs::write(&path, refs).unwrap();
            let f = std::fs::File::options().write(true).open(&path).unwrap();
            f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
                .unwrap();
        };
        let version = || {
            let home: Arc<dyn Store> = Arc::new(DirStore::new(dir.path()).unwrap());
            let location = path.to_str().unwrap();
            open_json(home, "refs.json", location, &RemoteOptions::default())
                .unwrap()
                .version()
                .unwrap()
        };
        // The same lengths, another target: the listing alone would not tell them apart.
        write("day1.nc", 1_000);
        let first = version();
        assert_eq!(first, version());
        write("day2.nc", 2_000);
        assert_ne!(first, version());
    }
}
