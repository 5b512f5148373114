//! A group's subtree in CDL, formatted as `ncdump -h` prints it. A header is made a line at a
//! time from the dataset, so that any part of it is made without the rest: one pass finds its
//! size and a checkpoint every `MARK` bytes, from which each read is made again.

use super::model::{Attribute, Dataset, DimGroup, DimRef, Dimension, NcType, Values};
use crate::view::kinds::overlap;
use parking_lot::Mutex;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::mem::size_of;
use std::sync::Arc;

/// Bytes of a header between two checkpoints.
const MARK: u64 = 64 << 10;

/// Variable names ncdump follows with a space before `:` in attribute lines.
const KEYWORDS: [&str; 5] = ["variables", "dimensions", "data", "group", "types"];

/// One line (a few for a group's opening) of a header: where it is in the subtree.
#[derive(Clone, Copy, Debug)]
struct At {
    group: usize,
    part: Part,
}

/// A line of a group's part of a header.
#[derive(Clone, Copy, Debug)]
enum Part {
    /// `netcdf NAME {` for the top group, `group: NAME {` (after an empty line) for the others.
    Open,
    DimsHeading,
    Dim(usize),
    VarsHeading,
    /// Variable N's declaration.
    Var(usize),
    /// Attribute M of variable N.
    VarAttr(usize, usize),
    AttrsHeading,
    Attr(usize),
    /// `}` for the top group, `} // group NAME` for the others.
    Close,
}

/// The sections of a group's part, in order.
#[derive(Clone, Copy, PartialEq, PartialOrd)]
enum Section {
    Dims,
    Vars,
    Attrs,
    Groups,
}

/// The last line longer than `MARK` a read of a header made (a long attribute), kept for the
/// reads of the rest of it: by the header's top group and the line's first byte.
#[derive(Default)]
pub struct LongLine(Mutex<Option<(usize, u64, Arc<str>)>>);

impl LongLine {
    fn get(&self, top: usize, byte: u64) -> Option<Arc<str>> {
        let kept = self.0.lock();
        let (t, b, line) = kept.as_ref()?;
        (*t == top && *b == byte).then(|| line.clone())
    }

    fn keep(&self, top: usize, byte: u64, line: &str) {
        *self.0.lock() = Some((top, byte, Arc::from(line)));
    }
}

/// The CDL header of one group of a dataset (the subtree below it, as a dataset of its own),
/// titled `netcdf NAME {`: its size and checkpoints; its bytes are made as they are read.
pub struct CdlHeader {
    top: usize,
    title: String,
    /// The top group's dimensions, and their names.
    dims: Vec<Dimension>,
    names: HashSet<String>,
    size: u64,
    /// A line's first byte and the line, every `MARK` bytes.
    marks: Vec<(u64, At)>,
}

impl CdlHeader {
    /// The header of group `top` of `ds`, titled `name`, measured (made once, not kept).
    pub fn new(ds: &Dataset, top: usize, name: &str) -> CdlHeader {
        let dims = ds.top_dims(top);
        let mut header = CdlHeader {
            top,
            title: escape_name(name),
            names: dims.iter().map(|d| d.name.clone()).collect(),
            dims,
            size: 0,
            marks: Vec::new(),
        };
        let (mut size, mut marks, mut line) = (0u64, Vec::new(), String::new());
        let mut at = Some(At {
            group: top,
            part: Part::Open,
        });
        while let Some(here) = at {
            if marks.last().is_none_or(|&(m, _)| size >= m + MARK) {
                marks.push((size, here));
            }
            line.clear();
            header.write(ds, here, &mut line);
            size += line.len() as u64;
            at = header.next(ds, here);
        }
        (header.size, header.marks) = (size, marks);
        header
    }

    /// Its size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// About how many bytes it holds.
    pub fn held(&self) -> usize {
        let dims = self
            .dims
            .iter()
            .map(|d| 2 * d.name.len() + 64)
            .sum::<usize>();
        size_of::<Self>() + self.title.len() + dims + self.marks.len() * size_of::<(u64, At)>()
    }

    /// Appends its bytes `offset..offset+len` (those there are) to `out`; `ds` is the dataset
    /// it was made from; a line longer than `MARK` is kept in `long` for the reads after.
    pub fn read(&self, ds: &Dataset, long: &LongLine, offset: u64, len: u64, out: &mut Vec<u8>) {
        let end = offset.saturating_add(len).min(self.size);
        let mark = self.marks.partition_point(|&(m, _)| m <= offset);
        let Some(&(mut byte, first)) = self.marks.get(mark.saturating_sub(1)) else {
            return;
        };
        let (mut at, mut line) = (Some(first), String::new());
        while let Some(here) = at.filter(|_| byte < end) {
            let kept = long.get(self.top, byte);
            let text = match &kept {
                Some(text) => text,
                None => {
                    line.clear();
                    self.write(ds, here, &mut line);
                    if line.len() as u64 > MARK {
                        long.keep(self.top, byte, &line);
                    }
                    line.as_str()
                }
            };
            out.extend_from_slice(overlap(text.as_bytes(), byte, offset, end));
            byte += text.len() as u64;
            at = self.next(ds, here);
        }
    }

    /// The dimensions group `g` declares.
    fn dims<'a>(&'a self, ds: &'a Dataset, g: usize) -> &'a [Dimension] {
        match g == self.top {
            true => &self.dims,
            false => &ds.groups[g].dims,
        }
    }

    /// The first line of group `g` from `section` on.
    fn from(&self, ds: &Dataset, g: usize, section: Section) -> At {
        let group = &ds.groups[g];
        let part = if section <= Section::Dims && !self.dims(ds, g).is_empty() {
            Part::DimsHeading
        } else if section <= Section::Vars && !group.vars.is_empty() {
            Part::VarsHeading
        } else if section <= Section::Attrs && !group.attrs.is_empty() {
            Part::AttrsHeading
        } else if g + 1 < group.end {
            return At {
                group: g + 1,
                part: Part::Open,
            };
        } else {
            Part::Close
        };
        At { group: g, part }
    }

    /// The line after `at`; `None` after the last.
    fn next(&self, ds: &Dataset, at: At) -> Option<At> {
        let g = at.group;
        let group = &ds.groups[g];
        let vars = &group.vars;
        let part = match at.part {
            Part::Open => return Some(self.from(ds, g, Section::Dims)),
            Part::DimsHeading => Part::Dim(0),
            Part::Dim(i) if i + 1 < self.dims(ds, g).len() => Part::Dim(i + 1),
            Part::Dim(_) => return Some(self.from(ds, g, Section::Vars)),
            Part::VarsHeading => Part::Var(0),
            Part::Var(i) if !vars[i].attrs.is_empty() => Part::VarAttr(i, 0),
            Part::VarAttr(i, j) if j + 1 < vars[i].attrs.len() => Part::VarAttr(i, j + 1),
            Part::Var(i) | Part::VarAttr(i, _) if i + 1 < vars.len() => Part::Var(i + 1),
            Part::Var(_) | Part::VarAttr(..) => return Some(self.from(ds, g, Section::Attrs)),
            Part::AttrsHeading => Part::Attr(0),
            Part::Attr(i) if i + 1 < group.attrs.len() => Part::Attr(i + 1),
            Part::Attr(_) => return Some(self.from(ds, g, Section::Groups)),
            Part::Close if g == self.top => return None,
            Part::Close => {
                let parent = group.parent?;
                return Some(match group.end < ds.groups[parent].end {
                    true => At {
                        group: group.end,
                        part: Part::Open,
                    },
                    false => At {
                        group: parent,
                        part: Part::Close,
                    },
                });
            }
        };
        Some(At { group: g, part })
    }

    /// Appends line `at` to `out`.
    fn write(&self, ds: &Dataset, at: At, out: &mut String) {
        let group = &ds.groups[at.group];
        let level = group.depth - ds.groups[self.top].depth;
        let ind = indent(level);
        let top = at.group == self.top;
        let _ = match at.part {
            Part::Open if top => writeln!(out, "netcdf {} {{", self.title),
            Part::Open => {
                let name = escape_name(&group.name);
                writeln!(out, "\n{}group: {name} {{", indent(level - 1))
            }
            Part::DimsHeading => writeln!(out, "{ind}dimensions:"),
            Part::Dim(i) => {
                let d = &self.dims(ds, at.group)[i];
                let name = escape_name(&d.name);
                match d.unlimited {
                    true => writeln!(out, "{ind}\t{name} = UNLIMITED ; // ({} currently)", d.len),
                    false => writeln!(out, "{ind}\t{name} = {} ;", d.len),
                }
            }
            Part::VarsHeading => writeln!(out, "{ind}variables:"),
            Part::Var(i) => {
                let v = &group.vars[i];
                let ty = v.ty.cdl_name();
                let _ = write!(out, "{ind}\t{ty} {}", escape_name(&v.name));
                if !v.dims.is_empty() {
                    let names: Vec<String> = v.dims.iter().map(|d| self.dim_name(ds, d)).collect();
                    let _ = write!(out, "({})", names.join(", "));
                }
                writeln!(out, " ;")
            }
            Part::VarAttr(i, j) => {
                let v = &group.vars[i];
                // ncdump separates a variable named like a CDL keyword from the `:` of its
                // attributes, as ncgen needs.
                let mut owner = escape_name(&v.name);
                if KEYWORDS.contains(&v.name.as_str()) {
                    owner.push(' ');
                }
                attribute(&owner, &v.attrs[j], &ind, out);
                Ok(())
            }
            Part::AttrsHeading => {
                let which = if level == 0 { "global" } else { "group" };
                writeln!(out, "\n{ind}// {which} attributes:")
            }
            Part::Attr(i) => {
                attribute("", &group.attrs[i], &ind, out);
                Ok(())
            }
            Part::Close if top => writeln!(out, "}}"),
            Part::Close => writeln!(out, "{ind}}} // group {}", escape_name(&group.name)),
        };
    }

    /// The name a variable's declaration uses for dimension `d`: its own name when the
    /// nearest definition of that name in scope (the top group's dimensions standing for
    /// every group above it) is `d`, else its fully qualified name.
    fn dim_name(&self, ds: &Dataset, d: &DimRef) -> String {
        let top = self.top;
        let below_top = d
            .seen
            .filter(|&s| s != top && ds.within(&DimGroup::Group(s), top));
        let own = match below_top {
            Some(s) => d.group == DimGroup::Group(s),
            None if self.names.contains(&d.name) => {
                d.group == DimGroup::Group(top) || !ds.within(&d.group, top)
            }
            None => false,
        };
        if own {
            return escape_name(&d.name);
        }
        let parts = ds.path(&d.group).split('/').filter(|p| !p.is_empty());
        let parts = parts.chain([d.name.as_str()]);
        parts.map(|p| format!("/{}", escape_name(p))).collect()
    }
}

fn indent(level: usize) -> String {
    "  ".repeat(level)
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
    use crate::view::netcdf::model::{Group, Variable};

    /// The whole header of group `top` of `ds`.
    fn header(ds: &Dataset, top: usize, name: &str) -> String {
        let header = CdlHeader::new(ds, top, name);
        let mut out = Vec::new();
        header.read(ds, &LongLine::default(), 0, header.size(), &mut out);
        String::from_utf8(out).unwrap()
    }

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
            group: DimGroup::Group(0),
            name: "time".into(),
            len: 4,
            unlimited: true,
            seen: Some(0),
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
            end: 1,
            ..Group::default()
        };
        let ds = Dataset { groups: vec![root] };
        assert_eq!(
            header(&ds, 0, "n"),
            "netcdf n {\ndimensions:\n\ttime = UNLIMITED ; // (4 currently)\nvariables:\n\
             \tint data(time) ;\n\t\tdata :units = \"K\" ;\n\
             \tint datum(time) ;\n\t\tdatum:units = \"K\" ;\n}\n"
        );
    }

    /// A group of `n` variables with an attribute each, below a root with one attribute and a
    /// long one (several checkpoints long).
    fn nested(n: usize) -> Dataset {
        let attr = |name: &str| Attribute {
            name: name.into(),
            ty: NcType::Char,
            values: Values::Text("some text".into()),
        };
        let var = |i: usize| Variable {
            name: format!("v{i}"),
            path: format!("g/v{i}"),
            ty: NcType::Float,
            dims: Vec::new(),
            attrs: vec![attr("units")],
        };
        let long = Attribute {
            name: "history".into(),
            ty: NcType::Char,
            values: Values::Text("a line\n".repeat(30_000)),
        };
        let root = Group {
            attrs: vec![attr("title"), long],
            end: 2,
            ..Group::default()
        };
        let g = Group {
            name: "g".into(),
            path: "g".into(),
            vars: (0..n).map(var).collect(),
            parent: Some(0),
            depth: 1,
            end: 2,
            ..Group::default()
        };
        Dataset {
            groups: vec![root, g],
        }
    }

    #[test]
    fn reads_anywhere_equal_the_whole_header() {
        let ds = nested(5000);
        let whole = header(&ds, 0, "n");
        assert!(whole.len() as u64 > 3 * MARK, "{} bytes", whole.len());
        let history = format!("\t\t:history = \"{}\" ;\n", "a line\\n".repeat(30_000));
        let start = format!(
            "netcdf n {{\n\n// global attributes:\n\t\t:title = \"some text\" ;\n{history}\n\
             group: g {{\n  variables:\n  \tfloat v0 ;\n  \t\tv0:units = \"some text\" ;\n"
        );
        assert!(whole.starts_with(&start));
        assert!(whole.ends_with("  \t\tv4999:units = \"some text\" ;\n  } // group g\n}\n"));
        let made = CdlHeader::new(&ds, 0, "n");
        assert_eq!(made.size(), whole.len() as u64);
        assert!(made.marks.len() > 3);
        let long = LongLine::default();
        for step in [997, 4096, MARK - 1, MARK + 1] {
            let mut pieces = Vec::new();
            let mut offset = 0;
            while offset < made.size() + 10 {
                made.read(&ds, &long, offset, step, &mut pieces);
                offset += step;
            }
            assert!(pieces == whole.as_bytes(), "read in pieces of {step}");
        }
        // The long attribute's line, made once for the reads across it.
        assert!(long
            .get(0, start.find("\t\t:history").unwrap() as u64)
            .is_some());
        // The group's own header: its lines one level out.
        let sub = header(&ds, 1, "g");
        assert!(sub.starts_with("netcdf g {\nvariables:\n\tfloat v0 ;\n\t\tv0:units"));
        assert!(sub.ends_with("\t\tv4999:units = \"some text\" ;\n}\n"));
    }
}
