//! Key validation shared by every backend and by every source of names (listings, zip members,
//! consolidated metadata, NCZarr lists, v3 draft paths).

use super::StoreError;

/// Refuses keys that could leave the store root: absolute keys, `.`/`..` or empty segments,
/// backslashes and NUL bytes. The empty key (the root prefix) is allowed.
pub fn check_key(key: &str) -> Result<(), StoreError> {
    if key.is_empty() || key.split('/').all(|seg| check_name(seg).is_ok()) {
        Ok(())
    } else {
        Err(StoreError::BadKey(key.to_string()))
    }
}

/// Refuses a single key segment (a child's name) that is empty, `.`, `..`, or holds `/`, a
/// backslash or a NUL byte.
pub fn check_name(name: &str) -> Result<(), StoreError> {
    let bad = name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']);
    if bad {
        Err(StoreError::BadKey(name.to_string()))
    } else {
        Ok(())
    }
}

/// How a key or node path is named in messages: `/` for the root (the empty key).
pub fn shown_key(key: &str) -> &str {
    if key.is_empty() {
        "/"
    } else {
        key
    }
}

/// The key of `name` below `prefix` (`""` for the root): `prefix/name`, or `name` itself.
pub fn join_key(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}/{name}")
    }
}

/// True when `key` names an object or node (not the empty root key) that [`check_key`] accepts;
/// otherwise logs one warning naming `source` and the key.
pub fn accept_key(source: &str, key: &str) -> bool {
    let checked = if key.is_empty() {
        Err(StoreError::BadKey(String::new()))
    } else {
        check_key(key)
    };
    warn_refused(source, key, checked)
}

/// True when the child name `name` is acceptable; otherwise logs one warning naming `source`.
pub fn accept_name(source: &str, name: &str) -> bool {
    warn_refused(source, name, check_name(name))
}

fn warn_refused(source: &str, key: &str, checked: Result<(), StoreError>) -> bool {
    match checked {
        Ok(()) => true,
        Err(_) => {
            log::warn!("{source}: refused key {key:?}: it would leave the store; skipped");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{check_key, check_name};

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

    #[test]
    fn refuses_names_that_are_not_one_segment() {
        for bad in ["", ".", "..", "a/b", "a\\b", "a\0"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        for good in ["a", ".zarray", "..a", "new\nline"] {
            assert!(check_name(good).is_ok(), "{good:?}");
        }
    }
}
