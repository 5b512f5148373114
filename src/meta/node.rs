//! The node model every dialect is parsed into.

use super::{ChunkGrid, ChunkKeys, CodecSpec, DataType, MetaError};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::io::Write;
use std::sync::Arc;
use std::time::SystemTime;

/// The largest decoded chunk zarrfs accepts (4 GiB): a chunk is decoded whole into memory.
pub const MAX_CHUNK_BYTES: u64 = 4 << 30;

/// Everything needed to read an array's elements.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayMeta {
    /// Array shape (empty for 0-d).
    pub shape: Vec<u64>,
    /// Shape of every stored chunk (edge chunks are stored full size); for a rectilinear grid,
    /// the shape of the read chunks that tile the array (see [`ChunkGrid`]).
    pub chunk_shape: Vec<u64>,
    /// The stored chunks: regular (`chunk_shape`) or rectilinear.
    pub grid: ChunkGrid,
    /// Element type as served.
    pub dtype: DataType,
    /// One element of fill value, as served (little-endian).
    pub fill_value: Vec<u8>,
    /// The codec chain, v3 order.
    pub codecs: Vec<CodecSpec>,
    /// Chunk index → store key.
    pub chunk_keys: ChunkKeys,
}

/// The largest array served, in bytes: a file's size is a signed 64-bit number, and `A.npy`
/// adds its header.
const MAX_FILE_BYTES: u64 = i64::MAX as u64 - (1 << 20);

impl ArrayMeta {
    /// Number of elements, or `None` on overflow (0 when an axis is empty, however long the
    /// others).
    pub fn element_count(&self) -> Option<u64> {
        super::element_count(&self.shape)
    }

    /// Size of the served data in bytes, or `None` on overflow.
    pub fn byte_size(&self) -> Option<u64> {
        self.element_count()?.checked_mul(self.dtype.size() as u64)
    }

    /// Lets go of the room its lists hold past their elements (lists collected from fallible
    /// parsing keep room for four): a mount keeps every array's metadata.
    pub fn shrink_to_fit(&mut self) {
        self.shape.shrink_to_fit();
        self.chunk_shape.shrink_to_fit();
        self.fill_value.shrink_to_fit();
        self.codecs.shrink_to_fit();
    }

    /// Checks the shapes are usable: same rank, non-zero chunks, a size a file can have (below
    /// 2^63 bytes, with room for an `.npy` header). (The
    /// size of the chunks actually decoded, inner chunks for sharded arrays, is checked by the
    /// chunk reader against [`MAX_CHUNK_BYTES`].)
    pub fn validate(&self) -> Result<(), MetaError> {
        if self.shape.len() != self.chunk_shape.len() {
            return Err(MetaError::Shape(format!(
                "shape {:?} and chunk shape {:?} differ in rank",
                self.shape, self.chunk_shape
            )));
        }
        if self.chunk_shape.contains(&0) {
            return Err(MetaError::Shape(format!(
                "chunk shape {:?} has a zero extent",
                self.chunk_shape
            )));
        }
        if self.dtype.size() == 0 && !self.dtype.is_variable() {
            return Err(MetaError::DataType("data type has size zero".into()));
        }
        match self.byte_size() {
            Some(bytes) if bytes <= MAX_FILE_BYTES => Ok(()),
            _ => Err(MetaError::TooLarge(format!(
                "shape {:?} holds 2^63 bytes or more, more than a file can",
                self.shape
            ))),
        }
    }
}

/// What a node is.
#[derive(Clone, Debug)]
pub enum NodeKind {
    /// A group (explicit or implicit).
    Group,
    /// An array; `Err` holds why its data cannot be read (its metadata is still shown).
    Array(Result<Arc<ArrayMeta>, MetaError>),
}

/// One node of the hierarchy.
#[derive(Clone, Debug)]
pub struct Node {
    /// Path from the store root, `/`-separated, `""` for the root.
    pub path: String,
    /// Group or array.
    pub kind: NodeKind,
    /// The node as a Zarr Object Model document (what its `.json` sidecar shows).
    pub document: Document,
    /// The dimensions its metadata declares.
    pub dimensions: Dimensions,
    /// Modification time of the node's metadata, where the store knows it.
    pub mtime: Option<SystemTime>,
}

impl Node {
    /// The last path segment (`""` for the root).
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or("")
    }
}

/// A node's Zarr Object Model document, kept as compact JSON text and parsed when needed: a
/// tree of `serde_json` values costs several times its text, and a mount keeps every node's.
/// Clones share the text.
#[derive(Clone, Debug)]
pub struct Document {
    text: Arc<str>,
    /// The length of [`Document::pretty`].
    pretty_len: u64,
}

impl Document {
    /// The document `doc`.
    pub fn new(doc: &Map<String, Value>) -> Document {
        // One buffer per thread: a walk makes a document per node, and growing a fresh buffer
        // each time costs more than printing.
        thread_local!(static TEXT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) });
        let mut counted = Counted(0);
        // Writing into a Vec or a count cannot fail, and a map has string keys.
        let _ = serde_json::to_writer_pretty(&mut counted, doc);
        let text = TEXT.with_borrow_mut(|text| {
            text.clear();
            let _ = serde_json::to_writer(&mut *text, doc);
            // serde_json writes UTF-8.
            let made = Arc::from(std::str::from_utf8(text).unwrap_or("{}"));
            if text.capacity() > 1 << 20 {
                *text = Vec::new();
            }
            made
        });
        Document {
            text,
            pretty_len: counted.0 + 1,
        }
    }

    /// The document parsed. Its text is serde_json's own, of a document zarrfs parsed before
    /// (within serde_json's recursion limit) and wrapped in a level or two (`attributes`), so
    /// it is read without that limit: a `.zattrs` at the limit keeps its attributes.
    pub fn parse(&self) -> Map<String, Value> {
        let mut json = serde_json::Deserializer::from_str(&self.text);
        json.disable_recursion_limit();
        Map::deserialize(&mut json).unwrap_or_else(|e| {
            // Not expected: the text is serde_json's own output.
            log::error!("a node's document not read back: {e}");
            Map::new()
        })
    }

    /// The document as its `.json` sidecar shows it: pretty-printed, then a line break.
    pub fn pretty(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.pretty_len as usize);
        // Writing into a Vec cannot fail, and a map has string keys.
        let _ = serde_json::to_writer_pretty(&mut out, &self.parse());
        out.push(b'\n');
        out
    }

    /// The length of [`Document::pretty`], known without making it.
    pub fn pretty_len(&self) -> u64 {
        self.pretty_len
    }
}

/// A writer that counts the bytes written.
struct Counted(u64);

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The dimensions a node's metadata declares, parsed with the node so that no view reads them
/// from JSON again.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Dimensions {
    /// An array's dimension names, one per axis as its metadata lists them (`None` for an axis
    /// without a name): v3 `dimension_names`, the `_ARRAY_DIMENSIONS` attribute (xarray's
    /// convention in v2, GDAL's in v3 drafts), or for NCZarr the last part of each dimension
    /// reference. `None` when none are named.
    pub names: Option<Vec<Option<String>>>,
    /// NCZarr: an array's dimension references as written, fully qualified (`/g/x`).
    pub nczarr_references: Option<Vec<String>>,
    /// NCZarr: the shared dimensions a group defines, name and length.
    pub nczarr_shared: Option<Vec<(String, u64)>>,
}

impl Dimensions {
    /// An array's dimensions named by `names` (a list of names and nulls; anything else names
    /// none, and an entry that is not text names no axis).
    pub fn named(names: Option<&Value>) -> Dimensions {
        Dimensions {
            names: names
                .and_then(Value::as_array)
                .map(|list| list.iter().map(|n| n.as_str().map(String::from)).collect()),
            ..Dimensions::default()
        }
    }

    /// True when the metadata is NCZarr's (shared dimensions or dimension references).
    pub fn is_nczarr(&self) -> bool {
        self.nczarr_references.is_some() || self.nczarr_shared.is_some()
    }

    /// The name of each of `rank` axes: the names when there is one per axis, else none.
    pub fn axis_names(&self, rank: usize) -> Vec<Option<String>> {
        match &self.names {
            Some(names) if names.len() == rank => names.clone(),
            _ => vec![None; rank],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_document_shows_and_parses_as_the_map_it_was_made_from() {
        let deep = (0..200).fold(json!([]), |v, _| json!([v]));
        let docs = [
            json!({}),
            json!({"zarr_format": 3, "node_type": "array", "shape": [], "attributes": {}}),
            json!({"fill_value": -0.0, "f": [0.1, 1e300, 5e-324, -1.5e-7, 2.0], "i": [u64::MAX, i64::MIN, 0],
                "text": "é \" \\ \n\t\u{1} ☃ 😀 </script>", "empty": [[], {}], "null": null, "b": [true, false],
                "order": {"z": 1, "a": {"y": [1, {"x": "2"}], "b": {}}}}),
            json!({"attributes": {"deep": deep}}),
        ];
        for value in docs {
            let map = value.as_object().unwrap();
            let doc = Document::new(map);
            let mut pretty = serde_json::to_vec_pretty(map).unwrap();
            pretty.push(b'\n');
            assert_eq!(doc.pretty_len(), pretty.len() as u64, "{value}");
            assert!(doc.pretty() == pretty, "{value}");
            assert!(doc.parse() == *map, "{value}");
            assert_eq!(doc.text.as_bytes(), serde_json::to_vec(map).unwrap());
        }
    }
}
