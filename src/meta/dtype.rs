//! Element data types, normalized across Zarr v2 (numpy strings), v3 names and the v3 drafts.
//!
//! A [`DataType`] describes one element as zarrfs serves it: little-endian, fixed size. The byte
//! order an element had in the store belongs to the codec chain (the `bytes` codec), not here.

use super::MetaError;
use std::fmt::Write as _;

/// The largest element zarrfs accepts, in bytes (1 MiB: numpy `<U262144`, `|S1048576`). Checked
/// while a type is parsed, before its fill value or byte-swap units are allocated.
pub const MAX_ELEMENT_BYTES: u64 = 1 << 20;

/// Refuses an element (or part of one) of `bytes` bytes beyond [`MAX_ELEMENT_BYTES`].
pub fn check_element_size(bytes: u64, what: &str) -> Result<(), MetaError> {
    if bytes > MAX_ELEMENT_BYTES {
        Err(MetaError::TooLarge(format!(
            "{what}: elements over {MAX_ELEMENT_BYTES} bytes"
        )))
    } else {
        Ok(())
    }
}

/// One element type as served in array files (always little-endian, fixed size).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DataType {
    /// numpy `b1`, v3 `bool`: one byte, 0 or 1.
    Bool,
    /// Signed integer of the given byte width (1, 2, 4, 8).
    Int(usize),
    /// Unsigned integer of the given byte width (1, 2, 4, 8).
    UInt(usize),
    /// IEEE float of the given byte width (2, 4, 8).
    Float(usize),
    /// Complex of the given total byte width (8 or 16): real then imaginary part.
    Complex(usize),
    /// numpy `S<n>`: n bytes, zero padded.
    Bytes(usize),
    /// numpy `U<n>`: n UCS-4 code units, 4n bytes.
    Unicode(usize),
    /// numpy `V<n>` or v3 `r<bits>`: n opaque bytes.
    Raw(usize),
    /// numpy structured type: named fields at offsets.
    Structured(Vec<Field>),
    /// numpy `M8[unit]` / `m8[unit]`, v3 `numpy.datetime64` / `numpy.timedelta64`: an int64 count
    /// of `unit` (`ns`, `D`, or with a scale factor `10s`) since 1970 (or a duration); NaT is
    /// the smallest int64.
    Time {
        /// True for `timedelta64`, false for `datetime64`.
        delta: bool,
        /// The unit as numpy spells it inside the brackets: `ns`, `10s`, `generic`.
        unit: String,
    },
    /// Variable-length UTF-8 text (v2 object arrays with `vlen-utf8`, v3 `string`).
    String,
    /// Variable-length bytes (v2 object arrays with `vlen-bytes`, v3 `bytes`).
    VarBytes,
}

/// One field of a structured data type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// Field name.
    pub name: String,
    /// Element type of the field.
    pub dtype: DataType,
    /// Sub-array shape of the field (empty for a scalar field).
    pub shape: Vec<usize>,
    /// Byte offset of the field inside the element.
    pub offset: usize,
}

impl Field {
    /// Size of the field in bytes (element size times its sub-array shape).
    pub fn size(&self) -> usize {
        self.dtype.size() * self.shape.iter().product::<usize>()
    }
}

impl DataType {
    /// True for the variable-length types, which have no fixed element size.
    pub fn is_variable(&self) -> bool {
        matches!(self, DataType::String | DataType::VarBytes)
    }

    /// Size of one element in bytes (0 for the variable-length types).
    pub fn size(&self) -> usize {
        match self {
            DataType::String | DataType::VarBytes => 0,
            DataType::Bool => 1,
            DataType::Int(n)
            | DataType::UInt(n)
            | DataType::Float(n)
            | DataType::Complex(n)
            | DataType::Bytes(n)
            | DataType::Raw(n) => *n,
            DataType::Time { .. } => 8,
            DataType::Unicode(n) => 4 * n,
            DataType::Structured(fields) => fields
                .iter()
                .map(|f| f.offset + f.size())
                .max()
                .unwrap_or(0),
        }
    }

    /// The byte ranges `(offset, width)` inside one element that a byte-order change swaps.
    pub fn swap_units(&self) -> Vec<(usize, usize)> {
        let mut units = Vec::new();
        self.push_swap_units(0, &mut units);
        units
    }

    fn push_swap_units(&self, base: usize, units: &mut Vec<(usize, usize)>) {
        match self {
            DataType::Int(n) | DataType::UInt(n) | DataType::Float(n) if *n > 1 => {
                units.push((base, *n))
            }
            DataType::Time { .. } => units.push((base, 8)),
            DataType::Complex(n) => {
                units.push((base, n / 2));
                units.push((base + n / 2, n / 2));
            }
            DataType::Unicode(n) => units.extend((0..*n).map(|i| (base + 4 * i, 4))),
            DataType::Structured(fields) => {
                for f in fields {
                    let count: usize = f.shape.iter().product();
                    for i in 0..count {
                        f.dtype
                            .push_swap_units(base + f.offset + i * f.dtype.size(), units);
                    }
                }
            }
            _ => {}
        }
    }

    /// The numpy type string of the served (little-endian) element, e.g. `<f8`, `|b1`, `<U5`.
    /// Structured types return their list form, e.g. `[('a', '<i4'), ('b', '<f8', (2,))]`.
    pub fn npy_descr(&self) -> String {
        match self {
            DataType::Bool => "|b1".into(),
            DataType::Int(1) => "|i1".into(),
            DataType::UInt(1) => "|u1".into(),
            DataType::Int(n) => format!("<i{n}"),
            DataType::UInt(n) => format!("<u{n}"),
            DataType::Float(n) => format!("<f{n}"),
            DataType::Complex(n) => format!("<c{n}"),
            DataType::Bytes(n) => format!("|S{n}"),
            DataType::Unicode(n) => format!("<U{n}"),
            DataType::Raw(n) => format!("|V{n}"),
            DataType::Time { delta, unit } => {
                let kind = if *delta { 'm' } else { 'M' };
                match unit.as_str() {
                    "generic" => format!("<{kind}8"),
                    unit => format!("<{kind}8[{unit}]"),
                }
            }
            // Served as fixed width once the longest element is known; see the view.
            DataType::String => "<U".into(),
            DataType::VarBytes => "|S".into(),
            DataType::Structured(fields) => {
                let mut parts = Vec::new();
                let mut at = 0;
                for f in fields {
                    if f.offset > at {
                        // numpy names padding bytes '' in `dtype.descr`.
                        parts.push(format!("('', '|V{}')", f.offset - at));
                    }
                    let inner = match &f.dtype {
                        DataType::Structured(_) => f.dtype.npy_descr(),
                        other => py_str(&other.npy_descr()),
                    };
                    let mut part = format!("({}, {inner}", py_str(&f.name));
                    if !f.shape.is_empty() {
                        let _ = write!(part, ", {}", py_tuple(&f.shape));
                    }
                    part.push(')');
                    parts.push(part);
                    at = at.max(f.offset + f.size());
                }
                format!("[{}]", parts.join(", "))
            }
        }
    }
}

/// The time units numpy knows, as spelled inside `M8[...]`.
pub const TIME_UNITS: [&str; 13] = [
    "Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as",
];

/// The time data type of `unit` times `scale` (`s`, 10 gives numpy's `10s`); errors for units
/// numpy does not know.
pub fn time_type(delta: bool, unit: &str, scale: u64) -> Result<DataType, MetaError> {
    if !TIME_UNITS.contains(&unit) || scale == 0 || scale > i32::MAX as u64 {
        return Err(MetaError::DataType(format!(
            "unsupported time unit {scale} x {unit:?}"
        )));
    }
    let unit = if scale == 1 {
        unit.to_string()
    } else {
        format!("{scale}{unit}")
    };
    Ok(DataType::Time { delta, unit })
}

/// The code points from U+0080 up that Python's `repr` escapes as not printable (categories
/// Cc, Cf, Zs, Zl, Zp, Co; the same in Python 3.11 to 3.13). Unassigned code points, which
/// Python escapes too, are not listed (but U+13439–U+1343F, unassigned before Unicode 15).
const NOT_PRINTABLE: [(u32, u32); 27] = [
    (0x80, 0xa0),
    (0xad, 0xad),
    (0x600, 0x605),
    (0x61c, 0x61c),
    (0x6dd, 0x6dd),
    (0x70f, 0x70f),
    (0x890, 0x891),
    (0x8e2, 0x8e2),
    (0x1680, 0x1680),
    (0x180e, 0x180e),
    (0x2000, 0x200f),
    (0x2028, 0x202f),
    (0x205f, 0x2064),
    (0x2066, 0x206f),
    (0x3000, 0x3000),
    (0xe000, 0xf8ff),
    (0xfeff, 0xfeff),
    (0xfff9, 0xfffb),
    (0x110bd, 0x110bd),
    (0x110cd, 0x110cd),
    (0x13430, 0x1343f),
    (0x1bca0, 0x1bca3),
    (0x1d173, 0x1d17a),
    (0xe0001, 0xe0001),
    (0xe0020, 0xe007f),
    (0xf0000, 0xffffd),
    (0x100000, 0x10fffd),
];

/// True when Python's `repr` shows `c` as it is (`str.isprintable`).
fn py_printable(c: char) -> bool {
    let c = c as u32;
    match c {
        0x20..=0x7e => true,
        0..=0x7f => false,
        _ => !NOT_PRINTABLE.iter().any(|&(lo, hi)| (lo..=hi).contains(&c)),
    }
}

/// A Python string literal as numpy's header writer prints it (`repr` of a str).
pub fn py_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::new();
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c)
            }
            c if !py_printable(c) => {
                let _ = match c as u32 {
                    n @ ..=0xff => write!(out, "\\x{n:02x}"),
                    n @ ..=0xffff => write!(out, "\\u{n:04x}"),
                    n => write!(out, "\\U{n:08x}"),
                };
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// A Python tuple literal of integers: `()`, `(3,)`, `(3, 4)`.
pub fn py_tuple<T: std::fmt::Display>(items: &[T]) -> String {
    match items {
        [] => "()".into(),
        [one] => format!("({one},)"),
        _ => {
            let parts: Vec<String> = items.iter().map(|x| x.to_string()).collect();
            format!("({})", parts.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, dtype: DataType, shape: Vec<usize>, offset: usize) -> Field {
        Field {
            name: name.into(),
            dtype,
            shape,
            offset,
        }
    }

    #[test]
    fn sizes_and_swap_units() {
        let s = DataType::Structured(vec![
            field("a", DataType::Int(4), vec![], 0),
            field("b", DataType::Complex(8), vec![2], 4),
        ]);
        assert_eq!(s.size(), 20);
        assert_eq!(
            s.swap_units(),
            vec![(0, 4), (4, 4), (8, 4), (12, 4), (16, 4)]
        );
        assert_eq!(DataType::Unicode(2).swap_units(), vec![(0, 4), (4, 4)]);
        assert_eq!(DataType::UInt(1).swap_units(), vec![]);
        let t = DataType::Time {
            delta: true,
            unit: "10s".into(),
        };
        assert_eq!((t.size(), t.swap_units()), (8, vec![(0, 8)]));
        assert_eq!(t.npy_descr(), "<m8[10s]");
    }

    #[test]
    fn npy_descr_matches_numpy() {
        let s = DataType::Structured(vec![
            field("x", DataType::Int(4), vec![], 0),
            field("y", DataType::Float(8), vec![2], 4),
        ]);
        assert_eq!(s.npy_descr(), "[('x', '<i4'), ('y', '<f8', (2,))]");
        assert_eq!(DataType::Bool.npy_descr(), "|b1");
        assert_eq!(DataType::Int(1).npy_descr(), "|i1");
        assert_eq!(py_tuple::<u64>(&[]), "()");
    }

    #[test]
    fn py_str_is_python_repr() {
        // python3 -c "print(repr('a\x85b\xa0\xad\u200b\ue000\U000f0000é日\x7f\'q'))"
        assert_eq!(
            py_str("a\u{85}b\u{a0}\u{ad}\u{200b}\u{e000}\u{f0000}é日\u{7f}'q"),
            r#""a\x85b\xa0\xad\u200b\ue000\U000f0000é日\x7f'q""#
        );
        assert_eq!(py_str("it's \"x\""), r#"'it\'s "x"'"#);
        assert_eq!(py_str("tab\there\n"), r"'tab\there\n'");
    }
}
