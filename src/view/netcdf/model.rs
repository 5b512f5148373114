//! The netCDF data model (dataset, group, dimension, variable, attribute, type) of a loaded
//! hierarchy, as netCDF-c reads the same store.
//!
//! NCZarr stores: the shared dimensions of each group, variables' dimensions by fully qualified
//! name, variables in the order the group lists them, attribute types from `_nczarr_attr`. Pure
//! Zarr: as netCDF-c 4.10 reads it, dimensions named by `_ARRAY_DIMENSIONS` (v2) or
//! `dimension_names` (v3) are defined in the variable's group, unnamed ones in the root group as
//! `_Anonymous_Dim_<length>`; attribute types are inferred from the JSON values as netCDF-c 4.10
//! infers them (from the first value: `int`, else `uint`, `int64`, `uint64`; `double` for a
//! float; `ubyte` for a boolean; other JSON as text).

use crate::meta::{document_served_as_bits, DataType, Hierarchy, Node, NodeKind};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// A netCDF atomic type: `NC_BYTE`, `NC_CHAR`, ... without the `NC_`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NcType {
    Byte,
    Char,
    Short,
    Int,
    Int64,
    UByte,
    UShort,
    UInt,
    UInt64,
    Float,
    Double,
    String,
}

impl NcType {
    /// Size of one value in bytes (0 for strings).
    pub fn size(self) -> usize {
        match self {
            NcType::Byte | NcType::Char | NcType::UByte => 1,
            NcType::Short | NcType::UShort => 2,
            NcType::Int | NcType::UInt | NcType::Float => 4,
            NcType::Int64 | NcType::UInt64 | NcType::Double => 8,
            NcType::String => 0,
        }
    }

    /// The CDL name of the type.
    pub fn cdl_name(self) -> &'static str {
        match self {
            NcType::Byte => "byte",
            NcType::Char => "char",
            NcType::Short => "short",
            NcType::Int => "int",
            NcType::Int64 => "int64",
            NcType::UByte => "ubyte",
            NcType::UShort => "ushort",
            NcType::UInt => "uint",
            NcType::UInt64 => "uint64",
            NcType::Float => "float",
            NcType::Double => "double",
            NcType::String => "string",
        }
    }

    /// The netCDF type of a Zarr element type, if it has one.
    pub fn of(dtype: &DataType) -> Option<NcType> {
        Some(match dtype {
            DataType::Bool | DataType::UInt(1) => NcType::UByte,
            DataType::Int(1) => NcType::Byte,
            DataType::Int(2) => NcType::Short,
            DataType::Int(4) => NcType::Int,
            DataType::Int(8) => NcType::Int64,
            DataType::UInt(2) => NcType::UShort,
            DataType::UInt(4) => NcType::UInt,
            DataType::UInt(8) => NcType::UInt64,
            DataType::Float(4) => NcType::Float,
            DataType::Float(8) => NcType::Double,
            DataType::Bytes(1) => NcType::Char,
            // netCDF-c stores NC_STRING as `|S<n>`; text of fixed width is a string too, and so
            // are variable-length bytes (sent as they are, as netCDF-Java sends a string).
            DataType::String | DataType::VarBytes | DataType::Bytes(_) | DataType::Unicode(_) => {
                NcType::String
            }
            _ => return None,
        })
    }

    /// The type a numpy type string of an `_nczarr_attr` entry (`<i4`, `>S1`) names.
    fn of_numpy(s: &str) -> Option<NcType> {
        let code = s.trim_start_matches(['<', '>', '|', '=']);
        Some(match code {
            "i1" => NcType::Byte,
            "i2" => NcType::Short,
            "i4" => NcType::Int,
            "i8" => NcType::Int64,
            "u1" | "b1" => NcType::UByte,
            "u2" => NcType::UShort,
            "u4" => NcType::UInt,
            "u8" => NcType::UInt64,
            "f4" => NcType::Float,
            "f8" => NcType::Double,
            "S1" | "U1" => NcType::Char,
            _ if code.starts_with('S') || code.starts_with('U') => NcType::String,
            _ => return None,
        })
    }

    /// True when `n` is a value of this numeric type: an integer within an integer type's
    /// range, a number within a float type's (any for double; NaN and infinities for both).
    fn holds(self, n: Num) -> bool {
        let (lo, hi): (i128, i128) = match self {
            NcType::Byte => (i8::MIN.into(), i8::MAX.into()),
            NcType::UByte => (0, u8::MAX.into()),
            NcType::Short => (i16::MIN.into(), i16::MAX.into()),
            NcType::UShort => (0, u16::MAX.into()),
            NcType::Int => (i32::MIN.into(), i32::MAX.into()),
            NcType::UInt => (0, u32::MAX.into()),
            NcType::Int64 => (i64::MIN.into(), i64::MAX.into()),
            NcType::UInt64 => (0, u64::MAX.into()),
            NcType::Float => {
                return match n {
                    Num::Int(_) => true,
                    Num::Float(f) => !f.is_finite() || f.abs() <= f64::from(f32::MAX),
                }
            }
            NcType::Double => return true,
            NcType::Char | NcType::String => return false,
        };
        match n {
            Num::Int(i) => (lo..=hi).contains(&i),
            // Compared as integers: `hi as f64` rounds i64::MAX up to 2^63 and u64::MAX to
            // 2^64, which the type does not hold (`f as i128` saturates far beyond both).
            Num::Float(f) => f.fract() == 0.0 && (lo..=hi).contains(&(f as i128)),
        }
    }

    /// The smallest type netCDF-c infers for a JSON integer (`NCZ_inferinttype`): `int`, else
    /// `uint`, `int64`; `uint64` from `i64::MAX` on (`u64 >= NC_MAX_INT64`).
    fn infer_int(v: i128) -> NcType {
        match v {
            -2147483648..=2147483647 => NcType::Int,
            2147483648..=4294967295 => NcType::UInt,
            _ if v < i128::from(i64::MAX) => NcType::Int64,
            _ => NcType::UInt64,
        }
    }
}

/// The numeric types in the order an attribute's values widen through, from its declared or
/// inferred type on, until one holds them all (float only from float).
const WIDENING: [NcType; 10] = [
    NcType::Byte,
    NcType::UByte,
    NcType::Short,
    NcType::UShort,
    NcType::Int,
    NcType::UInt,
    NcType::Int64,
    NcType::UInt64,
    NcType::Float,
    NcType::Double,
];

/// A numeric attribute value as JSON gives it.
#[derive(Clone, Copy, Debug)]
enum Num {
    Int(i128),
    Float(f64),
}

/// Typed attribute values.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    /// NC_CHAR text.
    Text(String),
    /// Integers of the attribute's type, each within its range.
    Ints(Vec<i128>),
    /// Floats of the attribute's type, each within its range.
    Floats(Vec<f64>),
    /// NC_STRING values.
    Strings(Vec<String>),
}

/// One attribute.
#[derive(Clone, Debug, PartialEq)]
pub struct Attribute {
    /// Its name.
    pub name: String,
    /// Its type.
    pub ty: NcType,
    /// Its values.
    pub values: Values,
}

/// One shared dimension.
#[derive(Clone, Debug, PartialEq)]
pub struct Dimension {
    /// Its name.
    pub name: String,
    /// Its length.
    pub len: u64,
    /// True for an unlimited (record) dimension; its length is its current one.
    pub unlimited: bool,
}

/// The group defining a dimension a variable uses.
#[derive(Clone, Debug, PartialEq)]
pub enum DimGroup {
    /// Group number N of the [`Dataset`].
    Group(usize),
    /// A group the store does not have (an NCZarr reference names it), by path.
    Missing(String),
}

/// A variable's use of a dimension.
#[derive(Clone, Debug, PartialEq)]
pub struct DimRef {
    /// The group defining the dimension.
    pub group: DimGroup,
    /// The dimension's name.
    pub name: String,
    /// Its length.
    pub len: u64,
    /// True for an unlimited dimension.
    pub unlimited: bool,
    /// The group whose dimension of that name the variable sees as netCDF scopes names: the
    /// variable's own group or its nearest ancestor defining one (`None`: none does).
    pub seen: Option<usize>,
}

/// One variable.
#[derive(Clone, Debug, PartialEq)]
pub struct Variable {
    /// Its name.
    pub name: String,
    /// Path of its array node.
    pub path: String,
    /// Its netCDF type (a Zarr type without one leaves the variable out).
    pub ty: NcType,
    /// Its dimensions.
    pub dims: Vec<DimRef>,
    /// Its attributes.
    pub attrs: Vec<Attribute>,
}

/// One group of a [`Dataset`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Group {
    /// Its name (`""` for the root).
    pub name: String,
    /// Its path from the root.
    pub path: String,
    /// The dimensions it defines.
    pub dims: Vec<Dimension>,
    /// Its variables with a netCDF type, in netCDF's order.
    pub vars: Vec<Variable>,
    /// Its attributes.
    pub attrs: Vec<Attribute>,
    /// Its parent's number (`None` for the root).
    pub parent: Option<usize>,
    /// How many groups it is below the root.
    pub depth: usize,
    /// One past the number of the last group of its subtree.
    pub end: usize,
}

/// A netCDF dataset: its groups numbered depth first in netCDF's order, the root first, so
/// that the subtree of group `g` is the groups `g..groups[g].end`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Dataset {
    /// The groups.
    pub groups: Vec<Group>,
}

impl Dataset {
    /// The number of each group, by path.
    pub fn index(&self) -> HashMap<&str, usize> {
        let paths = self.groups.iter().map(|g| g.path.as_str());
        paths.enumerate().map(|(i, p)| (p, i)).collect()
    }

    /// The child groups of group `g`, in order.
    pub fn children(&self, g: usize) -> impl Iterator<Item = usize> + '_ {
        let end = self.groups[g].end;
        let first = Some(g + 1).filter(|&c| c < end);
        std::iter::successors(first, move |&c| {
            Some(self.groups[c].end).filter(|&n| n < end)
        })
    }

    /// Every variable of the subtree of group `top`, depth first: its group, its number there,
    /// the variable.
    pub fn vars(&self, top: usize) -> impl Iterator<Item = (usize, usize, &Variable)> + '_ {
        let groups = self.groups[top..self.groups[top].end].iter();
        let numbered = groups.enumerate().map(move |(i, g)| (top + i, g));
        numbered.flat_map(|(g, group)| (group.vars.iter().enumerate()).map(move |(i, v)| (g, i, v)))
    }

    /// The path of dimension group `d`.
    pub fn path<'a>(&'a self, d: &'a DimGroup) -> &'a str {
        match d {
            DimGroup::Group(g) => &self.groups[*g].path,
            DimGroup::Missing(path) => path,
        }
    }

    /// True when dimension group `d` is group `top` or below it.
    pub fn within(&self, d: &DimGroup, top: usize) -> bool {
        match d {
            DimGroup::Group(g) => (top..self.groups[top].end).contains(g),
            DimGroup::Missing(path) => within(path, &self.groups[top].path),
        }
    }

    /// The dimensions group `top` declares when its subtree is shown as a dataset of its own:
    /// first those its variables use from groups outside it (the first of each name that it
    /// does not define itself), then its own.
    pub fn top_dims(&self, top: usize) -> Vec<Dimension> {
        let own = &self.groups[top].dims;
        let mut names: HashSet<&str> = own.iter().map(|d| d.name.as_str()).collect();
        let mut out = Vec::new();
        for (_, _, var) in self.vars(top) {
            for d in &var.dims {
                if !self.within(&d.group, top) && names.insert(&d.name) {
                    out.push(Dimension {
                        name: d.name.clone(),
                        len: d.len,
                        unlimited: d.unlimited,
                    });
                }
            }
        }
        out.extend(own.iter().cloned());
        out
    }
}

/// The path of the group holding the node at `path` (`""`: the root).
fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |p| p.0)
}

/// True when group path `path` is `top` or below it.
fn within(path: &str, top: &str) -> bool {
    top.is_empty() || path == top || path.starts_with(&format!("{top}/"))
}

/// Splits an NCZarr fully qualified name (`/g/my\ dim`) into group path and name, undoing the
/// escapes `\/`, `\\` and `\ `.
pub fn split_fqn(fqn: &str) -> (String, String) {
    let mut parts = vec![String::new()];
    let mut chars = fqn.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => parts.last_mut().unwrap().extend(chars.next()),
            '/' => parts.push(String::new()),
            c => parts.last_mut().unwrap().push(c),
        }
    }
    let name = parts.pop().unwrap_or_default();
    let group = parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("/");
    (group, name)
}

/// Attributes netCDF-c keeps to itself (its reserved attributes flagged hidden, matched
/// exactly), and `_NCZARR_ATTR`, where netCDF-c 4.9.0 records an NCZarr node's attribute types.
const HIDDEN: [&str; 13] = [
    "CLASS",
    "DIMENSION_LIST",
    "NAME",
    "REFERENCE_LIST",
    "_ARRAY_DIMENSIONS",
    "_NCProperties",
    "_Netcdf4Coordinates",
    "_Netcdf4Dimid",
    "_nczarr_attr",
    "_nczarr_group",
    "_nczarr_array",
    "_nczarr_superblock",
    "_NCZARR_ATTR",
];

/// The attribute types an NCZarr node records.
fn attr_types(attrs: &Map<String, Value>) -> Map<String, Value> {
    ["_nczarr_attr", "_NCZARR_ATTR"]
        .iter()
        .find_map(|k| attrs.get(*k))
        .and_then(|a| a.get("types"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// The typed attributes of the node whose document is `doc`; `var` is a variable's path and
/// type, for its `_FillValue`, which netCDF requires of the variable's type: one whose values
/// that type does not hold is left out (logged, and said in the variable's `comment`).
fn typed_attributes(doc: &Map<String, Value>, var: Option<(&str, NcType)>) -> Vec<Attribute> {
    let attrs = doc.get("attributes").and_then(Value::as_object);
    let attrs = attrs.cloned().unwrap_or_default();
    let types = attr_types(&attrs);
    let mut notes = Vec::new();
    let mut typed: Vec<Attribute> = attrs
        .iter()
        .filter(|(name, _)| !HIDDEN.contains(&name.as_str()))
        .filter_map(|(name, value)| {
            let declared = types
                .get(name)
                .and_then(Value::as_str)
                .and_then(NcType::of_numpy);
            let Some((path, ty)) = var.filter(|_| name == "_FillValue") else {
                return Some(typed_value(name, value, declared));
            };
            let fill = typed_value(name, value, Some(ty));
            if fill.ty == ty {
                return Some(fill);
            }
            let (value, ty) = (netcdf_c_json(value), ty.cdl_name());
            log::warn!("/{path}: netCDF _FillValue left out: {value} is not a {ty} value");
            notes.push(format!("_FillValue {value} left out: not a {ty} value"));
            None
        })
        .collect();
    for note in &notes {
        add_comment(&mut typed, note);
    }
    typed
}

/// Appends `note` to the `comment` attribute of `attrs`, on a line of its own after any text
/// it has (numbers it holds become their text); adds one when there is none.
fn add_comment(attrs: &mut Vec<Attribute>, note: &str) {
    let Some(comment) = attrs.iter_mut().find(|a| a.name == "comment") else {
        attrs.push(Attribute {
            name: "comment".into(),
            ty: NcType::Char,
            values: Values::Text(note.into()),
        });
        return;
    };
    let join = |old: String| match old.is_empty() {
        true => note.to_string(),
        false => format!("{old}\n{note}"),
    };
    let old = std::mem::replace(&mut comment.values, Values::Text(String::new()));
    comment.values = match old {
        Values::Text(text) => Values::Text(join(text)),
        Values::Strings(mut list) => {
            match list.last_mut() {
                Some(last) => *last = join(std::mem::take(last)),
                None => list.push(note.into()),
            }
            Values::Strings(list)
        }
        Values::Ints(list) => {
            comment.ty = NcType::Char;
            let items: Vec<String> = list.iter().map(i128::to_string).collect();
            Values::Text(join(items.join(", ")))
        }
        Values::Floats(list) => {
            comment.ty = NcType::Char;
            let items: Vec<String> = list.iter().map(f64::to_string).collect();
            Values::Text(join(items.join(", ")))
        }
    };
}

fn json_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => netcdf_c_json(other),
    }
}

/// JSON as netCDF-c writes it back for complex attributes (its `NCJunparse`): `{"x": 1, "y":
/// [1,2]}`, with only `\b \f \n \r \t " \\` escaped in strings.
fn netcdf_c_json(value: &Value) -> String {
    match value {
        Value::Object(m) => {
            let items: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}: {}", netcdf_c_string(k), netcdf_c_json(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(netcdf_c_json).collect();
            format!("[{}]", items.join(","))
        }
        Value::String(s) => netcdf_c_string(s),
        other => other.to_string(),
    }
}

/// A JSON string as netCDF-c quotes it.
fn netcdf_c_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn as_int(v: &Value) -> Option<i128> {
    match v {
        Value::Bool(b) => Some(i128::from(*b)),
        Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from)),
        _ => None,
    }
}

/// A numeric attribute value: an integer, a boolean (0 or 1), a number, or (`floats`: for a
/// float type) a non-finite value's name.
fn as_num(v: &Value, floats: bool) -> Option<Num> {
    match v {
        Value::String(s) if floats => non_finite(s).map(Num::Float),
        Value::Number(n) if n.is_f64() => n.as_f64().map(Num::Float),
        v => as_int(v).map(Num::Int),
    }
}

/// The non-finite value a string names for a float attribute, as netCDF-c reads one (`NaN`,
/// `Infinity`, `-Infinity` in any case, also with an `f` suffix).
fn non_finite(s: &str) -> Option<f64> {
    match s.to_ascii_lowercase().as_str() {
        "nan" | "nanf" => Some(f64::NAN),
        "-nan" | "-nanf" => Some(-f64::NAN),
        "infinity" | "infinityf" => Some(f64::INFINITY),
        "-infinity" | "-infinityf" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// An attribute typed by netCDF-c's rules: the declared type where NCZarr records one (a
/// variable's `_FillValue` the variable's type), else inferred from the first value (integers:
/// the smallest type holding it; floats: double; booleans: ubyte; text: char); lists are
/// vectors; other JSON becomes its text. The bare JSON tokens `NaN`, `Infinity` and `-Infinity`
/// (read as those strings) are doubles. Numbers the type does not hold widen it to the next
/// type (in [`WIDENING`]'s order) that holds them all: never cut to fit.
fn typed_value(name: &str, value: &Value, declared: Option<NcType>) -> Attribute {
    let list: Vec<&Value> = match value {
        Value::Array(a) => a.iter().collect(),
        v => vec![v],
    };
    let attribute = |ty, values| Attribute {
        name: name.into(),
        ty,
        values,
    };
    let text = || attribute(NcType::Char, Values::Text(json_text(value)));
    let inferred = match list.first() {
        Some(Value::Number(n)) if n.is_f64() => Some(NcType::Double),
        Some(Value::Bool(_)) => Some(NcType::UByte),
        Some(v @ Value::Number(_)) => as_int(v).map(NcType::infer_int),
        Some(Value::String(s)) if ["NaN", "Infinity", "-Infinity"].contains(&s.as_str()) => {
            Some(NcType::Double)
        }
        _ => None,
    };
    let Some(ty) = declared.or(inferred) else {
        return text();
    };
    match ty {
        NcType::Char => text(),
        NcType::String => {
            let strings = list.iter().map(|v| json_text(v)).collect();
            attribute(ty, Values::Strings(strings))
        }
        _ if list.is_empty() => text(),
        _ => {
            let floats = matches!(ty, NcType::Float | NcType::Double);
            let nums: Option<Vec<Num>> = list.iter().map(|v| as_num(v, floats)).collect();
            let widened = nums.and_then(|nums| {
                let from = WIDENING.iter().position(|&t| t == ty)?;
                // Integers widen to double, as inferred floats are.
                let ty = (WIDENING[from..].iter().copied())
                    .filter(|&t| t != NcType::Float || ty == NcType::Float)
                    .find(|t| nums.iter().all(|&n| t.holds(n)))?;
                Some((ty, nums))
            });
            let Some((ty, nums)) = widened else {
                return text();
            };
            let values = match ty {
                NcType::Float | NcType::Double => Values::Floats(
                    (nums.iter())
                        .map(|n| match *n {
                            Num::Int(i) => i as f64,
                            Num::Float(f) => f,
                        })
                        .collect(),
                ),
                // An integer type holds only whole numbers within its range.
                _ => Values::Ints(
                    (nums.iter())
                        .map(|n| match *n {
                            Num::Int(i) => i,
                            Num::Float(f) => f as i128,
                        })
                        .collect(),
                ),
            };
            attribute(ty, values)
        }
    }
}

fn zarr_type_name(doc: &Map<String, Value>) -> String {
    ["data_type", "dtype"]
        .iter()
        .find_map(|k| doc.get(*k))
        .map(json_text)
        .unwrap_or_else(|| "unknown".into())
}

/// The NCZarr description of a group (`_nczarr_group` or `_NCZARR_GROUP`) in its document.
fn nczarr_group_info(doc: &Map<String, Value>) -> Option<&Value> {
    ["_NCZARR_GROUP", "_nczarr_group"]
        .iter()
        .find_map(|k| doc.get(*k))
        .or_else(|| doc.get("attributes")?.get("_nczarr_group"))
}

/// The place of each name an NCZarr group lists under the first of `keys` it has (`vars`/
/// `arrays` for its variables, `groups` for its subgroups): the order netCDF-c defines them in.
fn nczarr_order(doc: &Map<String, Value>, keys: &[&str]) -> Option<Ranks> {
    let info = nczarr_group_info(doc)?;
    let list = keys.iter().find_map(|k| info.get(*k))?.as_array()?;
    let mut ranks = Ranks::new();
    for (i, name) in list.iter().filter_map(Value::as_str).enumerate() {
        ranks.entry(name.to_string()).or_insert(i);
    }
    Some(ranks)
}

/// The dimensions an NCZarr group declares unlimited (`"time": {"size": 4, "unlimited": 1}`).
fn nczarr_unlimited(doc: &Map<String, Value>) -> HashSet<String> {
    let info = nczarr_group_info(doc);
    let dims = info.and_then(|i| i.get("dimensions").or_else(|| i.get("dims")));
    let dims = dims.and_then(Value::as_object).into_iter().flatten();
    dims.filter(|(_, v)| {
        let flag = v.get("unlimited").and_then(Value::as_f64);
        flag.is_some_and(|f| f.trunc() != 0.0)
    })
    .map(|(name, _)| name.clone())
    .collect()
}

/// The netCDF dataset of `hierarchy`; for a store whose root is an array, a root group holding
/// that one variable, named `root_name` (netCDF-c itself shows such a store as an empty
/// dataset). `None` when the store has no root node.
pub fn dataset(hierarchy: &Hierarchy, root_name: &str) -> Option<Dataset> {
    let nczarr = hierarchy.nodes.iter().any(|n| n.dimensions.is_nczarr());
    // The groups in the hierarchy's order first, numbered by `found`.
    let mut found: Vec<Group> = Vec::new();
    let mut found_at: HashMap<&str, usize> = HashMap::new();
    let mut orders: HashMap<&str, Ranks> = HashMap::new();
    let mut group_orders: HashMap<&str, Ranks> = HashMap::new();
    let mut arrays: Vec<&Node> = Vec::new();
    for node in &hierarchy.nodes {
        match node.kind {
            NodeKind::Group => {
                if !node.path.is_empty() && !found_at.contains_key(parent(&node.path)) {
                    continue;
                }
                let doc = node.document.parse();
                let unlimited = nczarr_unlimited(&doc);
                let dims = node
                    .dimensions
                    .nczarr_shared
                    .iter()
                    .flatten()
                    .map(|(name, len)| Dimension {
                        name: name.clone(),
                        len: *len,
                        unlimited: unlimited.contains(name.as_str()),
                    })
                    .collect();
                if let Some(order) = nczarr_order(&doc, &["vars", "arrays"]) {
                    orders.insert(&node.path, order);
                }
                if let Some(order) = nczarr_order(&doc, &["groups"]) {
                    group_orders.insert(&node.path, order);
                }
                found_at.insert(&node.path, found.len());
                found.push(Group {
                    name: node.name().into(),
                    path: node.path.clone(),
                    dims,
                    attrs: typed_attributes(&doc, None),
                    ..Group::default()
                });
            }
            NodeKind::Array(_) => arrays.push(node),
        }
    }
    if !found_at.contains_key("") {
        // A store whose root is an array: a root group holding that one variable.
        if !arrays.iter().any(|n| n.path.is_empty()) {
            return None;
        }
        found_at.insert("", found.len());
        found.push(Group::default());
    }
    // Subgroups: NCZarr's in the order their group lists them, the others by path.
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); found.len()];
    for (i, g) in found.iter().enumerate().filter(|(_, g)| !g.path.is_empty()) {
        children[found_at[parent(&g.path)]].push(i);
    }
    for (kids, g) in children.iter_mut().zip(&found) {
        let ranks = group_orders.get(g.path.as_str());
        let rank = |k: &usize| rank(ranks, &found[*k].name);
        kids.sort_by(|a, b| (rank(a), &found[*a].path).cmp(&(rank(b), &found[*b].path)));
    }
    // Numbered depth first (the order netCDF-c defines pure Zarr dimensions in).
    let mut order: Vec<(usize, Option<usize>, usize)> = Vec::with_capacity(found.len());
    let mut stack = vec![(found_at[""], None, 0)];
    while let Some((f, parent, depth)) = stack.pop() {
        let number = order.len();
        stack.extend(
            children[f]
                .iter()
                .rev()
                .map(|&c| (c, Some(number), depth + 1)),
        );
        order.push((f, parent, depth));
    }
    let mut slots: Vec<Option<Group>> = found.into_iter().map(Some).collect();
    let mut groups: Vec<Group> = Vec::with_capacity(order.len());
    for &(f, parent, depth) in &order {
        let mut g = slots[f].take().unwrap_or_default();
        (g.parent, g.depth) = (parent, depth);
        groups.push(g);
    }
    for i in (0..groups.len()).rev() {
        let end = groups[i].end.max(i + 1);
        groups[i].end = end;
        if let Some(p) = groups[i].parent {
            groups[p].end = groups[p].end.max(end);
        }
    }
    let mut renumber = vec![0; order.len()];
    for (i, &(f, _, _)) in order.iter().enumerate() {
        renumber[f] = i;
    }
    let number: HashMap<&str, usize> = found_at
        .into_iter()
        .map(|(p, f)| (p, renumber[f]))
        .collect();
    let mut ds = Dataset { groups };
    // Each group's dimensions by name (the first of a name).
    let mut dim_at: Vec<HashMap<String, usize>> = ds
        .groups
        .iter()
        .map(|g| {
            let mut at = HashMap::new();
            for (i, d) in g.dims.iter().enumerate() {
                at.entry(d.name.clone()).or_insert(i);
            }
            at
        })
        .collect();
    // Variables, group by group, in netCDF's order: those the NCZarr order names first, in
    // that order; the others by path.
    let mut by_group: HashMap<&str, Vec<&Node>> = HashMap::new();
    for node in arrays {
        by_group.entry(parent(&node.path)).or_default().push(node);
    }
    for g in 0..ds.groups.len() {
        let Some(list) = by_group.get_mut(ds.groups[g].path.as_str()) else {
            continue;
        };
        let ranks = orders.get(ds.groups[g].path.as_str());
        list.sort_by_cached_key(|n| (rank(ranks, n.name()), n.path.as_str()));
        for node in list.iter() {
            let NodeKind::Array(Ok(meta)) = &node.kind else {
                continue;
            };
            let dims = if nczarr {
                let groups = Groups {
                    ds: &ds,
                    dim_at: &dim_at,
                };
                nczarr_dims(node, &meta.shape, g, &groups, &number)
            } else {
                let names = node.dimensions.axis_names(meta.shape.len());
                meta.shape
                    .iter()
                    .zip(&names)
                    .map(|(&len, name)| {
                        let wanted = name.as_deref().filter(|s| !s.is_empty());
                        pure_zarr_dim(&mut ds, &mut dim_at, g, wanted, len)
                    })
                    .collect()
            };
            let name = match node.path.is_empty() {
                true => root_name.to_string(),
                false => node.name().to_string(),
            };
            let doc = node.document.parse();
            let group = &mut ds.groups[g];
            // A variable left out still defines its dimensions (above). Extension floats are
            // served as their bits, which are not their values.
            let ty = NcType::of(&meta.dtype).filter(|_| !document_served_as_bits(&doc));
            let Some(ty) = ty else {
                let note = format!(
                    "variable {name} left out: Zarr type {} has no netCDF equivalent",
                    zarr_type_name(&doc)
                );
                add_comment(&mut group.attrs, &note);
                continue;
            };
            // netCDF-c 4.10 reads a pure Zarr `|S1` array as strings, NCZarr's as characters.
            let ty = match ty {
                NcType::Char if !nczarr => NcType::String,
                ty => ty,
            };
            group.vars.push(Variable {
                name,
                path: node.path.clone(),
                ty,
                dims,
                attrs: typed_attributes(&doc, Some((&node.path, ty))),
            });
        }
    }
    // Which definition of each name a variable sees, now that every dimension is defined.
    for g in 0..ds.groups.len() {
        let mut vars = std::mem::take(&mut ds.groups[g].vars);
        for d in vars.iter_mut().flat_map(|v| v.dims.iter_mut()) {
            let groups = Groups {
                ds: &ds,
                dim_at: &dim_at,
            };
            d.seen = groups.scope(g, &d.name);
        }
        ds.groups[g].vars = vars;
    }
    Some(ds)
}

/// The place of each name an NCZarr group lists (the first place of a name listed twice).
type Ranks = HashMap<String, usize>;

/// The place of `name` in `ranks`; after every listed name when it is not listed.
fn rank(ranks: Option<&Ranks>, name: &str) -> usize {
    ranks
        .and_then(|r| r.get(name))
        .copied()
        .unwrap_or(usize::MAX)
}

/// The groups of a dataset being built, and each one's dimensions by name.
struct Groups<'a> {
    ds: &'a Dataset,
    dim_at: &'a [HashMap<String, usize>],
}

impl Groups<'_> {
    /// Whether dimension `name` of group `g` is unlimited; `None` when `g` does not define it.
    fn defined(&self, g: usize, name: &str) -> Option<bool> {
        let i = *self.dim_at[g].get(name)?;
        Some(self.ds.groups[g].dims[i].unlimited)
    }

    /// The group whose dimension `name` group `g` sees: `g` or its nearest ancestor defining
    /// one.
    fn scope(&self, mut g: usize, name: &str) -> Option<usize> {
        loop {
            if self.dim_at[g].contains_key(name) {
                return Some(g);
            }
            g = self.ds.groups[g].parent?;
        }
    }
}

/// A pure Zarr variable's dimension of length `len` in group `g`, as netCDF-c 4.10 defines it:
/// a `wanted` name is a dimension of the variable's own group (even where an ancestor has one
/// of that name); a dimension with no name is the root's `_Anonymous_Dim_<len>`, and so is one
/// whose name the group already gives another length (netCDF-c refuses such a store).
fn pure_zarr_dim(
    ds: &mut Dataset,
    dim_at: &mut [HashMap<String, usize>],
    g: usize,
    wanted: Option<&str>,
    len: u64,
) -> DimRef {
    if let Some(dim) = wanted.and_then(|name| define(ds, dim_at, g, name, len)) {
        return dim;
    }
    let name = anonymous_dim(len);
    define(ds, dim_at, 0, &name, len).unwrap_or(DimRef {
        group: DimGroup::Group(0),
        name,
        len,
        unlimited: false,
        seen: None,
    })
}

/// The dimension `name` of length `len` in group `g`, defined there if it is not; `None` when
/// the group has a dimension of that name and another length.
fn define(
    ds: &mut Dataset,
    dim_at: &mut [HashMap<String, usize>],
    g: usize,
    name: &str,
    len: u64,
) -> Option<DimRef> {
    let dims = &mut ds.groups[g].dims;
    match dim_at[g].get(name) {
        Some(&i) if dims[i].len != len => return None,
        Some(_) => {}
        None => {
            dim_at[g].insert(name.to_string(), dims.len());
            dims.push(Dimension {
                name: name.to_string(),
                len,
                unlimited: false,
            });
        }
    }
    Some(DimRef {
        group: DimGroup::Group(g),
        name: name.to_string(),
        len,
        unlimited: false,
        seen: None,
    })
}

/// The name netCDF-c gives a dimension of length `len` that has no name.
fn anonymous_dim(len: u64) -> String {
    format!("_Anonymous_Dim_{len}")
}

/// An NCZarr variable's dimensions, from its dimension references (`/g/x`, found in the group
/// `number` names by that path), or for a variable without any, its dimension names (`x`,
/// found as netCDF scopes them: in the variable's group `g` or the nearest ancestor defining
/// that name).
fn nczarr_dims(
    node: &Node,
    shape: &[u64],
    g: usize,
    groups: &Groups,
    number: &HashMap<&str, usize>,
) -> Vec<DimRef> {
    let dims = &node.dimensions;
    let refs: Vec<String> = match &dims.nczarr_references {
        Some(refs) => refs.clone(),
        None => dims.names.iter().flatten().flatten().cloned().collect(),
    };
    let dim = |group: DimGroup, name: String, len| DimRef {
        unlimited: match group {
            DimGroup::Group(n) => groups.defined(n, &name).unwrap_or(false),
            DimGroup::Missing(_) => false,
        },
        group,
        name,
        len,
        seen: None,
    };
    shape
        .iter()
        .enumerate()
        .map(|(i, &len)| match refs.get(i) {
            Some(fqn) if refs.len() == shape.len() && fqn.starts_with('/') => {
                let (path, name) = split_fqn(fqn);
                let group = match number.get(path.as_str()) {
                    Some(&n) => DimGroup::Group(n),
                    None => DimGroup::Missing(path),
                };
                dim(group, name, len)
            }
            Some(name) if refs.len() == shape.len() => {
                let group = DimGroup::Group(groups.scope(g, name).unwrap_or(0));
                dim(group, name.clone(), len)
            }
            _ => dim(DimGroup::Group(0), anonymous_dim(len), len),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fully_qualified_names_are_unescaped() {
        assert_eq!(split_fqn("/x"), (String::new(), "x".into()));
        assert_eq!(split_fqn("/g/h/my\\ dim"), ("g/h".into(), "my dim".into()));
        assert_eq!(split_fqn("/a\\/b/c\\\\d"), ("a/b".into(), "c\\d".into()));
    }

    fn typed(v: Value) -> (NcType, Values) {
        let a = typed_value("a", &v, None);
        (a.ty, a.values)
    }

    #[test]
    fn attribute_types_are_inferred_as_netcdf_c_does() {
        // As netCDF-c 4.10.1 (netCDF4-python 1.7.5) reads them.
        assert_eq!(typed(json!(1)), (NcType::Int, Values::Ints(vec![1])));
        assert_eq!(typed(json!([1, 300, 70000])).0, NcType::Int);
        assert_eq!(typed(json!(2147483648u64)).0, NcType::UInt);
        assert_eq!(typed(json!(-3000000000i64)).0, NcType::Int64);
        assert_eq!(typed(json!(5000000000u64)).0, NcType::Int64);
        assert_eq!(typed(json!(u64::MAX)).0, NcType::UInt64);
        assert_eq!(typed(json!(true)), (NcType::UByte, Values::Ints(vec![1])));
        assert_eq!(
            typed(json!([1.5, 2])),
            (NcType::Double, Values::Floats(vec![1.5, 2.0]))
        );
        assert_eq!(
            typed(json!({"x": 1})),
            (NcType::Char, Values::Text("{\"x\": 1}".into()))
        );
        let declared = typed_value("a", &json!([1, 2]), Some(NcType::Float));
        assert_eq!(declared.values, Values::Floats(vec![1.0, 2.0]));
        // netCDF-c 4.10.1's ncdump: uint64 from 2^63 - 1 on (NCZ_inferinttype).
        assert_eq!(typed(json!(i64::MAX)).0, NcType::UInt64);
        assert_eq!(typed(json!(i64::MAX - 1)).0, NcType::Int64);
        // JSON-convention text as NCJunparse writes it: no space after an array's commas.
        let text = typed(json!({"a": [1, "x\ty"], "b": null}));
        assert_eq!(
            text.1,
            Values::Text("{\"a\": [1,\"x\\ty\"], \"b\": null}".into())
        );
        assert_eq!(
            typed(json!(["ab", "c"])).1,
            Values::Text("[\"ab\",\"c\"]".into())
        );
        // Bare NaN and Infinity (read as these strings) are doubles; declared floats read the
        // names netCDF-c writes for them.
        assert_eq!(typed(json!("NaN")).0, NcType::Double);
        assert_eq!(typed(json!("nan")).0, NcType::Char);
        let fill = typed_value("_FillValue", &json!("NaN"), Some(NcType::Float));
        assert!(matches!(&fill.values, Values::Floats(v) if v[0].is_nan()));
        let inf = typed_value("a", &json!(["-Infinity", 1]), Some(NcType::Double));
        assert_eq!(inf.values, Values::Floats(vec![f64::NEG_INFINITY, 1.0]));
    }

    #[test]
    fn values_a_type_does_not_hold_widen_it_never_cut() {
        let typed_as = |v: Value, ty| {
            let a = typed_value("a", &v, Some(ty));
            (a.ty, a.values)
        };
        // Inferred from the first value, widened to hold them all.
        assert_eq!(
            typed(json!([-1, 4294967295u64])),
            (NcType::Int64, Values::Ints(vec![-1, 4294967295]))
        );
        assert_eq!(
            typed(json!([4294967295u64, -1])),
            (NcType::Int64, Values::Ints(vec![4294967295, -1]))
        );
        assert_eq!(
            typed(json!([1, 2.5])),
            (NcType::Double, Values::Floats(vec![1.0, 2.5]))
        );
        assert_eq!(
            typed(json!([i64::MIN, u64::MAX])),
            (
                NcType::Double,
                Values::Floats(vec![i64::MIN as f64, u64::MAX as f64])
            )
        );
        // Declared types widen the same way.
        assert_eq!(
            typed_as(json!(300), NcType::UByte),
            (NcType::Short, Values::Ints(vec![300]))
        );
        assert_eq!(
            typed_as(json!([-1, 200]), NcType::Byte),
            (NcType::Short, Values::Ints(vec![-1, 200]))
        );
        assert_eq!(
            typed_as(json!([2.0, 255]), NcType::UByte),
            (NcType::UByte, Values::Ints(vec![2, 255]))
        );
        assert_eq!(
            typed_as(json!(1e39), NcType::Float),
            (NcType::Double, Values::Floats(vec![1e39]))
        );
        // 2^63 and 2^64 as floats (i64::MAX and u64::MAX round to them) are past int64 and
        // uint64; -2^63 is int64's least.
        assert_eq!(
            typed_as(json!(2f64.powi(63)), NcType::Int64),
            (NcType::UInt64, Values::Ints(vec![1 << 63]))
        );
        assert_eq!(
            typed_as(json!(2f64.powi(64)), NcType::UInt64),
            (NcType::Double, Values::Floats(vec![2f64.powi(64)]))
        );
        assert_eq!(
            typed_as(json!(-(2f64.powi(63))), NcType::Int64),
            (NcType::Int64, Values::Ints(vec![i64::MIN.into()]))
        );
        let nan = typed_as(json!(["NaN", 3.5]), NcType::Float);
        assert!(
            matches!(&nan, (NcType::Float, Values::Floats(v)) if v[0].is_nan() && v[1] == 3.5),
            "{nan:?}"
        );
        // Text among numbers of an integer type: the JSON's text.
        assert_eq!(
            typed_as(json!([1, "x"]), NcType::Int),
            (NcType::Char, Values::Text("[1,\"x\"]".into()))
        );
    }

    fn node(path: &str, doc: Value, dtype: Option<DataType>) -> Node {
        let kind = match dtype {
            None => NodeKind::Group,
            Some(dtype) => NodeKind::Array(Ok(std::sync::Arc::new(crate::meta::ArrayMeta {
                shape: vec![2],
                chunk_shape: vec![2],
                grid: crate::meta::ChunkGrid::Regular,
                fill_value: vec![0; dtype.size()],
                dtype,
                codecs: Vec::new(),
                chunk_keys: crate::meta::ChunkKeys::new(path, crate::meta::KeyStyle::V2, '.'),
            }))),
        };
        Node {
            path: path.into(),
            kind,
            document: crate::meta::Document::new(doc.as_object().unwrap()),
            dimensions: crate::meta::Dimensions::default(),
            mtime: None,
        }
    }

    fn text_attr(name: &str, text: &str) -> Attribute {
        Attribute {
            name: name.into(),
            ty: NcType::Char,
            values: Values::Text(text.into()),
        }
    }

    #[test]
    fn notes_go_into_one_comment_after_its_own_text() {
        let attrs = |a: Value| json!({"zarr_format": 2, "attributes": a});
        let complex = |t: &str| json!({"zarr_format": 2, "dtype": t, "attributes": {}});
        let hierarchy = Hierarchy {
            nodes: vec![
                node("", attrs(json!({"comment": "own", "title": "t"})), None),
                node("c1", complex("<c8"), Some(DataType::Complex(8))),
                node("c2", complex("<c16"), Some(DataType::Complex(16))),
            ],
        };
        let ds = dataset(&hierarchy, "root").unwrap();
        let root = &ds.groups[0];
        let notes = "own\n\
            variable c1 left out: Zarr type <c8 has no netCDF equivalent\n\
            variable c2 left out: Zarr type <c16 has no netCDF equivalent";
        assert_eq!(
            root.attrs,
            [text_attr("comment", notes), text_attr("title", "t")]
        );
    }

    #[test]
    fn a_fill_value_its_variable_type_does_not_hold_is_left_out_with_a_note() {
        let attrs = |a: Value| json!({"zarr_format": 2, "attributes": a});
        let hierarchy = Hierarchy {
            nodes: vec![
                node("", attrs(json!({})), None),
                node(
                    "u",
                    attrs(json!({"_FillValue": 300, "comment": "own"})),
                    Some(DataType::UInt(1)),
                ),
                node(
                    "v",
                    attrs(json!({"_FillValue": 255})),
                    Some(DataType::UInt(1)),
                ),
            ],
        };
        let ds = dataset(&hierarchy, "root").unwrap();
        let (u, v) = (&ds.groups[0].vars[0], &ds.groups[0].vars[1]);
        let note = "own\n_FillValue 300 left out: not a ubyte value";
        assert_eq!(u.attrs, [text_attr("comment", note)]);
        assert_eq!(
            v.attrs,
            [Attribute {
                name: "_FillValue".into(),
                ty: NcType::UByte,
                values: Values::Ints(vec![255]),
            }]
        );
    }
}
