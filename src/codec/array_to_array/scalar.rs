//! Scalars of the v3 array→array codecs (`scale_offset`, `cast_value`): read from their JSON
//! configuration in the fill-value encoding of a numeric type, and checked against it.

use crate::codec::config::bad;
use crate::codec::numtype::{Kind, NumType, Value};
use crate::codec::CodecError;
use crate::meta::{parse_fill, CodecSpec};

/// The numeric type of a chunk's elements, refusing anything but integers and floats.
pub(crate) fn numeric(spec: &CodecSpec, ty: Option<NumType>) -> Result<NumType, CodecError> {
    ty.filter(|t| t.kind != Kind::Bool)
        .ok_or_else(|| bad(spec, "works on integer and floating-point elements only"))
}

/// Refuses configuration keys other than `allowed` (zarr-extensions: "Additional keys ... MUST
/// be treated as invalid").
pub(crate) fn only_keys(spec: &CodecSpec, allowed: &[&str]) -> Result<(), CodecError> {
    match spec
        .config
        .as_object()
        .and_then(|c| c.keys().find(|k| !allowed.contains(&k.as_str())))
    {
        Some(key) => Err(bad(spec, format!("unknown configuration key '{key}'"))),
        None => Ok(()),
    }
}

/// `value` as a scalar of `ty` (JSON in the fill-value encoding: numbers, `"NaN"`,
/// `"Infinity"`, `"0x.."`).
pub(crate) fn scalar(
    spec: &CodecSpec,
    ty: NumType,
    value: &serde_json::Value,
) -> Result<Value, CodecError> {
    let bytes = parse_fill(value, &ty.data_type(), &[])
        .map_err(|e| bad(spec, format!("{value} is not a scalar of its type: {e}")))?;
    Ok(ty.read(&bytes))
}

/// An integer value widened (floats are not integers).
pub(crate) fn wide(value: Value) -> Option<i128> {
    match value {
        Value::I(v) => Some(i128::from(v)),
        Value::U(v) => Some(i128::from(v)),
        Value::F(_) => None,
    }
}

/// The range of an integer type.
pub(crate) fn int_range(ty: NumType) -> (i128, i128) {
    let bits = 8 * ty.size as u32;
    match ty.kind {
        Kind::Int => (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1),
        _ => (0, (1i128 << bits) - 1),
    }
}
