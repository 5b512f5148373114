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

use crate::meta::{DataType, Hierarchy, Node, NodeKind};
use serde_json::{Map, Value};
use std::collections::HashMap;

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

    /// The smallest type netCDF-c infers for a JSON integer (`NCZ_inferinttype`).
    fn infer_int(v: i128) -> NcType {
        match v {
            -2147483648..=2147483647 => NcType::Int,
            2147483648..=4294967295 => NcType::UInt,
            _ if v >= i128::from(i64::MIN) && v <= i128::from(i64::MAX) => NcType::Int64,
            _ => NcType::UInt64,
        }
    }
}

/// Typed attribute values.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    /// NC_CHAR text.
    Text(String),
    /// Integers of the attribute's type.
    Ints(Vec<i128>),
    /// Floats of the attribute's type.
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
}

/// A variable's use of a dimension.
#[derive(Clone, Debug, PartialEq)]
pub struct DimRef {
    /// Path of the group defining the dimension (`""` for the root).
    pub group: String,
    /// The dimension's name.
    pub name: String,
    /// Its length.
    pub len: u64,
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

/// One group and its subtree.
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
    /// Its child groups.
    pub groups: Vec<Group>,
}

impl Group {
    /// The group at `path` in this subtree (`""` is this group).
    pub fn find(&self, path: &str) -> Option<&Group> {
        if path == self.path {
            return Some(self);
        }
        self.groups.iter().find_map(|g| {
            let inside = path
                .strip_prefix(&g.path)
                .is_some_and(|r| r.is_empty() || r.starts_with('/'));
            inside.then(|| g.find(path)).flatten()
        })
    }

    /// This subtree as a dataset of its own: the dimensions its variables use from groups
    /// outside it are declared in its top group.
    pub fn standalone(&self) -> Group {
        let mut top = self.clone();
        let mut outside: Vec<Dimension> = Vec::new();
        for var in self.all_vars() {
            for d in &var.dims {
                if !within(&d.group, &self.path) && !outside.iter().any(|o| o.name == d.name) {
                    outside.push(Dimension {
                        name: d.name.clone(),
                        len: d.len,
                    });
                }
            }
        }
        outside.retain(|o| !top.dims.iter().any(|d| d.name == o.name));
        outside.extend(std::mem::take(&mut top.dims));
        top.dims = outside;
        top
    }

    /// Every variable of the subtree, depth first.
    pub fn all_vars(&self) -> Vec<&Variable> {
        let mut out: Vec<&Variable> = self.vars.iter().collect();
        for g in &self.groups {
            out.extend(g.all_vars());
        }
        out
    }
}

/// The path of the group holding the node at `path` (`""`: the root).
fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |p| p.0)
}

/// True when group path `path` is `top` or below it.
pub fn within(path: &str, top: &str) -> bool {
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

/// True for attributes netCDF keeps to itself (not shown by `ncdump -h`).
fn is_internal(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.starts_with("_nczarr") || name == "_NCProperties" || name == "_ARRAY_DIMENSIONS"
}

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

/// The typed attributes of one node.
fn typed_attributes(node: &Node) -> Vec<Attribute> {
    let attrs = node.document.get("attributes").and_then(Value::as_object);
    let attrs = attrs.cloned().unwrap_or_default();
    let types = attr_types(&attrs);
    attrs
        .iter()
        .filter(|(name, _)| !is_internal(name))
        .map(|(name, value)| {
            let declared = types
                .get(name)
                .and_then(Value::as_str)
                .and_then(NcType::of_numpy);
            typed_value(name, value, declared)
        })
        .collect()
}

fn json_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => python_json(other),
    }
}

/// JSON as netCDF-c writes it back for complex attributes (`{"x": 1}`, `[1, 2]`).
fn python_json(value: &Value) -> String {
    match value {
        Value::Object(m) => {
            let items: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), python_json(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(python_json).collect();
            format!("[{}]", items.join(", "))
        }
        other => other.to_string(),
    }
}

fn as_int(v: &Value) -> Option<i128> {
    match v {
        Value::Bool(b) => Some(i128::from(*b)),
        Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
            .or_else(|| n.as_f64().map(|f| f as i128)),
        _ => None,
    }
}

/// An attribute typed by netCDF-c's rules: the declared type where NCZarr records one, else
/// inferred from the first value (integers: the smallest type holding it; floats: double;
/// booleans: ubyte; text: char); lists are vectors; other JSON becomes its text.
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
        _ => None,
    };
    let Some(ty) = declared.or(inferred) else {
        return text();
    };
    let numbers = !list.is_empty() && list.iter().all(|v| v.is_number() || v.is_boolean());
    let values = match ty {
        NcType::Char => None,
        NcType::String => Some(Values::Strings(list.iter().map(|v| json_text(v)).collect())),
        _ if !numbers => None,
        NcType::Float | NcType::Double => Some(Values::Floats(
            list.iter()
                .map(|v| match v {
                    Value::Bool(b) => f64::from(u8::from(*b)),
                    v => v.as_f64().unwrap_or(f64::NAN),
                })
                .collect(),
        )),
        _ => list
            .iter()
            .map(|v| as_int(v))
            .collect::<Option<_>>()
            .map(Values::Ints),
    };
    values.map_or_else(text, |values| attribute(ty, values))
}

fn zarr_type_name(node: &Node) -> String {
    ["data_type", "dtype"]
        .iter()
        .find_map(|k| node.document.get(*k))
        .map(json_text)
        .unwrap_or_else(|| "unknown".into())
}

/// The NCZarr child order of a group document (`vars`/`arrays`), if any.
fn nczarr_var_order(doc: &Map<String, Value>) -> Option<Vec<String>> {
    let info = ["_NCZARR_GROUP", "_nczarr_group"]
        .iter()
        .find_map(|k| doc.get(*k))
        .or_else(|| doc.get("attributes")?.get("_nczarr_group"))?;
    let list = info
        .get("vars")
        .or_else(|| info.get("arrays"))?
        .as_array()?;
    let names = list.iter().filter_map(Value::as_str);
    Some(names.map(String::from).collect())
}

/// The netCDF dataset of `hierarchy`: its root group; for a store whose root is an array, a
/// root group holding that one variable, named `root_name` (netCDF-c itself shows such a
/// store as an empty dataset). `None` when the store has no root node.
pub fn dataset(hierarchy: &Hierarchy, root_name: &str) -> Option<Group> {
    let nczarr = hierarchy.nodes.iter().any(|n| n.dimensions.is_nczarr());
    let mut groups: Vec<Group> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut orders: HashMap<String, Vec<String>> = HashMap::new();
    let mut arrays: Vec<&Node> = Vec::new();
    for node in &hierarchy.nodes {
        match node.kind {
            NodeKind::Group => {
                if !node.path.is_empty() && !index.contains_key(parent(&node.path)) {
                    continue;
                }
                let dims = node
                    .dimensions
                    .nczarr_shared
                    .iter()
                    .flatten()
                    .map(|(name, len)| Dimension {
                        name: name.clone(),
                        len: *len,
                    })
                    .collect();
                if let Some(order) = nczarr_var_order(&node.document) {
                    orders.insert(node.path.clone(), order);
                }
                index.insert(node.path.clone(), groups.len());
                groups.push(Group {
                    name: node.name().into(),
                    path: node.path.clone(),
                    dims,
                    vars: Vec::new(),
                    attrs: typed_attributes(node),
                    groups: Vec::new(),
                });
            }
            NodeKind::Array(_) => arrays.push(node),
        }
    }
    if !index.contains_key("") {
        // A store whose root is an array: a root group holding that one variable.
        if !arrays.iter().any(|n| n.path.is_empty()) {
            return None;
        }
        index.insert(String::new(), groups.len());
        groups.push(Group::default());
    }
    // Variables, group by group, in netCDF's order.
    let mut by_group: HashMap<&str, Vec<&Node>> = HashMap::new();
    for node in arrays {
        by_group.entry(parent(&node.path)).or_default().push(node);
    }
    for (path, list) in by_group.iter_mut() {
        // Those the NCZarr order names first, in that order; the others by path.
        let order = orders.get(*path).map_or(&[][..], Vec::as_slice);
        let rank = |n: &Node| order.iter().position(|o| o == n.name());
        list.sort_by_key(|n| (rank(n).unwrap_or(usize::MAX), n.path.clone()));
    }
    // Walk the groups depth first (the order netCDF-c defines pure Zarr dimensions in).
    let mut children: HashMap<String, Vec<String>> = HashMap::new();
    for g in groups.iter().filter(|g| !g.path.is_empty()) {
        let siblings = children.entry(parent(&g.path).to_string()).or_default();
        siblings.push(g.path.clone());
    }
    children.values_mut().for_each(|kids| kids.sort());
    let mut walk: Vec<String> = Vec::new();
    let mut stack = vec![String::new()];
    while let Some(p) = stack.pop() {
        stack.extend(children.get(&p).into_iter().flatten().rev().cloned());
        walk.push(p);
    }
    for gpath in &walk {
        let Some(list) = by_group.get(gpath.as_str()) else {
            continue;
        };
        for node in list {
            let NodeKind::Array(Ok(meta)) = &node.kind else {
                continue;
            };
            let dims = if nczarr {
                nczarr_dims(node, &meta.shape, gpath, |g, name| {
                    index
                        .get(g)
                        .is_some_and(|&i| groups[i].dims.iter().any(|d| d.name == name))
                })
            } else {
                let names = node.dimensions.axis_names(meta.shape.len());
                meta.shape
                    .iter()
                    .zip(&names)
                    .map(|(&len, name)| {
                        let wanted = name.as_deref().filter(|s| !s.is_empty());
                        pure_zarr_dim(&mut groups, &index, gpath, wanted, len)
                    })
                    .collect()
            };
            let name = match node.path.is_empty() {
                true => root_name.to_string(),
                false => node.name().to_string(),
            };
            let g = &mut groups[index[gpath.as_str()]];
            // A variable left out still defines its dimensions (above).
            let Some(ty) = NcType::of(&meta.dtype) else {
                g.attrs.push(Attribute {
                    name: "comment".into(),
                    ty: NcType::Char,
                    values: Values::Text(format!(
                        "variable {name} left out: Zarr type {} has no netCDF equivalent",
                        zarr_type_name(node)
                    )),
                });
                continue;
            };
            g.vars.push(Variable {
                name,
                path: node.path.clone(),
                ty,
                dims,
                attrs: typed_attributes(node),
            });
        }
    }
    // Nest the groups, children in depth-first order.
    let mut slots: Vec<Option<Group>> = groups.into_iter().map(Some).collect();
    fn nest(
        path: &str,
        slots: &mut Vec<Option<Group>>,
        index: &HashMap<String, usize>,
        children: &HashMap<String, Vec<String>>,
    ) -> Option<Group> {
        let mut g = slots[*index.get(path)?].take()?;
        let kids = children.get(path).into_iter().flatten();
        g.groups = kids
            .filter_map(|k| nest(k, slots, index, children))
            .collect();
        Some(g)
    }
    nest("", &mut slots, &index, &children)
}

/// A pure Zarr variable's dimension of length `len` in group `gpath`, as netCDF-c 4.10 defines
/// it: a `wanted` name is a dimension of the variable's own group (even where an ancestor has
/// one of that name); a dimension with no name is the root's `_Anonymous_Dim_<len>`, and so is
/// one whose name the group already gives another length (netCDF-c refuses such a store).
fn pure_zarr_dim(
    groups: &mut [Group],
    index: &HashMap<String, usize>,
    gpath: &str,
    wanted: Option<&str>,
    len: u64,
) -> DimRef {
    if let Some(dim) = wanted.and_then(|name| define(groups, index, gpath, name, len)) {
        return dim;
    }
    let name = anonymous_dim(len);
    define(groups, index, "", &name, len).unwrap_or(DimRef {
        group: String::new(),
        name,
        len,
    })
}

/// The dimension `name` of length `len` in `group`, defined there if it is not; `None` when the
/// group has a dimension of that name and another length.
fn define(
    groups: &mut [Group],
    index: &HashMap<String, usize>,
    group: &str,
    name: &str,
    len: u64,
) -> Option<DimRef> {
    let dims = &mut groups[index[group]].dims;
    match dims.iter().find(|d| d.name == name) {
        Some(d) if d.len != len => return None,
        Some(_) => {}
        None => dims.push(Dimension {
            name: name.to_string(),
            len,
        }),
    }
    Some(DimRef {
        group: group.to_string(),
        name: name.to_string(),
        len,
    })
}

/// The name netCDF-c gives a dimension of length `len` that has no name.
fn anonymous_dim(len: u64) -> String {
    format!("_Anonymous_Dim_{len}")
}

/// An NCZarr variable's dimensions, from its dimension references (`/g/x`, found in that
/// group), or for a variable without any, its dimension names (`x`, found as netCDF scopes
/// them: in the variable's group `gpath` or the nearest ancestor that `defines` that name).
fn nczarr_dims(
    node: &Node,
    shape: &[u64],
    gpath: &str,
    defines: impl Fn(&str, &str) -> bool,
) -> Vec<DimRef> {
    let dims = &node.dimensions;
    let refs: Vec<String> = match &dims.nczarr_references {
        Some(refs) => refs.clone(),
        None => dims.names.iter().flatten().flatten().cloned().collect(),
    };
    let scope = |name: &str| {
        let mut g = gpath;
        while !defines(g, name) && !g.is_empty() {
            g = parent(g);
        }
        g.to_string()
    };
    shape
        .iter()
        .enumerate()
        .map(|(i, &len)| match refs.get(i) {
            Some(fqn) if refs.len() == shape.len() && fqn.starts_with('/') => {
                let (group, name) = split_fqn(fqn);
                DimRef { group, name, len }
            }
            Some(name) if refs.len() == shape.len() => DimRef {
                group: scope(name),
                name: name.clone(),
                len,
            },
            _ => DimRef {
                group: String::new(),
                name: anonymous_dim(len),
                len,
            },
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
    }
}
