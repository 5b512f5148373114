//! The configuration of `sharding_indexed`: its inner chunk shape and codec lists.

use crate::codec::config::{bad, field};
use crate::codec::CodecError;
use crate::meta::{inner_chunk_size, CodecSpec};
use serde_json::Value;

/// The configuration's `chunk_shape`: positive integers (`true` read as 1, as zarr-python 3.4
/// reads it).
pub(crate) fn parse_shape(spec: &CodecSpec) -> Result<Vec<u64>, CodecError> {
    let value = field(spec, "chunk_shape").ok_or_else(|| bad(spec, "missing 'chunk_shape'"))?;
    value
        .as_array()
        .and_then(|list| list.iter().map(inner_chunk_size).collect())
        .ok_or_else(|| {
            bad(
                spec,
                format!("'chunk_shape' must list positive integers, got {value}"),
            )
        })
}

/// A codec list of the configuration (`codecs` or `index_codecs`), each entry a name or a
/// `{"name", "configuration"}` object. Absent lists default as in zarr-python: `bytes` for the
/// inner chunks, `bytes` then `crc32c` for the index.
pub(crate) fn parse_codecs(spec: &CodecSpec, key: &str) -> Result<Vec<CodecSpec>, CodecError> {
    let Some(value) = field(spec, key) else {
        let mut list = vec![CodecSpec::new("bytes", Value::Object(Default::default()))];
        if key == "index_codecs" {
            list.push(CodecSpec::new("crc32c", Value::Object(Default::default())));
        }
        return Ok(list);
    };
    let err = || {
        bad(
            spec,
            format!("'{key}' must be a list of codecs, got {value}"),
        )
    };
    let list = value.as_array().ok_or_else(err)?;
    list.iter()
        .map(|c| CodecSpec::from_v3(c).map_err(|_| err()))
        .collect()
}
