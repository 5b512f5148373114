//! What names a version of stored data: the name, size, modification time and ETag of every
//! object below a prefix, and a digest of bytes (XXH3, 128 bits) to key them by.

use super::{join_key, Entry, EntryKind, Store, StoreError};
use std::collections::HashSet;
use std::time::UNIX_EPOCH;
use twox_hash::XxHash3_128;

/// The digest of `bytes`, as 32 hexadecimal digits.
pub fn digest(bytes: &[u8]) -> String {
    format!("{:032x}", XxHash3_128::oneshot(bytes))
}

/// Appends to `out` the name, size, modification time and ETag of every object below
/// `prefix`, recursively, in key order (see [`Store::list_below`]); returns their keys.
pub fn describe_objects(
    store: &dyn Store,
    prefix: &str,
    out: &mut Vec<u8>,
) -> Result<HashSet<String>, StoreError> {
    let mut listed = HashSet::new();
    for (key, e) in store.list_below(prefix)? {
        let EntryKind::Object(size) = e.kind else {
            continue;
        };
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
    Ok(listed)
}

/// [`Store::list_below`] by walking `store`'s directories, one listing each.
pub fn walk_below<S: Store + ?Sized>(
    store: &S,
    prefix: &str,
) -> Result<Vec<(String, Entry)>, StoreError> {
    let mut out = Vec::new();
    let mut pending = vec![prefix.to_string()];
    while let Some(dir) = pending.pop() {
        for e in store.list_dir(&dir)? {
            let key = join_key(&dir, &e.name);
            match e.kind {
                EntryKind::Prefix => pending.push(key),
                EntryKind::Object(_) => out.push((key, e)),
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}
