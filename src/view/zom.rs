//! `.zom.json`: the Zarr Object Model (ZEP 6) of a group's whole subtree, without data.
//!
//! Zarr v2 and NCZarr stores get the v2 ZOM (the `.zarray`/`.zgroup` fields plus `attributes`
//! and `members`); v3 stores get the v3 ZOM, and the v3 drafts are normalized to the final v3
//! form (data type names, `chunk_grid`, `chunk_key_encoding` and `codecs` as named
//! configurations) from their parsed metadata.

use crate::meta::{ArrayMeta, DataType, KeyStyle};
use serde_json::{json, Map, Value};

/// The name of the ZOM file in every group directory.
pub const ZOM_FILE: &str = ".zom.json";

/// Properties of a v2 ZOM array (ZEP 6's v2 schema).
const V2_ARRAY_KEYS: &[&str] = &[
    "zarr_format",
    "shape",
    "chunks",
    "dtype",
    "compressor",
    "fill_value",
    "order",
    "filters",
    "dimension_separator",
    "attributes",
];

/// Properties of a v3 ZOM array (ZEP 6's v3 schema).
const V3_ARRAY_KEYS: &[&str] = &[
    "zarr_format",
    "node_type",
    "attributes",
    "shape",
    "data_type",
    "chunk_grid",
    "chunk_key_encoding",
    "fill_value",
    "codecs",
    "storage_transformers",
    "dimension_names",
];

/// The Zarr version whose ZOM describes a store: 2 for v2 and NCZarr, 3 for v3 and the drafts,
/// as its root node's document `root` says.
pub fn store_version(root: &Map<String, Value>) -> u8 {
    match root.get("zarr_format").and_then(Value::as_u64) {
        Some(2) => 2,
        _ => 3,
    }
}

/// A group's ZOM, its `members` left empty for the caller to write.
pub(super) fn group_node(doc: &Map<String, Value>, version: u8) -> Map<String, Value> {
    let attributes = attributes(doc);
    let mut out = Map::new();
    if version == 2 {
        out.insert("zarr_format".into(), json!(2));
    } else {
        out.insert("zarr_format".into(), json!(3));
        out.insert("node_type".into(), json!("group"));
    }
    out.insert("attributes".into(), attributes);
    out.insert("members".into(), json!({}));
    out
}

fn attributes(doc: &Map<String, Value>) -> Value {
    match doc.get("attributes") {
        Some(Value::Object(a)) => Value::Object(a.clone()),
        _ => json!({}),
    }
}

/// An array's ZOM in a store of Zarr `version`. Draft arrays (v3 stores whose documents are
/// not final v3) are built from `meta`, or from their document when it could not be parsed.
pub(super) fn array_node(
    doc: &Map<String, Value>,
    meta: Option<&ArrayMeta>,
    version: u8,
) -> Map<String, Value> {
    let final_v3 = doc.get("zarr_format").and_then(Value::as_u64) == Some(3);
    let mut out: Map<String, Value> = match (version, final_v3, meta) {
        (2, _, _) => pick(doc, V2_ARRAY_KEYS),
        (_, true, _) => pick(doc, V3_ARRAY_KEYS),
        (_, false, Some(meta)) => draft_array(doc, meta),
        (_, false, None) => unparsed_draft_array(doc),
    };
    if version == 3 {
        out.insert("zarr_format".into(), json!(3));
        out.insert("node_type".into(), json!("array"));
        for key in ["chunk_grid", "chunk_key_encoding"] {
            if let Some(v) = out.get_mut(key) {
                named_config(v);
            }
        }
        for key in ["codecs", "storage_transformers"] {
            if let Some(Value::Array(list)) = out.get_mut(key) {
                list.iter_mut().for_each(named_config);
            }
        }
    }
    out.insert("attributes".into(), attributes(doc));
    out
}

/// A draft array whose metadata could not be parsed, as close to the final v3 form as its
/// document allows: the draft `chunk_grid` becomes a regular grid and a default key encoding;
/// its codecs are not known.
fn unparsed_draft_array(doc: &Map<String, Value>) -> Map<String, Value> {
    let mut out = pick(
        doc,
        &["shape", "data_type", "fill_value", "dimension_names"],
    );
    let grid = doc.get("chunk_grid");
    let chunk_shape = grid.and_then(|g| g.get("chunk_shape")).cloned();
    let separator = grid.and_then(|g| g.get("separator")).cloned();
    out.extend(object(json!({
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunk_shape}},
        "chunk_key_encoding":
            {"name": "default", "configuration": {"separator": separator.unwrap_or(json!("/"))}},
        "codecs": [],
    })));
    out
}

/// The entries of a JSON object (none for other JSON).
fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// The entries of `doc` named in `keys`, in that order.
fn pick(doc: &Map<String, Value>, keys: &[&str]) -> Map<String, Value> {
    keys.iter()
        .filter_map(|&k| doc.get(k).map(|v| (k.to_string(), v.clone())))
        .collect()
}

/// Gives a `{"name": ...}` entry the `configuration` a named configuration requires.
fn named_config(v: &mut Value) {
    if let Value::Object(o) = v {
        o.entry("configuration").or_insert_with(|| json!({}));
    }
}

/// A v3 draft array in the final v3 form.
fn draft_array(doc: &Map<String, Value>, meta: &ArrayMeta) -> Map<String, Value> {
    let separator = meta.chunk_keys.separator.to_string();
    let encoding = match meta.chunk_keys.style {
        KeyStyle::V2 => "v2",
        KeyStyle::Default | KeyStyle::Draft => "default",
    };
    let field = |key| doc.get(key).cloned().unwrap_or(Value::Null);
    object(json!({
        "shape": meta.shape,
        "data_type": v3_data_type(&meta.dtype),
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": meta.chunk_shape}},
        "chunk_key_encoding": {"name": encoding, "configuration": {"separator": separator}},
        "fill_value": field("fill_value"),
        "codecs": codecs(meta),
        "dimension_names": field("dimension_names"),
    }))
}

/// Keys zarrfs adds to a `bytes` codec's configuration for its own decoding (byte-swap units
/// of a structured type of mixed byte order, the bits of a sub-byte integer): no v3 codec has
/// them, so they are left out of what is shown.
const INTERNAL_KEYS: [&str; 2] = ["swap_units", "low_bits"];

/// An array's codecs as named configurations, without zarrfs's internal keys.
pub(super) fn codecs(meta: &ArrayMeta) -> Value {
    let list = meta.codecs.iter();
    Value::Array(
        list.map(|c| {
            let mut config = (*c.config).clone();
            if let Value::Object(o) = &mut config {
                o.retain(|k, _| !INTERNAL_KEYS.contains(&k.as_str()));
            }
            json!({"name": c.name, "configuration": config})
        })
        .collect(),
    )
}

/// The final v3 name of a data type (`float32`); numpy's form for types v3 has no name for.
pub fn v3_data_type(dtype: &DataType) -> String {
    match dtype {
        DataType::Bool => "bool".into(),
        DataType::Int(n) => format!("int{}", n * 8),
        DataType::UInt(n) => format!("uint{}", n * 8),
        DataType::Float(n) => format!("float{}", n * 8),
        DataType::Complex(n) => format!("complex{}", n * 8),
        DataType::String => "string".into(),
        DataType::VarBytes => "bytes".into(),
        DataType::Raw(n) => format!("r{}", n * 8),
        other => other.npy_descr(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::{ChunkGrid, ChunkKeys, CodecSpec, Field};

    #[test]
    fn codecs_show_no_internal_keys() {
        // A draft array of numpy type [["a", ">i2"], ["b", "<f4"]] (zarr-python 2.18's
        // structured type): its bytes codec swaps the first field only.
        let doc = json!({"shape": [3], "data_type": [["a", ">i2"], ["b", "<f4"]],
            "chunk_grid": {"type": "regular", "chunk_shape": [2], "separator": "/"},
            "chunk_memory_layout": "C", "fill_value": null, "attributes": {}});
        let field = |name: &str, dtype, offset| Field {
            name: name.into(),
            dtype,
            shape: Vec::new(),
            offset,
        };
        let config = json!({"endian": "big", "swap_units": [[0, 2]]});
        let mut meta = ArrayMeta {
            shape: vec![3],
            chunk_shape: vec![2],
            grid: ChunkGrid::Regular,
            dtype: DataType::Structured(vec![
                field("a", DataType::Int(2), 0),
                field("b", DataType::Float(4), 2),
            ]),
            fill_value: vec![0; 6],
            codecs: vec![CodecSpec::new("bytes", config)],
            chunk_keys: ChunkKeys::new("data/root/rec/", KeyStyle::Draft, '/'),
        };
        let zom = array_node(doc.as_object().unwrap(), Some(&meta), 3);
        assert_eq!(
            zom["codecs"],
            json!([{"name": "bytes", "configuration": {"endian": "big"}}])
        );
        // int4 in a v2 array: the bits it keeps are zarrfs's own.
        meta.codecs = vec![CodecSpec::new(
            "bytes",
            json!({"endian": "little", "low_bits": 4}),
        )];
        assert_eq!(
            codecs(&meta),
            json!([{"name": "bytes", "configuration": {"endian": "little"}}])
        );
    }
}
