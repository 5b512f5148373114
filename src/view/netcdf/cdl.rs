//! A group's subtree in CDL, formatted as `ncdump -h` prints it.

use super::model::{within, Attribute, DimRef, Group, NcType, Values};
use std::fmt::Write as _;

/// The CDL header of `group` (a subtree of the dataset), titled `netcdf NAME {`.
pub fn header(group: &Group, name: &str) -> String {
    let top = group.standalone();
    let mut out = format!("netcdf {} {{\n", escape_name(name));
    body(&top, &top.path, &[&top], 0, &mut out);
    out.push_str("}\n");
    out
}

/// Variable names ncdump follows with a space before `:` in attribute lines.
const KEYWORDS: [&str; 5] = ["variables", "dimensions", "data", "group", "types"];

fn indent(level: usize) -> String {
    "  ".repeat(level)
}

/// The name a variable's declaration uses for dimension `d`: its own name when the nearest
/// definition in scope is `d`, else its fully qualified name.
fn dim_name(d: &DimRef, scope: &[&Group], top_path: &str) -> String {
    let nearest = scope
        .iter()
        .rev()
        .find(|g| g.dims.iter().any(|x| x.name == d.name));
    match nearest {
        Some(g) if g.path == d.group || (g.path == top_path && !within(&d.group, top_path)) => {
            escape_name(&d.name)
        }
        _ => {
            let parts = d.group.split('/').filter(|p| !p.is_empty());
            let parts = parts.chain([d.name.as_str()]);
            parts.map(|p| format!("/{}", escape_name(p))).collect()
        }
    }
}

fn body(g: &Group, top_path: &str, scope: &[&Group], level: usize, out: &mut String) {
    let ind = indent(level);
    if !g.dims.is_empty() {
        let _ = writeln!(out, "{ind}dimensions:");
        for d in &g.dims {
            let name = escape_name(&d.name);
            let _ = match d.unlimited {
                true => writeln!(out, "{ind}\t{name} = UNLIMITED ; // ({} currently)", d.len),
                false => writeln!(out, "{ind}\t{name} = {} ;", d.len),
            };
        }
    }
    if !g.vars.is_empty() {
        let _ = writeln!(out, "{ind}variables:");
        for v in &g.vars {
            let ty = v.ty.cdl_name();
            let _ = write!(out, "{ind}\t{ty} {}", escape_name(&v.name));
            if !v.dims.is_empty() {
                let names: Vec<String> = v
                    .dims
                    .iter()
                    .map(|d| dim_name(d, scope, top_path))
                    .collect();
                let _ = write!(out, "({})", names.join(", "));
            }
            out.push_str(" ;\n");
            // ncdump separates a variable named like a CDL keyword from the `:` of its
            // attributes, as ncgen needs.
            let mut owner = escape_name(&v.name);
            if KEYWORDS.contains(&v.name.as_str()) {
                owner.push(' ');
            }
            for a in &v.attrs {
                attribute(&owner, a, &ind, out);
            }
        }
    }
    if !g.attrs.is_empty() {
        let which = if level == 0 { "global" } else { "group" };
        let _ = writeln!(out, "\n{ind}// {which} attributes:");
        for a in &g.attrs {
            attribute("", a, &ind, out);
        }
    }
    for child in &g.groups {
        let _ = writeln!(out, "\n{ind}group: {} {{", escape_name(&child.name));
        let mut inner = scope.to_vec();
        inner.push(child);
        body(child, top_path, &inner, level + 1, out);
        let _ = writeln!(
            out,
            "{}}} // group {}",
            indent(level + 1),
            escape_name(&child.name)
        );
    }
}

fn attribute(owner: &str, a: &Attribute, ind: &str, out: &mut String) {
    let prefix = if a.ty == NcType::String {
        "string "
    } else {
        ""
    };
    let _ = write!(out, "{ind}\t\t{prefix}{owner}:{} = ", escape_name(&a.name));
    let items: Vec<String> = match &a.values {
        // NC_CHAR text ends at its last non-NUL character; an NC_STRING at its first NUL.
        Values::Text(s) => vec![quote(s.trim_end_matches('\0'))],
        Values::Strings(list) => list
            .iter()
            .map(|s| quote(s.split('\0').next().unwrap_or_default()))
            .collect(),
        Values::Ints(list) => list
            .iter()
            .map(|v| format!("{v}{}", suffix(a.ty)))
            .collect(),
        Values::Floats(list) => list
            .iter()
            .map(|&v| match a.ty {
                NcType::Float => format_float(v, 7, "f"),
                _ => format_float(v, 15, ""),
            })
            .collect(),
    };
    let _ = writeln!(out, "{} ;", items.join(", "));
}

fn suffix(ty: NcType) -> &'static str {
    match ty {
        NcType::Byte => "b",
        NcType::Short => "s",
        NcType::Int64 => "LL",
        NcType::UByte => "UB",
        NcType::UShort => "US",
        NcType::UInt => "U",
        NcType::UInt64 => "ULL",
        _ => "",
    }
}

/// A float as ncdump prints it: `%#.<digits>g` with trailing zeros trimmed, then `suffix`
/// (`f` for floats); NaN and infinities by name.
pub fn format_float(v: f64, digits: usize, suffix: &str) -> String {
    if v.is_nan() {
        return format!("NaN{suffix}");
    }
    if v.is_infinite() {
        let sign = if v < 0.0 { "-" } else { "" };
        return format!("{sign}Infinity{suffix}");
    }
    let sci = format!("{:.*e}", digits - 1, v);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    // `%#g`: a decimal point always, trailing zeros dropped.
    let point = |s: &str| match s.contains('.') {
        true => s.trim_end_matches('0').to_string(),
        false => format!("{s}."),
    };
    if exp < -4 || exp >= digits as i32 {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}{suffix}", point(mantissa), exp.abs())
    } else {
        let decimals = (digits as i32 - 1 - exp).max(0) as usize;
        format!("{}{suffix}", point(&format!("{v:.decimals$}")))
    }
}

/// A CDL string literal as ncdump writes it for a netCDF-4 file: quoted, with C escapes (a
/// newline as `\n` within the one literal), other control characters and DEL in octal.
fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\'' => out.push_str("\\'"),
            c if c.is_ascii_control() => {
                let _ = write!(out, "\\{:03o}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A name as ncdump writes it: CDL's special characters and a leading digit escaped with a
/// backslash, control characters and DEL as `\%xx` (two hex digits).
pub fn escape_name(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_control() {
            let _ = write!(out, "\\%{:02x}", c as u32);
            continue;
        }
        let special = " !\"#$&'()*,:;<=>?[\\]^`{|}~".contains(c);
        if special || (i == 0 && c.is_ascii_digit()) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::netcdf::model::{Dimension, Variable};

    #[test]
    fn floats_print_as_ncdump_does() {
        assert_eq!(format_float(-999.0, 7, "f"), "-999.f");
        assert_eq!(format_float(0.25, 7, "f"), "0.25f");
        assert_eq!(format_float(2.0, 15, ""), "2.");
        assert_eq!(format_float(1e300, 15, ""), "1.e+300");
        assert_eq!(format_float(0.1, 15, ""), "0.1");
        assert_eq!(format_float(9.96921e36, 7, "f"), "9.96921e+36f");
        assert_eq!(format_float(f64::NAN, 7, "f"), "NaNf");
        assert_eq!(format_float(1.5e-5, 15, ""), "1.5e-05");
    }

    #[test]
    fn names_and_strings_are_escaped() {
        assert_eq!(escape_name("my dim"), "my\\ dim");
        assert_eq!(escape_name("1x"), "\\1x");
        assert_eq!(quote("hi \"q\"\n"), "\"hi \\\"q\\\"\\n\"");
        // As ncdump (4.9.0 and 4.10.1) prints them: `%` as it is, control characters and DEL
        // as `\%xx`; in text, a newline within the one literal (netCDF-4), `'` escaped, control
        // characters and DEL in octal.
        assert_eq!(escape_name("x%y"), "x%y");
        assert_eq!(escape_name("a\u{1}b\tc\u{7f}"), "a\\%01b\\%09c\\%7f");
        assert_eq!(quote("a\nb"), "\"a\\nb\"");
        assert_eq!(quote("it's\u{7f}\u{1}\0é"), "\"it\\'s\\177\\001\\000é\"");
    }

    fn text(ty: NcType, values: Values) -> String {
        let mut out = String::new();
        let a = Attribute {
            name: "a".into(),
            ty,
            values,
        };
        attribute("", &a, "", &mut out);
        out
    }

    #[test]
    fn nuls_end_text_as_ncdump_reads_it() {
        // ncdump of a netCDF-4 file: `:a = "a\000b\000\000"` prints as "a\000b"; an NC_STRING
        // ends at its first NUL.
        let chars = Values::Text("a\0b\0\0".into());
        assert_eq!(text(NcType::Char, chars), "\t\t:a = \"a\\000b\" ;\n");
        let strings = Values::Strings(vec!["a\0b".into(), "c".into()]);
        assert_eq!(
            text(NcType::String, strings),
            "\t\tstring :a = \"a\", \"c\" ;\n"
        );
    }

    #[test]
    fn keyword_variables_and_unlimited_dimensions() {
        let units = Attribute {
            name: "units".into(),
            ty: NcType::Char,
            values: Values::Text("K".into()),
        };
        let time = DimRef {
            group: String::new(),
            name: "time".into(),
            len: 4,
            unlimited: true,
        };
        let var = |name: &str| Variable {
            name: name.into(),
            path: name.into(),
            ty: NcType::Int,
            dims: vec![time.clone()],
            attrs: vec![units.clone()],
        };
        let root = Group {
            dims: vec![Dimension {
                name: "time".into(),
                len: 4,
                unlimited: true,
            }],
            vars: vec![var("data"), var("datum")],
            ..Group::default()
        };
        assert_eq!(
            header(&root, "n"),
            "netcdf n {\ndimensions:\n\ttime = UNLIMITED ; // (4 currently)\nvariables:\n\
             \tint data(time) ;\n\t\tdata :units = \"K\" ;\n\
             \tint datum(time) ;\n\t\tdatum:units = \"K\" ;\n}\n"
        );
    }
}
