//! Icechunk's binary metadata files (snapshots, manifests, repository info): a header (magic,
//! writer, spec version, file type, compression) and a flatbuffer, usually zstd-compressed. The
//! header is parsed and the buffer deserialized by `icechunk-format`; here they are fetched
//! through the store layer and decompressed within a bound.

use crate::store::{Store, StoreError};
use icechunk_format::format_constants::{
    parse_file_header, CompressionAlgorithmBin, FileTypeBin, SpecVersionBin,
    ICECHUNK_FILE_HEADER_LEN,
};
use std::io::Read;

/// The largest metadata file read, and the largest it may decompress to.
pub(super) const MAX_FILE: u64 = 1 << 30;

/// The flatbuffer of the metadata file `key` of `repo`, which must be a `kind` file, with the
/// spec version its header names. `Ok(None)` when the file is absent.
pub fn read(
    repo: &dyn Store,
    key: &str,
    kind: FileTypeBin,
) -> Result<Option<(SpecVersionBin, Vec<u8>)>, StoreError> {
    let Some(object) = repo.get_bounded(key, MAX_FILE)? else {
        return Ok(None);
    };
    let bad = |why: String| corrupt(repo, key, why);
    let header = parse_file_header(&object.bytes).map_err(|e| bad(e.to_string()))?;
    if header.file_type != kind {
        return Err(bad(format!(
            "a {:?} file where a {kind:?} file belongs",
            header.file_type
        )));
    }
    let body = &object.bytes[ICECHUNK_FILE_HEADER_LEN..];
    let buffer = match header.compression {
        CompressionAlgorithmBin::None => body.to_vec(),
        CompressionAlgorithmBin::Zstd => {
            let mut out = Vec::new();
            zstd::stream::read::Decoder::new(body)
                .map_err(|e| bad(e.to_string()))?
                .take(MAX_FILE + 1)
                .read_to_end(&mut out)
                .map_err(|e| bad(format!("zstd: {e}")))?;
            if out.len() as u64 > MAX_FILE {
                return Err(bad(format!("decompresses to more than {MAX_FILE} bytes")));
            }
            out
        }
    };
    Ok(Some((header.spec_version, buffer)))
}

/// What a read of an optional file (`repo`, `config.yaml`, a reference's `ref.json`) gives,
/// access denied read as absent: a bucket that may be read but not listed answers 403 for a key
/// it does not hold, as [`crate::store::probe`] takes it.
pub fn optional<T>(got: Result<Option<T>, StoreError>) -> Result<Option<T>, StoreError> {
    match got {
        Err(StoreError::Denied { .. }) => Ok(None),
        got => got,
    }
}

/// The error for a malformed metadata file.
pub fn corrupt(repo: &dyn Store, key: &str, why: impl std::fmt::Display) -> StoreError {
    StoreError::Invalid(format!(
        "{}/{key}: not a readable Icechunk file: {why}",
        repo.describe()
    ))
}
