//! The `.zom.json` files of a mount, made on first use. A group's ZOM holds its whole subtree,
//! so making them all at mount would hold the hierarchy's documents again for every level of
//! the tree. Instead each node keeps its document once (the bytes its `.json` sidecar shows),
//! and a ZOM is written out node by node, each document parsed only while it is written: its
//! size (for `stat`) is measured that way and kept for every group on the way (so a walk
//! measures each node once), its bytes made when read and kept for the few files read last.

use super::zom::{array_node, group_node};
use crate::meta::ArrayMeta;
use serde_json::{Map, Value};
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

/// Subtrees at least this large say in the log when their ZOM is made.
const LOGGED_NODES: usize = 10_000;

/// How many made files are kept for reads that follow.
const KEPT_FILES: usize = 4;

/// One node as kept for its ancestors' ZOMs.
struct Kept {
    path: Box<str>,
    /// The node's document, as its `.json` sidecar shows it.
    document: Arc<[u8]>,
    /// `None` for a group; `Some` for an array, holding its metadata where parsed.
    array: Option<Option<Arc<ArrayMeta>>>,
}

/// Every node of the hierarchy, and the `.zom.json` files measured or made so far.
pub struct ZomFiles {
    version: u8,
    nodes: Vec<Kept>,
    /// The children of every node, by node number, last name first (the ZOM's order); made
    /// at the first use.
    children: OnceLock<Vec<Vec<u32>>>,
    /// The size of every group's ZOM at nesting 0 and its line breaks (every level deeper
    /// adds two bytes per line break), by node number, once measured.
    sizes: Vec<OnceLock<(u64, u64)>>,
    /// One per `.zom.json`: the number of its group's node.
    files: Vec<u32>,
    /// The files made last, newest last.
    made: Mutex<Vec<(u32, Arc<[u8]>)>>,
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
            nodes: Vec::new(),
            children: OnceLock::new(),
            sizes: Vec::new(),
            files: Vec::new(),
            made: Mutex::new(Vec::new()),
        }
    }

    /// Keeps the node at `path` (every node is kept, parents before children) whose document
    /// is `parsed` and, as its `.json` sidecar shows it, `document`; `array` is `None` for a
    /// group, else the array's metadata where parsed. An array's ZOM is measured now, from
    /// `parsed`, so that measuring a group parses only the documents of groups. Returns the
    /// node's number.
    pub fn keep(
        &mut self,
        path: &str,
        parsed: &Map<String, Value>,
        document: Arc<[u8]>,
        array: Option<Option<Arc<ArrayMeta>>>,
    ) -> u32 {
        let size = OnceLock::new();
        if let Some(meta) = &array {
            size.get_or_init(|| counted(|sink| self.write_array(parsed, meta.as_deref(), 0, sink)));
        }
        self.nodes.push(Kept {
            path: path.into(),
            document,
            array,
        });
        self.sizes.push(size);
        (self.nodes.len() - 1) as u32
    }

    /// Adds the `.zom.json` of group node `node`; returns its number.
    pub fn add_file(&mut self, node: u32) -> u32 {
        self.files.push(node);
        (self.files.len() - 1) as u32
    }

    /// The size of `.zom.json` number `k`, measured at the first call (with the subgroups'
    /// sizes, so each node is measured once whatever the order of the calls).
    pub fn size(&self, k: u32) -> u64 {
        match self.files.get(k as usize) {
            Some(&node) => self.measured(node).0 + 1,
            None => 0,
        }
    }

    /// The size of node `node`'s ZOM at nesting 0, and its line breaks.
    fn measured(&self, node: u32) -> (u64, u64) {
        *self.sizes[node as usize].get_or_init(|| {
            counted(|sink| match &self.nodes[node as usize].array {
                None => self.write(node, sink),
                Some(meta) => {
                    let doc = self.document(node);
                    self.write_array(&doc, meta.as_deref(), 0, sink)
                }
            })
        })
    }

    /// Writes the ZOM of the array whose document is `doc` at nesting `depth`.
    fn write_array(
        &self,
        doc: &Map<String, Value>,
        meta: Option<&ArrayMeta>,
        depth: usize,
        out: &mut Sink,
    ) {
        let zom = array_node(doc, meta, self.version);
        // Writing to a sink cannot fail.
        let _ = write_value(&Value::Object(zom), depth, out);
    }

    /// The contents of `.zom.json` number `k`, made now unless among the files made last
    /// (concurrent first reads make it once).
    pub fn bytes(&self, k: u32) -> Arc<[u8]> {
        let Some(&node) = self.files.get(k as usize) else {
            return Arc::from(Vec::new());
        };
        let mut made = self.made.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = made.iter().position(|(f, _)| *f == k) {
            let entry = made.remove(i);
            made.push(entry.clone());
            return entry.1;
        }
        let mut sink = Sink::Bytes(Vec::new());
        self.write(node, &mut sink);
        let bytes: Arc<[u8]> = match sink {
            Sink::Bytes(mut out) => {
                out.push(b'\n');
                Arc::from(out)
            }
            Sink::Count { .. } => Arc::from(Vec::new()),
        };
        if made.len() >= KEPT_FILES {
            made.remove(0);
        }
        made.push((k, bytes.clone()));
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

    fn children(&self) -> &[Vec<u32>] {
        self.children.get_or_init(|| {
            let index: std::collections::HashMap<&str, u32> = self
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (&*n.path, i as u32))
                .collect();
            let mut children = vec![Vec::new(); self.nodes.len()];
            for (i, n) in self.nodes.iter().enumerate().skip(1) {
                let parent = n.path.rsplit_once('/').map_or("", |(p, _)| p);
                match index.get(parent) {
                    Some(&p) if self.nodes[p as usize].array.is_none() => {
                        children[p as usize].push(i as u32)
                    }
                    _ => {}
                }
            }
            for list in &mut children {
                list.sort_by(|a, b| self.name(*b).cmp(self.name(*a)));
            }
            children
        })
    }

    fn name(&self, node: u32) -> &str {
        let path = &self.nodes[node as usize].path;
        path.rsplit('/').next().unwrap_or("")
    }

    fn document(&self, node: u32) -> Map<String, Value> {
        serde_json::from_slice(&self.nodes[node as usize].document).unwrap_or_default()
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
        let zom = group_node(&self.document(node), Map::new(), self.version);
        write_object(out, depth, zom.iter(), |out, key, value| {
            if key != "members" {
                return write_value(value, depth + 1, out);
            }
            let children = self.children()[node as usize].iter();
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
                    (Some(meta), Sink::Bytes(_)) => {
                        *written += 1;
                        let doc = self.document(child);
                        self.write_array(&doc, meta.as_deref(), depth + 2, out);
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
    match sink {
        Sink::Count { bytes, breaks } => (bytes, breaks),
        Sink::Bytes(_) => (0, 0),
    }
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

    fn keep(
        z: &mut ZomFiles,
        path: &str,
        doc: Value,
        array: Option<Option<Arc<ArrayMeta>>>,
    ) -> u32 {
        let Value::Object(parsed) = &doc else {
            panic!("{doc} is not an object")
        };
        z.keep(path, parsed, Arc::from(pretty(&doc)), array)
    }

    /// A v3 tree: the root, a group `g` holding arrays `b` and `a` and a group `sub` holding
    /// array `é`; an array `z` at the root whose metadata could not be parsed.
    fn tree() -> (ZomFiles, u32, u32) {
        let array = |n: u32| json!({"zarr_format": 3, "node_type": "array", "shape": [n], "attributes": {"n": n, "text": "two\nlines"}});
        let group =
            |t: &str| json!({"zarr_format": 3, "node_type": "group", "attributes": {"title": t}});
        let mut z = ZomFiles::new(3);
        let root = keep(&mut z, "", group("root"), None);
        let g = keep(&mut z, "g", group("g"), None);
        keep(&mut z, "g/a", array(1), Some(None));
        keep(&mut z, "g/b", array(2), Some(None));
        keep(&mut z, "g/sub", group(""), None);
        keep(&mut z, "g/sub/é", array(3), Some(None));
        keep(&mut z, "z", array(4), Some(None));
        (z, root, g)
    }

    #[test]
    fn a_zom_is_written_as_serde_json_prints_the_whole_tree() {
        let (mut z, root, g) = tree();
        let (root_file, g_file) = (z.add_file(root), z.add_file(g));
        let array = |n: u32| json!({"zarr_format": 3, "node_type": "array", "attributes": {"n": n, "text": "two\nlines"}, "shape": [n]});
        // Members last name first, as a map filled from the leaves up keeps them.
        let sub = json!({"zarr_format": 3, "node_type": "group", "attributes": {"title": ""},
            "members": {"é": array(3)}});
        let g_zom = json!({"zarr_format": 3, "node_type": "group", "attributes": {"title": "g"},
            "members": {"sub": sub, "b": array(2), "a": array(1)}});
        let root_zom = json!({"zarr_format": 3, "node_type": "group", "attributes": {"title": "root"},
            "members": {"z": array(4), "g": g_zom.clone()}});
        assert_eq!(z.size(g_file), pretty(&g_zom).len() as u64);
        assert_eq!(&*z.bytes(g_file), pretty(&g_zom).as_slice());
        assert_eq!(&*z.bytes(root_file), pretty(&root_zom).as_slice());
        assert_eq!(z.size(root_file), pretty(&root_zom).len() as u64);
        // Measured the other way round: the root first, its subgroups measured on the way.
        let (mut z, root, g) = tree();
        let (root_file, g_file) = (z.add_file(root), z.add_file(g));
        assert_eq!(z.size(root_file), pretty(&root_zom).len() as u64);
        assert_eq!(z.size(g_file), pretty(&g_zom).len() as u64);
    }

    #[test]
    fn nothing_is_made_before_a_read_and_concurrent_first_reads_make_it_once() {
        let (mut z, root, _) = tree();
        let file = z.add_file(root);
        let size = z.size(file);
        assert!(z.made.lock().unwrap().is_empty(), "stat keeps no bytes");
        let all: Vec<Arc<[u8]>> = std::thread::scope(|s| {
            let threads: Vec<_> = (0..8).map(|_| s.spawn(|| z.bytes(file))).collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        assert!(
            all.iter().all(|b| Arc::ptr_eq(b, &all[0])),
            "made more than once"
        );
        assert_eq!(all[0].len() as u64, size);
        assert_eq!(z.made.lock().unwrap().len(), 1);
    }

    #[test]
    fn only_the_files_read_last_are_kept() {
        let (mut z, root, _) = tree();
        let files: Vec<u32> = (0..KEPT_FILES + 2).map(|_| z.add_file(root)).collect();
        let first = z.bytes(files[0]);
        for &f in &files[1..] {
            z.bytes(f);
        }
        let kept: Vec<u32> = z.made.lock().unwrap().iter().map(|(f, _)| *f).collect();
        assert_eq!(kept, files[2..]);
        assert_eq!(z.bytes(files[0]), first, "made again the same");
    }
}
