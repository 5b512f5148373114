//! Finds and parses the nodes of a store, whatever the dialect: Zarr v2 (with NCZarr), Zarr
//! v3, the v3 drafts, with or without consolidated metadata.
//!
//! A [`Tree`] loads one group's children at a time, when they are first asked for: a mount
//! answers once its root is known, and a group costs its requests only when it is listed or
//! looked up. A [`MetadataKeys`] says where a dialect keeps a node's metadata and how a group's
//! children are found: NCZarr's own lists where a group has them (no listing request; as in
//! netCDF-c, a child the lists omit is not shown), else a listing of the store. Consolidated
//! metadata is read once, at [`Tree::open`], and the nodes parsed from it as their groups are
//! loaded. A store that cannot list (plain HTTP) is walked from its metadata alone:
//! consolidated metadata, NCZarr lists, or a root that is itself an array. Every child name,
//! whatever its source, passes [`accept_name`] first; nodes deeper than [`MAX_DEPTH`] levels
//! are left out.
//!
//! A group's children are probed on up to [`Store::parallelism`] threads at once (many for
//! remote stores, where every request waits a round trip); the results are taken in order, so
//! the outcome is the same as one request at a time. Every metadata object is read with a size
//! bound ([`MAX_DOCUMENT_BYTES`]). [`load_hierarchy`] loads every group of a tree.

use super::consolidated::Consolidated;
use super::node::{ArrayMeta, Dimensions, Document, Node, NodeKind};
use super::v3_draft::EntryPoint;
use super::{consolidated, nczarr, v2, v3, v3_draft, MetaError};
use crate::store::{accept_name, join_key, shown_key, EntryKind, Object, Store, StoreError};
use parking_lot::Mutex;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

/// The deepest node shown, in levels below the root; deeper nodes are left out with one
/// warning per cut subtree. Real hierarchies are a few levels deep; the limit bounds the walk
/// of hostile ones (and the length of the paths the kernel resolves).
pub const MAX_DEPTH: usize = 64;

/// The largest metadata document of one node read (`zarr.json`, `.zarray`, `.zattrs`, ...);
/// larger objects are refused unread and the node left out with [`MetaError::TooLarge`]. The
/// root `zarr.json`, which may hold the whole hierarchy's consolidated metadata, may be as large
/// as [`consolidated::MAX_CONSOLIDATED_BYTES`].
pub const MAX_DOCUMENT_BYTES: u64 = 16 << 20;

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

/// The store a tree reads: borrowed for one walk ([`load_hierarchy`]), shared for a mount.
#[derive(Clone)]
pub enum StoreRef<'a> {
    /// A store the caller keeps.
    Borrowed(&'a dyn Store),
    /// A store the tree keeps too.
    Shared(Arc<dyn Store>),
}

impl<'a> std::ops::Deref for StoreRef<'a> {
    type Target = dyn Store + 'a;
    fn deref(&self) -> &(dyn Store + 'a) {
        match self {
            StoreRef::Borrowed(s) => *s,
            StoreRef::Shared(s) => s.as_ref(),
        }
    }
}

/// A parsed metadata object and its modification time.
type JsonObject = (Map<String, Value>, Option<SystemTime>);

/// One child of a group, as a listing or a metadata list names it.
struct Child {
    name: String,
    mtime: Option<SystemTime>,
}

/// Where a dialect keeps its metadata.
enum MetadataKeys {
    /// Zarr v2 and v3: metadata objects under the node's own prefix. `nczarr_gen1`: the store
    /// has netCDF-c 4.8's `.nczarr` superblock, so `.nczvar`/`.nczgroup` are read too.
    Zarr { nczarr_gen1: bool },
    /// The v3 drafts: `meta/root/<path>.array.json` and `.group.json`.
    Draft(EntryPoint),
}

/// Where the metadata is read: the store, or the consolidated documents laid over it.
enum Source<'a> {
    Store(StoreRef<'a>),
    Consolidated(Consolidated<'a>),
}

impl Source<'_> {
    fn store(&self) -> &dyn Store {
        match self {
            Source::Store(s) => &**s,
            Source::Consolidated(c) => c,
        }
    }
}

/// The nodes of one store, loaded group by group as they are asked for.
pub struct Tree<'a> {
    source: Source<'a>,
    layout: MetadataKeys,
    root: Node,
    /// The root's children, loaded by [`Tree::open`], until [`Tree::children`] hands them out.
    root_children: Mutex<Option<Vec<Node>>>,
    /// The root `zarr.json` as [`Tree::open`] read it from the store, until the root is probed.
    root_json: Mutex<Option<RootJson>>,
}

/// The store's answer for its root `zarr.json`.
type RootJson = Result<Option<Object>, StoreError>;

/// Loads the whole hierarchy of `store`. Fails when the root itself cannot be read, nothing is
/// found, or the store fails to list a group or read a node's metadata; nodes whose metadata is
/// malformed are left out with a warning, and arrays whose metadata is unusable are kept with
/// the error in [`NodeKind::Array`].
pub fn load_hierarchy(store: &dyn Store, opts: &LoadOptions) -> Result<Hierarchy, MetaError> {
    let tree = Tree::open(StoreRef::Borrowed(store), opts)?;
    let mut nodes = vec![tree.root().clone()];
    let mut next = 0;
    while next < nodes.len() {
        if matches!(nodes[next].kind, NodeKind::Group) {
            let children = tree.children(&nodes[next].path, &nodes[next].document)?;
            nodes.extend(children);
        }
        next += 1;
    }
    nodes.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Hierarchy { nodes })
}

impl<'a> Tree<'a> {
    /// Opens the tree of `store`: reads its root and, for a group, the root's children (so an
    /// empty store fails here). Fails when the root itself cannot be read, nothing is found, or
    /// the store fails to list the root or read its metadata or its children's.
    pub fn open(store: StoreRef<'a>, opts: &LoadOptions) -> Result<Tree<'a>, MetaError> {
        // Read once: it tells a v3 draft, may hold consolidated metadata, and is the root's.
        // A failure is asked again once: what it tells decides how the store is read.
        let read_root = || store.get_bounded("zarr.json", consolidated::MAX_CONSOLIDATED_BYTES);
        let root_json = read_root().or_else(|_| read_root());
        let root_bytes = match &root_json {
            Ok(Some(object)) => Some(&object.bytes[..]),
            _ => None,
        };
        if let Some(root) = root_bytes.and_then(entry_fields) {
            if let Some(entry) = v3_draft::entry_point(&root.0)? {
                let draft = MetadataKeys::Draft(entry);
                return Tree::start(Source::Store(store), draft, None);
            }
        }
        let overlay = if opts.consolidated {
            consolidated::open(store.clone(), root_bytes).unwrap_or_else(|e| {
                log::warn!("{}: consolidated metadata ignored: {e}", store.describe());
                None
            })
        } else {
            None
        };
        // The consolidated documents answer for the root `zarr.json` themselves.
        let (source, root_json) = match overlay {
            Some(c) => {
                log::info!("{}: using consolidated metadata", store.describe());
                (Source::Consolidated(c), None)
            }
            None => (Source::Store(store), Some(root_json)),
        };
        let nczarr_gen1 = source.store().head(nczarr::GEN1_SUPERBLOCK)?.is_some();
        Tree::start(source, MetadataKeys::Zarr { nczarr_gen1 }, root_json)
    }

    /// Reads the root and its children; `root_json` is the root `zarr.json` already read from
    /// the store, if it was.
    fn start(
        source: Source<'a>,
        layout: MetadataKeys,
        root_json: Option<RootJson>,
    ) -> Result<Tree<'a>, MetaError> {
        let mut tree = Tree {
            source,
            layout,
            root: implicit_group("", None, Dialect::V2),
            root_children: Mutex::new(None),
            root_json: Mutex::new(root_json),
        };
        // A root whose metadata is unusable is shown as an implicit group, so that its healthy
        // children still show; the error is returned only when nothing else is found.
        let (root, root_error) = match tree.probe("") {
            Ok(root) => (root, None),
            Err(e) if may_pass(&e) => return Err(e),
            Err(e) => {
                log::warn!("/: metadata ignored: {e}");
                (None, Some(e))
            }
        };
        let root_explicit = root.is_some();
        let mtime = Some(tree.store().mtime());
        tree.root = root.unwrap_or_else(|| implicit_group("", mtime, Dialect::V2));
        if !matches!(tree.root.kind, NodeKind::Group) {
            return Ok(tree);
        }
        let cannot_list = AtomicBool::new(false);
        let children = tree.load("", &tree.root.document, &cannot_list)?;
        if !root_explicit {
            // An implicit root takes the dialect of the nodes found: a store of v3 arrays
            // without a root `zarr.json` (as tensorstore writes them) is a v3 store.
            let v3 = children
                .iter()
                .any(|c| Dialect::of(&c.document.parse()) == Dialect::V3);
            if v3 {
                tree.root = implicit_group("", mtime, Dialect::V3);
            }
        }
        if children.is_empty() {
            let what = tree.store().describe();
            if let Some(e) = root_error {
                return Err(e);
            }
            if cannot_list.load(Ordering::Relaxed) {
                return Err(MetaError::CannotList(what));
            }
            if !root_explicit {
                return Err(MetaError::NoMetadata(what));
            }
        }
        *tree.root_children.lock() = Some(children);
        Ok(tree)
    }

    /// The root node.
    pub fn root(&self) -> &Node {
        &self.root
    }

    /// The children of the group at `path` whose document is `document`, sorted by name:
    /// listed and probed now (the root's were at [`Tree::open`]). Children whose metadata is
    /// unusable are left out, with a warning naming them; a store that cannot list shows the
    /// group without children. Fails when the store fails to list the group or to read a
    /// child's metadata (a timeout, a server error): asking again may succeed.
    pub fn children(&self, path: &str, document: &Document) -> Result<Vec<Node>, MetaError> {
        if path.is_empty() {
            let first = self.root_children.lock().take();
            if let Some(children) = first {
                return Ok(children);
            }
        }
        self.load(path, document, &AtomicBool::new(false))
    }

    fn store(&self) -> &dyn Store {
        self.source.store()
    }

    /// Lists and probes the children of the group at `path`; sets `cannot_list` when the
    /// store cannot list them. Fails as [`Tree::children`].
    fn load(
        &self,
        path: &str,
        doc: &Document,
        cannot_list: &AtomicBool,
    ) -> Result<Vec<Node>, MetaError> {
        let depth = if path.is_empty() {
            0
        } else {
            path.split('/').count()
        };
        let mut seen = HashSet::new();
        let listed: Vec<Child> = self
            .list(path, &doc.parse(), cannot_list)?
            .into_iter()
            .filter(|c| seen.insert(c.name.clone()))
            .collect();
        if depth >= MAX_DEPTH {
            for child in listed {
                let path = join_key(path, &child.name);
                log::warn!("{}", MetaError::TooDeep { path });
            }
            return Ok(Vec::new());
        }
        let found = parallel_map(&listed, self.store().parallelism(), |child| {
            let path = join_key(path, &child.name);
            match self.probe(&path) {
                // Paths with no metadata: implicit groups, shown when a node lies below them,
                // in the dialect of the first one found.
                Ok(None) => Ok(self
                    .dialect_below(&path, depth + 1)?
                    .map(|dialect| implicit_group(&path, child.mtime, dialect))),
                other => other,
            }
        });
        let mut nodes = Vec::new();
        for (child, result) in listed.iter().zip(found) {
            match result {
                Err(e) if may_pass(&e) => return Err(e),
                Err(e) => log::warn!("{}: left out: {e}", join_key(path, &child.name)),
                Ok(Some(node)) => nodes.push(node),
                Ok(None) => {}
            }
        }
        nodes.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(nodes)
    }

    /// The dialect of the first node with usable metadata found below the path `path` (at
    /// `depth`), which has none of its own, level by level; `None` when there is none. Fails
    /// as [`Tree::children`].
    fn dialect_below(&self, path: &str, depth: usize) -> Result<Option<Dialect>, MetaError> {
        let mut level = vec![path.to_string()];
        for depth in depth..MAX_DEPTH {
            let mut next = Vec::new();
            for prefix in &level {
                let quiet = AtomicBool::new(false);
                for child in self.list(prefix, &Map::new(), &quiet)? {
                    let path = join_key(prefix, &child.name);
                    match self.probe(&path) {
                        Ok(Some(node)) => return Ok(Some(Dialect::of(&node.document.parse()))),
                        Ok(None) if depth + 1 < MAX_DEPTH => next.push(path),
                        Err(e) if may_pass(&e) => return Err(e),
                        _ => {}
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            level = next;
        }
        Ok(None)
    }
}

/// True for a failure of the store that may pass (the network's: an error answer past the
/// retries, a timeout): the load fails, to be tried again; any other failure reading a node's
/// metadata (a refused special file or link, a bad key, a document too large) leaves that node
/// out with a warning, as its malformed metadata does.
fn may_pass(e: &MetaError) -> bool {
    matches!(
        e,
        MetaError::Store(StoreError::Remote { .. } | StoreError::TimedOut { .. })
    )
}

/// Reads and parses one metadata object (at most [`MAX_DOCUMENT_BYTES`], the root `zarr.json`
/// up to [`consolidated::MAX_CONSOLIDATED_BYTES`]): `Ok(None)` when absent.
fn read_json(store: &dyn Store, key: &str) -> Result<Option<JsonObject>, MetaError> {
    let max = if key == "zarr.json" {
        consolidated::MAX_CONSOLIDATED_BYTES
    } else {
        MAX_DOCUMENT_BYTES
    };
    parse_json(key, store.get_bounded(key, max)?)
}

/// Parses the metadata object `key`, as read (`None`: absent).
fn parse_json(key: &str, object: Option<Object>) -> Result<Option<JsonObject>, MetaError> {
    let Some(object) = object else {
        return Ok(None);
    };
    let json_error = |reason: String| MetaError::Json {
        key: key.to_string(),
        reason,
    };
    match super::lenient_json::parse(&object.bytes) {
        Ok(Value::Object(map)) => Ok(Some((map, object.mtime))),
        Ok(other) => Err(json_error(format!(
            "not a JSON object but {}",
            kind(&other)
        ))),
        Err(e) => Err(json_error(e.to_string())),
    }
}

/// The members of a root `zarr.json` that [`v3_draft::entry_point`] reads.
const ENTRY_FIELDS: [&str; 3] = ["zarr_format", "metadata_key_suffix", "extensions"];

/// The [`ENTRY_FIELDS`] of a root `zarr.json`, read without the rest (which may hold a whole
/// hierarchy's consolidated metadata, many times its text as parsed JSON).
struct EntryFields(Map<String, Value>);

impl<'de> Deserialize<'de> for EntryFields {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = EntryFields;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<EntryFields, A::Error> {
                let mut kept = Map::new();
                while let Some(key) = map.next_key::<String>()? {
                    if ENTRY_FIELDS.contains(&key.as_str()) {
                        kept.insert(key, map.next_value()?);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(EntryFields(kept))
            }
        }
        d.deserialize_map(Fields)
    }
}

/// The [`EntryFields`] of the root `zarr.json` `root`; `None` when it does not read as a JSON
/// object.
fn entry_fields(root: &[u8]) -> Option<EntryFields> {
    super::lenient_json::deserialize(root, true).ok()
}

/// What a JSON value is, for messages (the value itself may be huge).
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `f` applied to every item, on up to `workers` threads at once, the results in the items'
/// order.
pub fn parallel_map<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let workers = workers.min(items.len());
    if workers <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else {
                            return out;
                        };
                        out.push((i, f(item)));
                    }
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// The array metadata `meta`, validated, as a mount keeps it.
fn checked(meta: Result<ArrayMeta, MetaError>) -> Result<Arc<ArrayMeta>, MetaError> {
    let mut meta = meta?;
    meta.validate()?;
    meta.shrink_to_fit();
    Ok(Arc::new(meta))
}

/// The dialect of a node's document, which an implicit group above it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dialect {
    V2,
    V3,
    /// The v3 drafts, whose documents have no `zarr_format`.
    Draft,
}

impl Dialect {
    fn of(doc: &Map<String, Value>) -> Dialect {
        match doc.get("zarr_format") {
            Some(Value::Number(n)) if n.as_u64() == Some(3) => Dialect::V3,
            None => Dialect::Draft,
            Some(_) => Dialect::V2,
        }
    }
}

/// A group with no metadata document at `path`, shown as an empty group of `dialect`.
fn implicit_group(path: &str, mtime: Option<SystemTime>, dialect: Dialect) -> Node {
    let document = match dialect {
        Dialect::V2 => v2::group_document(&Map::new(), Map::new()),
        Dialect::V3 => {
            let mut doc = Map::new();
            doc.insert("zarr_format".into(), Value::from(3));
            doc.insert("node_type".into(), Value::from("group"));
            v3::document(doc)
        }
        Dialect::Draft => v3_draft::document(&Map::new()),
    };
    Node {
        path: path.to_string(),
        kind: NodeKind::Group,
        document: Document::new(&document),
        dimensions: Dimensions::default(),
        mtime,
    }
}

fn found(
    path: &str,
    kind: NodeKind,
    document: Map<String, Value>,
    dimensions: Dimensions,
    mtime: Option<SystemTime>,
) -> Option<Node> {
    Some(Node {
        path: path.to_string(),
        kind,
        document: Document::new(&document),
        dimensions,
        mtime,
    })
}

impl Tree<'_> {
    /// The children of the group at `path` whose document is `doc`, names checked (refused
    /// names are left out with a warning). A store that cannot list gives none and sets
    /// `cannot_list`; another store failure is returned.
    fn list(
        &self,
        path: &str,
        doc: &Map<String, Value>,
        cannot_list: &AtomicBool,
    ) -> Result<Vec<Child>, MetaError> {
        let (source, listed) = match &self.layout {
            MetadataKeys::Zarr { .. } => {
                let gen1 = self.gen1(path, nczarr::GEN1_GROUP);
                match nczarr::child_names(doc, gen1.as_ref()) {
                    Some(names) => {
                        let source = format!("{}: NCZarr group list", shown_key(path));
                        let children = names
                            .into_iter()
                            .map(|name| Child { name, mtime: None })
                            .collect();
                        (source, Ok(children))
                    }
                    None => (self.store().describe(), self.listed(path, None)),
                }
            }
            MetadataKeys::Draft(entry) => (
                self.store().describe(),
                self.listed(&v3_draft::children_prefix(path), Some(entry)),
            ),
        };
        match listed {
            Ok(children) => Ok(children
                .into_iter()
                .filter(|c| accept_name(&source, &c.name))
                .collect()),
            Err(StoreError::CannotList(_)) => {
                cannot_list.store(true, Ordering::Relaxed);
                Ok(Vec::new())
            }
            Err(e) => Err(MetaError::Store(e)),
        }
    }

    /// The children a listing of `prefix` names: its directories for Zarr, the children the
    /// metadata documents and directories name for a draft (`entry`), each once.
    fn listed(&self, prefix: &str, entry: Option<&EntryPoint>) -> Result<Vec<Child>, StoreError> {
        let mut seen = HashSet::new();
        Ok(self
            .store()
            .list_dir(prefix)?
            .iter()
            .filter_map(|e| match entry {
                Some(entry) => v3_draft::child_name(entry, e).map(|n| (n, e.mtime)),
                None => (e.kind == EntryKind::Prefix).then_some((e.name.as_str(), e.mtime)),
            })
            .filter(|(name, _)| seen.insert(name.to_string()))
            .map(|(name, mtime)| Child {
                name: name.to_string(),
                mtime,
            })
            .collect())
    }

    /// The metadata object `name` of the node at `path`; the root `zarr.json` read at
    /// [`Tree::open`] is handed on, not asked for again.
    fn read(&self, path: &str, name: &str) -> Result<Option<JsonObject>, MetaError> {
        let key = join_key(path, name);
        if key == "zarr.json" {
            if let Some(read) = self.root_json.lock().take() {
                return parse_json(&key, read?);
            }
        }
        read_json(self.store(), &key)
    }

    /// The attributes of a v2 node (`{}` when absent or unreadable).
    fn attrs(&self, path: &str) -> Map<String, Value> {
        match self.read(path, ".zattrs") {
            Ok(Some((a, _))) => a,
            Ok(None) => Map::new(),
            Err(e) => {
                log::warn!("{}: attributes ignored: {e}", shown_key(path));
                Map::new()
            }
        }
    }

    /// A gen-1 NCZarr object (`.nczvar`, `.nczgroup`) when the store is gen 1.
    fn gen1(&self, path: &str, name: &str) -> Option<Map<String, Value>> {
        if !matches!(self.layout, MetadataKeys::Zarr { nczarr_gen1: true }) {
            return None;
        }
        self.read(path, name).ok().flatten().map(|(m, _)| m)
    }

    /// The node at `path`: `None` when it has no metadata, `Err` when its metadata is unusable.
    fn probe(&self, path: &str) -> Result<Option<Node>, MetaError> {
        match &self.layout {
            MetadataKeys::Zarr { .. } => self.probe_zarr(path),
            MetadataKeys::Draft(entry) => self.probe_draft(path, entry),
        }
    }

    fn probe_draft(&self, path: &str, entry: &EntryPoint) -> Result<Option<Node>, MetaError> {
        if let Some((doc, mtime)) =
            read_json(self.store(), &v3_draft::meta_key(entry, path, "array"))?
        {
            let meta = checked(v3_draft::parse_array(&doc, path));
            return Ok(found(
                path,
                NodeKind::Array(meta),
                v3_draft::document(&doc),
                v3::dimensions(&doc),
                mtime,
            ));
        }
        let group = read_json(self.store(), &v3_draft::meta_key(entry, path, "group"))?;
        let group_node = |doc: &Map<String, Value>, mtime| {
            let dims = v3::dimensions(doc);
            found(path, NodeKind::Group, v3_draft::document(doc), dims, mtime)
        };
        Ok(match group {
            Some((doc, mtime)) => group_node(&doc, mtime),
            // The draft root is a group even without a document.
            None if path.is_empty() => group_node(&Map::new(), None),
            None => None,
        })
    }

    fn probe_zarr(&self, path: &str) -> Result<Option<Node>, MetaError> {
        // `path/`, or nothing at the root.
        let prefix = join_key(path, "");
        if let Some((doc, mtime)) = self.read(path, "zarr.json")? {
            let kind = match doc.get("node_type").and_then(Value::as_str) {
                Some("group") => NodeKind::Group,
                Some("array") => NodeKind::Array(checked(v3::parse_array(&doc, &prefix))),
                _ => {
                    return Err(MetaError::field(
                        "node_type",
                        format!(
                            "{}: missing or not \"group\" or \"array\"",
                            join_key(path, "zarr.json")
                        ),
                    ))
                }
            };
            let dims = v3::dimensions(&doc);
            return Ok(found(path, kind, v3::document(doc), dims, mtime));
        }
        if let Some((zarray, mtime)) = self.read(path, ".zarray")? {
            let gen1 = self.gen1(path, nczarr::GEN1_VAR);
            let (meta, doc, dims) = v2::array(zarray, self.attrs(path), gen1.as_ref(), &prefix);
            let kind = NodeKind::Array(checked(meta));
            return Ok(found(path, kind, doc, dims, mtime));
        }
        let Some((zgroup, mtime)) = self.read(path, ".zgroup")? else {
            return Ok(None);
        };
        let gen1 = self.gen1(path, nczarr::GEN1_GROUP);
        let (doc, dims) = v2::group(&zgroup, self.attrs(path), gen1.as_ref());
        Ok(found(path, NodeKind::Group, doc, dims, mtime))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{DirStore, Layer, MemoryStore, Request};
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    /// A memory store walked with a given parallelism, noting the most requests in flight.
    struct Gauge {
        inner: MemoryStore,
        parallelism: usize,
        counts: Arc<Counts>,
    }

    #[derive(Default)]
    struct Counts {
        in_flight: AtomicUsize,
        peak: AtomicUsize,
        total: AtomicUsize,
    }

    /// One request in flight, until dropped.
    struct InFlight(Arc<Counts>);

    impl Drop for InFlight {
        fn drop(&mut self) {
            self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
        }
    }

    impl Gauge {
        fn new(inner: MemoryStore, parallelism: usize) -> Self {
            Gauge {
                inner,
                parallelism,
                counts: Arc::default(),
            }
        }
    }

    impl Layer for Gauge {
        type Step = Option<InFlight>;

        fn inner(&self) -> Result<&dyn Store, StoreError> {
            Ok(&self.inner)
        }

        /// One request: overlapping ones are counted, and each waits a little, as on a network.
        fn before(&self, _request: &Request<'_>) -> Result<Option<InFlight>, StoreError> {
            let counts = &self.counts;
            counts.total.fetch_add(1, Ordering::SeqCst);
            let now = counts.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            counts.peak.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(1));
            Ok(Some(InFlight(counts.clone())))
        }

        fn parallelism(&self) -> usize {
            self.parallelism
        }

        fn describe(&self) -> String {
            format!("gauge({})", self.parallelism)
        }
    }

    const ARRAY: &str = r#"{"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "<i2", "compressor": null, "fill_value": 0, "order": "C", "filters": null}"#;

    /// Groups in groups, v2 and v3 nodes, implicit groups, broken nodes and a NCZarr group
    /// whose list names a child twice and omits another.
    fn wide_tree() -> MemoryStore {
        let mut s = MemoryStore::new();
        s.insert(".zgroup", r#"{"zarr_format": 2}"#);
        for g in 0..12 {
            s.insert(format!("g{g:02}/.zgroup"), r#"{"zarr_format": 2}"#);
            s.insert(format!("g{g:02}/.zattrs"), format!(r#"{{"g": {g}}}"#));
            for a in 0..7 {
                s.insert(format!("g{g:02}/a{a}/.zarray"), ARRAY);
                s.insert(
                    format!("g{g:02}/imp{a}/v3/zarr.json"),
                    r#"{"zarr_format": 3, "node_type": "group"}"#,
                );
            }
            s.insert(format!("g{g:02}/bad/.zarray"), "{not json");
        }
        s.insert("nc/.zgroup", r#"{"zarr_format": 2}"#);
        s.insert(
            "nc/.zattrs",
            r#"{"_nczarr_group": {"dims": {}, "vars": ["x", "x"], "groups": []}}"#,
        );
        s.insert("nc/x/.zarray", ARRAY);
        s.insert("nc/hidden/.zarray", ARRAY);
        s
    }

    #[test]
    fn a_parallel_walk_finds_what_a_sequential_one_finds() {
        let walk = |parallelism| {
            let store = Gauge::new(wide_tree(), parallelism);
            let h = load_hierarchy(&store, &LoadOptions::default()).unwrap();
            let nodes: Vec<_> = h
                .nodes
                .iter()
                .map(|n| (n.path.clone(), Value::Object(n.document.parse())))
                .collect();
            (nodes, store.counts.peak.load(Ordering::SeqCst))
        };
        let (one, peak_one) = walk(1);
        let (many, peak_many) = walk(16);
        assert_eq!(one, many);
        assert_eq!(peak_one, 1);
        assert!(peak_many > 1, "the walk made one request at a time");
        let paths: Vec<&str> = one.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths.len(), 1 + 12 * (1 + 7 * 3) + 2, "{paths:?}");
        assert!(paths.contains(&"g03/imp6/v3") && paths.contains(&"nc/x"));
        assert!(!paths.contains(&"nc/hidden") && !paths.contains(&"g00/bad"));
        assert!(paths.windows(2).all(|w| w[0] < w[1]), "sorted, each once");
    }

    #[test]
    fn a_tree_loads_a_group_when_asked_and_only_that_group() {
        let store = Gauge::new(wide_tree(), 4);
        let requests = || store.counts.total.load(Ordering::SeqCst);
        let tree = Tree::open(StoreRef::Borrowed(&store), &LoadOptions::default()).unwrap();
        let opened = requests();
        let root = tree.children("", &tree.root().document).unwrap();
        assert_eq!(requests(), opened, "the root's children were read at open");
        let names: Vec<&str> = root.iter().map(|n| n.path.as_str()).collect();
        assert_eq!(names.len(), 13, "{names:?}");
        assert_eq!(names[..2], ["g00", "g01"]);
        // One group: its listing and its children's documents, nothing deeper.
        let group = |path: &str| {
            let before = requests();
            let doc = &root.iter().find(|n| n.path == path).unwrap().document;
            let children = tree.children(path, doc).unwrap();
            (children, requests() - before)
        };
        let (g00, cost) = group("g00");
        let (_, same) = group("g01");
        assert_eq!(cost, same);
        let paths: Vec<&str> = g00.iter().map(|n| n.path.as_str()).collect();
        assert_eq!(paths.len(), 14, "{paths:?}");
        assert!(paths.contains(&"g00/a0") && paths.contains(&"g00/imp6"));
        assert!(!paths.iter().any(|p| p.matches('/').count() > 1));
        // An implicit group shows because a node lies below it, found when it is listed.
        let imp = &g00.iter().find(|n| n.path == "g00/imp6").unwrap().document;
        let below = tree.children("g00/imp6", imp).unwrap();
        assert_eq!(below.len(), 1);
        assert_eq!(below[0].path, "g00/imp6/v3");
    }

    #[test]
    fn oversized_metadata_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let write = |key: &str, bytes: &[u8]| {
            let path = dir.path().join(key);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        };
        // Sparse files: one byte over each bound, all zeros (not JSON, were they read).
        let sparse = |key: &str, len: u64| {
            write(key, b"");
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(dir.path().join(key))
                .unwrap();
            f.set_len(len).unwrap();
        };
        write(".zgroup", br#"{"zarr_format": 2}"#);
        write("a/.zarray", ARRAY.as_bytes());
        sparse("big/.zarray", MAX_DOCUMENT_BYTES + 1);
        sparse(".zmetadata", consolidated::MAX_CONSOLIDATED_BYTES + 1);
        let store = DirStore::new(dir.path()).unwrap();
        assert!(matches!(
            read_json(&store, "big/.zarray"),
            Err(MetaError::TooLarge(m)) if m.contains(&format!("{} bytes", MAX_DOCUMENT_BYTES + 1))
        ));
        assert!(matches!(
            consolidated::open(StoreRef::Borrowed(&store), None),
            Err(MetaError::TooLarge(_))
        ));
        // The consolidated metadata is ignored, the listing walked, the big node left out.
        let h = load_hierarchy(&store, &LoadOptions::default()).unwrap();
        let paths: Vec<_> = h.nodes.iter().map(|n| n.path.as_str()).collect();
        assert_eq!(paths, ["", "a"]);
        // Exactly at the bound, a document is read (and here fails as JSON, being zeros).
        sparse("edge/.zarray", MAX_DOCUMENT_BYTES);
        assert!(matches!(
            read_json(&store, "edge/.zarray"),
            Err(MetaError::Json { .. })
        ));
    }

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
        assert_eq!(h.nodes[0].document.parse()["attributes"]["title"], "t");
        assert_eq!(h.nodes[1].document.parse()["node_type"], "array");
    }

    #[test]
    fn implicit_groups_take_the_dialect_of_the_nodes_below() {
        let docs = |s: &MemoryStore| -> Vec<(String, Value)> {
            let h = load_hierarchy(s, &LoadOptions::default()).unwrap();
            let groups = h
                .nodes
                .into_iter()
                .filter(|n| matches!(n.kind, NodeKind::Group));
            groups
                .map(|n| (n.path, Value::Object(n.document.parse())))
                .collect()
        };
        // tensorstore's zarr3 driver: array documents only, no root zarr.json.
        let mut v3 = MemoryStore::new();
        let array = r#"{"zarr_format": 3, "node_type": "array", "shape": [2], "data_type": "int8", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}}, "chunk_key_encoding": {"name": "default"}, "codecs": [{"name": "bytes"}], "fill_value": 0}"#;
        v3.insert("a/zarr.json", array);
        v3.insert("g/h/b/zarr.json", array);
        let group = serde_json::json!({"zarr_format": 3, "node_type": "group", "attributes": {}});
        let paths = ["", "g", "g/h"].map(String::from);
        assert_eq!(docs(&v3), paths.map(|p| (p, group.clone())));
        // v2 arrays: v2 groups.
        let mut v2 = MemoryStore::new();
        v2.insert("g/a/.zarray", ARRAY);
        let group = serde_json::json!({"zarr_format": 2, "node_type": "group", "attributes": {}});
        assert_eq!(docs(&v2), ["", "g"].map(|p| (p.to_string(), group.clone())));
        // A draft: draft groups, as the draft root without a document.
        let mut draft = MemoryStore::new();
        draft.insert(
            "zarr.json",
            r#"{"zarr_format": "https://purl.org/zarr/spec/protocol/core/3.0"}"#,
        );
        draft.insert("meta/root/g/a.array.json", r#"{"shape": [2], "data_type": "<i2", "chunk_grid": {"type": "regular", "chunk_shape": [2], "separator": "/"}, "chunk_memory_layout": "C", "fill_value": 0, "attributes": {}}"#);
        let group = serde_json::json!({"attributes": {}});
        assert_eq!(
            docs(&draft),
            ["", "g"].map(|p| (p.to_string(), group.clone()))
        );
    }

    #[test]
    fn a_store_with_no_metadata_is_an_error() {
        let mut s = MemoryStore::new();
        s.insert("x/y", "z");
        assert!(matches!(
            load_hierarchy(&s, &LoadOptions::default()),
            Err(MetaError::NoMetadata(_))
        ));
    }

    #[test]
    fn stale_consolidated_metadata_wins_unless_disabled() {
        let mut s = MemoryStore::new();
        s.insert(".zgroup", r#"{"zarr_format": 2}"#);
        s.insert(".zattrs", r#"{"version": 2}"#);
        s.insert(".zmetadata", r#"{"metadata": {".zgroup": {"zarr_format": 2}, ".zattrs": {"version": 1}}, "zarr_consolidated_format": 1}"#);
        let with = load_hierarchy(&s, &LoadOptions::default()).unwrap();
        assert_eq!(with.nodes[0].document.parse()["attributes"]["version"], 1);
        let without = load_hierarchy(
            &s,
            &LoadOptions {
                consolidated: false,
            },
        )
        .unwrap();
        assert_eq!(
            without.nodes[0].document.parse()["attributes"]["version"],
            2
        );
    }
}
