//! The node model every dialect is parsed into.

use super::{ChunkGrid, ChunkKeys, CodecSpec, DataType, MetaError};
use serde_json::{Map, Value};
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
    pub document: Map<String, Value>,
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
