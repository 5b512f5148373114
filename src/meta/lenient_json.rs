//! JSON as real writers produce it: zarr-python (through Python's `json`) writes the bare tokens
//! `NaN`, `Infinity` and `-Infinity` for non-finite floats, in `.zattrs`, `.zarray` and
//! `zarr.json`. Strict JSON has no such tokens; zarrfs reads them as the strings `"NaN"`,
//! `"Infinity"` and `"-Infinity"`, the form Zarr v3 gives non-finite fill values, and serves them
//! that way in every JSON view.

use serde_json::Value;

/// Parses `bytes` as JSON, accepting the bare non-finite tokens outside strings.
pub fn parse(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    match serde_json::from_slice(bytes) {
        Ok(value) => Ok(value),
        Err(strict) => match quote_non_finite(bytes) {
            Some(quoted) => serde_json::from_slice(&quoted),
            None => Err(strict),
        },
    }
}

/// `bytes` with every bare `NaN`, `Infinity` and `-Infinity` outside strings quoted; `None` if
/// there is none (the strict error stands).
fn quote_non_finite(bytes: &[u8]) -> Option<Vec<u8>> {
    const TOKENS: [&[u8]; 3] = [b"-Infinity", b"Infinity", b"NaN"];
    let mut out = Vec::with_capacity(bytes.len() + 16);
    let (mut in_string, mut escaped, mut found) = (false, false, false);
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else if b == b'"' {
            in_string = true;
        } else if let Some(token) = TOKENS.iter().find(|t| bytes[i..].starts_with(t)) {
            let word_ends = bytes
                .get(i + token.len())
                .is_none_or(|c| !c.is_ascii_alphanumeric());
            if word_ends {
                out.push(b'"');
                out.extend_from_slice(token);
                out.push(b'"');
                i += token.len();
                found = true;
                continue;
            }
        }
        out.push(b);
        i += 1;
    }
    found.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bare_non_finite_tokens_become_strings() {
        let text = br#"{"x": NaN, "y": [-Infinity, Infinity], "s": "NaN \" NaN", "n": 1}"#;
        assert_eq!(
            parse(text).unwrap(),
            json!({"x": "NaN", "y": ["-Infinity", "Infinity"], "s": "NaN \" NaN", "n": 1})
        );
        assert_eq!(parse(br#"{"a": "b"}"#).unwrap(), json!({"a": "b"}));
    }

    #[test]
    fn other_errors_stay_errors() {
        assert!(parse(b"{\"x\": NaNa}").is_err());
        assert!(parse(b"{\"x\": nan}").is_err());
        assert!(parse(b"{\"x\": 1,}").is_err());
    }
}
