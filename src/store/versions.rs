//! What names a version of stored data: the name, size, modification time and ETag of every
//! object below a prefix, and a digest of bytes (XXH3, 128 bits) to key them by.

use super::{join_key, EntryKind, Store, StoreError};
use std::collections::HashSet;
use std::time::UNIX_EPOCH;
use twox_hash::XxHash3_128;

/// The digest of `bytes`, as 32 hexadecimal digits.
pub fn digest(bytes: &[u8]) -> String {
    format!("{:032x}", XxHash3_128::oneshot(bytes))
}

/// Appends to `out` the name, size, modification time and ETag of every object below
/// `prefix`, recursively, in name order (one listing per directory level); returns their keys.
pub fn describe_objects(
    store: &dyn Store,
    prefix: &str,
    out: &mut Vec<u8>,
) -> Result<HashSet<String>, StoreError> {
    let mut listed = HashSet::new();
    let mut pending = vec![prefix.to_string()];
    while let Some(dir) = pending.pop() {
        let mut entries = store.list_dir(&dir)?;
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        for e in entries {
            let key = join_key(&dir, &e.name);
            match e.kind {
                EntryKind::Prefix => pending.push(key),
                EntryKind::Object(size) => {
                    let nanos = e
                        .mtime
                        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                        .map_or(0, |d| d.as_nanos());
                    out.extend_from_slice(key.as_bytes());
                    out.push(0);
                    out.extend_from_slice(&size.to_le_bytes());
                    out.extend_from_slice(&nanos.to_le_bytes());
                    out.extend_from_slice(e.tag.as_deref().unwrap_or("").as_bytes());
                    out.push(0);
                    listed.insert(key);
                }
            }
        }
    }
    Ok(listed)
}
