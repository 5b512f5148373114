//! Walks a store and parses every node it finds, whatever the dialect: Zarr v2 (with NCZarr),
//! Zarr v3, the v3 drafts, with or without consolidated metadata.

use super::node::{ArrayMeta, Node, NodeKind};
use super::{consolidated, nczarr, v2, v3, v3_draft};
use crate::store::{EntryKind, Store};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::SystemTime;

/// Options of the walk.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Read the hierarchy from consolidated metadata when the store has it.
    pub consolidated: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions { consolidated: true }
    }
}

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

/// A parsed metadata object and its modification time.
type JsonObject = (Map<String, Value>, Option<SystemTime>);

/// How the walk reads nodes of a Zarr v2/v3 store.
struct Walker<'a> {
    store: &'a dyn Store,
    /// The store has netCDF-c 4.8's `.nczarr` superblock: read `.nczvar`/`.nczgroup` too.
    nczarr_gen1: bool,
}

/// Loads the whole hierarchy of `store`. Fails only when the root itself cannot be read; nodes
/// whose metadata is malformed are left out with a warning.
pub fn load_hierarchy(store: &dyn Store, opts: &LoadOptions) -> Result<Hierarchy, String> {
    if let Some((root, _)) = read_json(store, "zarr.json").unwrap_or(None) {
        if let Some(entry) = v3_draft::entry_point(&root)? {
            return Ok(sorted(v3_draft::load(store, &entry)?));
        }
    }
    let overlay = if opts.consolidated {
        consolidated::open(store)?
    } else {
        None
    };
    if overlay.is_some() {
        log::info!("{}: using consolidated metadata", store.describe());
    }
    let source: &dyn Store = match &overlay {
        Some(c) => c,
        None => store,
    };
    let nczarr_gen1 = source
        .head(nczarr::GEN1_SUPERBLOCK)
        .map_err(|e| e.to_string())?
        .is_some();
    let walker = Walker {
        store: source,
        nczarr_gen1,
    };
    let mut nodes = Vec::new();
    match walker.probe("")? {
        Probe::Broken(reason) => return Err(format!("root metadata: {reason}")),
        Probe::Found(root) => {
            let is_group = matches!(root.kind, NodeKind::Group);
            nodes.push(root);
            if is_group {
                walker.walk("", &mut nodes)?;
            }
        }
        Probe::Nothing => {
            nodes.push(implicit_group("", Some(store.mtime())));
            walker.walk("", &mut nodes)?;
            if nodes.len() == 1 {
                return Err(format!(
                    "{}: no Zarr metadata found (.zgroup, .zarray or zarr.json)",
                    store.describe()
                ));
            }
        }
    }
    Ok(sorted(nodes))
}

fn sorted(mut nodes: Vec<Node>) -> Hierarchy {
    nodes.sort_by(|a, b| a.path.cmp(&b.path));
    Hierarchy { nodes }
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}/{name}")
    }
}

/// Reads and parses one metadata object: `Ok(None)` when absent.
fn read_json(store: &dyn Store, key: &str) -> Result<Option<JsonObject>, String> {
    let Some(object) = store.get(key).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    match serde_json::from_slice::<Value>(&object.bytes) {
        Ok(Value::Object(map)) => Ok(Some((map, object.mtime))),
        Ok(other) => Err(format!("{key}: not a JSON object: {other}")),
        Err(e) => Err(format!("{key}: malformed JSON: {e}")),
    }
}

fn checked(meta: ArrayMeta) -> Result<Arc<ArrayMeta>, String> {
    meta.validate()?;
    Ok(Arc::new(meta))
}

fn implicit_group(path: &str, mtime: Option<SystemTime>) -> Node {
    Node {
        path: path.to_string(),
        kind: NodeKind::Group,
        document: v2::group_document(&Map::new(), Map::new()),
        mtime,
    }
}

impl Walker<'_> {
    /// Adds the nodes below the group at `prefix`. Directories holding no metadata become
    /// implicit groups when something below them is a node.
    fn walk(&self, prefix: &str, nodes: &mut Vec<Node>) -> Result<(), String> {
        let entries = self.store.list_dir(prefix).map_err(|e| e.to_string())?;
        for entry in entries {
            if entry.kind != EntryKind::Prefix {
                continue;
            }
            let path = join(prefix, &entry.name);
            match self.probe(&path) {
                Err(e) | Ok(Probe::Broken(e)) => log::warn!("{path}: left out: {e}"),
                Ok(Probe::Found(node)) => {
                    let is_group = matches!(node.kind, NodeKind::Group);
                    nodes.push(node);
                    if is_group {
                        self.walk(&path, nodes)?;
                    }
                }
                Ok(Probe::Nothing) => {
                    let before = nodes.len();
                    self.walk(&path, nodes)?;
                    if nodes.len() > before {
                        nodes.push(implicit_group(&path, entry.mtime));
                    }
                }
            }
        }
        Ok(())
    }

    fn read(&self, path: &str, name: &str) -> Result<Option<JsonObject>, String> {
        read_json(self.store, &join(path, name))
    }

    /// The attributes of a v2 node (`{}` when absent or unreadable).
    fn attrs(&self, path: &str) -> Map<String, Value> {
        match self.read(path, ".zattrs") {
            Ok(Some((a, _))) => a,
            Ok(None) => Map::new(),
            Err(e) => {
                log::warn!("{path}: attributes ignored: {e}");
                Map::new()
            }
        }
    }

    /// A gen-1 NCZarr object (`.nczvar`, `.nczgroup`) when the store is gen 1.
    fn gen1(&self, path: &str, name: &str) -> Option<Map<String, Value>> {
        if !self.nczarr_gen1 {
            return None;
        }
        self.read(path, name).ok().flatten().map(|(m, _)| m)
    }

    fn probe(&self, path: &str) -> Result<Probe, String> {
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
        match self.read(path, "zarr.json") {
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
                        join(path, "zarr.json")
                    ))),
                };
            }
            Ok(None) => {}
        }
        match self.read(path, ".zarray") {
            Err(e) => return Ok(Probe::Broken(e)),
            Ok(Some((zarray, mtime))) => {
                let attrs = self.attrs(path);
                let var =
                    nczarr::variable(&zarray, &attrs, self.gen1(path, nczarr::GEN1_VAR).as_ref());
                let zarray = match &var {
                    Some(v) => nczarr::served_zarray(&zarray, v),
                    None => zarray,
                };
                let dimension_names = match &var {
                    Some(v) => Some(v.dimension_names.clone()),
                    None => nczarr::xarray_dimensions(&attrs),
                };
                let meta = v2::parse_array(&zarray, &prefix).and_then(checked);
                let mut doc = v2::array_document(&zarray, attrs);
                if let Some(names) = dimension_names {
                    doc.entry("dimension_names").or_insert(json!(names));
                }
                return found(NodeKind::Array(meta), doc, mtime);
            }
            Ok(None) => {}
        }
        match self.read(path, ".zgroup") {
            Err(e) => Ok(Probe::Broken(e)),
            Ok(Some((zgroup, mtime))) => {
                let attrs = self.attrs(path);
                let dims = nczarr::group_dimensions(
                    &zgroup,
                    &attrs,
                    self.gen1(path, nczarr::GEN1_GROUP).as_ref(),
                );
                let mut doc = v2::group_document(&zgroup, attrs);
                if let Some(dims) = dims {
                    doc.entry("dimensions").or_insert(Value::Object(dims));
                }
                found(NodeKind::Group, doc, mtime)
            }
            Ok(None) => Ok(Probe::Nothing),
        }
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

    #[test]
    fn stale_consolidated_metadata_wins_unless_disabled() {
        let mut s = MemoryStore::new();
        s.insert(".zgroup", r#"{"zarr_format": 2}"#);
        s.insert(".zattrs", r#"{"version": 2}"#);
        s.insert(".zmetadata", r#"{"metadata": {".zgroup": {"zarr_format": 2}, ".zattrs": {"version": 1}}, "zarr_consolidated_format": 1}"#);
        let with = load_hierarchy(&s, &LoadOptions::default()).unwrap();
        assert_eq!(with.nodes[0].document["attributes"]["version"], 1);
        let without = load_hierarchy(
            &s,
            &LoadOptions {
                consolidated: false,
            },
        )
        .unwrap();
        assert_eq!(without.nodes[0].document["attributes"]["version"], 2);
    }
}
