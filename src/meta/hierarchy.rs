//! Walks a store and parses every node it finds.

use super::node::{Node, NodeKind};
use super::{v2, v3};
use crate::store::{EntryKind, Store};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::SystemTime;

/// Options of the walk.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {}

/// Every node of a store, parents before children, sorted by path.
#[derive(Debug)]
pub struct Hierarchy {
    /// The nodes; the first is the root (`path == ""`).
    pub nodes: Vec<Node>,
}

/// What the metadata objects under one prefix say the node is.
enum Probe {
    /// No metadata object.
    Nothing,
    /// A node parsed from its metadata.
    Found(Node),
    /// Metadata present but unusable; the node is left out.
    Broken(String),
}

/// Loads the whole hierarchy of `store`. Fails only when the root itself cannot be read; nodes
/// whose metadata is malformed are left out with a warning.
pub fn load_hierarchy(store: &dyn Store, _opts: &LoadOptions) -> Result<Hierarchy, String> {
    let mut nodes = Vec::new();
    match probe(store, "")? {
        Probe::Broken(reason) => return Err(format!("root metadata: {reason}")),
        Probe::Found(root) => {
            let is_group = matches!(root.kind, NodeKind::Group);
            nodes.push(root);
            if is_group {
                walk(store, "", &mut nodes)?;
            }
        }
        Probe::Nothing => {
            nodes.push(implicit_group("", Some(store.mtime())));
            walk(store, "", &mut nodes)?;
            if nodes.len() == 1 {
                return Err(format!(
                    "{}: no Zarr metadata found (.zgroup, .zarray or zarr.json)",
                    store.describe()
                ));
            }
        }
    }
    nodes.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Hierarchy { nodes })
}

/// Adds the nodes below the group at `prefix`. Directories holding no metadata become implicit
/// groups when something below them is a node.
fn walk(store: &dyn Store, prefix: &str, nodes: &mut Vec<Node>) -> Result<(), String> {
    let entries = store.list_dir(prefix).map_err(|e| e.to_string())?;
    for entry in entries {
        if entry.kind != EntryKind::Prefix {
            continue;
        }
        let path = join(prefix, &entry.name);
        match probe(store, &path) {
            Err(e) | Ok(Probe::Broken(e)) => log::warn!("{path}: left out: {e}"),
            Ok(Probe::Found(node)) => {
                let is_group = matches!(node.kind, NodeKind::Group);
                nodes.push(node);
                if is_group {
                    walk(store, &path, nodes)?;
                }
            }
            Ok(Probe::Nothing) => {
                let before = nodes.len();
                walk(store, &path, nodes)?;
                if nodes.len() > before {
                    nodes.push(implicit_group(&path, entry.mtime));
                }
            }
        }
    }
    Ok(())
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}/{name}")
    }
}

fn key(path: &str, name: &str) -> String {
    join(path, name)
}

/// A parsed metadata object and its modification time.
type JsonObject = (Map<String, Value>, Option<SystemTime>);

/// Reads and parses one metadata object: `Ok(None)` when absent.
fn read_json(store: &dyn Store, key: &str) -> Result<Option<JsonObject>, String> {
    let Some(head) = store.head(key).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    let Some(bytes) = store.get(key).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok(Some((map, head.mtime))),
        Ok(other) => Err(format!("{key}: not a JSON object: {other}")),
        Err(e) => Err(format!("{key}: malformed JSON: {e}")),
    }
}

fn probe(store: &dyn Store, path: &str) -> Result<Probe, String> {
    let prefix = if path.is_empty() {
        String::new()
    } else {
        format!("{path}/")
    };
    let found = |kind, document, mtime| {
        Ok(Probe::Found(Node {
            path: path.to_string(),
            kind,
            document,
            mtime,
        }))
    };
    match read_json(store, &key(path, "zarr.json")) {
        Err(e) => return Ok(Probe::Broken(e)),
        Ok(Some((doc, mtime))) => {
            return match doc.get("node_type").and_then(Value::as_str) {
                Some("group") => found(NodeKind::Group, v3::document(&doc), mtime),
                Some("array") => {
                    let meta = v3::parse_array(&doc, &prefix).and_then(checked);
                    found(NodeKind::Array(meta), v3::document(&doc), mtime)
                }
                _ => Ok(Probe::Broken(format!(
                    "{}: no valid \"node_type\"",
                    key(path, "zarr.json")
                ))),
            };
        }
        Ok(None) => {}
    }
    let attrs = || match read_json(store, &key(path, ".zattrs")) {
        Ok(Some((a, _))) => a,
        Ok(None) => Map::new(),
        Err(e) => {
            log::warn!("{path}: attributes ignored: {e}");
            Map::new()
        }
    };
    match read_json(store, &key(path, ".zarray")) {
        Err(e) => return Ok(Probe::Broken(e)),
        Ok(Some((zarray, mtime))) => {
            let meta = v2::parse_array(&zarray, &prefix).and_then(checked);
            return found(
                NodeKind::Array(meta),
                v2::array_document(&zarray, attrs()),
                mtime,
            );
        }
        Ok(None) => {}
    }
    match read_json(store, &key(path, ".zgroup")) {
        Err(e) => Ok(Probe::Broken(e)),
        Ok(Some((_, mtime))) => found(NodeKind::Group, v2::group_document(attrs()), mtime),
        Ok(None) => Ok(Probe::Nothing),
    }
}

fn checked(meta: super::ArrayMeta) -> Result<Arc<super::ArrayMeta>, String> {
    meta.validate()?;
    Ok(Arc::new(meta))
}

fn implicit_group(path: &str, mtime: Option<SystemTime>) -> Node {
    Node {
        path: path.to_string(),
        kind: NodeKind::Group,
        document: v2::group_document(Map::new()),
        mtime,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    #[test]
    fn finds_explicit_implicit_and_broken_nodes() {
        let mut s = MemoryStore::new();
        s.insert(".zgroup", r#"{"zarr_format": 2}"#);
        s.insert(".zattrs", r#"{"title": "t"}"#);
        s.insert("a/.zarray", r#"{"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "<i2", "compressor": null, "fill_value": 0, "order": "C", "filters": null}"#);
        s.insert("a/0", vec![1, 0, 2, 0]);
        s.insert("imp/deep/b/.zarray", r#"{"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "<i2", "compressor": {"id": "nosuch"}, "fill_value": 0, "order": "C", "filters": null}"#);
        s.insert("bad/.zarray", "{not json");
        s.insert("empty/readme.txt", "hello");
        let h = load_hierarchy(&s, &LoadOptions::default()).unwrap();
        let paths: Vec<_> = h.nodes.iter().map(|n| n.path.as_str()).collect();
        assert_eq!(paths, ["", "a", "imp", "imp/deep", "imp/deep/b"]);
        assert_eq!(h.nodes[0].document["attributes"]["title"], "t");
        assert_eq!(h.nodes[1].document["node_type"], "array");
    }

    #[test]
    fn a_store_with_no_metadata_is_an_error() {
        let mut s = MemoryStore::new();
        s.insert("x/y", "z");
        assert!(load_hierarchy(&s, &LoadOptions::default())
            .unwrap_err()
            .contains("no Zarr metadata"));
    }
}
