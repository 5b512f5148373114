//! kerchunk JSON reference sets (`docs/source/spec.rst` of fsspec/kerchunk): version 0, a map of
//! keys to references, and version 1, `{"version": 1, "templates": ..., "gen": [...], "refs":
//! ...}`. A reference is inline data (text, or `base64:` and the data in base64), `[url]` (a
//! whole file) or `[url, offset, length]`. A malformed reference fails its own key only.

use super::templates::{Budget, TemplateError, Templates};
use crate::store::references::{list_references, Catalog, Reference};
use crate::store::{accept_key, Entry, StoreError};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The references of one JSON reference set, by key.
pub struct JsonCatalog {
    refs: BTreeMap<String, Reference>,
}

impl JsonCatalog {
    /// Parses a reference set; `what` names it in messages.
    pub fn parse(what: &str, bytes: &[u8]) -> Result<Self, StoreError> {
        let bad = |why: &dyn std::fmt::Display| StoreError::Invalid(format!("{what}: {why}"));
        let doc: Value = serde_json::from_slice(bytes)
            .map_err(|e| bad(&format!("not a kerchunk reference set (JSON): {e}")))?;
        let Value::Object(mut doc) = doc else {
            return Err(bad(&"not a kerchunk reference set: not a JSON object"));
        };
        let mut refs = Refs::default();
        let mut urls = Urls::default();
        // As fsspec reads it: no version (or null) is version 0; 1 (or 1.0) is version 1;
        // anything else is a version it does not know.
        let v1 = match doc.get("version") {
            None | Some(Value::Null) => false,
            Some(Value::Number(n)) if n.as_f64() == Some(1.0) => true,
            Some(other) => {
                return Err(bad(&format!(
                    "unknown reference set version {other} (kerchunk's are 1, or none for 0)"
                )))
            }
        };
        if !v1 {
            for (key, value) in doc {
                let r = reference(value, &mut urls, None);
                refs.add(what, key, r.map_err(|e| Arc::from(e.to_string())));
            }
            return Ok(refs.done(what));
        }
        let empty = serde_json::Map::new();
        let templates = Templates::new(match doc.get("templates") {
            Some(Value::Object(t)) => t,
            _ => &empty,
        });
        if let Some(Value::Object(listed)) = doc.remove("refs") {
            for (key, value) in listed {
                let r = reference(value, &mut urls, Some(&templates));
                refs.add(what, key, r.map_err(|e| Arc::from(e.to_string())));
            }
        }
        if let Some(Value::Array(gens)) = doc.get("gen") {
            let mut budget = Budget::default();
            for gen in gens {
                let generated = templates.generate(gen, &mut budget);
                for (key, target) in generated.map_err(|e| bad(&e))? {
                    let made = target.map(|(url, range)| {
                        Some(Reference::Target {
                            url: urls.intern(url),
                            range,
                            recorded: None,
                        })
                    });
                    refs.add(what, key, made);
                }
            }
        }
        Ok(refs.done(what))
    }
}

/// The references of a set as they are read, and the malformed ones counted.
#[derive(Default)]
struct Refs {
    refs: BTreeMap<String, Reference>,
    malformed: usize,
    /// The first malformed one: its key and why.
    first: Option<(String, String)>,
}

impl Refs {
    /// Adds `key` (if acceptable) as `r` makes it: `None` is a deleted key, an error a
    /// malformed reference (why), which fails that key alone.
    fn add(&mut self, what: &str, key: String, r: Result<Option<Reference>, Arc<str>>) {
        let key = key.trim_start_matches('/').to_string();
        let r = match r {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err(why) => {
                self.malformed += 1;
                self.first
                    .get_or_insert_with(|| (key.clone(), why.to_string()));
                Reference::Malformed(why)
            }
        };
        if accept_key(what, &key) {
            self.refs.insert(key, r);
        }
    }

    /// The catalog, the malformed references told in one warning.
    fn done(self, what: &str) -> JsonCatalog {
        if let Some((key, why)) = &self.first {
            log::warn!(
                "{what}: {} malformed reference(s), whose reads fail (the first: key {key}: {why})",
                self.malformed
            );
        }
        JsonCatalog { refs: self.refs }
    }
}

/// Target URLs, one allocation per distinct URL (and per distinct template before rendering).
#[derive(Default)]
struct Urls {
    seen: HashMap<String, Arc<str>>,
}

impl Urls {
    fn intern(&mut self, url: String) -> Arc<str> {
        self.seen
            .entry(url)
            .or_insert_with_key(|u| Arc::from(u.as_str()))
            .clone()
    }

    /// `url` rendered with `templates` when it holds `{{`.
    fn render(
        &mut self,
        url: String,
        templates: Option<&Templates>,
    ) -> Result<Arc<str>, TemplateError> {
        if let Some(known) = self.seen.get(&url) {
            return Ok(known.clone());
        }
        let rendered: Arc<str> = match templates {
            Some(t) if url.contains("{{") => Arc::from(t.render(&url)?),
            _ => Arc::from(url.as_str()),
        };
        self.seen.insert(url, rendered.clone());
        Ok(rendered)
    }
}

/// Why a JSON value is not a reference.
#[derive(Debug, thiserror::Error)]
enum BadReference {
    /// Inline data after `base64:` that is not base64.
    #[error("bad base64 data: {0}")]
    Base64(base64::DecodeError),
    /// A list whose first item is not a URL.
    #[error("a reference list must start with a URL: {0:?}")]
    NoUrl(Vec<Value>),
    /// An offset or length that is not a byte count.
    #[error("reference {parts:?}: item {item} is not a byte count")]
    NotACount {
        /// The reference list.
        parts: Vec<Value>,
        /// The item's index in it.
        item: usize,
    },
    /// A list of neither one nor three items.
    #[error("reference {0:?}: expected [url] or [url, offset, length]")]
    Length(Vec<Value>),
    /// The URL's template could not be rendered.
    #[error(transparent)]
    Template(#[from] TemplateError),
}

/// The reference one JSON value makes; `None` for `null` (a deleted key).
fn reference(
    value: Value,
    urls: &mut Urls,
    templates: Option<&Templates>,
) -> Result<Option<Reference>, BadReference> {
    let inline = |bytes: Vec<u8>| Ok(Some(Reference::Inline(Arc::from(bytes))));
    match value {
        Value::Null => Ok(None),
        Value::String(s) => {
            inline(super::inline_data(s.into_bytes()).map_err(BadReference::Base64)?)
        }
        Value::Array(parts) => {
            let url = match parts.first() {
                Some(Value::String(u)) => urls.render(u.clone(), templates)?,
                _ => return Err(BadReference::NoUrl(parts)),
            };
            let number = |item: usize| {
                parts[item].as_u64().ok_or_else(|| BadReference::NotACount {
                    parts: parts.clone(),
                    item,
                })
            };
            let range = match parts.len() {
                1 => None,
                3 => Some((number(1)?, number(2)?)),
                _ => return Err(BadReference::Length(parts)),
            };
            Ok(Some(Reference::Target {
                url,
                range,
                recorded: None,
            }))
        }
        // Metadata given as JSON rather than as text, as fsspec accepts it.
        other => inline(other.to_string().into_bytes()),
    }
}

impl Catalog for JsonCatalog {
    fn lookup(&self, key: &str) -> Result<Option<Reference>, StoreError> {
        Ok(self.refs.get(key).cloned())
    }

    fn list_dir(&self, prefix: &str) -> Result<Vec<Entry>, StoreError> {
        Ok(list_references("references", &self.refs, prefix))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: &str, range: Option<(u64, u64)>) -> Option<Reference> {
        Some(Reference::Target {
            url: Arc::from(url),
            range,
            recorded: None,
        })
    }

    #[test]
    fn reads_both_versions() {
        let v0: &[u8] = br#"{".zgroup": "{\"zarr_format\": 2}", "a/0": ["s3://b/f.nc", 10, 20],
                      "a/1": "base64:AAEC", "a/2": ["/d/f.nc"], "a/3": null, "../x": "no"}"#;
        let v1: &[u8] = br#"{"version": 1, "templates": {"u": "s3://b/data"},
            "refs": {"x/.zarray": {"zarr_format": 2}, "x/0": ["{{u}}/f.nc", 0, 4]},
            "gen": [{"key": "y/{{i}}", "url": "{{u}}/g{{i}}.nc", "dimensions": {"i": [7]}}]}"#;
        let inline = |b: &[u8]| Some(Reference::Inline(Arc::from(b)));
        let cases = [
            (v0, ".zgroup", inline(br#"{"zarr_format": 2}"#)),
            (v0, "a/0", target("s3://b/f.nc", Some((10, 20)))),
            (v0, "a/1", inline(&[0, 1, 2])),
            (v0, "a/2", target("/d/f.nc", None)),
            (v0, "a/3", None),
            (v0, "../x", None),
            (v1, "x/.zarray", inline(br#"{"zarr_format":2}"#)),
            (v1, "x/0", target("s3://b/data/f.nc", Some((0, 4)))),
            (v1, "y/7", target("s3://b/data/g7.nc", None)),
        ];
        for (doc, key, want) in cases {
            let c = JsonCatalog::parse("r", doc).unwrap();
            assert_eq!(c.lookup(key).unwrap(), want, "{key}");
        }
        let listed = JsonCatalog::parse("r", v0).unwrap().list_dir("").unwrap();
        let names: Vec<String> = listed.into_iter().map(|e| e.name).collect();
        assert_eq!(names, [".zgroup", "a"]);
    }

    #[test]
    fn refuses_what_is_not_a_reference_set() {
        for bad in [
            &b"[1]"[..],
            b"{",
            b"{\"version\": \"1\", \"refs\": {}}",
            b"{\"version\": 2}",
            b"{\"version\": 0}",
        ] {
            assert!(
                JsonCatalog::parse("r", bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn a_malformed_reference_is_its_key_s_alone() {
        let doc: &[u8] = br#"{"version": 1.0, "templates": {"u": "s3://b"},
            "refs": {"a/0": ["{{u}}/f.nc", 0, 4], "a/1": ["u", 1], "a/2": "base64:!!",
                     "a/3": [1, 2, 3], "a/4": ["{{ nope( }}"]},
            "gen": [{"key": "g/{{i}}", "url": "{{u}}/{{ 10 // i }}.nc", "dimensions": {"i": [0, 5]}}]}"#;
        let c = JsonCatalog::parse("r", doc).unwrap();
        assert_eq!(
            c.lookup("a/0").unwrap(),
            target("s3://b/f.nc", Some((0, 4)))
        );
        assert_eq!(c.lookup("g/5").unwrap(), target("s3://b/2.nc", None));
        for key in ["a/1", "a/2", "a/3", "a/4", "g/0"] {
            let got = c.lookup(key).unwrap();
            assert!(
                matches!(got, Some(Reference::Malformed(_))),
                "{key}: {got:?}"
            );
        }
    }
}
