//! The ncstream messages zarrfs writes, from netCDF-Java's `ncStream.proto`
//! (cdm/core/src/main/proto/ncStream.proto): the same field numbers, declared with prost.

/// `DataType` of ncStream.proto, its values named as there (`LONG` is 64-bit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, prost::Enumeration)]
#[repr(i32)]
pub enum DataType {
    Char = 0,
    Byte = 1,
    Short = 2,
    Int = 3,
    Long = 4,
    Float = 5,
    Double = 6,
    String = 7,
    Ubyte = 14,
    Ushort = 15,
    Uint = 16,
    Ulong = 17,
}

/// `Attribute`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Attribute {
    /// Its name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Number of values.
    #[prost(uint32, tag = "3")]
    pub len: u32,
    /// Values of a numeric or char attribute, in the byte order the reader assumes (big-endian).
    #[prost(bytes = "vec", tag = "4")]
    pub data: Vec<u8>,
    /// Values of a string attribute.
    #[prost(string, repeated, tag = "5")]
    pub sdata: Vec<String>,
    /// Its type.
    #[prost(enumeration = "DataType", tag = "7")]
    pub data_type: i32,
}

/// `Dimension`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Dimension {
    /// Its name (empty for an anonymous dimension of a variable's shape).
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its length.
    #[prost(uint64, tag = "2")]
    pub length: u64,
    /// True for an unlimited dimension.
    #[prost(bool, tag = "3")]
    pub is_unlimited: bool,
}

/// `Variable`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Variable {
    /// Its short name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its type.
    #[prost(enumeration = "DataType", tag = "2")]
    pub data_type: i32,
    /// Its shape, by dimension.
    #[prost(message, repeated, tag = "3")]
    pub shape: Vec<Dimension>,
    /// Its attributes.
    #[prost(message, repeated, tag = "4")]
    pub atts: Vec<Attribute>,
}

/// `Group`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Group {
    /// Its name (empty for the root).
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its shared dimensions.
    #[prost(message, repeated, tag = "2")]
    pub dims: Vec<Dimension>,
    /// Its variables.
    #[prost(message, repeated, tag = "3")]
    pub vars: Vec<Variable>,
    /// Its attributes.
    #[prost(message, repeated, tag = "5")]
    pub atts: Vec<Attribute>,
    /// Its child groups.
    #[prost(message, repeated, tag = "6")]
    pub groups: Vec<Group>,
}

/// `Header`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Header {
    /// Where the dataset comes from.
    #[prost(string, tag = "1")]
    pub location: String,
    /// The root group.
    #[prost(message, optional, tag = "4")]
    pub root: Option<Group>,
    /// Header version (netCDF-Java writes 1).
    #[prost(uint32, tag = "5")]
    pub version: u32,
}

/// `Range` of a `Section`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Range {
    /// First index.
    #[prost(uint64, tag = "1")]
    pub start: u64,
    /// Number of indices.
    #[prost(uint64, tag = "2")]
    pub size: u64,
    /// Step.
    #[prost(uint64, tag = "3")]
    pub stride: u64,
}

/// `Section`: one range per dimension.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Section {
    /// The ranges.
    #[prost(message, repeated, tag = "1")]
    pub range: Vec<Range>,
}

/// `Data`: announces the values of one variable that follow it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Data {
    /// Full escaped name of the variable.
    #[prost(string, tag = "1")]
    pub var_name: String,
    /// Its type.
    #[prost(enumeration = "DataType", tag = "2")]
    pub data_type: i32,
    /// The part of the variable that follows.
    #[prost(message, optional, tag = "3")]
    pub section: Option<Section>,
    /// True when the values are big-endian.
    #[prost(bool, tag = "4")]
    pub bigend: bool,
    /// Data version (netCDF-Java writes 3).
    #[prost(uint32, tag = "5")]
    pub version: u32,
}
