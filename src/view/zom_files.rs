//! The `.zom.json` files of a mount, made on first use. A group's ZOM holds its whole subtree,
//! so making them all at mount would hold the hierarchy's documents again for every level of
//! the tree. Instead each node keeps its document once (as compact text, see [`Document`]), and
//! a ZOM is written out node by node, each document parsed only while it is written: its
//! size (for `stat`) is measured that way and kept for every group on the way (so a walk
//! measures each node once), its bytes made when read (once however many read it at the same
//! time, without holding up reads of other files) and kept within a budget of bytes and of
//! files, the least recently read dropped first (never one still being made).
//! Nodes are kept as their groups are loaded; a ZOM is measured once its group's subtree is.
//! A node's `.json` sidecar is made from its document when read, and kept among the few read
//! last.

use super::zom::{array_node, group_node};
use crate::meta::{ArrayMeta, Dimensions, Document, Hierarchy, MetaError, Node, NodeKind};
use lru::LruCache;
use parking_lot::Mutex;
use serde_json::Value;
use std::io::Write;
use std::num::NonZeroUsize;
use std::sync::{Arc, OnceLock};

/// Subtrees at least this large say in the log when their ZOM is made.
const LOGGED_NODES: usize = 10_000;

/// Bytes of made files kept for reads that follow (the last one made stays, whatever its
/// size).
const KEPT_BYTES: usize = 32 << 20;

/// How many made files are kept at most (however small).
const KEPT_FILES: usize = 1024;

/// How many `.json` sidecars are kept for reads that follow.
const KEPT_SIDECARS: NonZeroUsize = NonZeroUsize::new(4).unwrap();

/// The dimensions of a node whose metadata declares none.
static NO_DIMENSIONS: Dimensions = Dimensions {
    names: None,
    nczarr_references: None,
    nczarr_shared: None,
};

/// One node as kept for its ancestors' ZOMs.
struct Kept {
    path: Box<str>,
    document: Document,
    /// `None` for a group; `Some` for an array, holding its metadata where parsed.
    array: Option<Option<Arc<ArrayMeta>>>,
    /// The dimensions its metadata declares; `None` when it declares none.
    dimensions: Option<Box<Dimensions>>,
    /// The size of its ZOM at nesting 0 and its line breaks (every level deeper adds two
    /// bytes per line break), once measured.
    size: OnceLock<(u64, u64)>,
    /// A group's children, last name first (the ZOM's order), once its group is loaded.
    children: OnceLock<Box<[u32]>>,
}

/// Every node loaded so far, and the `.zom.json` files measured or made so far.
pub struct ZomFiles {
    version: u8,
    nodes: boxcar::Vec<Kept>,
    /// The files made last (and those being made), by group node.
    made: Mutex<Made>,
    /// The `.json` sidecars read last, by node (a large one is read in many pieces).
    sidecars: Mutex<LruCache<u32, Arc<[u8]>>>,
}

/// The files made, the least recently read first, and the bytes of those made.
struct Made {
    files: LruCache<u32, Arc<MadeFile>>,
    bytes: usize,
}

impl Made {
    /// Drops the files read least recently until those kept are within [`KEPT_BYTES`] and
    /// [`KEPT_FILES`]; never `newest` (the file just made) nor one still being made (the
    /// readers waiting for it would have it made again).
    fn trim(&mut self, newest: u32) {
        while self.bytes > KEPT_BYTES || self.files.len() > KEPT_FILES {
            let oldest = (self.files.iter().rev())
                .find(|(&n, f)| n != newest && f.bytes.get().is_some())
                .map(|(&n, _)| n);
            let Some(dropped) = oldest.and_then(|n| self.files.pop(&n)) else {
                break;
            };
            self.bytes -= dropped.bytes.get().map_or(0, |b| b.len());
        }
    }
}

/// One group's `.zom.json`: its bytes once made; held while they are made, so that
/// concurrent first reads make them once.
#[derive(Default)]
struct MadeFile {
    bytes: OnceLock<Arc<[u8]>>,
    making: Mutex<()>,
}

/// Where a ZOM is written: its bytes, or only their count (and that of line breaks).
enum Sink {
    Bytes(Vec<u8>),
    Count { bytes: u64, breaks: u64 },
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Bytes(out) => out.extend_from_slice(buf),
            Sink::Count { bytes, breaks } => {
                *bytes += buf.len() as u64;
                *breaks += buf.iter().filter(|&&b| b == b'\n').count() as u64;
            }
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl ZomFiles {
    /// No nodes yet, in a store of Zarr `version`.
    pub fn new(version: u8) -> Self {
        ZomFiles {
            version,
            nodes: boxcar::Vec::new(),
            made: Mutex::new(Made {
                files: LruCache::unbounded(),
                bytes: 0,
            }),
            sidecars: Mutex::new(LruCache::new(KEPT_SIDECARS)),
        }
    }

    /// Keeps the node at `path` whose document is `document`; `array` is `None` for a group,
    /// else the array's metadata where parsed;
    /// `dimensions` are those its metadata declares. Nothing is measured here: a walk that
    /// never reads a ZOM pays nothing for it. Returns the node's number.
    pub fn keep(
        &self,
        path: &str,
        document: Document,
        array: Option<Option<Arc<ArrayMeta>>>,
        dimensions: &Dimensions,
    ) -> u32 {
        let dimensions = (*dimensions != NO_DIMENSIONS).then(|| Box::new(dimensions.clone()));
        let index = self.nodes.push(Kept {
            path: path.into(),
            document,
            array,
            dimensions,
            size: OnceLock::new(),
            children: OnceLock::new(),
        });
        index as u32
    }

    /// Sets the children of group node `node`, once its group is loaded.
    pub fn set_children(&self, node: u32, mut children: Vec<u32>) {
        children.sort_by(|a, b| self.name(*b).cmp(self.name(*a)));
        let _ = self.nodes[node as usize]
            .children
            .set(children.into_boxed_slice());
    }

    /// `None` for a group node; for an array node, its metadata where parsed.
    pub fn array(&self, node: u32) -> Option<Option<Arc<ArrayMeta>>> {
        self.nodes[node as usize].array.clone()
    }

    /// The dimensions the metadata of node `node` declares.
    pub fn dimensions(&self, node: u32) -> &Dimensions {
        self.nodes[node as usize]
            .dimensions
            .as_deref()
            .unwrap_or(&NO_DIMENSIONS)
    }

    /// The path of node `node` (`""`: the root).
    pub fn path(&self, node: u32) -> &str {
        &self.nodes[node as usize].path
    }

    /// The document of node `node`.
    pub fn document(&self, node: u32) -> &Document {
        &self.nodes[node as usize].document
    }

    /// The `.json` sidecar of node `node`: its document pretty-printed, made now unless among
    /// the sidecars read last.
    pub fn json(&self, node: u32) -> Arc<[u8]> {
        if let Some(bytes) = self.sidecars.lock().get(&node) {
            return bytes.clone();
        }
        let bytes: Arc<[u8]> = Arc::from(self.document(node).pretty());
        self.sidecars.lock().put(node, bytes.clone());
        bytes
    }

    /// The size of group node `node`'s `.zom.json`, measured at the first call (with the
    /// subgroups' sizes, so each node is measured once whatever the order of the calls).
    /// The group's subtree must be loaded.
    pub fn size(&self, node: u32) -> u64 {
        self.measured(node).0 + 1
    }

    /// The size of group node `node`'s `.zom.json` if measured before.
    pub fn measured_size(&self, node: u32) -> Option<u64> {
        self.nodes[node as usize].size.get().map(|(b, _)| b + 1)
    }

    /// The size of node `node`'s ZOM at nesting 0, and its line breaks.
    fn measured(&self, node: u32) -> (u64, u64) {
        *self.nodes[node as usize].size.get_or_init(|| {
            counted(|sink| match &self.nodes[node as usize].array {
                None => self.write(node, sink),
                Some(_) => self.write_array(node, 0, sink),
            })
        })
    }

    /// Every node kept, sorted by path (for the netCDF files).
    pub fn hierarchy(&self) -> Hierarchy {
        let mut nodes: Vec<Node> = self
            .nodes
            .iter()
            .map(|(i, kept)| Node {
                path: kept.path.to_string(),
                kind: match &kept.array {
                    None => NodeKind::Group,
                    Some(Some(meta)) => NodeKind::Array(Ok(meta.clone())),
                    Some(None) => {
                        NodeKind::Array(Err(MetaError::Unsupported("metadata unusable".into())))
                    }
                },
                document: kept.document.clone(),
                dimensions: self.dimensions(i as u32).clone(),
                mtime: None,
            })
            .collect();
        nodes.sort_by(|a, b| a.path.cmp(&b.path));
        Hierarchy { nodes }
    }

    /// Writes the ZOM of array node `node` at nesting `depth`.
    fn write_array(&self, node: u32, depth: usize, out: &mut Sink) {
        let meta = self.nodes[node as usize].array.as_ref();
        let meta = meta.and_then(Option::as_deref);
        let zom = array_node(&self.document(node).parse(), meta, self.version);
        // Writing to a sink cannot fail.
        let _ = write_value(&Value::Object(zom), depth, out);
    }

    /// The contents of group node `node`'s `.zom.json`, made now unless kept (concurrent
    /// first reads make it once; reads of other files do not wait). The group's subtree must
    /// be loaded.
    pub fn bytes(&self, node: u32) -> Arc<[u8]> {
        let file = self
            .made
            .lock()
            .files
            .get_or_insert(node, Arc::default)
            .clone();
        if let Some(bytes) = file.bytes.get() {
            return bytes.clone();
        }
        let _making = file.making.lock();
        if let Some(bytes) = file.bytes.get() {
            return bytes.clone();
        }
        let mut sink = Sink::Bytes(Vec::new());
        self.write(node, &mut sink);
        let Sink::Bytes(mut out) = sink else {
            return Arc::default();
        };
        out.push(b'\n');
        let bytes: Arc<[u8]> = Arc::from(out);
        // Counted under the lock that drops files, and only while kept.
        let mut made = self.made.lock();
        let _ = file.bytes.set(bytes.clone());
        if made
            .files
            .peek(&node)
            .is_some_and(|f| Arc::ptr_eq(f, &file))
        {
            made.bytes += bytes.len();
        }
        made.trim(node);
        bytes
    }

    /// Writes the ZOM of group node `node` at nesting 0, as pretty-printed JSON.
    fn write(&self, node: u32, out: &mut Sink) {
        let mut written = 0;
        if let Err(e) = self.write_group(node, 0, out, &mut written) {
            log::warn!(
                "/{}: {}: {e}",
                self.nodes[node as usize].path,
                super::ZOM_FILE
            );
        }
        if written >= LOGGED_NODES {
            log::info!(
                "/{}: {} written out from {written} nodes",
                self.nodes[node as usize].path,
                super::ZOM_FILE
            );
        }
    }

    fn children(&self, node: u32) -> &[u32] {
        self.nodes[node as usize].children.get().map_or(&[], |c| c)
    }

    fn name(&self, node: u32) -> &str {
        let path = &self.nodes[node as usize].path;
        path.rsplit('/').next().unwrap_or("")
    }

    /// Writes group node `node` at nesting `depth`, its members node by node.
    fn write_group(
        &self,
        node: u32,
        depth: usize,
        out: &mut Sink,
        written: &mut usize,
    ) -> std::io::Result<()> {
        *written += 1;
        let zom = group_node(&self.document(node).parse(), self.version);
        write_object(out, depth, zom.iter(), |out, key, value| {
            if key != "members" {
                return write_value(value, depth + 1, out);
            }
            let children = self.children(node).iter();
            let members = children.map(|&child| (self.name(child), child));
            write_object(out, depth + 1, members, |out, _, child| {
                match (&self.nodes[child as usize].array, &mut *out) {
                    // A node measured once counts at any depth.
                    (_, Sink::Count { bytes, breaks }) => {
                        let (b, n) = self.measured(child);
                        *bytes += b + 2 * (depth as u64 + 2) * n;
                        *breaks += n;
                    }
                    (None, Sink::Bytes(_)) => self.write_group(child, depth + 2, out, written)?,
                    (Some(_), Sink::Bytes(_)) => {
                        *written += 1;
                        self.write_array(child, depth + 2, out);
                    }
                }
                Ok(())
            })
        })
    }
}

/// Writes a JSON object at nesting `depth` as serde_json pretty-prints it: its `entries` in
/// order, each value written by `value`.
fn write_object<K: AsRef<str>, T>(
    out: &mut Sink,
    depth: usize,
    entries: impl Iterator<Item = (K, T)>,
    mut value: impl FnMut(&mut Sink, &str, T) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut empty = true;
    for (key, item) in entries {
        let lead = if empty { "{" } else { "," };
        let key = key.as_ref();
        write!(out, "{lead}\n{}{}: ", indent(depth + 1), Value::from(key))?;
        value(out, key, item)?;
        empty = false;
    }
    if empty {
        out.write_all(b"{}")
    } else {
        write!(out, "\n{}}}", indent(depth))
    }
}

/// The bytes and line breaks `write` writes.
fn counted(write: impl FnOnce(&mut Sink)) -> (u64, u64) {
    let mut sink = Sink::Count {
        bytes: 0,
        breaks: 0,
    };
    write(&mut sink);
    let Sink::Count { bytes, breaks } = sink else {
        return (0, 0);
    };
    (bytes, breaks)
}

fn indent(depth: usize) -> String {
    "  ".repeat(depth)
}

/// Writes `value` pretty-printed as it shows at nesting `depth` (JSON text holds no raw line
/// breaks but those between its parts, so every line after the first is indented).
fn write_value(value: &Value, depth: usize, out: &mut Sink) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    let mut lines = text.split('\n');
    out.write_all(lines.next().unwrap_or("").as_bytes())?;
    let pad = indent(depth);
    for line in lines {
        write!(out, "\n{pad}{line}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pretty(value: &Value) -> Vec<u8> {
        let mut text = serde_json::to_vec_pretty(value).unwrap();
        text.push(b'\n');
        text
    }

    fn keep(z: &ZomFiles, path: &str, doc: Value, array: Option<Option<Arc<ArrayMeta>>>) -> u32 {
        let doc = doc.as_object().expect("an object");
        z.keep(path, Document::new(doc), array, &NO_DIMENSIONS)
    }

    #[test]
    fn each_node_keeps_its_dimensions() {
        let z = ZomFiles::new(2);
        let doc = json!({"zarr_format": 2, "attributes": {}});
        let doc = Document::new(doc.as_object().unwrap());
        let shared = Dimensions {
            nczarr_shared: Some(vec![("x".into(), 3)]),
            ..Dimensions::default()
        };
        let root = z.keep("", doc.clone(), None, &shared);
        let plain = z.keep("g", doc, None, &Dimensions::default());
        assert_eq!(*z.dimensions(root), shared);
        assert_eq!(*z.dimensions(plain), Dimensions::default());
        let nodes = z.hierarchy().nodes;
        assert_eq!(nodes[0].dimensions, shared);
        assert_eq!(nodes[1].dimensions, Dimensions::default());
    }

    /// A v3 tree: the root, a group `g` holding arrays `b` and `a` and a group `sub` holding
    /// array `é`; an array `z` at the root whose metadata could not be parsed. Its groups are
    /// loaded in the order a walk from the root meets them.
    fn tree() -> (ZomFiles, u32, u32) {
        let array = |n: u32| json!({"zarr_format": 3, "node_type": "array", "shape": [n], "attributes": {"n": n, "text": "two\nlines"}});
        let group =
            |t: &str| json!({"zarr_format": 3, "node_type": "group", "attributes": {"title": t}});
        let z = ZomFiles::new(3);
        let root = keep(&z, "", group("root"), None);
        let g = keep(&z, "g", group("g"), None);
        let last = keep(&z, "z", array(4), Some(None));
        z.set_children(root, vec![g, last]);
        let a = keep(&z, "g/a", array(1), Some(None));
        let b = keep(&z, "g/b", array(2), Some(None));
        let sub = keep(&z, "g/sub", group(""), None);
        z.set_children(g, vec![a, b, sub]);
        let e = keep(&z, "g/sub/é", array(3), Some(None));
        z.set_children(sub, vec![e]);
        (z, root, g)
    }

    #[test]
    fn a_zom_is_written_as_serde_json_prints_the_whole_tree() {
        let (z, root, g) = tree();
        let array = |n: u32| json!({"zarr_format": 3, "node_type": "array", "attributes": {"n": n, "text": "two\nlines"}, "shape": [n]});
        // Members last name first, as a map filled from the leaves up keeps them.
        let sub = json!({"zarr_format": 3, "node_type": "group", "attributes": {"title": ""},
            "members": {"é": array(3)}});
        let g_zom = json!({"zarr_format": 3, "node_type": "group", "attributes": {"title": "g"},
            "members": {"sub": sub, "b": array(2), "a": array(1)}});
        let root_zom = json!({"zarr_format": 3, "node_type": "group", "attributes": {"title": "root"},
            "members": {"z": array(4), "g": g_zom.clone()}});
        assert_eq!(z.measured_size(g), None);
        assert_eq!(z.size(g), pretty(&g_zom).len() as u64);
        assert_eq!(z.measured_size(g), Some(z.size(g)));
        assert_eq!(&*z.bytes(g), pretty(&g_zom).as_slice());
        assert_eq!(&*z.bytes(root), pretty(&root_zom).as_slice());
        assert_eq!(z.size(root), pretty(&root_zom).len() as u64);
        // Measured the other way round: the root first, its subgroups measured on the way.
        let (z, root, g) = tree();
        assert_eq!(z.size(root), pretty(&root_zom).len() as u64);
        assert_eq!(z.measured_size(g), Some(pretty(&g_zom).len() as u64));
    }

    #[test]
    fn documents_at_the_parsers_depth_limit_keep_their_attributes() {
        // The deepest attributes serde_json reads, as a `.zattrs` is read at load: one level
        // deeper in the node's document, past the limit.
        let attrs = |levels: usize| {
            let deep = (0..levels).fold(json!([]), |v, _| json!([v]));
            json!({"deep": deep, "_nczarr_group": {"arrays": ["b", "a"], "groups": []}})
        };
        let parses = |v: &Value| serde_json::from_slice::<Value>(&pretty(v)).is_ok();
        let levels = (1..).take_while(|&n| parses(&attrs(n))).last().unwrap();
        let attrs = attrs(levels);
        let doc = json!({"zarr_format": 2, "node_type": "group", "attributes": attrs});
        assert!(!parses(&doc), "the document is past serde_json's limit");
        let z = ZomFiles::new(2);
        let root = keep(&z, "", doc.clone(), None);
        z.set_children(root, Vec::new());
        let zom = json!({"zarr_format": 2, "attributes": attrs, "members": {}});
        let (got, want) = (z.bytes(root), pretty(&zom));
        assert!(
            *got == *want,
            "the ZOM has {} bytes, not {}: attributes lost",
            got.len(),
            want.len()
        );
        let kept = Value::Object(z.hierarchy().nodes[0].document.parse());
        assert!(
            kept == doc,
            "the netCDF files' document lost its attributes"
        );
    }

    #[test]
    fn nothing_is_made_before_a_read_and_concurrent_first_reads_make_it_once() {
        let (z, root, _) = tree();
        let size = z.size(root);
        assert!(z.made.lock().files.is_empty(), "stat keeps no bytes");
        let all: Vec<Arc<[u8]>> = std::thread::scope(|s| {
            let threads: Vec<_> = (0..8).map(|_| s.spawn(|| z.bytes(root))).collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        assert!(
            all.iter().all(|b| Arc::ptr_eq(b, &all[0])),
            "made more than once"
        );
        assert_eq!(all[0].len() as u64, size);
        assert_eq!(z.made.lock().files.len(), 1);
    }

    #[test]
    fn a_sidecar_is_made_once_for_reads_that_follow() {
        let (z, _, g) = tree();
        let doc = json!({"zarr_format": 3, "node_type": "group", "attributes": {"title": "g"}});
        let first = z.json(g);
        assert_eq!(*first, *pretty(&doc));
        assert_eq!(z.document(g).pretty_len(), first.len() as u64);
        assert!(Arc::ptr_eq(&z.json(g), &first), "made again");
    }

    #[test]
    fn the_files_read_last_are_kept_within_a_budget_of_bytes() {
        let z = ZomFiles::new(3);
        // Files of a little over a quarter of the budget each: three fit, not four.
        let text = "x".repeat(KEPT_BYTES / 4);
        let group = json!({"zarr_format": 3, "node_type": "group", "attributes": {"t": text}});
        let groups: Vec<u32> = (0..6)
            .map(|i| keep(&z, &format!("g{i}"), group.clone(), None))
            .collect();
        let first = z.bytes(groups[0]);
        assert!(first.len() > KEPT_BYTES / 4);
        for &g in &groups[1..] {
            z.bytes(g);
        }
        let kept = |z: &ZomFiles| -> Vec<u32> {
            let made = z.made.lock();
            made.files.iter().rev().map(|(f, _)| *f).collect()
        };
        assert_eq!(kept(&z), groups[3..]);
        assert_eq!(z.made.lock().bytes, 3 * first.len());
        assert_eq!(z.bytes(groups[0]), first, "made again the same");
        // Small files: many more than four are kept, at most KEPT_FILES.
        let z = ZomFiles::new(3);
        let group = json!({"zarr_format": 3, "node_type": "group", "attributes": {}});
        let groups: Vec<u32> = (0..KEPT_FILES + 2)
            .map(|i| keep(&z, &format!("g{i}"), group.clone(), None))
            .collect();
        let made: Vec<Arc<[u8]>> = groups.iter().map(|&g| z.bytes(g)).collect();
        assert_eq!(kept(&z), groups[2..]);
        assert_eq!(z.made.lock().bytes, KEPT_FILES * made[0].len());
        for (&g, bytes) in groups[2..].iter().zip(&made[2..]) {
            assert!(Arc::ptr_eq(&z.bytes(g), bytes), "made again");
        }
    }

    #[test]
    fn a_file_still_being_made_is_not_dropped_for_room() {
        let z = ZomFiles::new(3);
        let text = "x".repeat(KEPT_BYTES / 4);
        let group = json!({"zarr_format": 3, "node_type": "group", "attributes": {"t": text}});
        let groups: Vec<u32> = (0..6)
            .map(|i| keep(&z, &format!("g{i}"), group.clone(), None))
            .collect();
        // A first read of g0 is making it (its slot, the least recently read, has no bytes
        // yet) while the others are made, more than the budget holds.
        let making = z
            .made
            .lock()
            .files
            .get_or_insert(groups[0], Arc::default)
            .clone();
        let made: Vec<Arc<[u8]>> = groups[1..].iter().map(|&g| z.bytes(g)).collect();
        let slot = z.made.lock().files.peek(&groups[0]).cloned();
        assert!(
            slot.is_some_and(|slot| Arc::ptr_eq(&slot, &making)),
            "dropped while being made: its waiting readers would make it again"
        );
        // The others are trimmed to the budget around it.
        assert_eq!(z.made.lock().files.len(), 4);
        assert_eq!(z.made.lock().bytes, 3 * made[0].len());
        // Made, it is counted and the budget holds again.
        let bytes = z.bytes(groups[0]);
        assert!(Arc::ptr_eq(making.bytes.get().unwrap(), &bytes));
        assert_eq!(z.made.lock().bytes, 3 * made[0].len());
        assert_eq!(z.made.lock().files.len(), 3);
    }
}
