//! One node model for every dialect: Zarr v2, Zarr v3, the v3 drafts and NCZarr.
//!
//! Parsing is pure (bytes in, model out); a [`Tree`] finds a store's nodes group by group, as
//! they are asked for, and [`load_hierarchy`] loads them all.

mod chunk_grid;
mod chunk_keys;
mod codec_spec;
mod consolidated;
mod dtype;
mod error;
mod ext_types;
mod fill;
mod hierarchy;
mod lenient_json;
mod nczarr;
mod node;
mod numpy_dtype;
mod v2;
mod v3;
mod v3_draft;

pub(crate) use chunk_grid::gcd;
pub use chunk_grid::{element_count, inner_chunk_size, ChunkGrid, Edges};
pub use chunk_keys::{ChunkKeys, KeyStyle};
pub use codec_spec::CodecSpec;
pub use consolidated::MAX_CONSOLIDATED_BYTES;
pub use dtype::{py_str, py_tuple, DataType, Field, MAX_ELEMENT_BYTES};
pub use error::MetaError;
pub use ext_types::document_served_as_bits;
pub(crate) use fill::f16_from_f64;
pub use fill::parse_fill;
pub use hierarchy::{
    load_hierarchy, parallel_map, Hierarchy, LoadOptions, StoreRef, Tree, MAX_DEPTH,
    MAX_DOCUMENT_BYTES,
};
pub use lenient_json::{parse as parse_json, parse_as as parse_json_as};
pub use node::{ArrayMeta, Dimensions, Document, Node, NodeKind, MAX_CHUNK_BYTES};
pub use numpy_dtype::NumpyType;
pub use v2::MAX_RANK;
