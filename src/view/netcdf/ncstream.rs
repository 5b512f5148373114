//! A group's subtree as one ncstream (netCDF-Java's streaming format): `CDFS`, a header message,
//! one data message per variable covering its whole shape with its values big-endian, and the
//! end marker. The framing and header are built up front (small); the values are read from the
//! variable's array file when that part of the stream is read, so a stream of any size is
//! served in bounded memory.
//!
//! String variables are sent as netCDF-Java's `NcStreamWriter` sends them (and siphon reads
//! them): after their data message, the element count as a varint, then per element a varint
//! byte length and its UTF-8 bytes. Their length is known only after reading every element, so
//! each string variable is measured once, on the first `stat` or read of a stream holding it,
//! keeping one checkpoint per `MARK` elements to find a read's bytes ([`MeasuredStrings`]); a
//! stream without strings is measured up front. The first `stat` of a stream holding large
//! string arrays pays for reading them (see docs/what-the-mount-shows.md).

use super::model::{Attribute, Dataset, Dimension, NcType, Values, Variable};
use super::proto;
use crate::view::kinds::overlap;
use crate::view::{IoCause, View, ViewError};
use parking_lot::Mutex;
use prost::encoding::{encode_varint, encoded_len_varint};
use prost::Message;
use std::collections::HashMap;
use std::mem::size_of;
use std::sync::Arc;

const MAGIC_START: [u8; 4] = *b"CDFS";
const MAGIC_HEADER: [u8; 4] = [0xad, 0xec, 0xce, 0xda];
const MAGIC_DATA: [u8; 4] = [0xab, 0xec, 0xce, 0xba];
const MAGIC_END: [u8; 4] = [0xed, 0xed, 0xde, 0xde];

/// A string variable's elements between two checkpoints of its layout.
const MARK: u64 = 1024;

/// Where a string variable's elements come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strings {
    /// Variable-length array number N of the view (vlen-utf8, vlen-bytes, v3 string).
    Vlen(u32),
    /// Array file N of fixed-width elements (`|Sn`: `width` bytes, `<Un`: `width / 4` UTF-32
    /// code units), trailing NULs dropped as numpy reads them.
    Fixed {
        /// The array file.
        array: u32,
        /// Bytes per element.
        width: usize,
        /// True for UTF-32 (`<Un`).
        utf32: bool,
    },
}

/// The values of one variable, as the view serves them.
#[derive(Clone, Copy, Debug)]
pub enum Source {
    /// Array file N of `bytes` little-endian bytes.
    Values {
        /// The array file.
        array: u32,
        /// Its size.
        bytes: u64,
    },
    /// `count` strings.
    Strings {
        /// Where they are read.
        strings: Strings,
        /// How many.
        count: u64,
    },
}

/// One part of the stream.
enum Piece {
    /// Bytes built up front (magic numbers, messages, lengths).
    Bytes(Vec<u8>),
    /// The elements of array file number `array` (little-endian, `elem` bytes each), swapped to
    /// big-endian; `len` bytes.
    Values { array: u32, elem: usize, len: u64 },
    /// `count` strings, vlen-framed; length known once measured.
    Strings { strings: Strings, count: u64 },
}

/// A string variable's framed elements: their length, and a checkpoint (element, byte) every
/// `MARK` elements.
struct MeasuredPiece {
    marks: Vec<(u64, u64)>,
    len: u64,
}

/// The string variables measured so far, kept for every stream holding them.
#[derive(Default)]
pub struct MeasuredStrings(Mutex<HashMap<Strings, Arc<MeasuredPiece>>>);

impl MeasuredStrings {
    /// The measure of the `count` elements of `strings`, made now if not made before.
    fn get(
        &self,
        view: &View,
        strings: Strings,
        count: u64,
    ) -> Result<Arc<MeasuredPiece>, ViewError> {
        if let Some(measured) = self.0.lock().get(&strings) {
            return Ok(measured.clone());
        }
        let mut at = varint(count).len() as u64;
        let mut marks = vec![(0, at)];
        let mut framed = Vec::new();
        let mut from = 0;
        while from < count {
            let to = (from + MARK).min(count);
            each_string(view, strings, from, to, &mut |item| {
                framed.clear();
                frame_into(&mut framed, item);
                at = at.saturating_add(framed.len() as u64);
                Ok(())
            })?;
            from = to;
            if from < count {
                marks.push((from, at));
            }
        }
        let measured = Arc::new(MeasuredPiece { marks, len: at });
        self.0.lock().insert(strings, measured.clone());
        Ok(measured)
    }
}

/// Where each piece starts, and the measure of each string piece.
struct PieceOffsets {
    starts: Vec<u64>,
    size: u64,
    strings: HashMap<usize, Arc<MeasuredPiece>>,
}

/// The layout of one `.ncstream` file.
pub struct NcStreamLayout {
    pieces: Vec<Piece>,
    /// Measured on first use (at once when there are no strings); kept once known.
    layout: Mutex<Option<Arc<PieceOffsets>>>,
}

fn data_type(ty: NcType) -> proto::DataType {
    match ty {
        NcType::Byte => proto::DataType::Byte,
        NcType::Char => proto::DataType::Char,
        NcType::Short => proto::DataType::Short,
        NcType::Int => proto::DataType::Int,
        NcType::Int64 => proto::DataType::Long,
        NcType::UByte => proto::DataType::Ubyte,
        NcType::UShort => proto::DataType::Ushort,
        NcType::UInt => proto::DataType::Uint,
        NcType::UInt64 => proto::DataType::Ulong,
        NcType::Float => proto::DataType::Float,
        NcType::Double => proto::DataType::Double,
        NcType::String => proto::DataType::String,
    }
}

/// An attribute's values big-endian (or as `sdata` for strings).
fn attribute(a: &Attribute) -> proto::Attribute {
    let mut out = proto::Attribute {
        name: a.name.clone(),
        data_type: data_type(a.ty) as i32,
        ..Default::default()
    };
    let len = match &a.values {
        Values::Text(s) => {
            out.data = s.as_bytes().to_vec();
            s.len()
        }
        Values::Strings(list) => {
            out.sdata = list.clone();
            list.len()
        }
        Values::Ints(list) => {
            // Each value is within its type's range (see `model::Values`): the low bytes of its
            // two's complement are the value, nothing is cut.
            for &v in list {
                let be = (v as u64).to_be_bytes();
                out.data.extend_from_slice(&be[8 - a.ty.size()..]);
            }
            list.len()
        }
        Values::Floats(list) => {
            for &v in list {
                match a.ty {
                    // Within float's range (see `model::Values`).
                    NcType::Float => out.data.extend_from_slice(&(v as f32).to_be_bytes()),
                    _ => out.data.extend_from_slice(&v.to_be_bytes()),
                }
            }
            list.len()
        }
    };
    out.len = len as u32;
    out
}

fn dimension(name: &str, length: u64, is_unlimited: bool) -> proto::Dimension {
    proto::Dimension {
        name: name.into(),
        length,
        is_unlimited,
    }
}

fn variable(v: &Variable) -> proto::Variable {
    proto::Variable {
        name: v.name.clone(),
        data_type: data_type(v.ty) as i32,
        shape: (v.dims.iter())
            .map(|d| dimension(&d.name, d.len, d.unlimited))
            .collect(),
        atts: v.attrs.iter().map(attribute).collect(),
    }
}

/// Group `g` of `ds` without its subgroups; the top group `top` unnamed, declaring `top_dims`.
fn own_group(ds: &Dataset, g: usize, top: usize, top_dims: &[Dimension]) -> proto::Group {
    let group = &ds.groups[g];
    let (name, dims) = match g == top {
        true => ("", top_dims),
        false => (group.name.as_str(), &group.dims[..]),
    };
    proto::Group {
        name: name.into(),
        dims: (dims.iter())
            .map(|d| dimension(&d.name, d.len, d.unlimited))
            .collect(),
        vars: group.vars.iter().map(variable).collect(),
        atts: group.attrs.iter().map(attribute).collect(),
        groups: Vec::new(),
    }
}

/// The key of field `groups` (6, length-delimited) of a `Group` message.
const GROUPS_KEY: u8 = 6 << 3 | 2;
/// The key of field `root` (4, length-delimited) of a `Header` message.
const ROOT_KEY: u8 = 4 << 3 | 2;

/// The `Header` message of the subtree of group `top` (shown as the root, declaring
/// `top_dims`), length-delimited: the bytes prost writes for it, each group's own fields
/// encoded by prost and its subgroups framed here, so that each group is measured and encoded
/// once (prost measures a nested message again at each level above it).
fn header_message(ds: &Dataset, top: usize, top_dims: &[Dimension]) -> Vec<u8> {
    let end = ds.groups[top].end;
    // Each group's own fields, made once for measuring and encoding.
    let owns: Vec<proto::Group> = (top..end)
        .map(|g| own_group(ds, g, top, top_dims))
        .collect();
    // Each group's message length, its subgroups' first (they follow it in the numbering).
    let mut lens = vec![0u64; end - top];
    for g in (top..end).rev() {
        let subgroups = ds.children(g).map(|c| {
            let len = lens[c - top];
            1 + encoded_len_varint(len) as u64 + len
        });
        lens[g - top] = owns[g - top].encoded_len() as u64 + subgroups.sum::<u64>();
    }
    let location = proto::Header {
        location: ds.groups[top].path.clone(),
        ..Default::default()
    }
    .encode_to_vec();
    let version = proto::Header {
        version: 1,
        ..Default::default()
    }
    .encode_to_vec();
    let root = lens[0];
    let header =
        location.len() as u64 + 1 + encoded_len_varint(root) as u64 + root + version.len() as u64;
    let mut out = Vec::with_capacity(usize::try_from(header).unwrap_or(0).saturating_add(10));
    encode_varint(header, &mut out);
    out.extend(location);
    out.push(ROOT_KEY);
    encode_varint(root, &mut out);
    // Depth first, as the nesting writes them: a subgroup's key and length, then its fields.
    for g in top..end {
        if g != top {
            out.push(GROUPS_KEY);
            encode_varint(lens[g - top], &mut out);
        }
        owns[g - top].encode_raw(&mut out);
    }
    out.extend(version);
    out
}

/// A name as netCDF-Java writes it in a full name: `.` and `\` escaped with a backslash.
fn escape(name: &str) -> String {
    name.replace('\\', "\\\\").replace('.', "\\.")
}

fn varint(n: u64) -> Vec<u8> {
    let mut out = Vec::new();
    encode_varint(n, &mut out);
    out
}

/// The varint-framed bytes of one string element.
fn frame_into(out: &mut Vec<u8>, item: &[u8]) {
    encode_varint(item.len() as u64, out);
    out.extend_from_slice(item);
}

/// Bytes `offset..offset+len` of array file `array` into `buf` (cleared first); EIO when the
/// file ends before.
fn read_exactly(
    view: &View,
    array: u32,
    offset: u64,
    len: u64,
    buf: &mut Vec<u8>,
) -> Result<(), ViewError> {
    buf.clear();
    view.arrays[array as usize].read_data(&view.cache, 0, offset, len, buf.into())?;
    match buf.len() as u64 == len {
        true => Ok(()),
        false => Err(ViewError::Io(IoCause::Store)),
    }
}

/// Calls `each` with string elements `from..to` of `strings`, as UTF-8 (or raw) bytes.
fn each_string(
    view: &View,
    strings: Strings,
    from: u64,
    to: u64,
    each: &mut dyn FnMut(&[u8]) -> Result<(), ViewError>,
) -> Result<(), ViewError> {
    match strings {
        Strings::Vlen(k) => view.vlen[k as usize].items(view.vlen_reads(), from, to, each),
        Strings::Fixed {
            array,
            width,
            utf32,
        } => {
            let w = width.max(1) as u64;
            let step = (64 << 10) / w + 1;
            let (mut at, mut buf, mut text) = (from, Vec::new(), String::new());
            while at < to {
                let n = step.min(to - at);
                read_exactly(view, array, at * w, n * w, &mut buf)?;
                for cell in buf.chunks_exact(w as usize) {
                    if utf32 {
                        text.clear();
                        text.extend(
                            cell.chunks_exact(4)
                                .map(|u| u32::from_le_bytes([u[0], u[1], u[2], u[3]]))
                                .map(|u| char::from_u32(u).unwrap_or('\u{fffd}')),
                        );
                        each(text.trim_end_matches('\0').as_bytes())?;
                    } else {
                        let end = cell.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
                        each(&cell[..end])?;
                    }
                }
                at += n;
            }
            Ok(())
        }
    }
}

impl NcStreamLayout {
    /// The stream of group `top` of `ds` (shown as the stream's root). `sources` maps a
    /// variable (its group, its number there) to where its values are read; variables without
    /// one are declared in the header, their values not sent.
    pub fn new(
        ds: &Dataset,
        top: usize,
        sources: &HashMap<(usize, usize), Source>,
    ) -> NcStreamLayout {
        let top_path = &ds.groups[top].path;
        let mut pieces = Vec::new();
        let mut prefix = MAGIC_START.to_vec();
        prefix.extend_from_slice(&MAGIC_HEADER);
        prefix.extend(header_message(ds, top, &ds.top_dims(top)));
        pieces.push(Piece::Bytes(prefix));
        let mut size = 0u64;
        for (g, i, var) in ds.vars(top) {
            let (ty, Some(&source)) = (var.ty, sources.get(&(g, i))) else {
                continue;
            };
            let relative = var
                .path
                .strip_prefix(top_path.as_str())
                .unwrap_or(&var.path)
                .trim_start_matches('/');
            // A root array's node path is empty: its variable has the name it is shown by.
            let relative = if var.path.is_empty() {
                var.name.as_str()
            } else {
                relative
            };
            let full: Vec<String> = relative.split('/').map(escape).collect();
            let data = proto::Data {
                var_name: full.join("/"),
                data_type: data_type(ty) as i32,
                section: Some(proto::Section {
                    range: var
                        .dims
                        .iter()
                        .map(|d| proto::Range {
                            start: 0,
                            size: d.len,
                            stride: 1,
                        })
                        .collect(),
                }),
                bigend: true,
                version: 3,
            };
            let mut framing = MAGIC_DATA.to_vec();
            framing.extend(data.encode_length_delimited_to_vec());
            match source {
                Source::Values { array, bytes } if ty != NcType::String => {
                    framing.extend(varint(bytes));
                    let total = size
                        .checked_add(framing.len() as u64)
                        .and_then(|s| s.checked_add(bytes))
                        .filter(|s| s.checked_add(1 << 32).is_some());
                    let Some(total) = total else {
                        log::warn!(
                            "{}: values left out of the .ncstream: it would pass 2^64 bytes",
                            var.path
                        );
                        continue;
                    };
                    size = total;
                    pieces.push(Piece::Bytes(framing));
                    pieces.push(Piece::Values {
                        array,
                        elem: ty.size(),
                        len: bytes,
                    });
                }
                Source::Strings { strings, count } if ty == NcType::String => {
                    pieces.push(Piece::Bytes(framing));
                    pieces.push(Piece::Strings { strings, count });
                }
                _ => log::error!("{}: values do not match its type {ty:?}", var.path),
            }
        }
        pieces.push(Piece::Bytes(MAGIC_END.to_vec()));
        let file = NcStreamLayout {
            pieces,
            layout: Mutex::new(None),
        };
        if !file
            .pieces
            .iter()
            .any(|p| matches!(p, Piece::Strings { .. }))
        {
            // No string piece: the measure of strings is never asked for.
            let none = Arc::new(MeasuredPiece {
                marks: Vec::new(),
                len: 0,
            });
            let layout = file.measure(|_, _| Ok(none.clone()));
            *file.layout.lock() = layout.ok().map(Arc::new);
        }
        file
    }

    /// About how many bytes it holds.
    pub fn held(&self) -> usize {
        let bytes = self.pieces.iter().map(|p| match p {
            Piece::Bytes(b) => b.len(),
            _ => 0,
        });
        let offsets = self.pieces.len() * size_of::<u64>() * 2;
        size_of::<Self>() + self.pieces.len() * size_of::<Piece>() + bytes.sum::<usize>() + offsets
    }

    /// The offsets of every piece; `strings(strings, count)` gives a string piece's measure.
    fn measure(
        &self,
        strings: impl Fn(Strings, u64) -> Result<Arc<MeasuredPiece>, ViewError>,
    ) -> Result<PieceOffsets, ViewError> {
        let mut layout = PieceOffsets {
            starts: Vec::with_capacity(self.pieces.len()),
            size: 0,
            strings: HashMap::new(),
        };
        for (i, piece) in self.pieces.iter().enumerate() {
            layout.starts.push(layout.size);
            let len = match piece {
                Piece::Bytes(b) => b.len() as u64,
                Piece::Values { len, .. } => *len,
                Piece::Strings { strings: s, count } => {
                    let measured = strings(*s, *count)?;
                    let len = measured.len;
                    layout.strings.insert(i, measured);
                    len
                }
            };
            layout.size = layout.size.saturating_add(len);
        }
        Ok(layout)
    }

    /// The layout, measured now if not yet known (string variables from `measured`).
    fn layout(
        &self,
        view: &View,
        measured: &MeasuredStrings,
    ) -> Result<Arc<PieceOffsets>, ViewError> {
        if let Some(layout) = self.layout.lock().as_ref() {
            return Ok(layout.clone());
        }
        let layout = Arc::new(self.measure(|strings, count| measured.get(view, strings, count))?);
        *self.layout.lock() = Some(layout.clone());
        Ok(layout)
    }

    /// Size of the stream in bytes (measured on first call when it holds strings).
    pub fn size(&self, view: &View, measured: &MeasuredStrings) -> Result<u64, ViewError> {
        Ok(self.layout(view, measured)?.size)
    }

    /// Appends up to `len` bytes from `offset` to `out`.
    pub fn read(
        &self,
        view: &View,
        measured: &MeasuredStrings,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<(), ViewError> {
        let layout = self.layout(view, measured)?;
        let end = offset.saturating_add(len).min(layout.size);
        let next = |i: usize| layout.starts.get(i + 1).copied().unwrap_or(layout.size);
        let first = layout
            .starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1);
        for (i, piece) in self.pieces.iter().enumerate().skip(first) {
            let (start, stop) = (layout.starts[i], next(i));
            if start >= end {
                break;
            }
            if stop <= offset {
                continue;
            }
            let from = offset.max(start) - start;
            let to = end.min(stop) - start;
            match piece {
                Piece::Bytes(b) => out.extend_from_slice(&b[from as usize..to as usize]),
                Piece::Values { array, elem, .. } => {
                    let e = *elem as u64;
                    let (lo, hi) = (from / e * e, to.div_ceil(e) * e);
                    let mut buf = Vec::with_capacity((hi - lo) as usize);
                    read_exactly(view, *array, lo, hi - lo, &mut buf)?;
                    for value in buf.chunks_exact_mut(*elem) {
                        value.reverse();
                    }
                    out.extend_from_slice(overlap(&buf, lo, from, to));
                }
                Piece::Strings { strings, count } => {
                    let marks = &layout.strings[&i].marks;
                    read_strings(view, *strings, *count, marks, from, to, out)?;
                }
            }
        }
        Ok(())
    }
}

/// Bytes `from..to` of a string piece of `count` elements with checkpoints `marks`.
fn read_strings(
    view: &View,
    strings: Strings,
    count: u64,
    marks: &[(u64, u64)],
    from: u64,
    to: u64,
    out: &mut Vec<u8>,
) -> Result<(), ViewError> {
    out.extend_from_slice(overlap(&varint(count), 0, from, to));
    let mark = marks.partition_point(|&(_, b)| b <= from).saturating_sub(1);
    let (mut element, mut at) = marks[mark];
    let mut framed = Vec::new();
    while element < count && at < to {
        let next = (element + MARK).min(count);
        each_string(view, strings, element, next, &mut |item| {
            framed.clear();
            frame_into(&mut framed, item);
            out.extend_from_slice(overlap(&framed, at, from, to));
            at += framed.len() as u64;
            Ok(())
        })?;
        element = next;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::netcdf::model::{DimGroup, DimRef, Group};

    fn dim(name: &str, len: u64) -> Dimension {
        Dimension {
            name: name.into(),
            len,
            unlimited: name == "t",
        }
    }

    fn var(group: usize, path: &str, d: &Dimension) -> Variable {
        Variable {
            name: path.rsplit('/').next().unwrap().into(),
            path: path.into(),
            ty: NcType::Short,
            dims: vec![DimRef {
                group: DimGroup::Group(group),
                name: d.name.clone(),
                len: d.len,
                unlimited: d.unlimited,
                seen: Some(group),
            }],
            attrs: vec![Attribute {
                name: "units".into(),
                ty: NcType::Char,
                values: Values::Text("m".into()),
            }],
        }
    }

    /// Groups `/`, `g1`, `g1/g11`, `g2`, `g2/g21`, numbered depth first.
    fn dataset() -> Dataset {
        let group = |path: &str, parent, depth, end, dims: Vec<Dimension>, vars| Group {
            name: path.rsplit('/').next().unwrap().into(),
            path: path.into(),
            dims,
            vars,
            attrs: vec![Attribute {
                name: "n".into(),
                ty: NcType::Int,
                values: Values::Ints(vec![depth as i128]),
            }],
            parent,
            depth,
            end,
        };
        let (x, t) = (dim("x", 2), dim("t", 3));
        Dataset {
            groups: vec![
                group("", None, 0, 5, vec![x.clone()], vec![var(0, "a", &x)]),
                group(
                    "g1",
                    Some(0),
                    1,
                    3,
                    vec![t.clone()],
                    vec![var(1, "g1/b", &t)],
                ),
                group(
                    "g1/g11",
                    Some(1),
                    2,
                    3,
                    vec![],
                    vec![var(0, "g1/g11/c", &x)],
                ),
                group("g2", Some(0), 1, 5, vec![], vec![]),
                group("g2/g21", Some(3), 2, 5, vec![dim("z", 4)], vec![]),
            ],
        }
    }

    /// Group `g` with its subgroups nested, as prost encodes them itself.
    fn nested(ds: &Dataset, g: usize, top: usize, top_dims: &[Dimension]) -> proto::Group {
        let mut group = own_group(ds, g, top, top_dims);
        group.groups = ds
            .children(g)
            .map(|c| nested(ds, c, top, top_dims))
            .collect();
        group
    }

    #[test]
    fn header_message_is_the_bytes_prost_writes() {
        let ds = dataset();
        for top in 0..ds.groups.len() {
            let dims = ds.top_dims(top);
            let header = proto::Header {
                location: ds.groups[top].path.clone(),
                root: Some(nested(&ds, top, top, &dims)),
                version: 1,
            };
            let expected = header.encode_length_delimited_to_vec();
            assert_eq!(header_message(&ds, top, &dims), expected, "group {top}");
        }
        // `g1/g11` uses the root's `x`: its stream declares it.
        assert_eq!(ds.top_dims(2), vec![dim("x", 2)]);
    }
}
