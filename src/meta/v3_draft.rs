//! The Zarr v3 drafts (2019 protocol and 2022 editors' draft), as zarr-python 2.18 wrote them:
//! a root `zarr.json` entry point with a URI `zarr_format`, metadata under `meta/root/...`
//! (`<path>.array.json`, `<path>.group.json`) and chunks under `data/root/<path>/c0/1`.
//! zarr-python 2.18 keeps an array's filters in its attributes (`"filters"`), which are shown
//! as they are stored, as its `.attrs` shows them.

use super::node::ArrayMeta;
use super::v2::{self, dims};
use super::{numpy_dtype, parse_fill, v3, ChunkKeys, CodecSpec, KeyStyle, MetaError};
use crate::store::{Entry, EntryKind};
use serde_json::{json, Map, Value};

/// The entry point of a draft store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryPoint {
    /// Suffix of metadata keys (`.json` unless `metadata_key_suffix` says otherwise).
    pub suffix: String,
}

/// Recognises a draft entry point from the root `zarr.json`: `zarr_format` is a URI ending in
/// `/3.0`. Fails when the store declares an extension it must understand.
pub fn entry_point(root: &Map<String, Value>) -> Result<Option<EntryPoint>, MetaError> {
    let Some(uri) = root.get("zarr_format").and_then(Value::as_str) else {
        return Ok(None);
    };
    if !uri.ends_with("/3.0") {
        return Err(MetaError::Unsupported(format!("zarr_format {uri:?}")));
    }
    check_extensions(root)?;
    let suffix = root
        .get("metadata_key_suffix")
        .and_then(Value::as_str)
        .unwrap_or(".json")
        .to_string();
    Ok(Some(EntryPoint { suffix }))
}

/// Fails on any extension with `must_understand: true`: zarrfs understands none.
fn check_extensions(doc: &Map<String, Value>) -> Result<(), MetaError> {
    for ext in doc
        .get("extensions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if ext.get("must_understand").and_then(Value::as_bool) == Some(true) {
            let name = ext
                .get("extension")
                .and_then(Value::as_str)
                .unwrap_or("(unnamed)");
            return Err(MetaError::Unsupported(format!(
                "extension {name} (must_understand: true)"
            )));
        }
    }
    Ok(())
}

/// The Zarr Object Model document of a draft node: its metadata with `attributes` always present.
pub fn document(doc: &Map<String, Value>) -> Map<String, Value> {
    let mut out = doc.clone();
    out.entry("attributes").or_insert_with(|| json!({}));
    out
}

/// The key of the metadata document of the node at `path`, as an array (`array`) or a group
/// (`group`): `meta/root.group.json`, `meta/root/a/b.array.json`.
pub fn meta_key(entry: &EntryPoint, path: &str, kind: &str) -> String {
    if path.is_empty() {
        format!("meta/root.{kind}{}", entry.suffix)
    } else {
        format!("meta/root/{path}.{kind}{}", entry.suffix)
    }
}

/// The prefix listing the children of the group at `path`.
pub fn children_prefix(path: &str) -> String {
    if path.is_empty() {
        "meta/root".to_string()
    } else {
        format!("meta/root/{path}")
    }
}

/// The child an entry of [`children_prefix`] stands for: a directory `x`, or a metadata
/// document `x.array.json` / `x.group.json`. Other objects stand for nothing.
pub fn child_name<'a>(entry: &EntryPoint, e: &'a Entry) -> Option<&'a str> {
    match e.kind {
        EntryKind::Prefix => Some(&e.name),
        EntryKind::Object(_) => ["array", "group"]
            .iter()
            .find_map(|kind| e.name.strip_suffix(&format!(".{kind}{}", entry.suffix))),
    }
}

/// The codec name a draft codec URI stands for (`.../codec/gzip/1.0` → `gzip`,
/// `.../codec/endian` → `bytes`).
fn codec_name(uri: &str) -> String {
    let tail = uri.rsplit_once("/codec/").map_or(uri, |(_, t)| t);
    let name = tail.split('/').next().unwrap_or(tail);
    match name {
        "endian" => "bytes".to_string(),
        other => other.to_string(),
    }
}

/// Parses a draft `<path>.array.json` document.
pub fn parse_array(doc: &Map<String, Value>, path: &str) -> Result<ArrayMeta, MetaError> {
    check_extensions(doc)?;
    let shape = dims(doc, "shape")?;
    let mut type_value = doc
        .get("data_type")
        .ok_or_else(|| MetaError::field("data_type", "missing"))?;
    // zarr-python 2.18 writes the types the drafts have no name for (structured, object) as
    // an extension: {"extension": "TODO: ...", "fallback": null, "type": <numpy's form>}.
    if let Some(inner) = type_value.as_object().and_then(|t| t.get("type")) {
        type_value = inner;
    }
    // zarr-python 2.18 keeps an array's filters (numcodecs configurations) in its attributes,
    // where its reader takes them from too: applied to the array's bytes before the
    // compressor, as in v2, an object array's object codec first. Documents of the 2022 form
    // list every codec in `codecs`.
    let filters = match doc.contains_key("codecs") {
        true => Vec::new(),
        false => v2::filters(doc.get("attributes").and_then(|a| a.get("filters")))?,
    };
    let ty = match v3::data_type(type_value) {
        Ok(dtype) => numpy_dtype::NumpyType {
            dtype,
            big_units: Vec::new(),
        },
        Err(_) if type_value.as_str() == Some("|O") => v2::object_type(&filters)?,
        Err(_) => numpy_dtype::parse(type_value)?,
    };
    let grid = doc
        .get("chunk_grid")
        .and_then(Value::as_object)
        .ok_or_else(|| MetaError::field("chunk_grid", "missing or not an object"))?;
    match grid.get("type").and_then(Value::as_str) {
        None | Some("regular") => {}
        Some(other) => return Err(MetaError::Unsupported(format!("chunk grid {other:?}"))),
    }
    let chunk_shape = dims(grid, "chunk_shape")?;
    let separator = match grid.get("separator").and_then(Value::as_str) {
        None | Some("/") => '/',
        Some(".") => '.',
        Some(other) => return Err(MetaError::Unsupported(format!("chunk separator {other:?}"))),
    };

    // The compressor (named by `codec`) comes first, then the `codecs` (named by `type`).
    let compressor = doc.get("compressor").filter(|c| !c.is_null());
    let chain = doc.get("codecs").and_then(Value::as_array).into_iter();
    let named = compressor
        .map(|c| (c, "codec", "compressor without it"))
        .into_iter()
        .chain(chain.flatten().map(|c| (c, "type", "codec without it")));
    let mut listed = named
        .map(|(c, field, missing)| {
            let uri = c
                .get(field)
                .and_then(Value::as_str)
                .ok_or_else(|| MetaError::field(field, missing))?;
            Ok(CodecSpec::new(
                codec_name(uri),
                c.get("configuration").cloned().unwrap_or(json!({})),
            ))
        })
        .collect::<Result<Vec<_>, MetaError>>()?;
    let layout = doc
        .get("chunk_memory_layout")
        .and_then(Value::as_str)
        .unwrap_or("C");
    let mut codecs: Vec<CodecSpec> = v2::memory_order(layout, shape.len())
        .map_err(|e| MetaError::field("chunk_memory_layout", format!("unknown {:?}", e.0)))?
        .into_iter()
        .collect();
    // An object array's object codec (the first filter) is its array→bytes step.
    if !ty.dtype.is_variable() {
        match listed.iter().position(|c| c.name == "bytes") {
            Some(i) => codecs.extend(listed.drain(..=i)),
            None => codecs.push(CodecSpec::new("bytes", ty.bytes_codec_config())),
        }
    }
    codecs.extend(filters);
    codecs.extend(listed);
    let fill_value = parse_fill(
        doc.get("fill_value").unwrap_or(&Value::Null),
        &ty.dtype,
        &ty.big_units,
    )?;
    let prefix = if path.is_empty() {
        "data/root/".to_string()
    } else {
        format!("data/root/{path}/")
    };
    Ok(ArrayMeta {
        shape,
        chunk_shape,
        grid: super::ChunkGrid::Regular,
        dtype: ty.dtype,
        fill_value,
        codecs,
        chunk_keys: ChunkKeys::new(prefix, KeyStyle::Draft, separator),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_the_2019_and_2022_forms() {
        let d2019 = json!({
            "shape": [4, 5], "data_type": ">i4", "chunk_memory_layout": "F", "fill_value": 0,
            "chunk_grid": {"type": "regular", "chunk_shape": [3, 2], "separator": "/"},
            "compressor": {"codec": "https://purl.org/zarr/spec/codec/gzip/1.0", "configuration": {"level": 5}},
            "extensions": []
        });
        let m = parse_array(d2019.as_object().unwrap(), "sub/a").unwrap();
        let names: Vec<_> = m.codecs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["transpose", "bytes", "gzip"]);
        assert_eq!(*m.codecs[1].config, json!({"endian": "big"}));
        assert_eq!(m.chunk_keys.key(&[1, 0]), "data/root/sub/a/c1/0");
        let d2022 = json!({
            "shape": [5], "data_type": "int32", "fill_value": 0,
            "chunk_grid": {"type": "regular", "chunk_shape": [2], "separator": "/"},
            "codecs": [{"type": "https://purl.org/zarr/spec/codec/endian", "configuration": {"endian": "big"}},
                       {"type": "https://purl.org/zarr/spec/codec/gzip", "configuration": {"level": 5}}]
        });
        let m = parse_array(d2022.as_object().unwrap(), "x").unwrap();
        assert_eq!(
            m.codecs[0],
            CodecSpec::new("bytes", json!({"endian": "big"}))
        );
        assert_eq!(m.codecs[1].name, "gzip");
    }

    #[test]
    fn filters_in_the_attributes_come_between_bytes_and_the_compressor() {
        // zarr-python 2.18, zarr_version=3, filters=[Delta(">i4"), Shuffle(4)], Zlib(1).
        let doc = json!({
            "attributes": {"filters": [{"astype": ">i4", "dtype": ">i4", "id": "delta"},
                                       {"elementsize": 4, "id": "shuffle"}]},
            "chunk_grid": {"chunk_shape": [3], "separator": "/", "type": "regular"},
            "chunk_memory_layout": "C",
            "compressor": {"codec": "https://purl.org/zarr/spec/codec/zlib/1.0",
                           "configuration": {"level": 1}},
            "data_type": ">i4", "extensions": [], "fill_value": -1, "shape": [8]
        });
        let m = parse_array(doc.as_object().unwrap(), "sub/delta").unwrap();
        let names: Vec<_> = m.codecs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["bytes", "delta", "shuffle", "zlib"]);
    }

    #[test]
    fn a_structured_type_of_mixed_order_swaps_its_big_fields() {
        let doc = json!({"shape": [3], "data_type": [["a", ">i2"], ["b", "<f4"]],
            "chunk_grid": {"type": "regular", "chunk_shape": [2], "separator": "/"},
            "chunk_memory_layout": "C", "fill_value": null, "attributes": {}});
        let m = parse_array(doc.as_object().unwrap(), "rec").unwrap();
        assert_eq!(
            m.codecs,
            [CodecSpec::new(
                "bytes",
                json!({"endian": "big", "swap_units": [[0, 2]]})
            )]
        );
    }

    #[test]
    fn must_understand_extensions_are_refused() {
        let doc = json!({"extensions": [{"extension": "https://x/e", "must_understand": true}]});
        assert!(matches!(
            parse_array(doc.as_object().unwrap(), "a"),
            Err(MetaError::Unsupported(m)) if m.contains("https://x/e")
        ));
        let ok = json!({"zarr_format": "https://purl.org/zarr/spec/protocol/core/3.0",
                        "extensions": [{"extension": "e", "must_understand": false}]});
        assert_eq!(
            entry_point(ok.as_object().unwrap())
                .unwrap()
                .unwrap()
                .suffix,
            ".json"
        );
    }
}
