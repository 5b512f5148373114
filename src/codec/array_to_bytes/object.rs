//! numcodecs object codecs other than `vlen-utf8`/`vlen-bytes`, decoded to the same item index
//! as [`super::vlen`] with each element as one line of UTF-8 text:
//! - `vlen-array` (ragged numeric arrays): a u32 item count, then per item a u32 byte length and
//!   its numbers in the codec's `dtype`; the text is the numbers, space-separated.
//! - `json2`: one JSON document `[item, ..., dtype, shape]` (items nested by dimension);
//!   `msgpack2`: the same list in MessagePack. A string element is its text; any other element is
//!   its compact JSON (MessagePack binaries as text, lossy UTF-8).
//!
//! Numbers print in their shortest round-trip form (`0.5`, `1.0`, `1e-7`); non-finite floats as
//! `NaN`, `inf`, `-inf`.

use crate::codec::config::get_numtype;
use crate::codec::numtype::{NumType, Value as Num};
use crate::codec::CodecError;
use crate::meta::CodecSpec;
use serde_json::Value;

/// How the elements of an object array are serialized.
pub(crate) enum ObjectCodec {
    /// `vlen-utf8`, `vlen-bytes`: length-prefixed items, served as they are.
    Vlen,
    /// `vlen-array` of numbers of this type.
    VlenArray(NumType),
    /// `json2`; `strict` (numcodecs' default) refuses raw control characters in strings, as
    /// Python's `json.loads(strict=True)`.
    Json { strict: bool },
    /// `msgpack2`.
    MsgPack,
}

impl ObjectCodec {
    /// `json2` as its configuration asks.
    pub fn json(spec: &CodecSpec) -> Result<Self, CodecError> {
        let strict = spec.config.get("strict").and_then(Value::as_bool);
        Ok(ObjectCodec::Json {
            strict: strict.unwrap_or(true),
        })
    }

    /// `vlen-array` from a config with the numbers' `dtype`.
    pub fn vlen_array(spec: &CodecSpec) -> Result<Self, CodecError> {
        let dtype = get_numtype(spec, "dtype")?.ok_or_else(|| {
            CodecError::bad_config(&spec.name, "a vlen-array needs a numeric 'dtype'")
        })?;
        Ok(ObjectCodec::VlenArray(dtype))
    }

    /// True when the chunk is serialized as a flat list of its elements in memory order (numcodecs
    /// `reshape(-1, order='A')`: F order for an F-ordered array), false when it is nested by
    /// dimension in logical order (`json2`, `msgpack2`: numpy's `tolist`).
    pub fn flat(&self) -> bool {
        matches!(self, ObjectCodec::Vlen | ObjectCodec::VlenArray(_))
    }

    /// Decodes one serialized chunk of `items` elements into the item index of [`super::vlen`].
    pub fn decode(&self, codec: &str, encoded: &[u8], items: usize) -> Result<Vec<u8>, CodecError> {
        let corrupt = |reason: String| CodecError::corrupt(codec, reason);
        match self {
            ObjectCodec::Vlen => super::vlen::decode(codec, encoded, items),
            ObjectCodec::VlenArray(elem) => {
                let raw = super::vlen::decode(codec, encoded, items)?;
                let mut texts = Vec::with_capacity(items);
                for i in 0..items {
                    let bytes = super::vlen::item(&raw, i).unwrap_or_default();
                    if !bytes.len().is_multiple_of(elem.size) {
                        return Err(corrupt(format!(
                            "item {i} of {} bytes is not whole numbers",
                            bytes.len()
                        )));
                    }
                    let numbers: Vec<String> = bytes
                        .chunks_exact(elem.size)
                        .map(|b| number_text(elem.read(b)))
                        .collect();
                    texts.push(numbers.join(" "));
                }
                Ok(super::vlen::index(&texts))
            }
            ObjectCodec::Json { strict } => {
                let doc = crate::meta::parse_json_as(encoded, !strict)
                    .map_err(|e| corrupt(format!("not JSON: {e}")))?;
                elements(codec, doc, items)
            }
            ObjectCodec::MsgPack => {
                let doc = rmpv::decode::read_value(&mut &encoded[..])
                    .map_err(|e| corrupt(format!("not MessagePack: {e}")))?;
                elements(codec, msgpack_to_json(doc), items)
            }
        }
    }
}

/// The text of one number.
fn number_text(n: Num) -> String {
    match n {
        Num::I(v) => v.to_string(),
        Num::U(v) => v.to_string(),
        Num::F(v) if v.is_nan() => "NaN".into(),
        Num::F(v) if v.is_infinite() => if v > 0.0 { "inf" } else { "-inf" }.into(),
        Num::F(v) => serde_json::Number::from_f64(v).map_or_else(String::new, |n| n.to_string()),
    }
}

/// The elements of a `[item, ..., dtype, shape]` list, flattened in C order, as text.
fn elements(codec: &str, doc: Value, items: usize) -> Result<Vec<u8>, CodecError> {
    let corrupt = |reason: String| CodecError::corrupt(codec, reason);
    let Value::Array(mut list) = doc else {
        return Err(corrupt("not a list of items, dtype and shape".into()));
    };
    let shape = match list.pop() {
        Some(Value::Array(dims)) => dims,
        _ => return Err(corrupt("the last entry is not the chunk's shape".into())),
    };
    list.pop();
    let mut texts = Vec::with_capacity(items);
    if shape.is_empty() {
        // A 0-d chunk holds its one element as the only item.
        list.truncate(1);
    }
    flatten(list, shape.len().max(1), &mut texts);
    if texts.len() != items {
        return Err(corrupt(format!(
            "holds {} items, the chunk has {items}",
            texts.len()
        )));
    }
    Ok(super::vlen::index(&texts))
}

/// Appends the elements of `list`, nested `depth` lists deep, as text.
fn flatten(list: Vec<Value>, depth: usize, out: &mut Vec<String>) {
    for v in list {
        match v {
            Value::Array(inner) if depth > 1 => flatten(inner, depth - 1, out),
            Value::String(s) => out.push(s),
            other => out.push(other.to_string()),
        }
    }
}

/// A MessagePack value as JSON (binaries as lossy UTF-8 text, non-string keys as text).
fn msgpack_to_json(v: rmpv::Value) -> Value {
    use rmpv::Value as M;
    match v {
        M::Nil => Value::Null,
        M::Boolean(b) => Value::Bool(b),
        M::Integer(i) => i
            .as_i64()
            .map(Value::from)
            .or_else(|| i.as_u64().map(Value::from))
            .unwrap_or(Value::Null),
        M::F32(f) => serde_json::Number::from_f64(f64::from(f)).map_or(Value::Null, Value::Number),
        M::F64(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        M::String(s) => Value::String(String::from_utf8_lossy(s.as_bytes()).into_owned()),
        M::Binary(b) => Value::String(String::from_utf8_lossy(&b).into_owned()),
        M::Array(items) => Value::Array(items.into_iter().map(msgpack_to_json).collect()),
        M::Map(pairs) => Value::Object(
            pairs
                .into_iter()
                .map(|(k, v)| {
                    let key = match k {
                        M::String(s) => String::from_utf8_lossy(s.as_bytes()).into_owned(),
                        other => other.to_string(),
                    };
                    (key, msgpack_to_json(v))
                })
                .collect(),
        ),
        M::Ext(_, b) => Value::String(String::from_utf8_lossy(&b).into_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn texts(decoded: &[u8], n: usize) -> Vec<String> {
        (0..n)
            .map(|i| {
                String::from_utf8(super::super::vlen::item(decoded, i).unwrap().to_vec()).unwrap()
            })
            .collect()
    }

    #[test]
    fn json2_items_nest_by_dimension() {
        let doc = br#"[["a", 1], [[1, 2], {"k": NaN}], "|O", [2, 2]]"#;
        let json = ObjectCodec::Json { strict: true };
        let decoded = json.decode("json2", doc, 4).unwrap();
        assert_eq!(texts(&decoded, 4), ["a", "1", "[1,2]", r#"{"k":"NaN"}"#]);
        assert!(json.decode("json2", doc, 3).is_err());
        assert!(json.decode("json2", b"{}", 0).is_err());
    }

    #[test]
    fn json2_refuses_raw_control_characters_unless_configured_not_strict() {
        // As numcodecs: json.loads(strict=True) refuses them, strict=False reads them.
        let doc = b"[\"a\x01b\", \"|O\", [1]]";
        let codec = |config| {
            crate::codec::registry::build_object(&CodecSpec::new("json2", config)).unwrap()
        };
        assert!(codec(json!({})).decode("json2", doc, 1).is_err());
        let decoded = codec(json!({"strict": false}))
            .decode("json2", doc, 1)
            .unwrap();
        assert_eq!(texts(&decoded, 1), ["a\u{1}b"]);
    }

    #[test]
    fn vlen_array_numbers_are_space_separated() {
        let spec = CodecSpec::new("vlen-array", json!({"dtype": "<f8"}));
        let codec = crate::codec::registry::build_object(&spec).unwrap();
        let mut enc = 2u32.to_le_bytes().to_vec();
        enc.extend(16u32.to_le_bytes());
        enc.extend(0.5f64.to_le_bytes());
        enc.extend((-2.0f64).to_le_bytes());
        enc.extend(0u32.to_le_bytes());
        let decoded = codec.decode("vlen-array", &enc, 2).unwrap();
        assert_eq!(texts(&decoded, 2), ["0.5 -2.0", ""]);
        enc[4] = 15;
        assert!(codec.decode("vlen-array", &enc, 2).is_err());
        let pickle = crate::codec::registry::build_object(&CodecSpec::new("pickle", json!({})));
        assert!(matches!(pickle, Err(CodecError::Unsupported(m)) if m.contains("runs code")));
    }
}
