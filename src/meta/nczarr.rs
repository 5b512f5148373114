//! NCZarr (netCDF-c's Zarr dialect), all four generations on disk:
//! 1. netCDF-c 4.8: separate `.nczarr`, `.nczgroup`, `.nczvar`, `.nczattr` objects;
//! 2. 4.8.1–4.9.0: `_NCZARR_SUPERBLOCK`/`_NCZARR_GROUP` in `.zgroup`, `_NCZARR_ARRAY` in `.zarray`;
//! 3. 4.9.1–4.9.2: the same keys in lower case;
//! 4. 4.9.3+: `_nczarr_group`, `_nczarr_array` inside `.zattrs`.
//!
//! The data is plain Zarr v2; what NCZarr adds is shared dimensions, scalars (stored with shape
//! `[1]`), NC_CHAR written as `<U1` but stored one byte per element, and the fill values of
//! NC_CHAR and NC_STRING (`S<n>`) written as their text (`"-"`, a digit as a JSON number)
//! instead of zarr's base64: served in zarr's form.

use base64::Engine as _;
use serde_json::{json, Map, Value};

/// The gen-1 object beside `.zarray` describing a variable.
pub const GEN1_VAR: &str = ".nczvar";
/// The gen-1 object beside `.zgroup` describing a group.
pub const GEN1_GROUP: &str = ".nczgroup";
/// The gen-1 superblock at the store root.
pub const GEN1_SUPERBLOCK: &str = ".nczarr";

/// What NCZarr says of one variable.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NcVar {
    /// The variable's dimension names as netCDF and xarray show them (`x`, `y`): the last part
    /// of each fully qualified reference (`/x`, `/g/y`), which stays in the NCZarr metadata.
    pub dimension_names: Vec<String>,
    /// The fully qualified references themselves (`/g/x`).
    pub references: Vec<String>,
    /// A netCDF scalar: stored with shape `[1]`, served 0-d.
    pub scalar: bool,
}

/// The NCZarr description of an array, from whichever generation wrote it; `None` for plain Zarr.
pub fn variable(
    zarray: &Map<String, Value>,
    attrs: &Map<String, Value>,
    gen1: Option<&Map<String, Value>>,
) -> Option<NcVar> {
    let info = gen1
        .or_else(|| zarray.get("_NCZARR_ARRAY").and_then(Value::as_object))
        .or_else(|| zarray.get("_nczarr_array").and_then(Value::as_object))
        .or_else(|| attrs.get("_nczarr_array").and_then(Value::as_object))?;
    let refs = info
        .get("dimension_references")
        .or_else(|| info.get("dimrefs"))
        .and_then(Value::as_array);
    let references: Vec<String> = refs
        .into_iter()
        .flatten()
        .filter_map(|r| r.as_str().map(String::from))
        .collect();
    let dimension_names = references.iter().map(|r| short_name(r)).collect();
    let scalar = info.get("storage").and_then(Value::as_str) == Some("scalar")
        || info
            .get("scalar")
            .is_some_and(|s| s.as_u64() == Some(1) || s.as_bool() == Some(true));
    Some(NcVar {
        dimension_names,
        references,
        scalar,
    })
}

/// The name of a dimension from its fully qualified reference: `/g/time` is `time`.
fn short_name(reference: &str) -> String {
    match reference.trim_end_matches('/').rsplit_once('/') {
        Some((_, name)) if !name.is_empty() => name.to_string(),
        _ => reference.to_string(),
    }
}

/// Rewrites a variable's `.zarray` into what zarrfs serves: NC_CHAR `<U1`/`>U1` becomes `|S1`
/// (netCDF stores one byte per char), one-element list fill values (gen 1) become scalars, the
/// text fill value of an `S<n>` type becomes zarr's base64 of its bytes, and scalars lose their
/// storage dimension.
pub fn served_zarray(zarray: &Map<String, Value>, var: &NcVar) -> Map<String, Value> {
    let mut out = zarray.clone();
    if matches!(
        out.get("dtype").and_then(Value::as_str),
        Some("<U1" | ">U1" | "|U1" | "U1")
    ) {
        out.insert("dtype".into(), json!("|S1"));
    }
    if let Some(Value::Array(list)) = out.get("fill_value") {
        if list.len() == 1 {
            let only = list[0].clone();
            out.insert("fill_value".into(), only);
        }
    }
    let width = out
        .get("dtype")
        .and_then(Value::as_str)
        .and_then(bytes_width);
    let fill = width.and_then(|n| text_fill(out.get("fill_value")?, n));
    if let Some(bytes) = fill {
        let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
        out.insert("fill_value".into(), json!(encoded));
    }
    let one = |key: &str| {
        out.get(key)
            .and_then(Value::as_array)
            .is_some_and(|d| d.len() == 1 && d[0] == 1)
    };
    if var.scalar && one("shape") && one("chunks") {
        out.insert("shape".into(), json!([]));
        out.insert("chunks".into(), json!([]));
    }
    out
}

/// The width of a numpy byte-string type (`>S1`, `|S128`).
fn bytes_width(dtype: &str) -> Option<usize> {
    let digits = dtype
        .trim_start_matches(['<', '>', '|'])
        .strip_prefix('S')?;
    digits.parse().ok()
}

/// The bytes of a fill value netCDF-c wrote as text for a type of `width` bytes, read as
/// netCDF-c reads it (libnczarr's `zconvert`): a string's bytes, a number's digits, a list's
/// items one after the other. An NC_CHAR (`width` 1) takes the first byte, NUL for `""`; an
/// NC_STRING (stored `S<width>`) the whole text, which must fit. `None` for `null` and for
/// values netCDF-c never writes (booleans, objects).
fn text_fill(value: &Value, width: usize) -> Option<Vec<u8>> {
    fn text(value: &Value) -> Option<String> {
        match value {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => match n.as_f64() {
                // netCDF-c prints a float with "%lf".
                Some(f) if !n.is_i64() && !n.is_u64() => Some(format!("{f:.6}")),
                _ => Some(n.to_string()),
            },
            Value::Array(items) => items.iter().map(text).collect(),
            _ => None,
        }
    }
    let mut bytes = text(value)?.into_bytes();
    if width == 1 {
        bytes.truncate(1);
    }
    (bytes.len() <= width).then_some(bytes)
}

/// The dimensions a group defines (`{"time": 4}`), from whichever generation wrote them.
pub fn group_dimensions(
    zgroup: &Map<String, Value>,
    attrs: &Map<String, Value>,
    gen1: Option<&Map<String, Value>>,
) -> Option<Map<String, Value>> {
    let dims = gen1
        .and_then(|g| g.get("dims"))
        .or_else(|| zgroup.get("_NCZARR_GROUP").and_then(|g| g.get("dims")))
        .or_else(|| zgroup.get("_nczarr_group").and_then(|g| g.get("dims")))
        .or_else(|| attrs.get("_nczarr_group").and_then(|g| g.get("dimensions")))?
        .as_object()?;
    Some(
        dims.iter()
            .map(|(name, v)| {
                // Gen 4 writes unlimited dimensions as {"size": n, "unlimited": 1}.
                let len = v.get("size").unwrap_or(v).clone();
                (name.clone(), len)
            })
            .collect(),
    )
}

/// The names of a group's children as NCZarr lists them (`vars`/`arrays` and `groups`), from
/// the group's document (`.zgroup` fields and attributes) or its gen-1 `.nczgroup`; `None` when
/// the group has no NCZarr lists. The names are not checked here: the walker checks every name.
pub fn child_names(
    doc: &Map<String, Value>,
    gen1: Option<&Map<String, Value>>,
) -> Option<Vec<String>> {
    let info = gen1
        .or_else(|| doc.get("_NCZARR_GROUP").and_then(Value::as_object))
        .or_else(|| doc.get("_nczarr_group").and_then(Value::as_object))
        .or_else(|| {
            doc.get("attributes")
                .and_then(|a| a.get("_nczarr_group"))
                .and_then(Value::as_object)
        })?;
    let lists: Vec<&Vec<Value>> = ["vars", "arrays", "groups", "subgroups"]
        .iter()
        .filter_map(|k| info.get(*k).and_then(Value::as_array))
        .collect();
    if lists.is_empty() {
        return None;
    }
    Some(
        lists
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn reads_every_generation() {
        let gen1 = obj(json!({"dimrefs": ["/x"], "storage": "chunked"}));
        let v = variable(&Map::new(), &Map::new(), Some(&gen1)).unwrap();
        assert_eq!(v.dimension_names, ["x"]);
        let gen2 = obj(json!({"_NCZARR_ARRAY": {"dimrefs": [], "storage": "scalar"}}));
        assert!(variable(&gen2, &Map::new(), None).unwrap().scalar);
        let gen4 =
            obj(json!({"_nczarr_array": {"dimension_references": ["/a", "/g/b"], "scalar": 1}}));
        let v = variable(&Map::new(), &gen4, None).unwrap();
        assert_eq!(v.references, ["/a", "/g/b"]);
        assert_eq!(
            (v.dimension_names, v.scalar),
            (vec!["a".into(), "b".into()], true)
        );
        assert!(variable(&Map::new(), &Map::new(), None).is_none());
    }

    #[test]
    fn serves_chars_as_bytes_and_scalars_as_0d() {
        let z = obj(json!({"shape": [1], "chunks": [1], "dtype": "<U1", "fill_value": [7]}));
        let s = served_zarray(
            &z,
            &NcVar {
                scalar: true,
                ..NcVar::default()
            },
        );
        // A char's fill [7] is the text "7", as netCDF-c reads it: '7' (base64 "Nw==").
        assert_eq!(
            Value::Object(s),
            json!({"shape": [], "chunks": [], "dtype": "|S1", "fill_value": "Nw=="})
        );
    }

    #[test]
    fn text_fill_values_are_served_as_base64() {
        // netCDF-c 4.10.1 (netCDF4-python 1.7.5): NC_CHAR fills '-', '5', '"', '' and an
        // NC_STRING fill "NA".
        let fill = |dtype: &str, fill: Value| {
            let z = obj(json!({"shape": [5], "chunks": [2], "dtype": dtype, "fill_value": fill}));
            served_zarray(&z, &NcVar::default())["fill_value"].clone()
        };
        assert_eq!(fill(">S1", json!("-")), json!("LQ=="));
        assert_eq!(fill(">S1", json!(5)), json!("NQ=="));
        assert_eq!(fill(">S1", json!("\"")), json!("Ig=="));
        assert_eq!(fill(">S1", json!("")), json!(""));
        assert_eq!(fill("|S128", json!("NA")), json!("TkE="));
        assert_eq!(fill("<U1", json!(["x"])), json!("eA=="));
        assert_eq!(fill(">S1", Value::Null), Value::Null);
        assert_eq!(
            fill("|S2", json!("long")),
            json!("long"),
            "too long: left to fail"
        );
        assert_eq!(fill("<i4", json!(-1)), json!(-1));
    }

    #[test]
    fn child_lists_of_every_generation() {
        let gen4 =
            obj(json!({"attributes": {"_nczarr_group": {"arrays": ["a"], "groups": ["g"]}}}));
        assert_eq!(child_names(&gen4, None).unwrap(), ["a", "g"]);
        let gen2 = obj(json!({"_NCZARR_GROUP": {"vars": ["v"], "groups": []}}));
        assert_eq!(child_names(&gen2, None).unwrap(), ["v"]);
        let gen1 = obj(json!({"vars": [], "groups": ["x"]}));
        assert_eq!(child_names(&Map::new(), Some(&gen1)).unwrap(), ["x"]);
        assert!(child_names(&Map::new(), None).is_none());
    }

    #[test]
    fn group_dimensions_of_every_generation() {
        let gen4 = obj(
            json!({"_nczarr_group": {"dimensions": {"t": {"size": 4, "unlimited": 1}, "x": 3}}}),
        );
        assert_eq!(
            Value::Object(group_dimensions(&Map::new(), &gen4, None).unwrap()),
            json!({"t": 4, "x": 3})
        );
        let gen2 = obj(json!({"_NCZARR_GROUP": {"dims": {"x": 2}}}));
        assert_eq!(
            Value::Object(group_dimensions(&gen2, &Map::new(), None).unwrap()),
            json!({"x": 2})
        );
    }
}
