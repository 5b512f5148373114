//! Extended attributes: an array's metadata as `user.zarr.*` values on its files, a group's
//! format and attributes on its directory. Read-only; `listxattr`/`getxattr` size probing is
//! answered by [`sized`]. A value longer than the kernel lets `getxattr` return
//! ([`XATTR_SIZE_MAX`]) is left out of both (a warning, once per node).

use super::slice_table::is_slice;
use super::{Attrs, View, ViewError};
use crate::meta::{ArrayMeta, ChunkGrid, Dimensions};
use parking_lot::Mutex;
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::sync::Arc;

/// The extended attributes of one inode: names and values, in listing order.
pub type Xattrs = Arc<[(String, Vec<u8>)]>;

/// The longest value the kernel lets `getxattr` return (Linux's `XATTR_SIZE_MAX`): a longer
/// one could be listed but never read (E2BIG).
pub const XATTR_SIZE_MAX: usize = 65536;

/// Nodes warned of at most; the long values of further nodes are logged at debug level.
const WARNED_MAX: usize = 4096;

/// The nodes (by number in the view's ZOM files; `None` the root) whose values too long for
/// `getxattr` have been warned of: each once, every call lists and reads them.
#[derive(Default)]
pub(super) struct Warned(Mutex<HashSet<Option<u32>>>);

impl Warned {
    /// The level to log `node`'s left-out values at: a warning the first time, debug level
    /// after, and for every node once [`WARNED_MAX`] have been warned of.
    fn level(&self, node: Option<u32>) -> log::Level {
        let mut warned = self.0.lock();
        match warned.len() < WARNED_MAX && warned.insert(node) {
            true => log::Level::Warn,
            false => log::Level::Debug,
        }
    }
}

/// What a `getxattr`/`listxattr` call gets back for a buffer of `size` bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum XattrReply {
    /// `size` was 0: the length the value needs.
    Size(u32),
    /// The value itself.
    Data(Vec<u8>),
}

/// Answers a request with a `size`-byte buffer for `value`: its length when `size` is 0, the
/// value when it fits, ERANGE otherwise.
pub fn sized(value: Vec<u8>, size: u32) -> Result<XattrReply, ViewError> {
    let len = u32::try_from(value.len()).map_err(|_| ViewError::TooSmall)?;
    match size {
        0 => Ok(XattrReply::Size(len)),
        s if s < len => Err(ViewError::TooSmall),
        _ => Ok(XattrReply::Data(value)),
    }
}

fn text(v: &Value) -> Vec<u8> {
    v.to_string().into_bytes()
}

/// The `user.zarr.format` attribute of a node in a store of Zarr `version`.
fn format(version: u8) -> (String, Vec<u8>) {
    ("user.zarr.format".into(), version.to_string().into_bytes())
}

/// The attributes of an array's files in a store of Zarr `version`, its metadata `meta` and
/// `dimensions` and its document `doc`. An array whose metadata could not be parsed has only
/// its format.
pub fn array_xattrs(
    doc: &Map<String, Value>,
    meta: Option<&ArrayMeta>,
    dimensions: &Dimensions,
    version: u8,
) -> Xattrs {
    let Some(meta) = meta else {
        return Arc::from(vec![format(version)]);
    };
    let dimension_names = json!(dimensions.names);
    let fill = doc.get("fill_value").cloned().unwrap_or(Value::Null);
    // A rectilinear grid shows each axis's edge lengths.
    let chunks = match &meta.grid {
        ChunkGrid::Regular => json!(meta.chunk_shape),
        ChunkGrid::Rectilinear(edges) => json!(edges.lengths()),
    };
    let list = vec![
        ("user.zarr.shape".into(), text(&json!(meta.shape))),
        (
            "user.zarr.dtype".into(),
            meta.dtype.npy_descr().into_bytes(),
        ),
        ("user.zarr.chunks".into(), text(&chunks)),
        ("user.zarr.dimension_names".into(), text(&dimension_names)),
        ("user.zarr.fill_value".into(), text(&fill)),
        ("user.zarr.codecs".into(), text(&super::zom::codecs(meta))),
        format(version),
    ];
    Arc::from(list)
}

/// The attributes of a group's directory.
pub fn group_xattrs(doc: &Map<String, Value>, version: u8) -> Xattrs {
    let attributes = doc.get("attributes").cloned().unwrap_or_else(|| json!({}));
    Arc::from(vec![
        format(version),
        ("user.zarr.attributes".into(), text(&attributes)),
    ])
}

impl View {
    /// The extended attributes of `ino` that can be read (values of at most
    /// [`XATTR_SIZE_MAX`] bytes; each longer one left out is logged, a warning the first time
    /// for its node); selection files have none.
    fn xattrs_of(&self, ino: u64) -> Result<Option<Xattrs>, ViewError> {
        if is_slice(ino) {
            self.slice(ino)?;
            return Ok(None);
        }
        let (xattrs, node, path) = match &self.inode(ino)?.xattrs {
            Attrs::None => return Ok(None),
            Attrs::Root => (self.root_xattrs.clone(), None, ""),
            Attrs::Node(zom) => {
                let doc = self.zoms.document(*zom).parse();
                let xattrs = match self.zoms.array(*zom) {
                    None => group_xattrs(&doc, self.version),
                    Some(meta) => {
                        let dims = self.zoms.dimensions(*zom);
                        array_xattrs(&doc, meta.as_deref(), dims, self.version)
                    }
                };
                (xattrs, Some(*zom), self.zoms.path(*zom))
            }
        };
        if xattrs
            .iter()
            .all(|(_, value)| value.len() <= XATTR_SIZE_MAX)
        {
            return Ok(Some(xattrs));
        }
        let level = self.long_xattrs.level(node);
        let readable = xattrs.iter().filter(|(name, value)| {
            let fits = value.len() <= XATTR_SIZE_MAX;
            if !fits {
                log::log!(
                    level,
                    "/{path}: extended attribute {name} left out: its {} bytes are more than \
                     the {XATTR_SIZE_MAX} getxattr may return",
                    value.len()
                );
            }
            fits
        });
        Ok(Some(readable.cloned().collect()))
    }

    /// The names of `ino`'s extended attributes, each ended by a NUL, for a `size`-byte buffer.
    pub fn listxattr(&self, ino: u64, size: u32) -> Result<XattrReply, ViewError> {
        let mut names = Vec::new();
        for (name, _) in self.xattrs_of(ino)?.iter().flat_map(|x| x.iter()) {
            names.extend_from_slice(name.as_bytes());
            names.push(0);
        }
        sized(names, size)
    }

    /// The value of `ino`'s extended attribute `name`, for a `size`-byte buffer.
    pub fn getxattr(&self, ino: u64, name: &str, size: u32) -> Result<XattrReply, ViewError> {
        if !name.starts_with("user.") {
            match is_slice(ino) {
                true => self.slice(ino).map(drop)?,
                false => self.inode(ino).map(drop)?,
            }
            return Err(ViewError::NoNamespace);
        }
        let value = self
            .xattrs_of(ino)?
            .and_then(|x| x.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone()))
            .ok_or(ViewError::NoAttribute)?;
        sized(value, size)
    }
}
