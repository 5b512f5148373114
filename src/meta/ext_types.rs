//! The fixed-size extension data types of zarr-extensions, as zarrs and tensorstore write them:
//! `int2`, `int4`, `uint2`, `uint4` and the small floats (`float4_e2m1fn`, `float6_*`,
//! `float8_*`), each stored one element per byte by the `bytes` codec, and `bfloat16`, two bytes
//! an element. zarrfs serves the small integers as `int8`/`uint8` values (from their low bits:
//! tensorstore stores `int4` -8 as `0x08`, zarrs as `0xf8`), the floats as their bits (`uint8`,
//! `uint16` for `bfloat16`; `float4_e2m1fn` and `float6_*` from their low 4 or 6 bits, the rest
//! of the byte ignored), since numpy has no such types. A float fill value (a number, `"NaN"`,
//! `"Infinity"`, `"0x.."`) becomes the bits of that exact value in the type; an integer fill
//! value must lie in the type's own range (-8 to 7 for `int4`).
//!
//! Codecs that compute with the values they decode (`scale_offset`, `cast_value`, numcodecs'
//! `delta`, `fixedscaleoffset`, `astype`, `quantize`, `categorize`, `zfp`) are refused on these
//! types: they would compute with the served `int8`/`uint8` values or bits, not the type's.
//! Codecs that only move or compress bits (`bytes`, `packbits`, `transpose`, `shuffle`,
//! `bitround`, whose decoding keeps the bits, compressors, checksums, sharding) are read.

use super::{CodecSpec, DataType, MetaError};
use serde_json::{Map, Value};

/// How a small float spells its special values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Specials {
    /// IEEE 754: the top exponent holds infinities and NaNs.
    Ieee,
    /// `fn`: no infinities; NaN is every exponent and mantissa bit set.
    Fn,
    /// `fnuz`: no infinities, no negative zero; NaN is `0x80`.
    Fnuz,
    /// Finite only (`float4_e2m1fn`, `float6_*fn`): no infinities, no NaN.
    Finite,
    /// `float8_e8m0fnu`: an unsigned power of two; NaN is `0xff`.
    E8M0,
}

/// A small float: exponent bits, mantissa bits, exponent bias and its special values.
#[derive(Clone, Copy, Debug)]
struct MiniFloat {
    exp: u32,
    man: u32,
    bias: i32,
    specials: Specials,
}

fn minifloat(name: &str) -> Option<MiniFloat> {
    use Specials::*;
    let (exp, man, bias, specials) = match name {
        "float4_e2m1fn" => (2, 1, 1, Finite),
        "float6_e2m3fn" => (2, 3, 1, Finite),
        "float6_e3m2fn" => (3, 2, 3, Finite),
        "float8_e3m4" => (3, 4, 3, Ieee),
        "float8_e4m3" => (4, 3, 7, Ieee),
        "float8_e4m3fn" => (4, 3, 7, Fn),
        "float8_e4m3fnuz" => (4, 3, 8, Fnuz),
        "float8_e4m3b11fnuz" => (4, 3, 11, Fnuz),
        "float8_e5m2" => (5, 2, 15, Ieee),
        "float8_e5m2fnuz" => (5, 2, 16, Fnuz),
        "float8_e8m0fnu" => (8, 0, 127, E8M0),
        _ => return None,
    };
    Some(MiniFloat {
        exp,
        man,
        bias,
        specials,
    })
}

impl MiniFloat {
    fn bits(&self) -> u32 {
        match self.specials {
            Specials::E8M0 => 8,
            _ => 1 + self.exp + self.man,
        }
    }

    /// The value of `code`.
    fn value(&self, code: u32) -> f64 {
        if self.specials == Specials::E8M0 {
            return if code == 0xff {
                f64::NAN
            } else {
                2f64.powi(code as i32 - self.bias)
            };
        }
        let max_exp = (1 << self.exp) - 1;
        let max_man = (1 << self.man) - 1;
        let sign = if code >> (self.exp + self.man) & 1 == 1 {
            -1.0
        } else {
            1.0
        };
        let e = (code >> self.man) & max_exp;
        let m = code & max_man;
        match self.specials {
            Specials::Fnuz if code == 0x80 => return f64::NAN,
            Specials::Ieee if e == max_exp => {
                return if m == 0 {
                    sign * f64::INFINITY
                } else {
                    f64::NAN
                };
            }
            Specials::Fn if e == max_exp && m == max_man => return f64::NAN,
            _ => {}
        }
        let scale = 2f64.powi(self.man as i32);
        if e == 0 {
            sign * f64::from(m) / scale * 2f64.powi(1 - self.bias)
        } else {
            sign * (1.0 + f64::from(m) / scale) * 2f64.powi(e as i32 - self.bias)
        }
    }

    /// The code of NaN (IEEE types: the quiet NaN with the top mantissa bit).
    fn nan(&self) -> Option<u32> {
        match self.specials {
            Specials::Ieee => Some(((1 << self.exp) - 1) << self.man | 1 << (self.man - 1)),
            Specials::Fn => Some((1 << (self.exp + self.man)) - 1),
            Specials::Fnuz => Some(0x80),
            Specials::E8M0 => Some(0xff),
            Specials::Finite => None,
        }
    }

    /// The code of exactly `value` (the sign of zero kept where the type has one).
    fn encode(&self, value: f64) -> Option<u32> {
        if value.is_nan() {
            return self.nan();
        }
        let same =
            |v: f64| v == value && (v != 0.0 || v.is_sign_negative() == value.is_sign_negative());
        let unsigned_zero = value == 0.0 && self.specials == Specials::Fnuz;
        (0..1u32 << self.bits()).find(|&c| same(self.value(c)) || (unsigned_zero && c == 0))
    }
}

/// The served type of an extension type name, if `name` is one.
pub fn data_type(name: &str) -> Option<DataType> {
    match name {
        "int2" | "int4" => Some(DataType::Int(1)),
        "uint2" | "uint4" => Some(DataType::UInt(1)),
        "bfloat16" => Some(DataType::UInt(2)),
        _ => minifloat(name).map(|_| DataType::UInt(1)),
    }
}

/// The meaningful low bits of the types narrower than the byte that stores each element
/// (`int4`: 4, `float6_e3m2fn`: 6); the `bytes` codec ignores the others.
pub fn low_bits(name: &str) -> Option<u32> {
    bit_width(name).filter(|&bits| bits < 8)
}

/// True for the extension floats, which zarrfs serves as their bits (`bfloat16`, `float8_*`,
/// ...): their values are not the served integers.
pub fn served_as_bits(name: &str) -> bool {
    name == "bfloat16" || minifloat(name).is_some()
}

/// True when the node document `doc` (its v3 `data_type`, bare or named, or v2 `dtype`) is an
/// extension float, served as its bits: the served integers are not its values, so the views
/// that show values (netCDF, previews) leave it out.
pub fn document_served_as_bits(doc: &Map<String, Value>) -> bool {
    let name = match doc.get("data_type").or_else(|| doc.get("dtype")) {
        Some(Value::String(name)) => Some(name.as_str()),
        Some(Value::Object(named)) => named.get("name").and_then(Value::as_str),
        _ => None,
    };
    name.is_some_and(served_as_bits)
}

/// The codecs (names without a `numcodecs.` prefix) that compute with element values.
const NUMERIC_CODECS: [&str; 11] = [
    "scale_offset",
    "cast_value",
    "delta",
    "fixedscaleoffset",
    "astype",
    "quantize",
    "categorize",
    "zfp",
    "zarrs.zfp",
    "https://codec.zarrs.dev/array_to_bytes/zfp",
    "zfpy",
];

/// Refuses, on an extension type `name`, the codecs of `codecs` (and of the sharding codecs
/// among them) that compute with element values: zarrfs serves the type as other numbers.
pub fn refuse_numeric_codecs(name: &str, codecs: &[CodecSpec]) -> Result<(), MetaError> {
    if data_type(name).is_none() {
        return Ok(());
    }
    for codec in codecs {
        let base = codec.name.strip_prefix("numcodecs.").unwrap_or(&codec.name);
        if NUMERIC_CODECS.contains(&base) {
            return Err(MetaError::Unsupported(format!(
                "codec {:?} on {name}: it computes with values, and zarrfs serves {name} as {}",
                codec.name,
                if served_as_bits(name) {
                    "its bits"
                } else {
                    "8-bit integers"
                }
            )));
        }
        if let Some(Value::Array(inner)) = codec.config.get("codecs") {
            let inner = inner
                .iter()
                .map(CodecSpec::from_v3)
                .collect::<Result<Vec<_>, _>>()?;
            refuse_numeric_codecs(name, &inner)?;
        }
    }
    Ok(())
}

/// The `bfloat16` bits of exactly `value` (the upper half of its `float32` bits).
fn bfloat16_bits(value: f64) -> Option<u16> {
    if value.is_nan() {
        return Some(0x7fc0);
    }
    let f = value as f32;
    let bits = f.to_bits();
    (f64::from(f) == value && bits & 0xffff == 0).then_some((bits >> 16) as u16)
}

/// The width in bits of an extension type `name` (`int4`: 4), if `name` is one.
pub fn bit_width(name: &str) -> Option<u32> {
    match name {
        "int2" | "uint2" => Some(2),
        "int4" | "uint4" => Some(4),
        _ => minifloat(name).map(|t| t.bits()),
    }
}

/// The fill value of an extension type `name` as served (little-endian): a float's bits, a
/// small integer's value checked against the type's range; `None` if `name` is not one.
pub fn fill(name: &str, value: &Value) -> Option<Result<Vec<u8>, MetaError>> {
    let bad = || MetaError::FillValue(format!("{value} is not a value of {name}"));
    if let (Some(bits), Some(served)) = (low_bits(name), data_type(name)) {
        if minifloat(name).is_none() {
            let signed = served == DataType::Int(1);
            let fits = |b: &Vec<u8>| {
                let v = if signed {
                    i32::from(b[0] as i8)
                } else {
                    i32::from(b[0])
                };
                let low = if signed { -(1 << (bits - 1)) } else { 0 };
                (low..low + (1 << bits)).contains(&v)
            };
            let fill = super::parse_fill(value, &served, &[]);
            return Some(fill.and_then(|b| if fits(&b) { Ok(b) } else { Err(bad()) }));
        }
    }
    if name == "bfloat16" {
        let bits = match value {
            Value::Null => Some(0),
            Value::Number(n) => n.as_f64().and_then(bfloat16_bits),
            Value::String(s) => match s.as_str() {
                "NaN" => bfloat16_bits(f64::NAN),
                "Infinity" => bfloat16_bits(f64::INFINITY),
                "-Infinity" => bfloat16_bits(f64::NEG_INFINITY),
                hex => hex
                    .strip_prefix("0x")
                    .and_then(|d| u16::from_str_radix(d, 16).ok()),
            },
            _ => None,
        };
        return Some(bits.map(|b| b.to_le_bytes().to_vec()).ok_or_else(bad));
    }
    let t = minifloat(name)?;
    let code = match value {
        Value::Null => Some(0),
        Value::Number(n) => n.as_f64().and_then(|f| t.encode(f)),
        Value::String(s) => match s.as_str() {
            "NaN" => t.nan(),
            "Infinity" => t.encode(f64::INFINITY),
            "-Infinity" => t.encode(f64::NEG_INFINITY),
            hex => hex
                .strip_prefix("0x")
                .and_then(|d| u32::from_str_radix(d, 16).ok())
                .filter(|&c| c < 1 << t.bits()),
        },
        _ => None,
    };
    Some(code.map(|c| vec![c as u8]).ok_or_else(bad))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn code(name: &str, v: Value) -> Option<u8> {
        fill(name, &v).unwrap().ok().map(|b| b[0])
    }

    #[test]
    fn codes_match_ml_dtypes() {
        // Bits as ml_dtypes 0.6 gives them (np.array(v, dtype=...).view(np.uint8)).
        assert_eq!(code("float8_e4m3", json!(1.0)), Some(0x38));
        assert_eq!(code("float8_e4m3", json!("NaN")), Some(0x7c));
        assert_eq!(code("float8_e4m3", json!("-Infinity")), Some(0xf8));
        assert_eq!(code("float8_e4m3fn", json!(448.0)), Some(0x7e));
        assert_eq!(code("float8_e4m3fn", json!("NaN")), Some(0x7f));
        assert_eq!(code("float8_e4m3fnuz", json!(-0.0)), Some(0x00));
        assert_eq!(code("float8_e4m3fnuz", json!("NaN")), Some(0x80));
        assert_eq!(code("float8_e5m2", json!(-2.0)), Some(0xc0));
        assert_eq!(code("float8_e5m2", json!(-0.0)), Some(0x80));
        assert_eq!(code("float8_e8m0fnu", json!(0.25)), Some(125));
        assert_eq!(code("float4_e2m1fn", json!(6.0)), Some(0x7));
        assert_eq!(code("float4_e2m1fn", json!(-0.5)), Some(0x9));
        assert_eq!(code("float6_e3m2fn", json!(28.0)), Some(0x1f));
        assert_eq!(code("float6_e2m3fn", json!("0x3f")), Some(0x3f));
        assert_eq!(code("float4_e2m1fn", json!("NaN")), None);
        assert_eq!(code("float4_e2m1fn", json!(0.3)), None);
        assert_eq!(code("float6_e2m3fn", json!("0x40")), None);
        assert!(fill("int8", &json!(1)).is_none());
        assert_eq!(data_type("int4"), Some(DataType::Int(1)));
        assert_eq!(data_type("float8_e5m2"), Some(DataType::UInt(1)));
        assert_eq!(data_type("float9"), None);
        assert_eq!(bit_width("float6_e3m2fn"), Some(6));
        assert_eq!(bit_width("float8_e8m0fnu"), Some(8));
        assert_eq!(bit_width("uint2"), Some(2));
        assert_eq!(bit_width("int8"), None);
    }

    #[test]
    fn bfloat16_fills_match_ml_dtypes() {
        // np.array(v, dtype=ml_dtypes.bfloat16).view(np.uint16)
        let bits = |v: Value| fill("bfloat16", &v).unwrap().ok();
        assert_eq!(bits(json!(1.0)), Some(0x3f80u16.to_le_bytes().to_vec()));
        assert_eq!(bits(json!(-2.5)), Some(0xc020u16.to_le_bytes().to_vec()));
        assert_eq!(bits(json!("NaN")), Some(0x7fc0u16.to_le_bytes().to_vec()));
        assert_eq!(
            bits(json!("-Infinity")),
            Some(0xff80u16.to_le_bytes().to_vec())
        );
        assert_eq!(
            bits(json!("0x4049")),
            Some(0x4049u16.to_le_bytes().to_vec())
        );
        assert_eq!(bits(json!(0.1)), None);
        assert_eq!(data_type("bfloat16"), Some(DataType::UInt(2)));
        assert_eq!(low_bits("int4"), Some(4));
        assert_eq!(low_bits("float6_e2m3fn"), Some(6));
        assert_eq!(low_bits("float4_e2m1fn"), Some(4));
        assert_eq!(low_bits("float8_e5m2"), None);
        assert_eq!(low_bits("bfloat16"), None);
    }

    #[test]
    fn small_integer_fills_lie_in_their_own_range() {
        for (name, ok, bad) in [
            ("int4", &[-8, 7, 0][..], &[8, -9, 100][..]),
            ("uint4", &[0, 15], &[16, -1]),
            ("int2", &[-2, 1], &[2, -3]),
            ("uint2", &[3], &[4]),
        ] {
            for v in ok {
                assert_eq!(code(name, json!(v)), Some(*v as u8), "{name} {v}");
            }
            for v in bad {
                assert_eq!(code(name, json!(v)), None, "{name} {v}");
            }
        }
        assert_eq!(code("int4", json!(null)), Some(0));
        assert_eq!(code("uint2", json!(2.0)), Some(2));
    }
}
