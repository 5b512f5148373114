//! The error type of the codec module.

/// Why a chunk could not be decoded, or a chain could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// The chain names a codec zarrfs does not implement: the codec's name, optionally followed
    /// by `": "` and the reason (e.g. `"lzma: no LZMA decoder is built in"`).
    #[error("unsupported codec {}", unsupported(.0))]
    Unsupported(String),
    /// A codec's configuration is invalid.
    #[error("{codec}: bad configuration: {reason}")]
    BadConfig {
        /// Name of the codec.
        codec: String,
        /// What is wrong with its configuration.
        reason: String,
    },
    /// The encoded bytes are corrupt, truncated or decode to the wrong size.
    #[error("{codec}: corrupt data: {reason}")]
    Corrupt {
        /// Name of the codec that found the problem.
        codec: String,
        /// What is wrong with the data.
        reason: String,
    },
}

impl CodecError {
    /// An [`CodecError::Unsupported`] for `codec` with an explanation.
    pub(crate) fn unsupported(codec: &str, reason: &str) -> Self {
        CodecError::Unsupported(format!("{codec}: {reason}"))
    }

    /// A [`CodecError::BadConfig`] for `codec`.
    pub(crate) fn bad_config(codec: &str, reason: impl Into<String>) -> Self {
        CodecError::BadConfig {
            codec: codec.into(),
            reason: reason.into(),
        }
    }

    /// A [`CodecError::Corrupt`] for `codec`.
    pub(crate) fn corrupt(codec: &str, reason: impl Into<String>) -> Self {
        CodecError::Corrupt {
            codec: codec.into(),
            reason: reason.into(),
        }
    }
}

/// An [`CodecError::Unsupported`]'s text: `'name'`, then `: reason` where it gives one.
fn unsupported(what: &str) -> String {
    match what.split_once(": ") {
        Some((name, reason)) => format!("'{name}': {reason}"),
        None => format!("'{what}'"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_the_codec() {
        assert_eq!(
            CodecError::Unsupported("foo".into()).to_string(),
            "unsupported codec 'foo'"
        );
        assert_eq!(
            CodecError::unsupported("lzma", "no LZMA decoder is built in").to_string(),
            "unsupported codec 'lzma': no LZMA decoder is built in"
        );
        assert_eq!(
            CodecError::corrupt("zstd", "truncated").to_string(),
            "zstd: corrupt data: truncated"
        );
        assert_eq!(
            CodecError::bad_config("blosc", "bad cname").to_string(),
            "blosc: bad configuration: bad cname"
        );
    }
}
