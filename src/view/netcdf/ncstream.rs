//! A group's subtree as one ncstream (netCDF-Java's streaming format): `CDFS`, a header message,
//! one data message per variable covering its whole shape with its values big-endian, and the
//! end marker. The framing and header are built up front (small); the values are read from the
//! variable's array file when that part of the stream is read, so a stream of any size is
//! served in bounded memory and its size is known without reading data.

use super::model::{Attribute, Group, NcType, Values, Variable};
use super::proto;
use crate::view::ViewError;
use prost::Message;
use std::collections::HashMap;

const MAGIC_START: [u8; 4] = *b"CDFS";
const MAGIC_HEADER: [u8; 4] = [0xad, 0xec, 0xce, 0xda];
const MAGIC_DATA: [u8; 4] = [0xab, 0xec, 0xce, 0xba];
const MAGIC_END: [u8; 4] = [0xed, 0xed, 0xde, 0xde];

/// One part of the stream.
enum Piece {
    /// Bytes built up front (magic numbers, messages, lengths).
    Bytes(Vec<u8>),
    /// The elements of array file number `array` (little-endian, `elem` bytes each), swapped to
    /// big-endian.
    Values { array: u32, elem: usize },
}

/// The layout of one `.ncstream` file.
pub struct NcStreamFile {
    /// Each part with its offset in the stream.
    pieces: Vec<(u64, u64, Piece)>,
    size: u64,
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
    match &a.values {
        Values::Text(s) => {
            out.len = s.len() as u32;
            out.data = s.as_bytes().to_vec();
        }
        Values::Strings(list) => {
            out.len = list.len() as u32;
            out.sdata = list.clone();
        }
        Values::Ints(list) => {
            out.len = list.len() as u32;
            for &v in list {
                let be = (v as u64).to_be_bytes();
                out.data.extend_from_slice(&be[8 - a.ty.size()..]);
            }
        }
        Values::Floats(list) => {
            out.len = list.len() as u32;
            for &v in list {
                match a.ty {
                    NcType::Float => out.data.extend_from_slice(&(v as f32).to_be_bytes()),
                    _ => out.data.extend_from_slice(&v.to_be_bytes()),
                }
            }
        }
    }
    out
}

fn dimension(name: &str, length: u64) -> proto::Dimension {
    proto::Dimension {
        name: name.into(),
        length,
    }
}

fn variable(v: &Variable) -> proto::Variable {
    proto::Variable {
        name: v.name.clone(),
        data_type: v.ty.map_or(0, |t| data_type(t) as i32),
        shape: v.dims.iter().map(|d| dimension(&d.name, d.len)).collect(),
        atts: v.attrs.iter().map(attribute).collect(),
    }
}

fn group(g: &Group, name: &str) -> proto::Group {
    proto::Group {
        name: name.into(),
        dims: g.dims.iter().map(|d| dimension(&d.name, d.len)).collect(),
        vars: g.vars.iter().map(variable).collect(),
        atts: g.attrs.iter().map(attribute).collect(),
        groups: g.groups.iter().map(|c| group(c, &c.name)).collect(),
    }
}

/// A name as netCDF-Java writes it in a full name: `.` and `\` escaped with a backslash.
fn escape(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c == '.' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `bytes` as a length-delimited protobuf message (varint length, then the message).
fn delimited(message: &impl Message) -> Vec<u8> {
    message.encode_length_delimited_to_vec()
}

fn varint(n: u64) -> Vec<u8> {
    let mut out = Vec::new();
    prost::encoding::encode_varint(n, &mut out);
    out
}

impl NcStreamFile {
    /// The stream of `top` (a group of the dataset, shown as the stream's root). `arrays` maps
    /// a variable's node path to its array file and that file's size in bytes. Variables of
    /// type string are declared in the header; their values are not sent.
    pub fn new(top: &Group, arrays: &HashMap<String, (u32, u64)>) -> NcStreamFile {
        let standalone = top.standalone();
        let header = proto::Header {
            location: top.path.clone(),
            root: Some(group(&standalone, "")),
            version: 1,
        };
        let mut file = NcStreamFile {
            pieces: Vec::new(),
            size: 0,
        };
        let mut prefix = MAGIC_START.to_vec();
        prefix.extend_from_slice(&MAGIC_HEADER);
        prefix.extend(delimited(&header));
        file.push(Piece::Bytes(prefix), None);
        for var in standalone.all_vars() {
            let (Some(ty), Some(&(array, bytes))) = (var.ty, arrays.get(&var.path)) else {
                continue;
            };
            if ty == NcType::String {
                continue;
            }
            let relative = var
                .path
                .strip_prefix(&top.path)
                .unwrap_or(&var.path)
                .trim_start_matches('/');
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
            framing.extend(delimited(&data));
            framing.extend(varint(bytes));
            let fits = (file.size + framing.len() as u64)
                .checked_add(bytes)
                .and_then(|s| s.checked_add(MAGIC_END.len() as u64))
                .is_some();
            if !fits {
                log::warn!(
                    "{}: values left out of the .ncstream: it would pass 2^64 bytes",
                    var.path
                );
                continue;
            }
            file.push(Piece::Bytes(framing), None);
            file.push(
                Piece::Values {
                    array,
                    elem: ty.size(),
                },
                Some(bytes),
            );
        }
        file.push(Piece::Bytes(MAGIC_END.to_vec()), None);
        file
    }

    fn push(&mut self, piece: Piece, len: Option<u64>) {
        let len = match &piece {
            Piece::Bytes(b) => b.len() as u64,
            Piece::Values { .. } => len.unwrap_or(0),
        };
        self.pieces.push((self.size, len, piece));
        self.size += len;
    }

    /// Size of the stream in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Appends up to `len` bytes from `offset` to `out`; `read_array(array, offset, len, out)`
    /// reads the little-endian bytes of an array file.
    pub fn read(
        &self,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
        read_array: impl Fn(u32, u64, u64, &mut Vec<u8>) -> Result<(), ViewError>,
    ) -> Result<(), ViewError> {
        let end = offset.saturating_add(len).min(self.size);
        let first = self.pieces.partition_point(|p| p.0 + p.1 <= offset);
        for (start, size, piece) in &self.pieces[first..] {
            if *start >= end {
                break;
            }
            let from = offset.max(*start) - start;
            let to = end.min(start + size) - start;
            match piece {
                Piece::Bytes(b) => out.extend_from_slice(&b[from as usize..to as usize]),
                Piece::Values { array, elem } => {
                    let e = *elem as u64;
                    let (lo, hi) = (from / e * e, to.div_ceil(e) * e);
                    let mut buf = Vec::with_capacity((hi - lo) as usize);
                    read_array(*array, lo, hi - lo, &mut buf)?;
                    if buf.len() as u64 != hi - lo {
                        return Err(ViewError::Io(crate::view::IoCause::Store));
                    }
                    for value in buf.chunks_exact_mut(*elem) {
                        value.reverse();
                    }
                    out.extend_from_slice(&buf[(from - lo) as usize..(to - lo) as usize]);
                }
            }
        }
        Ok(())
    }
}
