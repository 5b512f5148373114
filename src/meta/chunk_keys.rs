//! Chunk keys: from a chunk's grid index to its store key.

use std::fmt::Write as _;

/// How an array names its chunks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyStyle {
    /// Zarr v2 and v3 `v2` encoding: `1.2` (or `1/2`); a 0-d array's chunk is `0`.
    V2,
    /// Zarr v3 `default` encoding: `c/1/2` (or `c.1.2`); a 0-d array's chunk is `c`.
    Default,
    /// The v3 drafts: `c1/2`, `c` followed by the indices joined by the separator; a 0-d
    /// array's chunk is `c0`, as zarr-python 2.18 keys it (its chunk index is `(0,)`).
    Draft,
}

/// Maps chunk grid indices to store keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkKeys {
    /// Key prefix including its trailing `/` (`""` for an array at the store root).
    pub prefix: String,
    /// Encoding style.
    pub style: KeyStyle,
    /// Separator between indices.
    pub separator: char,
}

impl ChunkKeys {
    /// Keys under `prefix` in `style`, indices joined by `separator`.
    pub fn new(prefix: impl Into<String>, style: KeyStyle, separator: char) -> Self {
        ChunkKeys {
            prefix: prefix.into(),
            style,
            separator,
        }
    }

    /// The store key of the chunk at grid index `idx`.
    pub fn key(&self, idx: &[u64]) -> String {
        let mut key = self.prefix.clone();
        match self.style {
            KeyStyle::V2 if idx.is_empty() => key.push('0'),
            KeyStyle::V2 => {}
            KeyStyle::Default => key.push('c'),
            KeyStyle::Draft if idx.is_empty() => key.push_str("c0"),
            KeyStyle::Draft => key.push('c'),
        }
        for (i, x) in idx.iter().enumerate() {
            let sep = match self.style {
                KeyStyle::Default => true,
                KeyStyle::V2 | KeyStyle::Draft => i > 0,
            };
            if sep {
                key.push(self.separator);
            }
            let _ = write!(key, "{x}");
        }
        key
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(style: KeyStyle, separator: char) -> ChunkKeys {
        ChunkKeys::new("a/b/", style, separator)
    }

    #[test]
    fn every_style() {
        assert_eq!(keys(KeyStyle::V2, '.').key(&[1, 2]), "a/b/1.2");
        assert_eq!(keys(KeyStyle::V2, '/').key(&[1, 2]), "a/b/1/2");
        assert_eq!(keys(KeyStyle::V2, '.').key(&[]), "a/b/0");
        assert_eq!(keys(KeyStyle::Default, '/').key(&[1, 2]), "a/b/c/1/2");
        assert_eq!(keys(KeyStyle::Default, '.').key(&[3]), "a/b/c.3");
        assert_eq!(keys(KeyStyle::Default, '/').key(&[]), "a/b/c");
        assert_eq!(keys(KeyStyle::Draft, '/').key(&[0, 1]), "a/b/c0/1");
        assert_eq!(keys(KeyStyle::Draft, '/').key(&[]), "a/b/c0");
    }
}
