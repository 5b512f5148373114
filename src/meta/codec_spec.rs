//! A codec as named in metadata: a name and its JSON configuration.

use parking_lot::Mutex;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Weak};

/// One entry of an array's codec chain, in Zarr v3 order (array→array, then one array→bytes,
/// then bytes→bytes). Zarr v2 `order`, `dtype` byte order, `filters` and `compressor` are mapped
/// onto the same chain by the v2 parser.
#[derive(Clone, Debug, PartialEq)]
pub struct CodecSpec {
    /// Codec name: a v3 name (`bytes`, `transpose`, `gzip`, `sharding_indexed`, ...), a numcodecs id
    /// (`zlib`, `shuffle`, `delta`, ...) or a `numcodecs.*` name, as written in the metadata; the
    /// codec stage's table says what each one is.
    pub name: String,
    /// The codec's configuration object (`{}` when absent), shared by every codec spec made
    /// from the same configuration (see [`CodecSpec::new`]).
    pub config: Arc<Value>,
}

impl CodecSpec {
    /// A codec spec from a name and configuration. Equal configurations (same JSON text) are
    /// kept once while any spec holds them: the arrays of a large hierarchy mostly repeat a
    /// few codec chains, and a parsed configuration costs far more than the pointer to it.
    pub fn new(name: impl Into<String>, config: Value) -> Self {
        CodecSpec {
            name: name.into(),
            config: shared(config),
        }
    }
}

/// Configurations held by some spec, by their JSON text.
static SHARED: Mutex<Option<HashMap<String, Weak<Value>>>> = Mutex::new(None);

/// `config`, or the equal configuration a spec already holds.
fn shared(config: Value) -> Arc<Value> {
    let text = config.to_string();
    let mut guard = SHARED.lock();
    let seen = guard.get_or_insert_with(HashMap::new);
    if let Some(kept) = seen.get(&text).and_then(Weak::upgrade) {
        return kept;
    }
    // Forget configurations no spec holds any more before the table grows.
    if seen.len() == seen.capacity() {
        seen.retain(|_, kept| kept.strong_count() > 0);
    }
    let config = Arc::new(config);
    seen.insert(text, Arc::downgrade(&config));
    config
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_configurations_are_kept_once_while_held() {
        let a = CodecSpec::new("zstd", json!({"level": 3, "checksum": false}));
        let b = CodecSpec::new("zstd", json!({"level": 3, "checksum": false}));
        let c = CodecSpec::new("zstd", json!({"level": 4, "checksum": false}));
        assert!(Arc::ptr_eq(&a.config, &b.config));
        assert!(!Arc::ptr_eq(&a.config, &c.config));
        assert_eq!(*c.config, json!({"level": 4, "checksum": false}));
    }
}
