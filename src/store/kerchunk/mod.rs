//! kerchunk reference sets as stores: a JSON file (versions 0 and 1) or a Parquet directory
//! (fsspec's layout), whose keys read inline data or byte ranges of other files.

mod json;
mod parquet;
mod templates;

pub use self::parquet::is_reference_index;

use super::references::ReferenceStore;
use super::{describe_objects, digest, RemoteOptions, Store, StoreError};
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
    // The version is the content read: no other request, nothing between two of them.
    let version = format!("kerchunk {}", digest(&bytes.bytes));
    // A file named at the root of `home`: `home` is the directory holding it.
    let home_dir = (!key.is_empty() && !key.contains('/')).then(|| home.clone());
    let store = ReferenceStore::new(Box::new(catalog), home, home_dir, location, remote)?;
    Ok(store.with_version(version))
}

/// The Parquet reference directory `home`, found at `location`.
pub fn open_parquet(
    home: Arc<dyn Store>,
    location: &str,
    remote: &RemoteOptions,
) -> Result<ReferenceStore, StoreError> {
    // The version is every file of the directory as listed before any is read (a file
    // rewritten after the listing shows a newer version next time); the listing also tells
    // which record files exist. A server that cannot list (plain HTTP), a bucket that lets
    // objects be read but not listed, or a directory too large to list gives none: the listing
    // of each array still names every chunk's reference.
    let mut listing = Vec::new();
    let listed = match describe_objects(home.as_ref(), "", &mut listing) {
        Ok(keys) => Some(keys),
        Err(StoreError::CannotList(_)) => None,
        Err(e @ (StoreError::Denied { .. } | StoreError::TooMany { .. })) => {
            log::info!("{location}: {e}: its record files are read without a listing");
            listing.clear();
            None
        }
        Err(e) => return Err(e),
    };
    let catalog = parquet::ParquetCatalog::open(home.clone(), location, listed, remote.timeout)?;
    let version = format!("kerchunk parquet {}", digest(&listing));
    Ok(ReferenceStore::new(Box::new(catalog), home, None, location, remote)?.with_version(version))
}

/// Inline data as fsspec reads it: after `base64:`, the base64 text decoded (padding optional);
/// anything else as it is.
fn inline_data(data: Vec<u8>) -> Result<Vec<u8>, base64::DecodeError> {
    use base64::Engine;
    let Some(text) = data.strip_prefix(b"base64:") else {
        return Ok(data);
    };
    let engine = base64::engine::general_purpose::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    engine.decode(text.trim_ascii())
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
    use crate::store::{DirStore, Entry};
    use std::time::{Duration, SystemTime};

    #[test]
    fn inline_data_after_base64_is_decoded_as_fsspec_decodes_it() {
        assert_eq!(inline_data(b"base64:AAEC".to_vec()).unwrap(), [0, 1, 2]);
        assert_eq!(
            inline_data(b"base64:AAECAw\n".to_vec()).unwrap(),
            [0, 1, 2, 3]
        );
        assert_eq!(inline_data(b"plain".to_vec()).unwrap(), b"plain");
        assert!(inline_data(b"base64:not base64!".to_vec()).is_err());
    }

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
        // The same lengths, another target, the same modification time: only the content
        // tells them apart.
        write("day1.nc", 1_000);
        let first = version();
        assert_eq!(first, version());
        write("day2.nc", 1_000);
        assert_ne!(first, version());
    }

    #[test]
    fn a_parquet_directory_lists_each_array_s_chunks_as_the_same_json_set_does() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/references");
        let home: Arc<dyn Store> = Arc::new(DirStore::new(std::path::Path::new(dir)).unwrap());
        let remote = RemoteOptions::default();
        let json = open_json(home, "combined.json", dir, &remote).unwrap();
        let parq = format!("{dir}/combined.parq");
        let home: Arc<dyn Store> = Arc::new(DirStore::new(std::path::Path::new(&parq)).unwrap());
        let parquet = open_parquet(home, &parq, &remote).unwrap();
        let mut chunks = 0;
        for array in ["temp", "time", "lat", "lon", "counts", "sparse", "whole"] {
            // The chunks alike, tags included (the metadata documents are JSON text written
            // by two writers: the same names, other bytes).
            let (listed, by_json) = (
                parquet.list_dir(array).unwrap(),
                json.list_dir(array).unwrap(),
            );
            let names = |l: &[Entry]| l.iter().map(|e| e.name.clone()).collect::<Vec<_>>();
            assert_eq!(names(&listed), names(&by_json), "{array}");
            let data = |l: Vec<Entry>| {
                l.into_iter()
                    .filter(|e| !e.name.starts_with('.'))
                    .collect::<Vec<_>>()
            };
            let listed = data(listed);
            assert_eq!(listed, data(by_json), "{array}");
            chunks += listed.len();
        }
        assert!(chunks > 10, "{chunks} chunks listed");
    }

    #[test]
    fn a_rewritten_parquet_file_is_another_version() {
        let dir = tempfile::tempdir().unwrap();
        let zmetadata = r#"{"record_size": 10, "metadata": {".zgroup": {"zarr_format": 2}}}"#;
        std::fs::write(dir.path().join(".zmetadata"), zmetadata).unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        let parq = dir.path().join("a/refs.0.parq");
        let version = || {
            let home: Arc<dyn Store> = Arc::new(DirStore::new(dir.path()).unwrap());
            let location = dir.path().to_str().unwrap();
            open_parquet(home, location, &RemoteOptions::default())
                .unwrap()
                .version()
                .unwrap()
        };
        std::fs::write(&parq, b"one").unwrap();
        let first = version();
        assert_eq!(first, version());
        // The same size, and .zmetadata untouched: the file's time tells.
        std::fs::write(&parq, b"two").unwrap();
        let f = std::fs::File::options().write(true).open(&parq).unwrap();
        f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(5))
            .unwrap();
        assert_ne!(first, version());
    }
}
