//! Reading values out of a codec's JSON configuration.

use super::numtype::NumType;
use super::CodecError;
use crate::meta::CodecSpec;
use serde_json::Value;

/// The value of `key`, treating JSON `null` as absent.
pub(crate) fn field<'a>(spec: &'a CodecSpec, key: &str) -> Option<&'a Value> {
    spec.config.get(key).filter(|v| !v.is_null())
}

/// A number given as a numeric string, as netCDF-c writes codec parameters (`"level": "4"`).
fn numeric_string(v: &Value) -> Option<Value> {
    v.as_str()
        .and_then(|s| serde_json::from_str::<Value>(s.trim()).ok())
        .filter(Value::is_number)
}

/// A non-negative integer (or a string holding one); `None` if absent.
pub(crate) fn get_usize(spec: &CodecSpec, key: &str) -> Result<Option<usize>, CodecError> {
    field(spec, key)
        .map(|v| {
            v.as_u64()
                .or_else(|| numeric_string(v).and_then(|n| n.as_u64()))
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| {
                    bad(
                        spec,
                        format!("'{key}' must be a non-negative integer, got {v}"),
                    )
                })
        })
        .transpose()
}

/// A number (or a string holding one); `None` if absent.
pub(crate) fn get_f64(spec: &CodecSpec, key: &str) -> Result<Option<f64>, CodecError> {
    field(spec, key)
        .map(|v| {
            v.as_f64()
                .or_else(|| numeric_string(v).and_then(|n| n.as_f64()))
                .ok_or_else(|| bad(spec, format!("'{key}' must be a number, got {v}")))
        })
        .transpose()
}

/// A string; `None` if absent.
pub(crate) fn get_str<'a>(spec: &'a CodecSpec, key: &str) -> Result<Option<&'a str>, CodecError> {
    field(spec, key)
        .map(|v| {
            v.as_str()
                .ok_or_else(|| bad(spec, format!("'{key}' must be a string, got {v}")))
        })
        .transpose()
}

/// A numpy numeric type string (`"<i4"`, `">f8"`, `"uint8"`, ...); `None` if absent.
pub(crate) fn get_numtype(spec: &CodecSpec, key: &str) -> Result<Option<NumType>, CodecError> {
    get_str(spec, key)?
        .map(|s| {
            NumType::parse(s)
                .ok_or_else(|| bad(spec, format!("'{key}': unsupported numeric dtype '{s}'")))
        })
        .transpose()
}

/// A [`CodecError::BadConfig`] naming `spec`'s codec.
pub(crate) fn bad(spec: &CodecSpec, reason: impl Into<String>) -> CodecError {
    CodecError::bad_config(&spec.name, reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_typed_values_and_rejects_wrong_types() {
        let spec = CodecSpec::new("x", json!({"n": 3, "s": "<i2", "f": 1.5, "z": null}));
        assert_eq!(get_usize(&spec, "n"), Ok(Some(3)));
        assert_eq!(get_usize(&spec, "z"), Ok(None));
        assert_eq!(get_usize(&spec, "missing"), Ok(None));
        assert!(get_usize(&spec, "s").is_err());
        let netcdf = CodecSpec::new("x", json!({"level": "4", "elementsize": " 0"}));
        assert_eq!(get_usize(&netcdf, "level"), Ok(Some(4)));
        assert_eq!(get_usize(&netcdf, "elementsize"), Ok(Some(0)));
        assert_eq!(get_f64(&netcdf, "level"), Ok(Some(4.0)));
        assert!(get_usize(&spec, "f").is_err());
        assert_eq!(get_f64(&spec, "n"), Ok(Some(3.0)));
        assert_eq!(get_str(&spec, "s"), Ok(Some("<i2")));
        assert!(get_numtype(&spec, "s").unwrap().is_some());
        let bad_type = CodecSpec::new("x", json!({"t": "<U3"}));
        assert!(get_numtype(&bad_type, "t").is_err());
        let no_config = CodecSpec::new("x", Value::Null);
        assert_eq!(get_usize(&no_config, "n"), Ok(None));
    }
}
