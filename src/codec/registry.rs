//! The codec table: every codec name zarrfs decodes, its kind and its constructor. Both the v2
//! and the v3 parsers hand the pipeline a chain of names ([`CodecSpec`]); the pipeline asks this
//! table what each one is and builds it. Adding a codec is one file and one row of [`CODECS`].
//!
//! Names are v3 names, numcodecs ids and `numcodecs.<id>` names. A name is placed as follows:
//! - the first name listed exactly as an array→bytes codec is the chain's array→bytes codec;
//! - before it, a name is looked up without its `numcodecs.` prefix as an array→array codec or
//!   a numcodecs filter (placed by [`FilterArray`]); without an array→bytes codec, the leading
//!   names that can only be array→array (listed exactly, or a filter named `numcodecs.<id>`, as
//!   zarr-python 3 writes them) are, and `bytes` follows them;
//! - after it, a name is looked up without its prefix as a bytes→bytes codec or a filter;
//! - a chain of variable-length elements starts with an object codec (`vlen-utf8`, `json2`,
//!   ...), looked up without its prefix, and goes on with bytes→bytes codecs.
//!
//! So a name may have two rows: `packbits` is zarr-extensions' array→bytes codec and, after the
//! array→bytes codec, numcodecs' bool filter; `numcodecs.zfpy` is zarr-python 3's array→bytes
//! codec while a `zfpy` after the array→bytes codec is numcodecs' v2 compressor.

use super::array_to_array::transpose::Transpose;
use super::array_to_array::{cast_value::CastValue, scale_offset::ScaleOffset};
use super::array_to_bytes::object::ObjectCodec;
use super::array_to_bytes::{bitpack::BitPack, bytes::Bytes, zfp::Zfp, zfpy::Zfpy};
use super::bytes_to_bytes::inflate::{Container, Inflate};
use super::bytes_to_bytes::{base64::Base64, blosc::Blosc, bz2::Bz2, lz4::Lz4};
use super::bytes_to_bytes::{checksum, fletcher32, jenkins_lookup3, lzma, pcodec};
use super::bytes_to_bytes::{shuffle::Shuffle, zstd::Zstd};
use super::filters::FilterArray;
use super::filters::{astype, delta, fixedscaleoffset, quantize};
use super::filters::{bitround::BitRound, categorize::Categorize, packbits::PackBits};
use super::{ArrayToArray, ArrayToBytes, BytesToBytes, ChunkRepr, CodecError, StoredElem};
use crate::meta::CodecSpec;

type Built<T> = Result<T, CodecError>;
/// An array→array codec with the encoded form it leaves.
type Placed = (Box<dyn ArrayToArray>, ChunkRepr);

/// What a codec is, with its constructor.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    /// Array→array, built for the decoded chunk form; also returns the encoded form.
    ArrayToArray(fn(&CodecSpec, &ChunkRepr) -> Built<Placed>),
    /// Array→bytes, built for the chunk form it serializes.
    ArrayToBytes(fn(&CodecSpec, &ChunkRepr) -> Built<Box<dyn ArrayToBytes>>),
    /// Bytes→bytes, built knowing the stored elements.
    BytesToBytes(fn(&CodecSpec, &StoredElem) -> Built<Box<dyn BytesToBytes>>),
    /// A numcodecs filter: bytes→bytes after the array→bytes codec, array→array before it.
    Filter(fn(&CodecSpec, &StoredElem) -> Built<Box<dyn BytesToBytes>>),
    /// The array→bytes codec of variable-length elements, first in their chain (see `vlen`).
    Object(fn(&CodecSpec) -> Built<ObjectCodec>),
}

/// Every codec zarrfs decodes: its names and its kind.
#[rustfmt::skip]
pub(crate) const CODECS: &[(&[&str], Kind)] = &[
    (&["transpose"], Kind::ArrayToArray(|s, d| array(Transpose::build(s, d)?))),
    (&["scale_offset"], Kind::ArrayToArray(|s, d| array(ScaleOffset::build(s, d)?))),
    (&["cast_value"], Kind::ArrayToArray(|s, d| array(CastValue::build(s, d)?))),
    (&["bytes", "endian"], Kind::ArrayToBytes(|s, r| Ok(Box::new(Bytes::build(s, &r.dtype)?)))),
    (&["packbits"], Kind::ArrayToBytes(|s, r| Ok(Box::new(BitPack::build(s, &r.dtype)?)))),
    (&["numcodecs.zfpy"], Kind::ArrayToBytes(|s, r| Ok(Box::new(Zfpy::build(s, &r.dtype)?)))),
    (
        &["zfp", "zarrs.zfp", "https://codec.zarrs.dev/array_to_bytes/zfp"],
        Kind::ArrayToBytes(|s, r| Ok(Box::new(Zfp::build(s, r)?))),
    ),
    (&["vlen-utf8", "vlen-bytes"], Kind::Object(|_| Ok(ObjectCodec::Vlen))),
    (&["vlen-array"], Kind::Object(ObjectCodec::vlen_array)),
    (&["json2"], Kind::Object(ObjectCodec::json)),
    (&["msgpack2"], Kind::Object(|_| Ok(ObjectCodec::MsgPack))),
    (&["gzip"], Kind::BytesToBytes(|s, _| Ok(Box::new(Inflate(s.name.clone(), Container::Gzip))))),
    (&["zlib"], Kind::BytesToBytes(|s, _| Ok(Box::new(Inflate(s.name.clone(), Container::Zlib))))),
    (&["zstd"], Kind::BytesToBytes(|s, _| Ok(Box::new(Zstd(s.name.clone()))))),
    (&["blosc"], Kind::BytesToBytes(|s, _| Ok(Box::new(Blosc(s.name.clone()))))),
    (&["lz4"], Kind::BytesToBytes(|s, _| Ok(Box::new(Lz4(s.name.clone()))))),
    (&["bz2"], Kind::BytesToBytes(|s, _| Ok(Box::new(Bz2(s.name.clone()))))),
    (&["base64"], Kind::BytesToBytes(|s, _| Ok(Box::new(Base64(s.name.clone()))))),
    (&["lzma"], Kind::BytesToBytes(|s, _| Ok(Box::new(lzma::build(s)?)))),
    (&["crc32c"], Kind::BytesToBytes(|s, _| Ok(Box::new(checksum::crc32c(s)?)))),
    (&["crc32"], Kind::BytesToBytes(|s, _| Ok(Box::new(checksum::crc32(s)?)))),
    (&["adler32"], Kind::BytesToBytes(|s, _| Ok(Box::new(checksum::adler32(s)?)))),
    (&["fletcher32"], Kind::BytesToBytes(|s, _| Ok(Box::new(fletcher32::build(s)?)))),
    (&["jenkins_lookup3"], Kind::BytesToBytes(|s, _| Ok(Box::new(jenkins_lookup3::build(s)?)))),
    (&["shuffle"], Kind::BytesToBytes(|s, e| Ok(Box::new(Shuffle::build(s, e)?)))),
    (&["pcodec"], Kind::BytesToBytes(|s, e| Ok(Box::new(pcodec::build(s, e)?)))),
    (&["zfpy"], Kind::BytesToBytes(zfpy_compressor)),
    (&["delta"], Kind::Filter(|s, e| Ok(Box::new(delta::build(s, e)?)))),
    (&["fixedscaleoffset"], Kind::Filter(|s, e| Ok(Box::new(fixedscaleoffset::build(s, e)?)))),
    (&["quantize"], Kind::Filter(|s, e| Ok(Box::new(quantize::build(s, e)?)))),
    (&["bitround"], Kind::Filter(|s, _| Ok(Box::new(BitRound(s.name.clone()))))),
    (&["astype"], Kind::Filter(|s, e| Ok(Box::new(astype::build(s, e)?)))),
    (&["packbits"], Kind::Filter(|s, _| Ok(Box::new(PackBits(s.name.clone()))))),
    (&["categorize"], Kind::Filter(|s, _| Ok(Box::new(Categorize::build(s)?)))),
];

/// Boxes a built array→array codec with its encoded form.
fn array<T: ArrayToArray + 'static>((codec, encoded): (T, ChunkRepr)) -> Built<Placed> {
    Ok((Box::new(codec), encoded))
}

/// numcodecs' v2 `zfpy` compressor. numcodecs refuses big-endian arrays ("Unknown dtype: >f8"):
/// zfpy's values are native.
fn zfpy_compressor(spec: &CodecSpec, elem: &StoredElem) -> Built<Box<dyn BytesToBytes>> {
    if elem.big_endian {
        return Err(CodecError::bad_config(
            &spec.name,
            "zfpy holds little-endian values, not the big-endian dtype",
        ));
    }
    Ok(Box::new(Zfpy::build(spec, &elem.dtype)?))
}

/// The kinds of the rows listing `name` exactly.
fn kinds(name: &str) -> impl Iterator<Item = Kind> + '_ {
    CODECS
        .iter()
        .filter(move |(names, _)| names.contains(&name))
        .map(|&(_, kind)| kind)
}

/// The name without a `numcodecs.` prefix.
pub(crate) fn base(name: &str) -> &str {
    name.strip_prefix("numcodecs.").unwrap_or(name)
}

/// True for the names of array→bytes codecs: the first one in a chain is its array→bytes codec.
pub(crate) fn is_array_to_bytes(name: &str) -> bool {
    kinds(name).any(|k| matches!(k, Kind::ArrayToBytes(_)))
}

/// True for codecs that can only be array→array: the array→array codecs, and filters named the
/// way zarr-python 3 names its array→array filters (`numcodecs.delta`, ...).
pub(crate) fn is_array_to_array_only(name: &str) -> bool {
    kinds(name).any(|k| matches!(k, Kind::ArrayToArray(_)))
        || name
            .strip_prefix("numcodecs.")
            .is_some_and(|id| kinds(id).any(|k| matches!(k, Kind::Filter(_))))
}

/// The error for a codec zarrfs does not implement, with the reason where one is known.
fn unsupported(spec: &CodecSpec) -> CodecError {
    let reason = match base(&spec.name) {
        "sharding_indexed" => "sharding is not decoded by the codec pipeline",
        "vlen-utf8" | "vlen-bytes" => "variable-length codecs go with a string or bytes data type",
        "pickle" => "decoding a pickle runs code from the store, which zarrfs never does",
        "vlen-array" | "json2" | "msgpack2" => {
            "object codecs go with an object (string or bytes) data type"
        }
        _ => return CodecError::Unsupported(spec.name.clone()),
    };
    CodecError::unsupported(&spec.name, reason)
}

/// Builds a codec placed before the array→bytes codec, for chunks of `decoded` form; returns it
/// and its encoded form.
pub(crate) fn build_array_to_array(spec: &CodecSpec, decoded: &ChunkRepr) -> Built<Placed> {
    let id = base(&spec.name);
    for kind in kinds(id) {
        match kind {
            Kind::ArrayToArray(build) => return build(spec, decoded),
            Kind::Filter(build) => {
                let elem = StoredElem::le(decoded.dtype.clone());
                let (codec, encoded) = FilterArray::build(build(spec, &elem)?, decoded)?;
                return Ok((Box::new(codec), encoded));
            }
            _ => {}
        }
    }
    if kinds(id).any(|k| matches!(k, Kind::BytesToBytes(_))) {
        return Err(CodecError::bad_config(
            &spec.name,
            "a bytes→bytes codec cannot come before the array→bytes codec",
        ));
    }
    Err(unsupported(spec))
}

/// Builds the array→bytes codec (named as [`is_array_to_bytes`] says) for chunks of `repr` form.
pub(crate) fn build_array_to_bytes(
    spec: &CodecSpec,
    repr: &ChunkRepr,
) -> Built<Box<dyn ArrayToBytes>> {
    kinds(&spec.name)
        .find_map(|k| match k {
            Kind::ArrayToBytes(build) => Some(build(spec, repr)),
            _ => None,
        })
        .unwrap_or_else(|| Err(unsupported(spec)))
}

/// Builds a codec placed after the array→bytes codec; `elem` is what that codec stored.
pub(crate) fn build_bytes_to_bytes(
    spec: &CodecSpec,
    elem: &StoredElem,
) -> Built<Box<dyn BytesToBytes>> {
    let id = base(&spec.name);
    for kind in kinds(id) {
        if let Kind::BytesToBytes(build) | Kind::Filter(build) = kind {
            return build(spec, elem);
        }
    }
    if kinds(id).any(|k| matches!(k, Kind::ArrayToArray(_) | Kind::ArrayToBytes(_))) {
        return Err(CodecError::bad_config(
            &spec.name,
            "an array codec cannot come after the array→bytes codec",
        ));
    }
    Err(unsupported(spec))
}

/// Builds the first codec of a chain of variable-length elements.
pub(crate) fn build_object(spec: &CodecSpec) -> Built<ObjectCodec> {
    let object = kinds(base(&spec.name)).find_map(|k| match k {
        Kind::Object(build) => Some(build),
        _ => None,
    });
    match object {
        Some(build) => build(spec),
        None if base(&spec.name) == "pickle" => Err(unsupported(spec)),
        None => Err(CodecError::unsupported(
            &spec.name,
            "variable-length elements need vlen-utf8, vlen-bytes, vlen-array, json2 or msgpack2 \
             as their first codec",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::DataType;
    use serde_json::json;

    #[test]
    fn every_listed_name_builds_in_its_position() {
        let elem = StoredElem::le(DataType::Float(8));
        let repr = ChunkRepr::new(vec![4], DataType::Float(8));
        let listed = CODECS.iter().filter_map(|(names, kind)| match kind {
            Kind::BytesToBytes(_) => Some((names[0], false)),
            Kind::Filter(_) => Some((names[0], true)),
            _ => None,
        });
        for (id, filter) in listed {
            let config = match id {
                "fixedscaleoffset" => json!({"scale": 1, "offset": 0}),
                "astype" => json!({"encode_dtype": "<f4"}),
                "categorize" => json!({"labels": [], "dtype": "<U2"}),
                _ => json!({}),
            };
            for name in [id.to_string(), format!("numcodecs.{id}")] {
                let spec = CodecSpec::new(name.clone(), config.clone());
                assert!(build_bytes_to_bytes(&spec, &elem).is_ok(), "{name}");
                let as_array = build_array_to_array(&spec, &repr);
                if matches!(id, "categorize" | "packbits") {
                    assert!(as_array.is_err(), "{name} on a float array");
                } else {
                    assert_eq!(as_array.is_ok(), filter, "{name}");
                }
            }
        }
    }

    #[test]
    fn zfpy_refuses_big_endian_dtypes() {
        let spec = CodecSpec::new("zfpy", json!({"mode": 4, "tolerance": -1}));
        let mut elem = StoredElem::le(DataType::Float(8));
        elem.big_endian = true;
        let built = build_bytes_to_bytes(&spec, &elem);
        assert!(matches!(built, Err(CodecError::BadConfig { .. })));
        elem.big_endian = false;
        assert!(build_bytes_to_bytes(&spec, &elem).is_ok());
    }

    #[test]
    fn unknown_and_unimplemented_names_are_unsupported() {
        let elem = StoredElem::le(DataType::Int(4));
        for name in ["foo", "sharding_indexed", "vlen-utf8", "pickle"] {
            let err = build_bytes_to_bytes(&CodecSpec::new(name, json!({})), &elem).err();
            match err {
                Some(CodecError::Unsupported(msg)) => assert!(msg.starts_with(name), "{msg}"),
                other => panic!("{name}: {other:?}"),
            }
        }
    }
}
