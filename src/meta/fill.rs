//! Fill values: the JSON forms of Zarr v2 and v3, decoded to one served (little-endian) element.

use super::dtype::DataType;
use super::MetaError;
use base64::Engine as _;
use half::f16;
use serde_json::Value;

/// Decodes a fill value for `dtype`. `big_units` lists the units that base64-encoded raw fill
/// values (v2 structured/void types) hold big-endian. `null` means zeros.
pub fn parse_fill(
    value: &Value,
    dtype: &DataType,
    big_units: &[(usize, usize)],
) -> Result<Vec<u8>, MetaError> {
    let bad = || {
        MetaError::FillValue(format!(
            "{value} does not fit data type {}",
            dtype.npy_descr()
        ))
    };
    if value.is_null() {
        return Ok(vec![0; dtype.size()]);
    }
    match dtype {
        // The fill of a variable-length type is the element itself; writers put 0 for "none".
        // Bytes are written base64-encoded (zarr-python 3, v2 and v3).
        DataType::VarBytes if value.is_string() => {
            let text = value.as_str().unwrap_or_default();
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| MetaError::FillValue(format!("{value}: bad base64: {e}")))
        }
        DataType::String | DataType::VarBytes => match value {
            Value::String(s) => Ok(s.as_bytes().to_vec()),
            Value::Number(_) => Ok(Vec::new()),
            Value::Array(_) => byte_list(value).ok_or_else(bad),
            _ => Err(bad()),
        },
        DataType::Bool => match value {
            Value::Bool(b) => Ok(vec![u8::from(*b)]),
            Value::Number(n) if n.as_u64().is_some_and(|v| v <= 1) => {
                Ok(vec![n.as_u64().unwrap_or(0) as u8])
            }
            _ => Err(bad()),
        },
        DataType::Time { .. } => {
            let v = match value {
                Value::String(s) if s == "NaT" => i64::MIN,
                _ => int_value(value)
                    .and_then(|v| i64::try_from(v).ok())
                    .ok_or_else(bad)?,
            };
            Ok(v.to_le_bytes().to_vec())
        }
        DataType::Int(n) => {
            let v = int_value(value).ok_or_else(bad)?;
            let fits = v >= -(1i128 << (8 * n - 1)) && v < (1i128 << (8 * n - 1));
            if !fits {
                return Err(bad());
            }
            Ok((v as i64).to_le_bytes()[..*n].to_vec())
        }
        DataType::UInt(n) => {
            let v = int_value(value).ok_or_else(bad)?;
            if v < 0 || (*n < 8 && v >= (1i128 << (8 * n))) || v > u64::MAX as i128 {
                return Err(bad());
            }
            Ok((v as u64).to_le_bytes()[..*n].to_vec())
        }
        DataType::Float(n) => float_bytes(value, *n).ok_or_else(bad),
        DataType::Complex(n) => match value {
            Value::Array(parts) if parts.len() == 2 => {
                let mut out = float_bytes(&parts[0], n / 2).ok_or_else(bad)?;
                out.extend(float_bytes(&parts[1], n / 2).ok_or_else(bad)?);
                Ok(out)
            }
            // A plain number is a complex with no imaginary part.
            _ => {
                let mut out = float_bytes(value, n / 2).ok_or_else(bad)?;
                out.resize(*n, 0);
                Ok(out)
            }
        },
        DataType::Unicode(n) => match value {
            Value::String(s) if s.chars().count() <= *n => {
                let mut out: Vec<u8> = s.chars().flat_map(|c| (c as u32).to_le_bytes()).collect();
                out.resize(4 * n, 0);
                Ok(out)
            }
            _ => Err(bad()),
        },
        DataType::Raw(n) if value.is_array() => {
            byte_list(value).filter(|b| b.len() == *n).ok_or_else(bad)
        }
        DataType::Bytes(_) | DataType::Raw(_) | DataType::Structured(_) => {
            let Value::String(text) = value else {
                return Err(bad());
            };
            let mut raw = base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| MetaError::FillValue(format!("{value}: bad base64: {e}")))?;
            if raw.len() > dtype.size()
                || (raw.len() < dtype.size() && !matches!(dtype, DataType::Bytes(_)))
            {
                return Err(bad());
            }
            raw.resize(dtype.size(), 0);
            for &(o, w) in big_units {
                raw[o..o + w].reverse();
            }
            Ok(raw)
        }
    }
}

/// A JSON list of bytes (`[1, 255]`).
fn byte_list(value: &Value) -> Option<Vec<u8>> {
    let items = value.as_array()?.iter();
    items.map(|b| u8::try_from(b.as_u64()?).ok()).collect()
}

/// An integer fill value, also accepting integral floats (`0.0`) that some writers produce.
fn int_value(value: &Value) -> Option<i128> {
    let n = value.as_number()?;
    if let Some(i) = n.as_i64() {
        return Some(i128::from(i));
    }
    if let Some(u) = n.as_u64() {
        return Some(i128::from(u));
    }
    n.as_f64()
        .filter(|f| f.fract() == 0.0 && f.abs() < 1e19)
        .map(|f| f as i128)
}

/// A float of `width` bytes from a number, "NaN", "Infinity", "-Infinity" or "0x<hex bits>":
/// the bits of a float16, float32 or float64 (4, 8 or 16 digits), kept as they are in a float
/// of their width and converted to the value of the float of another width (zarr-python 3.4
/// reads them so).
fn float_bytes(value: &Value, width: usize) -> Option<Vec<u8>> {
    let f = match value {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => match s.as_str() {
            "NaN" => f64::NAN,
            "Infinity" => f64::INFINITY,
            "-Infinity" => f64::NEG_INFINITY,
            hex => {
                let digits = hex.strip_prefix("0x")?;
                let bits = u64::from_str_radix(digits, 16).ok()?;
                if digits.len() == 2 * width {
                    return Some(bits.to_le_bytes()[..width].to_vec());
                }
                match digits.len() {
                    4 => f16::from_bits(bits as u16).to_f64(),
                    8 => f64::from(f32::from_bits(bits as u32)),
                    16 => f64::from_bits(bits),
                    _ => return None,
                }
            }
        },
        _ => return None,
    };
    Some(match width {
        2 => f16_from_f64(f).to_le_bytes().to_vec(),
        4 => (f as f32).to_le_bytes().to_vec(),
        8 => f.to_le_bytes().to_vec(),
        _ => return None,
    })
}

/// The float16 nearest `f` (ties to even), as numpy's `astype` gives it: rounded once, through
/// a float32 rounded to odd, which keeps what the second rounding needs. (`half`'s own
/// conversion rounds twice through a float32 on CPUs with F16C, and drops the low 32 bits of
/// `f` on others.)
pub(crate) fn f16_from_f64(f: f64) -> f16 {
    let g = f as f32;
    if f.is_nan() || f64::from(g) == f {
        return f16::from_f32(g);
    }
    // Toward zero, then the last bit set: that bit says "more beyond", breaking false ties.
    let mut bits = g.to_bits();
    if f64::from(g).abs() > f.abs() {
        bits -= 1;
    }
    f16::from_f32(f32::from_bits(bits | 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_and_specials() {
        let fill = |v: &Value, t: DataType| parse_fill(v, &t, &[]);
        for (value, dtype, expected) in [
            (json!(-2), DataType::Int(2), vec![0xfe, 0xff]),
            (json!(255), DataType::UInt(1), vec![255]),
            (json!(u64::MAX), DataType::UInt(8), vec![255; 8]),
            (
                json!("NaN"),
                DataType::Float(4),
                f32::NAN.to_le_bytes().to_vec(),
            ),
            (json!("-Infinity"), DataType::Float(2), vec![0x00, 0xfc]),
            (
                json!("0x7fc00001"),
                DataType::Float(4),
                vec![1, 0, 0xc0, 0x7f],
            ),
            (json!(null), DataType::Float(8), vec![0; 8]),
            // Hex of another width: its value (zarr-python 3.4).
            (
                json!("0x7fc00000"),
                DataType::Float(8),
                f64::NAN.to_le_bytes().to_vec(),
            ),
            (
                json!("0x3ff8000000000000"),
                DataType::Float(4),
                1.5f32.to_le_bytes().to_vec(),
            ),
            (json!("0x40400000"), DataType::Float(2), vec![0x00, 0x42]),
            (
                json!("0x3c00"),
                DataType::Float(8),
                1f64.to_le_bytes().to_vec(),
            ),
            (json!(true), DataType::Bool, vec![1]),
        ] {
            assert_eq!(fill(&value, dtype).unwrap(), expected, "{value}");
        }
        assert!(fill(&json!(256), DataType::UInt(1)).is_err());
        assert!(fill(&json!("0x7fc000"), DataType::Float(4)).is_err());
        let int64 = |v: Value| fill(&v, DataType::Int(8));
        assert_eq!(int64(json!(i64::MIN)).unwrap(), i64::MIN.to_le_bytes());
        assert!(
            int64(json!(1u64 << 63)).is_err(),
            "past i64::MAX: refused, not wrapped"
        );
        assert!(int64(json!(-9.3e18)).is_err());
        let complex = fill(&json!([1.0, -1.0]), DataType::Complex(8)).unwrap();
        assert_eq!(complex[4..], (-1f32).to_le_bytes());
    }

    #[test]
    fn times_and_nat() {
        let ns = DataType::Time {
            delta: false,
            unit: "ns".into(),
        };
        for nat in [json!("NaT"), json!(i64::MIN)] {
            assert_eq!(parse_fill(&nat, &ns, &[]).unwrap(), i64::MIN.to_le_bytes());
        }
        assert_eq!(parse_fill(&json!(5), &ns, &[]).unwrap(), 5i64.to_le_bytes());
        assert!(parse_fill(&json!("soon"), &ns, &[]).is_err());
    }

    #[test]
    fn base64_and_strings() {
        for (value, dtype, big_units, expected) in [
            ("YWI=", DataType::Bytes(3), &[][..], &b"ab\0"[..]),
            ("AAAAAQ==", DataType::Raw(4), &[(0, 4)], &[1, 0, 0, 0]),
            ("é", DataType::Unicode(2), &[], &[0xe9, 0, 0, 0, 0, 0, 0, 0]),
        ] {
            let fill = parse_fill(&json!(value), &dtype, big_units).unwrap();
            assert_eq!(fill, expected, "{value}");
        }
    }
    #[test]
    fn float16_is_rounded_once() {
        // numpy 2.5: np.array(v).astype(np.float16).view(np.uint16); rounding through a
        // float32 first gives the second column's neighbours for the first four.
        for (v, bits) in [
            (-1023.2500000000001, 0xe3ff),
            (1.0004882812509095, 0x3c01),
            (65519.99999999999, 0x7bff),
            (2.9802322388562674e-08, 0x0001),
            (1.00048828125, 0x3c00),
            (1.0004882812490905, 0x3c00),
            (65520.0, 0x7c00),
            (2.9802322387695312e-08, 0x0000),
            (4.470348358154297e-08, 0x0001),
            (1e-30, 0x0000),
            (-0.0, 0x8000),
            (0.1, 0x2e66),
        ] {
            assert_eq!(f16_from_f64(v).to_bits(), bits, "{v}");
        }
        assert!(f16_from_f64(f64::NAN).is_nan());
        assert_eq!(f16_from_f64(-1e300), f16::NEG_INFINITY);
        let fill = parse_fill(&json!(-1023.2500000000001), &DataType::Float(2), &[]).unwrap();
        assert_eq!(fill, 0xe3ffu16.to_le_bytes());
    }
}
