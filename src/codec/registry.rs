//! Codec names: what each one is, and building its decoder.
//!
//! Names are matched as v3 names, numcodecs ids and `numcodecs.<id>` alike.

use super::astype::Cast;
use super::base64::Base64;
use super::bitpack::BitPack;
use super::bitround::BitRound;
use super::blosc::Blosc;
use super::bytes::Bytes;
use super::bz2::Bz2;
use super::cast_value::CastValue;
use super::categorize::Categorize;
use super::delta::Delta;
use super::filter::{Filter, FilterArray, FilterBytes};
use super::fixedscaleoffset::FixedScaleOffset;
use super::gzip::Gzip;
use super::lz4::Lz4;
use super::packbits::PackBits;
use super::scale_offset::ScaleOffset;
use super::shuffle::Shuffle;
use super::transpose::Transpose;
use super::zfp::{self, Zfp};
use super::zfpy::Zfpy;
use super::zlib::Zlib;
use super::zstd::Zstd;
use super::{adler32, crc32, crc32c, fletcher32, jenkins_lookup3, lzma, pcodec, quantize};
use super::{ArrayToArray, ArrayToBytes, BytesToBytes, ChunkRepr, CodecError, StoredElem};
use crate::meta::CodecSpec;

/// The name without a `numcodecs.` prefix.
pub(crate) fn base(name: &str) -> &str {
    name.strip_prefix("numcodecs.").unwrap_or(name)
}

/// Filters: array→array before the array→bytes codec, bytes→bytes after it.
const FILTERS: &[&str] = &[
    "delta",
    "fixedscaleoffset",
    "quantize",
    "bitround",
    "astype",
    "packbits",
    "categorize",
];

/// Bytes→bytes codecs other than filters.
const BYTES_TO_BYTES: &[&str] = &[
    "gzip",
    "zlib",
    "zstd",
    "blosc",
    "lz4",
    "bz2",
    "crc32c",
    "crc32",
    "adler32",
    "fletcher32",
    "jenkins_lookup3",
    "shuffle",
    "base64",
    "lzma",
    "pcodec",
    "zfpy",
];

/// True for the array→bytes codecs zarrfs implements: `bytes`, the v3 drafts' `endian`,
/// zarr-extensions' `packbits`, zarrs' `zfp` and zarr-python 3's `numcodecs.zfpy`. The first one in a chain
/// is its array→bytes codec; a `packbits` after it is numcodecs' bool filter (its v2 place) and
/// a `zfpy` after it a compressor (numcodecs' own v2 use).
pub(crate) fn is_array_to_bytes(name: &str) -> bool {
    matches!(name, "bytes" | "endian" | "packbits" | "numcodecs.zfpy") || zfp::is_zfp(name)
}

/// The array→bytes codec of a chain.
pub(crate) enum Serializer {
    /// `bytes` (`endian`): the stored elements, in their byte order.
    InPlace(Box<dyn ArrayToBytes>),
    /// A codec whose stored form has its own size (`packbits`, `zfp`, `zfpy`): it decodes into the
    /// little-endian elements the way a bytes→bytes codec does.
    Decoder(Box<dyn BytesToBytes>),
}

/// True for codecs that can only be array→array: `transpose`, zarr-extensions' `scale_offset`
/// and `cast_value`, and filters named the way zarr-python 3 names its array→array filters
/// (`numcodecs.delta`, ...).
pub(crate) fn is_array_to_array_only(name: &str) -> bool {
    matches!(name, "transpose" | "scale_offset" | "cast_value")
        || name
            .strip_prefix("numcodecs.")
            .is_some_and(|id| FILTERS.contains(&id))
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

/// Builds a filter; `elem` gives the defaults for a missing `dtype`.
fn build_filter(spec: &CodecSpec, elem: &StoredElem) -> Result<Box<dyn Filter>, CodecError> {
    Ok(match base(&spec.name) {
        "delta" => Box::new(Delta::build(spec, elem)?),
        "fixedscaleoffset" => Box::new(FixedScaleOffset::build(spec, elem)?),
        "quantize" => Box::new(quantize::build(spec, elem)?),
        "bitround" => Box::new(BitRound::new(&spec.name)),
        "astype" => Box::new(Cast::build_astype(spec, elem)?),
        "packbits" => Box::new(PackBits::new(&spec.name)),
        "categorize" => Box::new(Categorize::build(spec)?),
        _ => return Err(unsupported(spec)),
    })
}

/// Builds an array→array codec for chunks of `decoded` form; returns it and its encoded form.
pub(crate) fn build_array_to_array(
    spec: &CodecSpec,
    decoded: &ChunkRepr,
) -> Result<(Box<dyn ArrayToArray>, ChunkRepr), CodecError> {
    let id = base(&spec.name);
    match id {
        "transpose" => {
            let (codec, encoded) = Transpose::build(spec, decoded)?;
            return Ok((Box::new(codec), encoded));
        }
        "scale_offset" => {
            let (codec, encoded) = ScaleOffset::build(spec, decoded)?;
            return Ok((Box::new(codec), encoded));
        }
        "cast_value" => {
            let (codec, encoded) = CastValue::build(spec, decoded)?;
            return Ok((Box::new(codec), encoded));
        }
        _ => {}
    }
    if FILTERS.contains(&id) {
        let elem = StoredElem {
            dtype: decoded.dtype.clone(),
            big_endian: false,
        };
        let (codec, encoded) = FilterArray::build(build_filter(spec, &elem)?, decoded)?;
        return Ok((Box::new(codec), encoded));
    }
    if BYTES_TO_BYTES.contains(&id) {
        return Err(CodecError::bad_config(
            &spec.name,
            "a bytes→bytes codec cannot come before the array→bytes codec",
        ));
    }
    Err(unsupported(spec))
}

/// Builds the array→bytes codec for chunks of `repr` form.
pub(crate) fn build_array_to_bytes(
    spec: &CodecSpec,
    repr: &ChunkRepr,
) -> Result<Serializer, CodecError> {
    Ok(match spec.name.as_str() {
        "packbits" => Serializer::Decoder(Box::new(BitPack::build(spec, &repr.dtype)?)),
        "numcodecs.zfpy" => Serializer::Decoder(Box::new(Zfpy::build(spec, &repr.dtype)?)),
        name if zfp::is_zfp(name) => Serializer::Decoder(Box::new(Zfp::build(spec, repr)?)),
        _ => Serializer::InPlace(Box::new(Bytes::build(spec, &repr.dtype)?)),
    })
}

/// Builds a bytes→bytes codec; `elem` is what the array→bytes codec stored.
pub(crate) fn build_bytes_to_bytes(
    spec: &CodecSpec,
    elem: &StoredElem,
) -> Result<Box<dyn BytesToBytes>, CodecError> {
    let name = spec.name.as_str();
    Ok(match base(name) {
        "gzip" => Box::new(Gzip::new(name)),
        "zlib" => Box::new(Zlib::new(name)),
        "zstd" => Box::new(Zstd::new(name)),
        "blosc" => Box::new(Blosc::new(name)),
        "lz4" => Box::new(Lz4::new(name)),
        "bz2" => Box::new(Bz2::new(name)),
        "base64" => Box::new(Base64::new(name)),
        "crc32c" => Box::new(crc32c::build(spec)?),
        "crc32" => Box::new(crc32::build(spec)?),
        "adler32" => Box::new(adler32::build(spec)?),
        "fletcher32" => Box::new(fletcher32::build(spec)?),
        "jenkins_lookup3" => Box::new(jenkins_lookup3::build(spec)?),
        "shuffle" => Box::new(Shuffle::build(spec, elem)?),
        "lzma" => Box::new(lzma::build(spec)?),
        "pcodec" => Box::new(pcodec::build(spec, elem)?),
        // numcodecs refuses big-endian arrays ("Unknown dtype: >f8"): zfpy's values are native.
        "zfpy" if elem.big_endian => {
            return Err(CodecError::bad_config(
                name,
                "zfpy holds little-endian values, not the big-endian dtype",
            ))
        }
        "zfpy" => Box::new(Zfpy::build(spec, &elem.dtype)?),
        id if FILTERS.contains(&id) => Box::new(FilterBytes(build_filter(spec, elem)?)),
        id if matches!(
            id,
            "transpose" | "bytes" | "endian" | "scale_offset" | "cast_value"
        ) || zfp::is_zfp(id) =>
        {
            return Err(CodecError::bad_config(
                name,
                "an array codec cannot come after the array→bytes codec",
            ))
        }
        _ => return Err(unsupported(spec)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::DataType;
    use serde_json::json;

    #[test]
    fn every_listed_name_builds_in_its_position() {
        let elem = StoredElem {
            dtype: DataType::Float(8),
            big_endian: false,
        };
        let repr = ChunkRepr {
            shape: vec![4],
            dtype: DataType::Float(8),
        };
        for id in BYTES_TO_BYTES.iter().chain(FILTERS) {
            let config = match *id {
                "fixedscaleoffset" => json!({"scale": 1, "offset": 0}),
                "astype" => json!({"encode_dtype": "<f4"}),
                "categorize" => json!({"labels": [], "dtype": "<U2"}),
                _ => json!({}),
            };
            for name in [id.to_string(), format!("numcodecs.{id}")] {
                let spec = CodecSpec::new(name.clone(), config.clone());
                assert!(build_bytes_to_bytes(&spec, &elem).is_ok(), "{name}");
                let as_array = build_array_to_array(&spec, &repr);
                if matches!(*id, "categorize" | "packbits") {
                    assert!(as_array.is_err(), "{name} on a float array");
                } else {
                    assert_eq!(as_array.is_ok(), FILTERS.contains(id), "{name}");
                }
            }
        }
    }

    #[test]
    fn zfpy_refuses_big_endian_dtypes() {
        let spec = CodecSpec::new("zfpy", json!({"mode": 4, "tolerance": -1}));
        let mut elem = StoredElem {
            dtype: DataType::Float(8),
            big_endian: true,
        };
        let built = build_bytes_to_bytes(&spec, &elem);
        assert!(matches!(built, Err(CodecError::BadConfig { .. })));
        elem.big_endian = false;
        assert!(build_bytes_to_bytes(&spec, &elem).is_ok());
    }

    #[test]
    fn unknown_and_unimplemented_names_are_unsupported() {
        let elem = StoredElem {
            dtype: DataType::Int(4),
            big_endian: false,
        };
        for name in ["foo", "sharding_indexed", "vlen-utf8", "pickle"] {
            let err = build_bytes_to_bytes(&CodecSpec::new(name, json!({})), &elem).err();
            match err {
                Some(CodecError::Unsupported(msg)) => assert!(msg.starts_with(name), "{msg}"),
                other => panic!("{name}: {other:?}"),
            }
        }
    }
}
