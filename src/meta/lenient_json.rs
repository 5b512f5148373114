//! JSON as real writers produce it: zarr-python (through Python's `json`) writes the bare tokens
//! `NaN`, `Infinity` and `-Infinity` for non-finite floats, in `.zattrs`, `.zarray` and
//! `zarr.json`. Strict JSON has no such tokens; zarrfs reads them as the strings `"NaN"`,
//! `"Infinity"` and `"-Infinity"`, the form Zarr v3 gives non-finite fill values, and serves them
//! that way in every JSON view. netCDF-c writes the control characters of attribute text other
//! than `\b \f \n \r \t` as they are (a raw `\x01` inside a string), which strict JSON refuses
//! too: zarrfs reads them as those characters.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// Parses `bytes` as JSON, accepting the bare non-finite tokens outside strings and control
/// characters inside them.
pub fn parse(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    parse_as(bytes, true)
}

/// [`parse`], accepting control characters inside strings only with `control_characters`.
pub fn parse_as(bytes: &[u8], control_characters: bool) -> Result<Value, serde_json::Error> {
    deserialize(bytes, control_characters)
}

/// `bytes` read as JSON into a `T` as [`parse_as`] reads them.
pub fn deserialize<T: DeserializeOwned>(
    bytes: &[u8],
    control_characters: bool,
) -> Result<T, serde_json::Error> {
    match serde_json::from_slice(bytes) {
        Ok(value) => Ok(value),
        Err(strict) => match repair(bytes, control_characters) {
            Some(repaired) => serde_json::from_slice(&repaired),
            None => Err(strict),
        },
    }
}

/// `bytes` with every bare `NaN`, `Infinity` and `-Infinity` outside strings quoted and (with
/// `control_characters`) every control character inside a string escaped; `None` if there is
/// none (the strict error stands).
fn repair(bytes: &[u8], control_characters: bool) -> Option<Vec<u8>> {
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
                (false, 0..=0x1f) if control_characters => {
                    out.extend_from_slice(format!("\\u{b:04x}").as_bytes());
                    i += 1;
                    found = true;
                    continue;
                }
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
    fn raw_control_characters_in_strings_are_read() {
        // As netCDF-c writes an attribute holding \x01, a tab and \x1f.
        let text = b"{\"ctl\": \"a\x01b\tc\x1f\", \"x\": NaN}";
        assert_eq!(
            parse(text).unwrap(),
            json!({"ctl": "a\u{1}b\tc\u{1f}", "x": "NaN"})
        );
        // Outside strings, a control character stays an error.
        assert!(parse(b"{\"a\": 1\x01}").is_err());
    }

    #[test]
    fn other_errors_stay_errors() {
        assert!(parse(b"{\"x\": NaNa}").is_err());
        assert!(parse(b"{\"x\": nan}").is_err());
        assert!(parse(b"{\"x\": 1,}").is_err());
    }
}
