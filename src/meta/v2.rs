//! Zarr v2: `.zarray`, `.zgroup`, `.zattrs`.

use super::node::{ArrayMeta, Dimensions};
use super::{nczarr, numpy_dtype, parse_fill, ChunkKeys, CodecSpec, DataType, KeyStyle, MetaError};
use serde_json::{json, Map, Value};

/// The most dimensions an array may have (numpy's limit).
pub const MAX_RANK: usize = 64;

/// The Zarr Object Model document of a v2 group: the `.zgroup` fields plus `node_type` and
/// `attributes`.
pub fn group_document(
    zgroup: &Map<String, Value>,
    attributes: Map<String, Value>,
) -> Map<String, Value> {
    document("group", zgroup, attributes)
}

/// The Zarr Object Model document of a v2 node of `node_type`: its `.zgroup` or `.zarray`
/// fields (`zarr_format` first) plus `node_type` and `attributes`.
fn document(
    node_type: &str,
    fields: &Map<String, Value>,
    attributes: Map<String, Value>,
) -> Map<String, Value> {
    let mut doc = Map::new();
    doc.insert(
        "zarr_format".into(),
        fields.get("zarr_format").cloned().unwrap_or(json!(2)),
    );
    doc.insert("node_type".into(), json!(node_type));
    for (k, v) in fields {
        if k != "zarr_format" {
            doc.insert(k.clone(), v.clone());
        }
    }
    doc.insert("attributes".into(), Value::Object(attributes));
    doc
}

/// A v2 group as served, from its `.zgroup`, its attributes and, in a netCDF-c 4.8 store, its
/// `.nczgroup` (`gen1`): its document (NCZarr's shared dimensions shown as `dimensions`) and
/// its dimensions.
pub fn group(
    zgroup: &Map<String, Value>,
    attributes: Map<String, Value>,
    gen1: Option<&Map<String, Value>>,
) -> (Map<String, Value>, Dimensions) {
    let shared = nczarr::group_dimensions(zgroup, &attributes, gen1);
    let mut doc = group_document(zgroup, attributes);
    let mut dimensions = Dimensions::default();
    if let Some(shared) = shared {
        dimensions.nczarr_shared = Some(
            shared
                .iter()
                .filter_map(|(name, len)| Some((name.clone(), len.as_u64()?)))
                .collect(),
        );
        doc.entry("dimensions").or_insert(Value::Object(shared));
    }
    (doc, dimensions)
}

/// A v2 array as served, from its `.zarray`, its attributes and, in a netCDF-c 4.8 store, its
/// `.nczvar` (`gen1`): its metadata (chunk keys under `prefix`), its document (NCZarr's
/// changes applied, dimension names shown as `dimension_names`) and its dimensions.
pub fn array(
    zarray: Map<String, Value>,
    attributes: Map<String, Value>,
    gen1: Option<&Map<String, Value>>,
    prefix: &str,
) -> (Result<ArrayMeta, MetaError>, Map<String, Value>, Dimensions) {
    let var = nczarr::variable(&zarray, &attributes, gen1);
    let (zarray, dimensions) = match var {
        Some(var) => {
            let dimensions = Dimensions {
                names: Some(var.dimension_names.iter().cloned().map(Some).collect()),
                nczarr_references: Some(var.references.clone()),
                nczarr_shared: None,
            };
            (nczarr::served_zarray(&zarray, &var), dimensions)
        }
        None => {
            let dimensions = Dimensions::named(attributes.get("_ARRAY_DIMENSIONS"));
            (zarray, dimensions)
        }
    };
    let meta = parse_array(&zarray, prefix);
    let mut doc = document("array", &zarray, attributes);
    // Shown only when every axis has a name, as xarray writes them.
    let names = dimensions.names.as_ref().and_then(|names| {
        names
            .iter()
            .map(Option::as_deref)
            .collect::<Option<Vec<&str>>>()
    });
    if let Some(names) = names {
        doc.entry("dimension_names").or_insert(json!(names));
    }
    (meta, doc, dimensions)
}

/// Parses a `.zarray` document of the array whose chunk keys start with `prefix`.
pub fn parse_array(zarray: &Map<String, Value>, prefix: &str) -> Result<ArrayMeta, MetaError> {
    let shape = dims(zarray, "shape")?;
    // Chunk sizes `true` and 0 read as zarr-python 3.4 reads them.
    let chunk_shape = sizes(zarray, "chunks", |d| super::chunk_grid::chunk_size(d, 1))?;
    let filters = filters(zarray.get("filters"))?;
    let dtype_value = zarray
        .get("dtype")
        .ok_or_else(|| MetaError::field("dtype", "missing"))?;
    let ty = if dtype_value.as_str() == Some("|O") {
        object_type(&filters)?
    } else {
        numpy_dtype::parse(dtype_value)?
    };
    let fill = zarray.get("fill_value").unwrap_or(&Value::Null);
    let type_name = dtype_value.as_str().unwrap_or("");
    let fill_value = match super::ext_types::fill(type_name, fill) {
        Some(bits) => bits?,
        None => parse_fill(fill, &ty.dtype, &ty.big_units)?,
    };

    let order = zarray.get("order").and_then(Value::as_str).unwrap_or("C");
    let mut codecs: Vec<CodecSpec> = memory_order(order, shape.len())
        .map_err(|e| MetaError::field("order", e.to_string()))?
        .into_iter()
        .collect();
    // Object arrays: the object codec among the filters is the array→bytes step.
    if !ty.dtype.is_variable() {
        let mut config = ty.bytes_codec_config();
        if let Some(low) = super::ext_types::low_bits(type_name) {
            config["low_bits"] = json!(low);
        }
        codecs.push(CodecSpec::new("bytes", config));
    }
    codecs.extend(filters);
    match zarray.get("compressor") {
        None | Some(Value::Null) => {}
        Some(c) => codecs.push(numcodecs_spec(c)?),
    }
    super::ext_types::refuse_numeric_codecs(type_name, &codecs)?;

    let separator = match zarray.get("dimension_separator").and_then(Value::as_str) {
        None | Some(".") => '.',
        Some("/") => '/',
        Some(other) => {
            return Err(MetaError::field(
                "dimension_separator",
                format!("unknown separator {other:?}"),
            ))
        }
    };
    Ok(ArrayMeta {
        shape,
        chunk_shape,
        grid: super::ChunkGrid::Regular,
        dtype: ty.dtype,
        fill_value,
        codecs,
        chunk_keys: ChunkKeys::new(prefix, KeyStyle::V2, separator),
    })
}

/// The codecs of a `filters` list of numcodecs configurations (none when absent or `null`).
pub(super) fn filters(list: Option<&Value>) -> Result<Vec<CodecSpec>, MetaError> {
    match list {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(filters)) => filters.iter().map(numcodecs_spec).collect(),
        Some(other) => Err(MetaError::field(
            "filters",
            format!("{other} is neither null nor a list"),
        )),
    }
}

/// The element type of a v2 object (`|O`) array, from the object codec among its filters.
pub(super) fn object_type(filters: &[CodecSpec]) -> Result<numpy_dtype::NumpyType, MetaError> {
    let dtype = match filters.first().map(|f| f.name.as_str()) {
        // Every object codec but vlen-bytes is served as text lines (pickle reads EIO: the
        // pipeline refuses it, naming why).
        Some("vlen-utf8" | "vlen-array" | "json2" | "msgpack2" | "pickle") => DataType::String,
        Some("vlen-bytes") => DataType::VarBytes,
        Some(other) => return Err(MetaError::Unsupported(format!("object codec {other:?}"))),
        None => {
            return Err(MetaError::DataType(
                "object array without an object codec".into(),
            ))
        }
    };
    Ok(numpy_dtype::NumpyType {
        dtype,
        big_units: Vec::new(),
    })
}

/// A chunk memory order other than `C` and `F`.
#[derive(Debug, thiserror::Error)]
#[error("unknown order {0:?}")]
pub struct UnknownOrder(pub String);

/// The codec that undoes a chunk memory order: `C` needs none, `F` (reversed axes) is a
/// `transpose` when there are two axes or more.
pub fn memory_order(order: &str, ndim: usize) -> Result<Option<CodecSpec>, UnknownOrder> {
    match order {
        "C" => Ok(None),
        "F" if ndim > 1 => {
            let axes: Vec<usize> = (0..ndim).rev().collect();
            Ok(Some(CodecSpec::new("transpose", json!({ "order": axes }))))
        }
        "F" => Ok(None),
        other => Err(UnknownOrder(other.to_string())),
    }
}

/// A numcodecs configuration (`{"id": "zlib", "level": 1}`) as a codec spec named by its id.
fn numcodecs_spec(config: &Value) -> Result<CodecSpec, MetaError> {
    let id = config
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| MetaError::field("id", format!("codec {config} has no \"id\"")))?;
    Ok(CodecSpec::new(id, config.clone()))
}

/// A list of non-negative integers (`shape`, `chunks`) of at most [`MAX_RANK`] entries.
pub fn dims(doc: &Map<String, Value>, key: &str) -> Result<Vec<u64>, MetaError> {
    sizes(doc, key, Value::as_u64)
}

/// A list of at most [`MAX_RANK`] sizes, each read by `size`.
fn sizes(
    doc: &Map<String, Value>,
    key: &str,
    size: impl Fn(&Value) -> Option<u64>,
) -> Result<Vec<u64>, MetaError> {
    let list = doc
        .get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| MetaError::field(key, "missing or not a list"))?;
    if list.len() > MAX_RANK {
        return Err(MetaError::Shape(format!(
            "\"{key}\" has {} dimensions, more than {MAX_RANK}",
            list.len()
        )));
    }
    list.iter()
        .map(|d| {
            size(d).ok_or_else(|| MetaError::Shape(format!("\"{key}\" holds {d}, not a size")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_arrays_of_order_f_read_in_c_order() {
        // zarr-python 3.4.2, zarr_format=2, order="F", dtype=str, shape and chunks (2, 3),
        // [["a", "bb", "ccc"], ["dddd", "e", "ff"]]: its .zarray and chunk 0.0.
        let zarray = json!({"shape": [2, 3], "chunks": [2, 3], "dtype": "|O", "fill_value": "",
            "order": "F", "filters": [{"id": "vlen-utf8"}], "dimension_separator": ".",
            "compressor": null, "zarr_format": 2});
        let meta = parse_array(zarray.as_object().unwrap(), "").unwrap();
        let chunk = "0600000001000000610400000064646464020000006262010000006503000000636363\
                     020000006666";
        let chunk: Vec<u8> = (0..chunk.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&chunk[i..i + 2], 16).unwrap())
            .collect();
        let pipeline =
            crate::codec::Pipeline::new(&meta.codecs, &meta.dtype, &meta.chunk_shape).unwrap();
        let mut decoded = Vec::new();
        pipeline.decode(&chunk, &mut decoded).unwrap();
        let items: [&[u8]; 6] = [b"a", b"bb", b"ccc", b"dddd", b"e", b"ff"];
        assert_eq!(decoded, crate::codec::array_to_bytes::vlen::index(&items));
    }

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
        assert_eq!(*meta.codecs[0].config, json!({"order": [1, 0]}));
        assert_eq!(*meta.codecs[1].config, json!({"endian": "big"}));
        assert_eq!(meta.fill_value, 7i32.to_le_bytes());
        assert_eq!(meta.chunk_keys.key(&[1, 0]), "x/1/0");
    }

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn dimensions_of_xarray_and_nczarr_arrays() {
        let zarray = obj(json!({"shape": [2, 3], "chunks": [2, 3], "dtype": "<i4"}));
        let attrs = obj(json!({"_ARRAY_DIMENSIONS": ["y", "x"]}));
        let (_, doc, dims) = array(zarray.clone(), attrs, None, "");
        assert_eq!(dims.names, Some(vec![Some("y".into()), Some("x".into())]));
        assert!(!dims.is_nczarr());
        assert_eq!(doc["dimension_names"], json!(["y", "x"]));
        // A name that is not text names no axis, and the document shows none.
        let attrs = obj(json!({"_ARRAY_DIMENSIONS": ["y", 5]}));
        let (_, doc, dims) = array(zarray.clone(), attrs, None, "");
        assert_eq!(dims.axis_names(2), [Some("y".into()), None]);
        assert!(!doc.contains_key("dimension_names"));
        let attrs = obj(json!({"_nczarr_array": {"dimension_references": ["/g/y", "/x"]}}));
        let (_, doc, dims) = array(zarray, attrs, None, "");
        assert_eq!(
            dims.nczarr_references,
            Some(vec!["/g/y".into(), "/x".into()])
        );
        assert_eq!(dims.axis_names(2), [Some("y".into()), Some("x".into())]);
        assert_eq!(doc["dimension_names"], json!(["y", "x"]));
    }

    #[test]
    fn shared_dimensions_of_nczarr_groups() {
        let attrs = obj(json!({"_nczarr_group": {"dimensions": {"t": {"size": 4}, "x": 3}}}));
        let (doc, dims) = group(&Map::new(), attrs, None);
        assert_eq!(
            dims.nczarr_shared,
            Some(vec![("t".into(), 4), ("x".into(), 3)])
        );
        assert_eq!(doc["dimensions"], json!({"t": 4, "x": 3}));
        let (doc, dims) = group(&Map::new(), Map::new(), None);
        assert_eq!((doc.get("dimensions"), dims.is_nczarr()), (None, false));
    }

    #[test]
    fn tensorstore_names_for_ml_dtypes() {
        let zarray = json!({"shape": [6], "chunks": [4], "dtype": "bfloat16", "fill_value": 1.5});
        let meta = parse_array(zarray.as_object().unwrap(), "").unwrap();
        assert_eq!(meta.dtype, DataType::UInt(2));
        assert_eq!(meta.fill_value, 0x3fc0u16.to_le_bytes());
        let zarray = json!({"shape": [6], "chunks": [4], "dtype": "int4", "fill_value": -8});
        let meta = parse_array(zarray.as_object().unwrap(), "").unwrap();
        assert_eq!(meta.fill_value, [0xf8]);
        assert_eq!(meta.codecs[0].config["low_bits"], 4);
        let parse = |v: Value| parse_array(v.as_object().unwrap(), "");
        let zarray = json!({"shape": [6], "chunks": [4], "dtype": "int4", "fill_value": 8});
        assert!(matches!(parse(zarray), Err(MetaError::FillValue(_))));
        let zarray = json!({"shape": [6], "chunks": [4], "dtype": "bfloat16",
            "filters": [{"id": "delta", "dtype": "<u2"}]});
        assert!(matches!(parse(zarray), Err(MetaError::Unsupported(_))));
        let zarray = json!({"shape": [6], "chunks": [4], "dtype": "float4_e2m1fn",
            "compressor": {"id": "zlib"}});
        assert_eq!(parse(zarray).unwrap().codecs[0].config["low_bits"], 4);
    }

    #[test]
    fn refuses_malformed_shapes() {
        let zarray = json!({"shape": [3, -1], "chunks": [2, 2], "dtype": "<i4"});
        assert!(matches!(
            parse_array(zarray.as_object().unwrap(), ""),
            Err(MetaError::Shape(_))
        ));
        let zarray = json!({"shape": [18446744073709551616.0], "chunks": [2], "dtype": "<i4"});
        assert!(matches!(
            parse_array(zarray.as_object().unwrap(), ""),
            Err(MetaError::Shape(_))
        ));
        let zarray = json!({"shape": "3", "chunks": [2], "dtype": "<i4"});
        assert!(matches!(
            parse_array(zarray.as_object().unwrap(), ""),
            Err(MetaError::Field { .. })
        ));
    }
}
