//! Zarr v3: one `zarr.json` per node.

use super::dtype::{check_element_size, time_type, Field};
use super::node::{ArrayMeta, Dimensions};
use super::v2::dims;
use super::{parse_fill, ChunkKeys, CodecSpec, DataType, KeyStyle, MetaError};
use serde_json::{json, Map, Value};

/// The Zarr Object Model document of a v3 node: its `zarr.json` without consolidated metadata,
/// with `attributes` always present.
pub fn document(mut doc: Map<String, Value>) -> Map<String, Value> {
    doc.shift_remove("consolidated_metadata");
    doc.entry("attributes").or_insert_with(|| json!({}));
    doc
}

/// The dimensions of a v3 (or v3 draft) node: an array's `dimension_names`, else the
/// `_ARRAY_DIMENSIONS` attribute (GDAL writes it in v3 drafts). Names written as fully
/// qualified paths (`/g/x`) are NCZarr's dimension references, as netCDF-c writes them.
pub fn dimensions(doc: &Map<String, Value>) -> Dimensions {
    let names = doc.get("dimension_names").or_else(|| {
        doc.get("attributes")
            .and_then(|a| a.get("_ARRAY_DIMENSIONS"))
    });
    let mut dimensions = Dimensions::named(names);
    let names = dimensions.names.iter().flatten().flatten();
    if names.clone().any(|n| n.starts_with('/')) {
        dimensions.nczarr_references = Some(names.cloned().collect());
    }
    dimensions
}

/// The served element type of a v3 `data_type`: a name, or a named configuration (zarr-python
/// 3.1's `numpy.datetime64`, `fixed_length_utf32`, `null_terminated_bytes`, `raw_bytes`,
/// `structured`).
pub fn data_type(value: &Value) -> Result<DataType, MetaError> {
    let unsupported = || MetaError::DataType(format!("unsupported data type {value}"));
    let (s, config) = match value {
        Value::String(s) => (s.clone(), Map::new()),
        Value::Object(_) => named(value)?,
        _ => return Err(unsupported()),
    };
    let length = || -> Result<usize, MetaError> {
        let n = config
            .get("length_bytes")
            .and_then(Value::as_u64)
            .ok_or_else(|| MetaError::field("length_bytes", format!("missing in {value}")))?;
        check_element_size(n, &s)?;
        Ok(n as usize)
    };
    Ok(match s.as_str() {
        "bool" => DataType::Bool,
        "int8" => DataType::Int(1),
        "int16" => DataType::Int(2),
        "int32" => DataType::Int(4),
        "int64" => DataType::Int(8),
        "uint8" => DataType::UInt(1),
        "uint16" => DataType::UInt(2),
        "uint32" => DataType::UInt(4),
        "uint64" => DataType::UInt(8),
        "float16" => DataType::Float(2),
        "float32" => DataType::Float(4),
        "float64" => DataType::Float(8),
        "complex64" | "complex_float32" => DataType::Complex(8),
        "complex128" | "complex_float64" => DataType::Complex(16),
        "string" | "variable_length_utf8" => DataType::String,
        "bytes" | "variable_length_bytes" => DataType::VarBytes,
        "numpy.datetime64" | "numpy.timedelta64" => {
            let unit = config
                .get("unit")
                .and_then(Value::as_str)
                .unwrap_or("generic");
            let scale = config
                .get("scale_factor")
                .map_or(Some(1), Value::as_u64)
                .ok_or_else(unsupported)?;
            let delta = s == "numpy.timedelta64";
            if unit == "generic" && scale == 1 {
                DataType::Time {
                    delta,
                    unit: unit.into(),
                }
            } else {
                time_type(delta, unit, scale)?
            }
        }
        "fixed_length_utf32" => {
            let n = length()?;
            if n % 4 != 0 {
                return Err(unsupported());
            }
            DataType::Unicode(n / 4)
        }
        "null_terminated_bytes" | "fixed_length_bytes" => DataType::Bytes(length()?),
        "raw_bytes" => DataType::Raw(length()?),
        "struct" | "structured" => structured(&config)?,
        raw if raw.starts_with('r') => {
            let bits: u64 = raw[1..]
                .parse()
                .ok()
                .filter(|b| b % 8 == 0 && *b > 0)
                .ok_or_else(unsupported)?;
            check_element_size(bits / 8, raw)?;
            DataType::Raw((bits / 8) as usize)
        }
        other => super::ext_types::data_type(other).ok_or_else(unsupported)?,
    })
}

/// The fields of a `struct` type (`[{"name": "a", "data_type": "int32"}, ..]`, zarr-python 3.3+)
/// or of the legacy `structured` type (`[["a", "int32"], ..]`, zarr-python 3.1): name and type.
fn field_items(config: &Map<String, Value>) -> Result<Vec<(&str, &Value)>, MetaError> {
    let bad = |what: String| MetaError::DataType(format!("struct type: {what}"));
    let items = config
        .get("fields")
        .and_then(Value::as_array)
        .filter(|f| !f.is_empty())
        .ok_or_else(|| bad("no list of fields".into()))?;
    let mut out: Vec<(&str, &Value)> = Vec::new();
    for item in items {
        let field = match item {
            Value::Array(pair) => match pair.as_slice() {
                [Value::String(name), dtype] => Some((name.as_str(), dtype)),
                _ => None,
            },
            Value::Object(obj) => obj
                .get("name")
                .and_then(Value::as_str)
                .zip(obj.get("data_type")),
            _ => None,
        };
        let (name, dtype) =
            field.ok_or_else(|| bad(format!("field {item} has no name and type")))?;
        if name.is_empty() || out.iter().any(|(n, _)| *n == name) {
            return Err(bad(format!("field name {name:?} is empty or repeated")));
        }
        out.push((name, dtype));
    }
    Ok(out)
}

/// A `struct` (or `structured`) type: its fields packed in order, nested structs too.
fn structured(config: &Map<String, Value>) -> Result<DataType, MetaError> {
    let mut out = Vec::new();
    let mut offset = 0usize;
    for (name, type_json) in field_items(config)? {
        let dtype = data_type(type_json)?;
        let type_name = named(type_json)?.0;
        if super::ext_types::low_bits(&type_name).is_some() {
            // The `bytes` codec keeps only their low bits, which it does per element, not per
            // field.
            return Err(MetaError::Unsupported(format!(
                "struct field {name:?} of type {type_name}, narrower than its byte"
            )));
        }
        if dtype.is_variable() {
            return Err(MetaError::DataType(format!(
                "struct type: field {name:?} has no fixed size"
            )));
        }
        let size = dtype.size();
        out.push(Field {
            name: name.to_string(),
            dtype,
            shape: Vec::new(),
            offset,
        });
        offset = offset.saturating_add(size);
        check_element_size(offset as u64, "struct data type")?;
    }
    Ok(DataType::Structured(out))
}

/// The fill value of `type_json` (served as `dtype`): a `struct`'s fill is an object of its
/// fields' fills, an extension float's is its bits, others as [`parse_fill`] reads them.
fn fill_value(type_json: &Value, dtype: &DataType, value: &Value) -> Result<Vec<u8>, MetaError> {
    if let (DataType::Structured(fields), Value::Object(fills)) = (dtype, value) {
        let (_, config) = named(type_json)?;
        let mut out = vec![0; dtype.size()];
        for ((name, field_type), field) in field_items(&config)?.into_iter().zip(fields) {
            let fill = fills.get(name).ok_or_else(|| {
                MetaError::FillValue(format!("{value} has no value for field {name:?}"))
            })?;
            let bytes = fill_value(field_type, &field.dtype, fill)?;
            out[field.offset..field.offset + bytes.len()].copy_from_slice(&bytes);
        }
        return Ok(out);
    }
    let type_name = named(type_json).map(|(name, _)| name).unwrap_or_default();
    match super::ext_types::fill(&type_name, value) {
        Some(bits) => bits,
        None => parse_fill(value, dtype, &[]),
    }
}

/// The fields of a v3 array document: the spec's, and `consolidated_metadata`, which
/// zarr-python writes in groups.
const ARRAY_FIELDS: [&str; 12] = [
    "zarr_format",
    "node_type",
    "shape",
    "data_type",
    "chunk_grid",
    "chunk_key_encoding",
    "fill_value",
    "codecs",
    "attributes",
    "storage_transformers",
    "dimension_names",
    "consolidated_metadata",
];

/// Refuses a field the spec does not define unless it is an object with `"must_understand":
/// false` (the spec's extension points; zarr-python refuses them too).
fn refuse_unknown_fields(doc: &Map<String, Value>) -> Result<(), MetaError> {
    let unknown = doc.iter().find(|(key, value)| {
        !ARRAY_FIELDS.contains(&key.as_str())
            && value.get("must_understand") != Some(&Value::Bool(false))
    });
    match unknown {
        Some((key, _)) => Err(MetaError::Unsupported(format!(
            "field {key:?}: not in the spec, and not marked \"must_understand\": false"
        ))),
        None => Ok(()),
    }
}

/// Parses the array fields of a `zarr.json` whose chunk keys start with `prefix`.
pub fn parse_array(doc: &Map<String, Value>, prefix: &str) -> Result<ArrayMeta, MetaError> {
    refuse_unknown_fields(doc)?;
    let shape = dims(doc, "shape")?;
    let type_json = doc
        .get("data_type")
        .ok_or_else(|| MetaError::field("data_type", "missing"))?;
    let dtype = data_type(type_json)?;
    let type_name = named(type_json)?.0;
    let type_name = type_name.as_str();
    let fill_value = fill_value(
        type_json,
        &dtype,
        doc.get("fill_value").unwrap_or(&Value::Null),
    )?;

    let mut codec_list = match doc.get("codecs") {
        Some(Value::Array(list)) => list.clone(),
        _ => return Err(MetaError::field("codecs", "missing or not a list")),
    };
    let grid = named(
        doc.get("chunk_grid")
            .ok_or_else(|| MetaError::field("chunk_grid", "missing"))?,
    )?;
    let (grid, chunk_shape) = match grid.0.as_str() {
        "regular" => super::chunk_grid::regular(&grid.1, &shape, &shard_units(&codec_list))?,
        "rectilinear" => super::chunk_grid::rectilinear(&grid.1, &shape)?,
        other => return Err(MetaError::Unsupported(format!("chunk grid {other:?}"))),
    };

    let (style, separator) = match doc.get("chunk_key_encoding") {
        None => (KeyStyle::Default, '/'),
        Some(enc) => {
            let (name, config) = named(enc)?;
            let (style, default_sep) = match name.as_str() {
                "default" => (KeyStyle::Default, '/'),
                "v2" => (KeyStyle::V2, '.'),
                other => {
                    return Err(MetaError::Unsupported(format!(
                        "chunk key encoding {other:?}"
                    )))
                }
            };
            let separator = match config.get("separator").and_then(Value::as_str) {
                None => default_sep,
                Some(".") => '.',
                Some("/") => '/',
                Some(other) => {
                    return Err(MetaError::Unsupported(format!(
                        "chunk key separator {other:?}"
                    )))
                }
            };
            (style, separator)
        }
    };

    if let Some(bits) = super::ext_types::bit_width(type_name) {
        set_bit_width(&mut codec_list, bits, super::ext_types::low_bits(type_name))?;
    }
    let codecs = codec_list
        .iter()
        .map(CodecSpec::from_v3)
        .collect::<Result<Vec<_>, _>>()?;
    super::ext_types::refuse_numeric_codecs(type_name, &codecs)?;
    if let Some(Value::Array(t)) = doc.get("storage_transformers") {
        if let Some(first) = t.first() {
            return Err(MetaError::Unsupported(format!(
                "storage transformer {first}"
            )));
        }
    }
    Ok(ArrayMeta {
        shape,
        chunk_shape,
        grid,
        dtype,
        fill_value,
        codecs,
        chunk_keys: ChunkKeys::new(prefix, style, separator),
    })
}

/// The inner chunk shape of the first `sharding_indexed` codec of `codecs`, the smallest chunk
/// sizes a sharded array's axes can have; empty when there is none or it is not positive
/// sizes.
fn shard_units(codecs: &[Value]) -> Vec<u64> {
    let inner = codecs
        .iter()
        .find(|c| c.get("name").and_then(Value::as_str) == Some("sharding_indexed"))
        .and_then(|c| c.pointer("/configuration/chunk_shape"))
        .and_then(Value::as_array);
    let units = inner.into_iter().flatten().map(super::inner_chunk_size);
    units.collect::<Option<Vec<_>>>().unwrap_or_default()
}

/// Writes an extension type's `last_bit` (its bit width less one, zarr-extensions' default)
/// into each `packbits` codec that has none, and refuses a `last_bit` beyond it; writes the
/// `low_bits` of the types narrower than a byte into each `bytes` codec; also inside sharding's
/// inner chains: the served type (one byte an element) does not tell the codecs that width.
fn set_bit_width(codecs: &mut [Value], bits: u32, low_bits: Option<u32>) -> Result<(), MetaError> {
    for codec in codecs {
        if let Some(name @ ("packbits" | "bytes")) = codec.as_str() {
            *codec = json!({"name": name, "configuration": {}});
        }
        let Some(obj) = codec.as_object_mut() else {
            continue;
        };
        let name = obj.get("name").and_then(Value::as_str).map(str::to_owned);
        if matches!(name.as_deref(), Some("packbits" | "bytes")) {
            obj.entry("configuration").or_insert_with(|| json!({}));
        }
        let config = obj.get_mut("configuration").and_then(Value::as_object_mut);
        match (name.as_deref(), config) {
            (Some("bytes"), Some(config)) => {
                if let Some(low) = low_bits {
                    config.insert("low_bits".into(), json!(low));
                }
            }
            (Some("packbits"), Some(config)) => match config.get("last_bit") {
                None | Some(Value::Null) => {
                    config.insert("last_bit".into(), json!(bits - 1));
                }
                Some(last) if last.as_u64().is_some_and(|b| b >= u64::from(bits)) => {
                    return Err(MetaError::Unsupported(format!(
                        "packbits last_bit {last} on a {bits}-bit type (at most {})",
                        bits - 1
                    )));
                }
                Some(_) => {}
            },
            (Some("sharding_indexed"), Some(config)) => {
                if let Some(Value::Array(inner)) = config.get_mut("codecs") {
                    set_bit_width(inner, bits, low_bits)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

impl CodecSpec {
    /// A v3 codec entry: a name, or `{"name": .., "configuration": {..}}`.
    pub fn from_v3(value: &Value) -> Result<Self, MetaError> {
        let (name, config) = named(value)?;
        Ok(CodecSpec::new(name, Value::Object(config)))
    }
}

/// A v3 "named configuration": `{"name": .., "configuration": {..}}` or a bare name string.
pub fn named(value: &Value) -> Result<(String, Map<String, Value>), MetaError> {
    match value {
        Value::String(name) => Ok((name.clone(), Map::new())),
        Value::Object(obj) => {
            let name = obj
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| MetaError::field("name", format!("{value} has no \"name\"")))?;
            let config = match obj.get("configuration") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(c)) => c.clone(),
                Some(other) => {
                    return Err(MetaError::field(
                        "configuration",
                        format!("{other} is not an object"),
                    ))
                }
            };
            Ok((name.to_string(), config))
        }
        other => Err(MetaError::field(
            "name",
            format!("{other} is not a named configuration"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dimension_names_and_references() {
        let dims = |v: Value| dimensions(v.as_object().unwrap());
        let named = dims(json!({"dimension_names": ["t", null]}));
        assert_eq!(named.names, Some(vec![Some("t".into()), None]));
        assert!(!named.is_nczarr());
        // GDAL's v3 drafts name them in the attributes.
        let gdal = dims(json!({"attributes": {"_ARRAY_DIMENSIONS": ["X"]}}));
        assert_eq!(gdal.axis_names(1), [Some("X".into())]);
        let nczarr = dims(json!({"dimension_names": ["/g/t", "x"]}));
        assert_eq!(
            nczarr.nczarr_references,
            Some(vec!["/g/t".into(), "x".into()])
        );
        assert_eq!(dims(json!({})), Dimensions::default());
    }

    #[test]
    fn parses_a_v3_array() {
        let doc = json!({
            "zarr_format": 3, "node_type": "array", "shape": [10, 10], "data_type": "float32",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 4]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "."}},
            "fill_value": "NaN",
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd"}]
        });
        let meta = parse_array(doc.as_object().unwrap(), "g/a/").unwrap();
        assert_eq!(meta.chunk_shape, vec![4, 4]);
        assert_eq!(meta.chunk_keys.key(&[2, 1]), "g/a/c.2.1");
        assert_eq!(meta.codecs[1], CodecSpec::new("zstd", json!({})));
        assert_eq!(meta.fill_value, f32::NAN.to_le_bytes());
    }

    #[test]
    fn extension_types_give_packbits_their_width() {
        let doc = json!({"shape": [8], "data_type": "int4",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8]}},
            "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [4],
                "codecs": ["packbits"], "index_codecs": [{"name": "bytes"}]}},
                {"name": "packbits", "configuration": {"first_bit": 1}}]});
        let meta = parse_array(doc.as_object().unwrap(), "").unwrap();
        assert_eq!(
            meta.codecs[0].config["codecs"][0]["configuration"]["last_bit"],
            3
        );
        assert_eq!(
            *meta.codecs[1].config,
            json!({"first_bit": 1, "last_bit": 3})
        );
    }

    #[test]
    fn zarr_python_3_1_types() {
        let t = |v: Value| data_type(&v).unwrap().npy_descr();
        let dt =
            json!({"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 10}});
        assert_eq!(t(dt), "<M8[10s]");
        let td = json!({"name": "numpy.timedelta64", "configuration": {"unit": "ns", "scale_factor": 1}});
        assert_eq!(t(td), "<m8[ns]");
        let u = json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 20}});
        assert_eq!(t(u), "<U5");
        let s = json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 4}});
        assert_eq!(t(s), "|S4");
        let v = json!({"name": "raw_bytes", "configuration": {"length_bytes": 3}});
        assert_eq!(t(v), "|V3");
        let st = json!({"name": "structured", "configuration": {"fields": [["a", "int32"], ["b", "float64"]]}});
        assert_eq!(t(st), "[('a', '<i4'), ('b', '<f8')]");
    }

    #[test]
    fn struct_types_and_their_fills() {
        let doc = json!({"shape": [2], "chunk_grid": {"name": "regular",
            "configuration": {"chunk_shape": [2]}}, "codecs": [{"name": "bytes"}],
            "data_type": {"name": "struct", "configuration": {"fields": [
                {"name": "p", "data_type": {"name": "struct", "configuration": {"fields": [
                    {"name": "x", "data_type": {"name": "bfloat16"}},
                    {"name": "y", "data_type": "int8"}]}}},
                {"name": "v", "data_type": "float32"}]}},
            "fill_value": {"p": {"x": 1.0, "y": -1}, "v": 0.5}});
        let meta = parse_array(doc.as_object().unwrap(), "").unwrap();
        assert_eq!(
            meta.dtype.npy_descr(),
            "[('p', [('x', '<u2'), ('y', '|i1')]), ('v', '<f4')]"
        );
        assert_eq!(meta.fill_value, [0x80, 0x3f, 0xff, 0, 0, 0, 0x3f]);
        let repeated = json!({"name": "struct", "configuration": {"fields": [
            {"name": "a", "data_type": "int8"}, {"name": "a", "data_type": "int8"}]}});
        assert!(data_type(&repeated).is_err());
        let bits = json!({"shape": [2], "data_type": "bfloat16", "chunk_grid": {"name": "regular",
            "configuration": {"chunk_shape": [2]}}, "codecs": [{"name": "cast_value",
            "configuration": {"data_type": "int8"}}, "bytes"]});
        assert!(matches!(
            parse_array(bits.as_object().unwrap(), ""),
            Err(MetaError::Unsupported(m)) if m.contains("cast_value")
        ));
    }

    #[test]
    fn unknown_types_and_grids_are_errors() {
        assert!(data_type(&json!("float8_e4m3x")).is_err());
        assert_eq!(data_type(&json!("r16")).unwrap(), DataType::Raw(2));
        assert!(
            data_type(&json!({"name": "structured", "configuration": {"fields": []}})).is_err()
        );
        assert!(data_type(&json!({"name": "raw_bytes"})).is_err());
        let doc = json!({"shape": [1], "data_type": "int8", "chunk_grid": {"name": "hexagonal"}, "codecs": []});
        assert!(matches!(
            parse_array(doc.as_object().unwrap(), ""),
            Err(MetaError::Unsupported(m)) if m.contains("hexagonal")
        ));
        assert!(matches!(
            data_type(&json!("r8000000000")),
            Err(MetaError::TooLarge(_))
        ));
    }

    /// A v3 array document of `data_type` with `codecs`, fill value `fill`.
    fn array_doc(data_type: Value, codecs: Value, fill: Value) -> Value {
        json!({"shape": [4], "data_type": data_type, "fill_value": fill, "codecs": codecs,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}}})
    }

    fn parse(doc: &Value) -> Result<ArrayMeta, MetaError> {
        parse_array(doc.as_object().unwrap(), "")
    }

    #[test]
    fn extension_types_named_by_objects_are_extension_types() {
        let int4 = parse(&array_doc(
            json!({"name": "int4"}),
            json!(["bytes"]),
            json!(-8),
        ))
        .unwrap();
        assert_eq!(int4.codecs[0].config["low_bits"], 4);
        assert_eq!(int4.fill_value, [0xf8]);
        let packed = array_doc(
            json!({"name": "uint2", "configuration": {}}),
            json!(["packbits"]),
            json!(3),
        );
        assert_eq!(parse(&packed).unwrap().codecs[0].config["last_bit"], 1);
        let bf16 = json!({"name": "bfloat16", "configuration": {}});
        let scaled = array_doc(bf16, json!(["scale_offset", "bytes"]), json!(1.0));
        assert!(matches!(parse(&scaled), Err(MetaError::Unsupported(_))));
        let float8 = json!({"name": "float8_e4m3"});
        let doc = array_doc(float8, json!(["bytes"]), json!("NaN"));
        assert_eq!(parse(&doc).unwrap().fill_value, [0x7c]);
    }

    #[test]
    fn narrow_floats_keep_their_low_bits_and_fills_their_range() {
        for (name, bits) in [("float4_e2m1fn", 4), ("float6_e3m2fn", 6)] {
            let doc = array_doc(json!(name), json!([{"name": "bytes"}]), json!(0.5));
            assert_eq!(parse(&doc).unwrap().codecs[0].config["low_bits"], bits);
        }
        let doc = array_doc(json!("int4"), json!(["bytes"]), json!(100));
        assert!(matches!(parse(&doc), Err(MetaError::FillValue(_))));
        let doc = array_doc(json!("uint2"), json!(["bytes"]), json!(4));
        assert!(matches!(parse(&doc), Err(MetaError::FillValue(_))));
    }

    #[test]
    fn struct_fields_narrower_than_a_byte_are_refused() {
        let field = |t: &str| {
            json!({"name": "struct", "configuration": {"fields": [
                {"name": "a", "data_type": "int8"}, {"name": "b", "data_type": {"name": t}}]}})
        };
        for narrow in ["int4", "uint2", "float4_e2m1fn", "float6_e2m3fn"] {
            assert!(
                matches!(data_type(&field(narrow)), Err(MetaError::Unsupported(_))),
                "{narrow}"
            );
        }
        assert!(data_type(&field("float8_e5m2")).is_ok());
    }

    #[test]
    fn codecs_computing_with_values_are_refused_on_extension_types() {
        let sharded = |inner: Value| {
            json!([{"name": "sharding_indexed", "configuration": {"chunk_shape": [2],
                "codecs": inner}}])
        };
        for (ty, codecs) in [
            ("bfloat16", json!([{"name": "numcodecs.delta"}, "bytes"])),
            (
                "int4",
                json!([{"name": "numcodecs.fixedscaleoffset",
                "configuration": {"scale": 2, "offset": 0}}, "bytes"]),
            ),
            ("float8_e5m2", json!(["numcodecs.astype", "bytes"])),
            ("bfloat16", json!(["numcodecs.quantize", "bytes"])),
            (
                "float8_e4m3",
                json!([{"name": "zfp", "configuration": {"mode": "reversible"}}]),
            ),
            ("bfloat16", sharded(json!(["cast_value", "bytes"]))),
            (
                "uint4",
                sharded(json!(["bytes", {"name": "numcodecs.delta"}])),
            ),
        ] {
            let doc = array_doc(json!(ty), codecs.clone(), json!(0));
            assert!(
                matches!(parse(&doc), Err(MetaError::Unsupported(m)) if m.contains(ty)),
                "{ty} {codecs}"
            );
        }
        for codecs in [
            json!(["transpose", "bytes", {"name": "shuffle"}, "zstd"]),
            json!([{"name": "numcodecs.bitround", "configuration": {"keepbits": 3}}, "bytes"]),
            sharded(json!(["bytes", "crc32c"])),
        ] {
            let doc = array_doc(json!("bfloat16"), codecs.clone(), json!(0));
            assert!(parse(&doc).is_ok(), "{codecs}");
        }
    }

    #[test]
    fn packbits_bits_lie_within_the_type() {
        let packbits =
            |last: u64| json!([{"name": "packbits", "configuration": {"last_bit": last}}]);
        assert!(parse(&array_doc(json!("uint4"), packbits(3), json!(0))).is_ok());
        assert!(matches!(
            parse(&array_doc(json!("uint4"), packbits(7), json!(0))),
            Err(MetaError::Unsupported(m)) if m.contains("last_bit 7")
        ));
        assert!(parse(&array_doc(json!("float6_e2m3fn"), packbits(6), json!(0))).is_err());
    }

    #[test]
    fn complex_aliases_of_zarr_extensions() {
        assert_eq!(
            data_type(&json!("complex_float32")).unwrap(),
            DataType::Complex(8)
        );
        assert_eq!(
            data_type(&json!("complex_float64")).unwrap(),
            DataType::Complex(16)
        );
    }

    #[test]
    fn unknown_fields_are_refused_unless_they_may_be_ignored() {
        let with = |key: &str, value: Value| {
            let mut doc = array_doc(json!("int8"), json!(["bytes"]), json!(0));
            doc[key] = value;
            parse(&doc)
        };
        assert!(matches!(
            with("chunk_memory_layout", json!("C")),
            Err(MetaError::Unsupported(m)) if m.contains("chunk_memory_layout")
        ));
        assert!(with("extension", json!({"must_understand": true})).is_err());
        assert!(with("extension", json!({"name": "x"})).is_err());
        assert!(with("extension", json!({"must_understand": false, "x": 1})).is_ok());
        assert!(with("dimension_names", json!(["x"])).is_ok());
        assert!(with("storage_transformers", json!([])).is_ok());
        assert!(with("attributes", json!({"a": 1})).is_ok());
    }
}
