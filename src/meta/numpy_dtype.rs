//! Numpy data type descriptions as Zarr v2 and the v3 drafts write them: `"<f8"`, `"|S5"`,
//! `[["x", "<i4"], ["y", ">f8", [2]]]`.

use super::dtype::{check_element_size, time_type, DataType, Field};
use super::MetaError;
use serde_json::Value;

/// A parsed numpy type: the served element type plus the byte ranges stored big-endian.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumpyType {
    /// The element as served (little-endian).
    pub dtype: DataType,
    /// `(offset, width)` units inside one element that the store holds big-endian.
    pub big_units: Vec<(usize, usize)>,
}

/// Parses a numpy dtype given as JSON (a type string or a structured list).
pub fn parse(value: &Value) -> Result<NumpyType, MetaError> {
    match value {
        Value::String(s) => parse_str(s),
        Value::Array(fields) => parse_fields(fields),
        other => Err(MetaError::DataType(format!(
            "{other} is neither a string nor a list of fields"
        ))),
    }
}

fn parse_str(s: &str) -> Result<NumpyType, MetaError> {
    let unsupported = || MetaError::DataType(format!("unsupported data type {s:?}"));
    // tensorstore's names for the ml_dtypes types (`bfloat16`, `int4`, `float8_e5m2`), which
    // it writes little-endian.
    if let Some(dtype) = super::ext_types::data_type(s) {
        return Ok(NumpyType {
            dtype,
            big_units: Vec::new(),
        });
    }
    let (order, rest) = match s.chars().next() {
        Some(c @ ('<' | '>' | '|' | '=')) => (c, &s[1..]),
        _ => ('=', s),
    };
    let kind = rest
        .chars()
        .next()
        .ok_or_else(|| MetaError::DataType(format!("empty data type {s:?}")))?;
    let digits = &rest[kind.len_utf8()..];
    let dtype = if matches!(kind, 'M' | 'm') {
        parse_time(kind == 'm', digits).ok_or_else(unsupported)??
    } else {
        // Sizes are checked before anything is allocated for them: `>U4611686018427387904`
        // would overflow, `>U1000000000` would ask for gigabytes of fill value and byte-swap
        // units.
        let n: u64 = digits.parse().map_err(|_| unsupported())?;
        let bytes = if kind == 'U' { n.saturating_mul(4) } else { n };
        check_element_size(bytes, s)?;
        let n = n as usize;
        match (kind, n) {
            ('b', 1) => DataType::Bool,
            ('i', 1 | 2 | 4 | 8) => DataType::Int(n),
            ('u', 1 | 2 | 4 | 8) => DataType::UInt(n),
            ('f', 2 | 4 | 8) => DataType::Float(n),
            ('c', 8 | 16) => DataType::Complex(n),
            ('S', _) => DataType::Bytes(n),
            ('U', _) => DataType::Unicode(n),
            ('V', _) => DataType::Raw(n),
            _ => return Err(unsupported()),
        }
    };
    let big_units = if order == '>' {
        dtype.swap_units()
    } else {
        Vec::new()
    };
    Ok(NumpyType { dtype, big_units })
}

/// `8[ns]`, `8[10s]`, `8` (generic) after the `M` or `m` of a numpy time type.
fn parse_time(delta: bool, rest: &str) -> Option<Result<DataType, MetaError>> {
    let rest = rest.strip_prefix('8')?;
    if rest.is_empty() {
        return Some(Ok(DataType::Time {
            delta,
            unit: "generic".into(),
        }));
    }
    let inner = rest.strip_prefix('[')?.strip_suffix(']')?;
    let split = inner
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(inner.len());
    let (count, unit) = inner.split_at(split);
    let scale = if count.is_empty() {
        1
    } else {
        count.parse().ok()?
    };
    Some(time_type(delta, unit, scale))
}

fn parse_fields(items: &[Value]) -> Result<NumpyType, MetaError> {
    let bad = |what: String| MetaError::DataType(what);
    let mut fields = Vec::new();
    let mut big_units = Vec::new();
    let mut offset = 0;
    for (i, item) in items.iter().enumerate() {
        let parts = item
            .as_array()
            .filter(|p| (2..=3).contains(&p.len()))
            .ok_or_else(|| {
                bad(format!(
                    "structured field {item} is not [name, type] or [name, type, shape]"
                ))
            })?;
        let name = parts[0].as_str().ok_or_else(|| {
            bad(format!(
                "structured field name {} is not a string",
                parts[0]
            ))
        })?;
        // numpy names an unnamed field by its position, and refuses a name used twice.
        let name = match name {
            "" => format!("f{i}"),
            name => name.to_string(),
        };
        if fields.iter().any(|f: &Field| f.name == name) {
            return Err(bad(format!("structured field name {name:?} is used twice")));
        }
        let inner = parse(&parts[1])?;
        let shape = match parts.get(2) {
            None => Vec::new(),
            Some(Value::Array(dims)) => dims
                .iter()
                .map(|d| {
                    d.as_u64()
                        .map(|d| d as usize)
                        .ok_or_else(|| bad(format!("bad field shape {d}")))
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(other) => return Err(bad(format!("bad field shape {other}"))),
        };
        // Checked before the per-element loop below, which the count bounds.
        let count = shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .unwrap_or(usize::MAX);
        let size = inner.dtype.size();
        check_element_size(count as u64, &format!("field {name:?} of {count} elements"))?;
        let end = size
            .checked_mul(count)
            .and_then(|s| s.checked_add(offset))
            .unwrap_or(usize::MAX);
        check_element_size(end as u64, "structured data type")?;
        for i in 0..count {
            big_units.extend(
                inner
                    .big_units
                    .iter()
                    .map(|&(o, w)| (offset + i * size + o, w)),
            );
        }
        fields.push(Field {
            name,
            dtype: inner.dtype,
            shape,
            offset,
        });
        offset = end;
    }
    if fields.is_empty() {
        return Err(bad("structured data type with no fields".into()));
    }
    Ok(NumpyType {
        dtype: DataType::Structured(fields),
        big_units,
    })
}

impl NumpyType {
    /// The `bytes` codec configuration that undoes the stored byte order.
    pub fn bytes_codec_config(&self) -> Value {
        if self.big_units.is_empty() {
            serde_json::json!({"endian": "little"})
        } else if self.big_units == self.dtype.swap_units() {
            serde_json::json!({"endian": "big"})
        } else {
            let units: Vec<Value> = self
                .big_units
                .iter()
                .map(|&(o, w)| serde_json::json!([o, w]))
                .collect();
            serde_json::json!({"endian": "big", "swap_units": units})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scalar_types() {
        let t = parse(&json!(">i4")).unwrap();
        assert_eq!(t.dtype, DataType::Int(4));
        assert_eq!(t.big_units, vec![(0, 4)]);
        assert_eq!(parse(&json!("|b1")).unwrap().dtype, DataType::Bool);
        assert_eq!(parse(&json!("<U3")).unwrap().dtype, DataType::Unicode(3));
        let ns = parse(&json!("<M8[ns]")).unwrap();
        assert_eq!(ns.dtype.npy_descr(), "<M8[ns]");
        assert!(ns.big_units.is_empty());
        let big = parse(&json!(">m8[10s]")).unwrap();
        assert_eq!(
            (big.dtype.npy_descr(), big.big_units),
            ("<m8[10s]".into(), vec![(0, 8)])
        );
        assert_eq!(parse(&json!("<M8")).unwrap().dtype.npy_descr(), "<M8");
        assert!(parse(&json!("<M8[fortnight]")).is_err());
        assert!(parse(&json!("<M4[s]")).is_err());
        assert!(parse(&json!("|O")).is_err());
    }

    #[test]
    fn huge_types_are_refused_before_allocating() {
        for huge in [
            ">U4611686018427387904",
            ">U1000000000",
            "|S99999999999",
            "|V2000000",
        ] {
            assert!(
                matches!(parse(&json!(huge)), Err(MetaError::TooLarge(_))),
                "{huge}"
            );
        }
        let fields = json!([["a", ">i4", [1000000, 1000000]]]);
        assert!(matches!(parse(&fields), Err(MetaError::TooLarge(_))));
        let zero_size = json!([["a", "|S0", [4611686018427387904u64]]]);
        assert!(matches!(parse(&zero_size), Err(MetaError::TooLarge(_))));
    }

    #[test]
    fn unnamed_fields_are_named_by_position_and_names_used_twice_refused() {
        let t = parse(&json!([["", "<i4"], ["b", "<f4"], ["", "|V4"]])).unwrap();
        let DataType::Structured(fields) = t.dtype else {
            panic!("not structured")
        };
        let names: Vec<_> = fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["f0", "b", "f2"]);
        assert!(parse(&json!([["a", "<i4"], ["a", "<f4"]])).is_err());
        assert!(parse(&json!([["", "<i4"], ["f0", "<f4"]])).is_err());
    }

    #[test]
    fn mixed_order_structured() {
        let t = parse(&json!([["a", "<i2"], ["b", ">f4", [2]], ["c", "|S3"]])).unwrap();
        assert_eq!(t.dtype.size(), 2 + 8 + 3);
        assert_eq!(t.big_units, vec![(2, 4), (6, 4)]);
        assert_eq!(
            t.bytes_codec_config(),
            json!({"endian": "big", "swap_units": [[2, 4], [6, 4]]})
        );
    }
}
