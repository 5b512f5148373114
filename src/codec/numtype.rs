//! Numeric element types named by numpy type strings, as the numcodecs filters use them, and
//! numpy's casting rules between them.

use crate::codec::StoredElem;
use crate::meta::{f16_from_f64, DataType};
use half::f16;

/// Kind of a numeric element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// numpy `bool`: one byte, 0 or 1.
    Bool,
    /// Signed integer.
    Int,
    /// Unsigned integer.
    UInt,
    /// IEEE float.
    Float,
}

/// A numeric element type with its byte order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NumType {
    /// Kind of number.
    pub kind: Kind,
    /// Size in bytes: 1 for bool; 1, 2, 4, 8 for integers; 2, 4, 8 for floats.
    pub size: usize,
    /// True for big-endian storage.
    pub big_endian: bool,
}

/// One element's value, wide enough for every [`NumType`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Value {
    /// A signed integer (or bool).
    I(i64),
    /// An unsigned integer.
    U(u64),
    /// A float.
    F(f64),
}

impl Value {
    /// The value as a float (numpy's int→float conversion).
    pub fn to_f64(self) -> f64 {
        match self {
            Value::I(v) => v as f64,
            Value::U(v) => v as f64,
            Value::F(v) => v,
        }
    }

    /// The value's two's complement bits (floats are truncated toward zero, as C casts do).
    fn to_bits(self) -> u64 {
        match self {
            Value::I(v) => v as u64,
            Value::U(v) => v,
            Value::F(v) if v < 0.0 => v as i64 as u64,
            Value::F(v) => v as u64,
        }
    }
}

impl NumType {
    /// A little-endian type.
    pub const fn le(kind: Kind, size: usize) -> Self {
        NumType {
            kind,
            size,
            big_endian: false,
        }
    }

    /// Parses a numpy type string: `<i4`, `>f8`, `|u1`, `=i2`, `b1`, `?`, `int16`, `float32`,
    /// `bool`. Native (`=` or no prefix) means little-endian. `None` for non-numeric types.
    pub fn parse(s: &str) -> Option<NumType> {
        let (big_endian, body) = match s.as_bytes().first()? {
            b'<' | b'|' | b'=' => (false, &s[1..]),
            b'>' => (true, &s[1..]),
            _ => (false, s),
        };
        let (kind, size) = match body {
            "?" | "bool" | "b1" => (Kind::Bool, 1),
            "b" => (Kind::Int, 1),
            "B" => (Kind::UInt, 1),
            "h" => (Kind::Int, 2),
            "H" => (Kind::UInt, 2),
            "e" | "half" => (Kind::Float, 2),
            "f" | "single" => (Kind::Float, 4),
            "d" | "double" => (Kind::Float, 8),
            _ => {
                let split = body.find(|c: char| c.is_ascii_digit())?;
                let (name, digits) = body.split_at(split);
                let n: usize = digits.parse().ok()?;
                let bytes = || n.is_multiple_of(8).then_some(n / 8);
                match name {
                    "i" => (Kind::Int, n),
                    "u" => (Kind::UInt, n),
                    "f" => (Kind::Float, n),
                    "int" => (Kind::Int, bytes()?),
                    "uint" => (Kind::UInt, bytes()?),
                    "float" => (Kind::Float, bytes()?),
                    _ => return None,
                }
            }
        };
        let valid = match kind {
            Kind::Bool => size == 1,
            Kind::Int | Kind::UInt => matches!(size, 1 | 2 | 4 | 8),
            Kind::Float => matches!(size, 2 | 4 | 8),
        };
        valid.then_some(NumType {
            big_endian: big_endian && size > 1,
            ..NumType::le(kind, size)
        })
    }

    /// The type a Zarr v3 data type name gives (`int8` .. `uint64`, `float16` .. `float64`,
    /// `bool`), and no other spelling.
    pub fn from_v3_name(name: &str) -> Option<NumType> {
        let (kind, size) = match name {
            "bool" => (Kind::Bool, 1),
            "int8" => (Kind::Int, 1),
            "int16" => (Kind::Int, 2),
            "int32" => (Kind::Int, 4),
            "int64" => (Kind::Int, 8),
            "uint8" => (Kind::UInt, 1),
            "uint16" => (Kind::UInt, 2),
            "uint32" => (Kind::UInt, 4),
            "uint64" => (Kind::UInt, 8),
            "float16" => (Kind::Float, 2),
            "float32" => (Kind::Float, 4),
            "float64" => (Kind::Float, 8),
            _ => return None,
        };
        Some(NumType::le(kind, size))
    }

    /// The numeric type of a served data type with the given byte order, if it is numeric.
    pub fn from_data_type(dtype: &DataType, big_endian: bool) -> Option<NumType> {
        let (kind, size) = match *dtype {
            DataType::Bool => (Kind::Bool, 1),
            DataType::Int(n) => (Kind::Int, n),
            DataType::UInt(n) => (Kind::UInt, n),
            DataType::Float(n) => (Kind::Float, n),
            _ => return None,
        };
        Some(NumType {
            big_endian: big_endian && size > 1,
            ..NumType::le(kind, size)
        })
    }

    /// The served data type of the same kind and size.
    pub fn data_type(&self) -> DataType {
        match self.kind {
            Kind::Bool => DataType::Bool,
            Kind::Int => DataType::Int(self.size),
            Kind::UInt => DataType::UInt(self.size),
            Kind::Float => DataType::Float(self.size),
        }
    }

    /// The served data type with this type's byte order, as the bytes→bytes codecs see it.
    pub fn stored(&self) -> StoredElem {
        StoredElem {
            dtype: self.data_type(),
            big_endian: self.big_endian,
        }
    }

    /// Reads one element from `bytes` (exactly `self.size` long).
    #[inline]
    pub fn read(&self, bytes: &[u8]) -> Value {
        let mut raw = [0u8; 8];
        if self.big_endian {
            for (dst, src) in raw.iter_mut().zip(bytes.iter().rev()) {
                *dst = *src;
            }
        } else {
            raw[..bytes.len()].copy_from_slice(bytes);
        }
        let bits = u64::from_le_bytes(raw);
        match (self.kind, self.size) {
            (Kind::Bool, _) => Value::I(i64::from(bits != 0)),
            (Kind::Int, n) => {
                let shift = 64 - 8 * n as u32;
                Value::I(((bits << shift) as i64) >> shift)
            }
            (Kind::UInt, _) => Value::U(bits),
            (Kind::Float, n) => Value::F(float_value(n, bits)),
        }
    }

    /// Writes `value` cast to this type (numpy `astype` semantics: integers wrap, floats round
    /// to nearest, floats truncate toward zero into integers) into `bytes`.
    #[inline]
    pub fn write(&self, value: Value, bytes: &mut [u8]) {
        let bits = match (self.kind, self.size) {
            (Kind::Bool, _) => u64::from(match value {
                Value::F(v) => v != 0.0,
                other => other.to_bits() != 0,
            }),
            (Kind::Int | Kind::UInt, _) => value.to_bits(),
            (Kind::Float, 4) => u64::from(to_f32(value).to_bits()),
            (Kind::Float, n) => float_bits(n, value.to_f64()),
        };
        self.write_bits(bits, bytes);
    }

    /// Writes the low `self.size` bytes of `bits` in this type's byte order.
    #[inline]
    pub fn write_bits(&self, bits: u64, bytes: &mut [u8]) {
        let raw = bits.to_le_bytes();
        if self.big_endian {
            for (dst, src) in bytes.iter_mut().zip(raw[..self.size].iter().rev()) {
                *dst = *src;
            }
        } else {
            bytes.copy_from_slice(&raw[..self.size]);
        }
    }

    /// numpy's `result_type` of two numeric types (byte order dropped): the type a ufunc such
    /// as `add` computes in.
    pub fn promote(a: NumType, b: NumType) -> NumType {
        use Kind::*;
        let int_float_size = |n: usize| (2 * n).clamp(2, 8);
        let (kind, size) = match (a.kind, b.kind) {
            (Bool, Bool) => (Bool, 1),
            (Bool, _) => (b.kind, b.size),
            (_, Bool) => (a.kind, a.size),
            (Float, Float) => (Float, a.size.max(b.size)),
            (Float, _) => (Float, a.size.max(int_float_size(b.size))),
            (_, Float) => (Float, b.size.max(int_float_size(a.size))),
            (Int, Int) | (UInt, UInt) => (a.kind, a.size.max(b.size)),
            (Int, UInt) | (UInt, Int) => {
                let (s, u) = if a.kind == Int {
                    (a.size, b.size)
                } else {
                    (b.size, a.size)
                };
                if s > u {
                    (Int, s)
                } else if u < 8 {
                    (Int, 2 * u)
                } else {
                    (Float, 8)
                }
            }
        };
        NumType::le(kind, size)
    }
}

/// numpy's cast of a value to float32 (integers convert with a single rounding).
#[inline]
pub(crate) fn to_f32(value: Value) -> f32 {
    match value {
        Value::I(v) => v as f32,
        Value::U(v) => v as f32,
        Value::F(v) => v as f32,
    }
}

/// The bits of the float of `size` bytes nearest `f` (ties to even).
pub(crate) fn float_bits(size: usize, f: f64) -> u64 {
    match size {
        2 => u64::from(f16_from_f64(f).to_bits()),
        4 => u64::from((f as f32).to_bits()),
        _ => f.to_bits(),
    }
}

/// The value of the float of `size` bytes with `bits`.
pub(crate) fn float_value(size: usize, bits: u64) -> f64 {
    match size {
        2 => f16::from_bits(bits as u16).to_f64(),
        4 => f64::from(f32::from_bits(bits as u32)),
        _ => f64::from_bits(bits),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_numpy_strings() {
        assert_eq!(NumType::parse("<i4"), Some(NumType::le(Kind::Int, 4)));
        assert_eq!(
            NumType::parse(">f8"),
            Some(NumType {
                big_endian: true,
                ..NumType::le(Kind::Float, 8)
            })
        );
        assert_eq!(NumType::parse(">u1"), Some(NumType::le(Kind::UInt, 1)));
        assert_eq!(NumType::parse("|b1"), Some(NumType::le(Kind::Bool, 1)));
        assert_eq!(NumType::parse("float32"), Some(NumType::le(Kind::Float, 4)));
        assert_eq!(NumType::parse("uint16"), Some(NumType::le(Kind::UInt, 2)));
        assert_eq!(NumType::parse("bool"), Some(NumType::le(Kind::Bool, 1)));
        assert_eq!(NumType::from_v3_name("int16"), NumType::parse("<i2"));
        for not_v3 in ["i4", "f8", "half", "d", "<f4", "int12", "float"] {
            assert_eq!(NumType::from_v3_name(not_v3), None, "{not_v3}");
        }
        for bad in [
            "", "<U3", "|S2", "<c16", "i3", "f1", "<M8[s]", "object", ">", "int12", "float20",
            "uint9", "int0",
        ] {
            assert_eq!(NumType::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn reads_and_writes_both_byte_orders() {
        let be = NumType::parse(">i2").unwrap();
        assert_eq!(be.read(&[0xff, 0xfe]), Value::I(-2));
        let mut b = [0u8; 2];
        be.write(Value::I(-2), &mut b);
        assert_eq!(b, [0xff, 0xfe]);
        let le = NumType::parse("<u4").unwrap();
        assert_eq!(le.read(&[1, 0, 0, 0x80]), Value::U(0x8000_0001));
        let h = NumType::parse("<f2").unwrap();
        assert_eq!(h.read(&f16::from_f32(1.5).to_le_bytes()), Value::F(1.5));
    }

    #[test]
    fn casts_like_numpy() {
        let mut b = [0u8; 1];
        NumType::parse("u1").unwrap().write(Value::I(-1), &mut b);
        assert_eq!(b, [255]);
        NumType::parse("i1").unwrap().write(Value::F(-3.9), &mut b);
        assert_eq!(b, [(-3i8) as u8]);
        NumType::parse("b1").unwrap().write(Value::F(0.5), &mut b);
        assert_eq!(b, [1]);
        let mut w = [0u8; 4];
        NumType::parse("<i4")
            .unwrap()
            .write(Value::U(0x1_0000_0005), &mut w);
        assert_eq!(w, [5, 0, 0, 0]);
    }

    #[test]
    fn promotes_like_numpy_result_type() {
        let p = |a: &str, b: &str| {
            let t = NumType::promote(NumType::parse(a).unwrap(), NumType::parse(b).unwrap());
            (t.kind, t.size)
        };
        assert_eq!(p("f4", "f8"), (Kind::Float, 8));
        assert_eq!(p("i2", "f2"), (Kind::Float, 4));
        assert_eq!(p("u1", "f2"), (Kind::Float, 2));
        assert_eq!(p("i4", "f4"), (Kind::Float, 8));
        assert_eq!(p("u8", "i8"), (Kind::Float, 8));
        assert_eq!(p("u4", "i4"), (Kind::Int, 8));
        assert_eq!(p("u1", "i2"), (Kind::Int, 2));
        assert_eq!(p("i1", "i2"), (Kind::Int, 2));
        assert_eq!(p("b1", "u2"), (Kind::UInt, 2));
    }
}
