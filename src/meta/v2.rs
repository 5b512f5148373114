//! Zarr v2: `.zarray`, `.zgroup`, `.zattrs`.

use super::node::ArrayMeta;
use super::{numpy_dtype, parse_fill, ChunkKeys, CodecSpec, DataType, KeyStyle};
use serde_json::{json, Map, Value};

/// The Zarr Object Model document of a v2 group: the `.zgroup` fields plus `node_type` and
/// `attributes`.
pub fn group_document(
    zgroup: &Map<String, Value>,
    attributes: Map<String, Value>,
) -> Map<String, Value> {
    let mut doc = Map::new();
    doc.insert(
        "zarr_format".into(),
        zgroup.get("zarr_format").cloned().unwrap_or(json!(2)),
    );
    doc.insert("node_type".into(), json!("group"));
    for (k, v) in zgroup {
        if k != "zarr_format" {
            doc.insert(k.clone(), v.clone());
        }
    }
    doc.insert("attributes".into(), Value::Object(attributes));
    doc
}

/// The Zarr Object Model document of a v2 array: the `.zarray` fields plus `node_type` and
/// `attributes`.
pub fn array_document(
    zarray: &Map<String, Value>,
    attributes: Map<String, Value>,
) -> Map<String, Value> {
    let mut doc = Map::new();
    doc.insert(
        "zarr_format".into(),
        zarray.get("zarr_format").cloned().unwrap_or(json!(2)),
    );
    doc.insert("node_type".into(), json!("array"));
    for (k, v) in zarray {
        if k != "zarr_format" {
            doc.insert(k.clone(), v.clone());
        }
    }
    doc.insert("attributes".into(), Value::Object(attributes));
    doc
}

/// Parses a `.zarray` document of the array whose chunk keys start with `prefix`.
pub fn parse_array(zarray: &Map<String, Value>, prefix: &str) -> Result<ArrayMeta, String> {
    let shape = dims(zarray, "shape")?;
    let chunk_shape = dims(zarray, "chunks")?;
    let filters = match zarray.get("filters") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(filters)) => filters
            .iter()
            .map(numcodecs_spec)
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(format!("\"filters\" is neither null nor a list: {other}")),
    };
    let dtype_value = zarray.get("dtype").ok_or("missing \"dtype\"")?;
    let ty = if dtype_value.as_str() == Some("|O") {
        object_type(&filters)?
    } else {
        numpy_dtype::parse(dtype_value)?
    };
    let fill_value = parse_fill(
        zarray.get("fill_value").unwrap_or(&Value::Null),
        &ty.dtype,
        &ty.big_units,
    )?;

    let order = zarray.get("order").and_then(Value::as_str).unwrap_or("C");
    let mut codecs: Vec<CodecSpec> = memory_order(order, shape.len())
        .map_err(|o| format!("unknown order {o:?}"))?
        .into_iter()
        .collect();
    // Object arrays: the object codec among the filters is the array→bytes step.
    if !ty.dtype.is_variable() {
        codecs.push(CodecSpec::new("bytes", ty.bytes_codec_config()));
    }
    codecs.extend(filters);
    match zarray.get("compressor") {
        None | Some(Value::Null) => {}
        Some(c) => codecs.push(numcodecs_spec(c)?),
    }

    let separator = match zarray.get("dimension_separator").and_then(Value::as_str) {
        None | Some(".") => '.',
        Some("/") => '/',
        Some(other) => return Err(format!("unknown dimension_separator {other:?}")),
    };
    Ok(ArrayMeta {
        shape,
        chunk_shape,
        dtype: ty.dtype,
        fill_value,
        codecs,
        chunk_keys: ChunkKeys {
            prefix: prefix.to_string(),
            style: KeyStyle::V2,
            separator,
        },
    })
}

/// The element type of a v2 object (`|O`) array, from the object codec among its filters.
fn object_type(filters: &[CodecSpec]) -> Result<numpy_dtype::NumpyType, String> {
    let dtype = match filters.first().map(|f| f.name.as_str()) {
        Some("vlen-utf8") => DataType::String,
        Some("vlen-bytes") => DataType::VarBytes,
        Some(other) => return Err(format!("unsupported object codec {other:?}")),
        None => return Err("object array without an object codec".into()),
    };
    Ok(numpy_dtype::NumpyType {
        dtype,
        big_units: Vec::new(),
    })
}

/// The codec that undoes a chunk memory order: `C` needs none, `F` (reversed axes) is a
/// `transpose` when there are two axes or more. `Err` returns the unknown order.
pub fn memory_order(order: &str, ndim: usize) -> Result<Option<CodecSpec>, String> {
    match order {
        "C" => Ok(None),
        "F" if ndim > 1 => {
            let axes: Vec<usize> = (0..ndim).rev().collect();
            Ok(Some(CodecSpec::new("transpose", json!({ "order": axes }))))
        }
        "F" => Ok(None),
        other => Err(other.to_string()),
    }
}

/// A numcodecs configuration (`{"id": "zlib", "level": 1}`) as a codec spec named by its id.
fn numcodecs_spec(config: &Value) -> Result<CodecSpec, String> {
    let id = config
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("codec {config} has no \"id\""))?;
    Ok(CodecSpec::new(id, config.clone()))
}

/// A list of non-negative integers (`shape`, `chunks`).
pub fn dims(doc: &Map<String, Value>, key: &str) -> Result<Vec<u64>, String> {
    let list = doc
        .get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| format!("missing or malformed \"{key}\""))?;
    list.iter()
        .map(|d| {
            d.as_u64()
                .ok_or_else(|| format!("\"{key}\" holds {d}, not a size"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_order_dtype_filters_and_compressor_onto_the_chain() {
        let zarray = json!({
            "zarr_format": 2, "shape": [3, 4], "chunks": [2, 2], "dtype": ">i4",
            "fill_value": 7, "order": "F", "filters": [{"id": "delta", "dtype": ">i4"}],
            "compressor": {"id": "zlib", "level": 1}, "dimension_separator": "/"
        });
        let meta = parse_array(zarray.as_object().unwrap(), "x/").unwrap();
        let names: Vec<_> = meta.codecs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["transpose", "bytes", "delta", "zlib"]);
        assert_eq!(meta.codecs[0].config, json!({"order": [1, 0]}));
        assert_eq!(meta.codecs[1].config, json!({"endian": "big"}));
        assert_eq!(meta.fill_value, 7i32.to_le_bytes());
        assert_eq!(meta.chunk_keys.key(&[1, 0]), "x/1/0");
    }

    #[test]
    fn refuses_malformed_shapes() {
        let zarray = json!({"shape": [3, -1], "chunks": [2, 2], "dtype": "<i4"});
        assert!(parse_array(zarray.as_object().unwrap(), "").is_err());
    }
}
