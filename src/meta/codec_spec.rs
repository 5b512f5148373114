//! A codec as named in metadata: a name and its JSON configuration.

use serde_json::Value;

/// One entry of an array's codec chain, in Zarr v3 order (array→array, then one array→bytes,
/// then bytes→bytes). Zarr v2 `order`, `dtype` byte order, `filters` and `compressor` are mapped
/// onto the same chain by the v2 parser.
#[derive(Clone, Debug, PartialEq)]
pub struct CodecSpec {
    /// Codec name: a v3 name (`bytes`, `transpose`, `gzip`, `sharding_indexed`, ...), a numcodecs id
    /// (`zlib`, `shuffle`, `delta`, ...) or a `numcodecs.*` name, as written in the metadata; the
    /// codec stage's table says what each one is.
    pub name: String,
    /// The codec's configuration object (`{}` when absent).
    pub config: Value,
}

impl CodecSpec {
    /// A codec spec from a name and configuration.
    pub fn new(name: impl Into<String>, config: Value) -> Self {
        CodecSpec {
            name: name.into(),
            config,
        }
    }
}
