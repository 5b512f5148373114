//! Key validation shared by every backend.

use super::StoreError;

/// Refuses keys that could leave the store root: absolute keys, `.`/`..` or empty segments,
/// backslashes and NUL bytes. The empty key (the root prefix) is allowed.
pub fn check_key(key: &str) -> Result<(), StoreError> {
    if key.is_empty() {
        return Ok(());
    }
    let bad = key.contains('\0')
        || key.contains('\\')
        || key
            .split('/')
            .any(|seg| seg.is_empty() || seg == "." || seg == "..");
    if bad {
        Err(StoreError::BadKey(key.to_string()))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::check_key;

    #[test]
    fn refuses_escaping_keys() {
        for bad in [
            "/etc/passwd",
            "../x",
            "a/../../b",
            "a//b",
            "a/./b",
            "a\\..\\b",
            "a\0b",
            "a/",
        ] {
            assert!(check_key(bad).is_err(), "{bad}");
        }
        for good in ["", "a", "a/b/.zarray", "c/0/1", "0.0.1", "..a", "a..b"] {
            assert!(check_key(good).is_ok(), "{good}");
        }
    }
}
