//! kerchunk's jinja templates: the `templates` of a version 1 reference set, rendered into
//! target URLs, and its `gen` entries, expanded over the cartesian product of their dimensions.
//! As fsspec does: a template without `{{` is a plain value; one with `{{` is a function of
//! keyword arguments (`{{ f(c='x') }}`).

use minijinja::value::{Kwargs, Value};
use minijinja::Environment;
use serde_json::Map;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Most references a reference set's `gen` entries may make, all together (a product can be
/// huge).
const MAX_GENERATED: u64 = 20_000_000;
/// Most bytes of keys and URLs they may render, all together (a short template can render
/// long URLs).
const MAX_GENERATED_BYTES: u64 = 1 << 30;

/// What the `gen` entries of one reference set may still make.
#[derive(Debug)]
pub struct Budget {
    references: u64,
    bytes: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            references: MAX_GENERATED,
            bytes: MAX_GENERATED_BYTES,
        }
    }
}

/// Work one rendering may do (minijinja's fuel): a loop in a hostile template ends here.
const FUEL: u64 = 100_000;

/// What to write instead of jinja2's `'%03d' % i`, which minijinja has no `%` for.
fn printf_hint(cause: &minijinja::Error) -> &'static str {
    if cause.to_string().contains("% operator") {
        " (write '%03d' % i as '%03d'|format(i) or '{:03d}'.format(i))"
    } else {
        ""
    }
}

/// A template environment with bounded work and Python's string methods (`'{:03d}'.format(i)`,
/// as jinja2 in fsspec has them).
fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_fuel(Some(FUEL));
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env
}

/// The templates of one reference set.
pub struct Templates {
    env: Environment<'static>,
    /// Plain templates, passed to every rendering.
    values: BTreeMap<String, Value>,
}

/// One reference a `gen` entry makes: its key, and its URL with the byte range when it names
/// one, or why they could not be rendered (one message shared by all the entry's references
/// that fail the same way).
pub type Generated = (String, Result<Target, Arc<str>>);

/// Most bytes of a rendered text kept to tell why a generated reference is malformed...
const MAX_SHOWN_TEXT: usize = 100;
/// ...and of the whole message.
const MAX_SHOWN: usize = 400;

/// `text`, cut after `max` bytes (at a character's end) with `…`.
fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// A generated reference's URL, and its byte range when it names one.
pub type Target = (String, Option<(u64, u64)>);

/// Why a template could not be rendered, or a `gen` entry expanded.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    /// `text` could not be rendered.
    #[error("{text:?}: {cause}{}", printf_hint(cause))]
    Render {
        /// The template text.
        text: String,
        /// What minijinja said.
        cause: minijinja::Error,
    },
    /// A `gen` entry lacks a field.
    #[error("a gen entry has no {0:?}")]
    NoField(String),
    /// A `gen` entry lacks its `dimensions` object.
    #[error("a gen entry has no \"dimensions\" object")]
    NoDimensions,
    /// The `gen` entries make more than [`MAX_GENERATED`] references, or render more than
    /// [`MAX_GENERATED_BYTES`] bytes of keys and URLs.
    #[error(
        "the gen entries make more than {MAX_GENERATED} references or {MAX_GENERATED_BYTES} \
         bytes of keys and URLs"
    )]
    TooMany,
    /// A `gen` template does not compile.
    #[error("gen {text:?}: {cause}")]
    Compile {
        /// The template text.
        text: String,
        /// What minijinja said.
        cause: minijinja::Error,
    },
    /// A `gen` template fails to render.
    #[error("gen: {0}{hint}", hint = printf_hint(.0))]
    Generate(minijinja::Error),
    /// A rendered offset or length is not a number.
    #[error("gen: {0:?} is not a byte offset or length")]
    NotANumber(String),
    /// A `gen` dimension is malformed.
    #[error("gen dimension {name}: {why}")]
    Dimension {
        /// The dimension's name.
        name: String,
        /// What is wrong with it.
        why: BadDimension,
    },
}

/// What is wrong with a `gen` dimension.
#[derive(Debug, thiserror::Error)]
pub enum BadDimension {
    /// A range bound is missing (without default) or not an integer.
    #[error("bad or missing {0:?}")]
    Bound(&'static str),
    /// A range's step is zero.
    #[error("step must not be zero")]
    Step,
    /// A range of more than [`MAX_GENERATED`] values.
    #[error("more than {MAX_GENERATED} values")]
    TooMany,
    /// Neither a list nor a range.
    #[error("neither a list nor a range")]
    Form,
}

impl Templates {
    /// The templates of a reference set's `templates` object.
    pub fn new(templates: &Map<String, serde_json::Value>) -> Self {
        let mut env = environment();
        let mut values = BTreeMap::new();
        for (name, value) in templates {
            let text = super::text(value);
            if !text.contains("{{") {
                values.insert(name.clone(), Value::from(text));
                continue;
            }
            let shown = name.clone();
            env.add_function(name.clone(), move |kwargs: Kwargs| {
                let mut context = BTreeMap::new();
                for arg in kwargs.args() {
                    context.insert(arg.to_string(), kwargs.get::<Value>(arg)?);
                }
                environment().render_str(&text, context).map_err(|e| {
                    minijinja::Error::new(
                        minijinja::ErrorKind::InvalidOperation,
                        format!("template {shown}: {e}"),
                    )
                })
            });
        }
        Templates { env, values }
    }

    /// `text` rendered with the templates (and nothing else).
    pub fn render(&self, text: &str) -> Result<String, TemplateError> {
        self.env
            .render_str(text, &self.values)
            .map_err(|cause| TemplateError::Render {
                text: text.to_string(),
                cause,
            })
    }

    /// The references one `gen` entry makes, taken from `budget` (every byte rendered counts,
    /// offsets and lengths too). An entry that cannot be expanded, or whose key cannot be
    /// rendered, is an error; a reference whose URL, offset or length cannot be rendered is
    /// made with the reason (its key fails alone, as a malformed reference of `refs` does): the
    /// first such reason of each kind, cut short, is shared by those that follow.
    pub fn generate(
        &self,
        gen: &serde_json::Value,
        budget: &mut Budget,
    ) -> Result<Vec<Generated>, TemplateError> {
        let field = |name: &str| {
            gen.get(name)
                .map(super::text)
                .ok_or_else(|| TemplateError::NoField(name.to_string()))
        };
        let (key, url) = (field("key")?, field("url")?);
        // Both or neither, as fsspec has it: one alone is not a whole-file reference.
        let range = match (field("offset"), field("length")) {
            (Ok(o), Ok(l)) => Some((o, l)),
            (Err(_), Err(_)) => None,
            (Err(e), Ok(_)) | (Ok(_), Err(e)) => return Err(e),
        };
        let dims = dimensions(gen.get("dimensions"))?;
        let total = dims.iter().try_fold(1u64, |n, (_, v)| {
            n.checked_mul(v.len() as u64)
                .filter(|n| *n <= budget.references)
                .ok_or(TemplateError::TooMany)
        })?;
        budget.references -= total;
        fn compile<'e, 's>(
            env: &'e Environment<'static>,
            text: &'s str,
        ) -> Result<minijinja::Template<'e, 's>, TemplateError> {
            env.template_from_str(text)
                .map_err(|cause| TemplateError::Compile {
                    text: text.to_string(),
                    cause,
                })
        }
        let compile = |text| compile(&self.env, text);
        let key_t = compile(&key)?;
        let url_t = compile(&url)?;
        let range_t = match &range {
            Some((o, l)) => Some((compile(o)?, compile(l)?)),
            None => None,
        };
        let mut out = Vec::new();
        let mut index = vec![0usize; dims.len()];
        // The reason told for each kind of failure (not rendered, not a number), once.
        let mut failures: [Option<Arc<str>>; 2] = [None, None];
        for _ in 0..total {
            let mut context = self.values.clone();
            for ((name, values), &i) in dims.iter().zip(&index) {
                context.insert(name.clone(), values[i].clone());
            }
            let rendered = std::cell::Cell::new(0u64);
            let render = |t: &minijinja::Template| {
                let text = t.render(&context).map_err(TemplateError::Generate)?;
                rendered.set(rendered.get() + text.len() as u64);
                Ok(text)
            };
            let number = |t: &minijinja::Template| {
                let text = render(t)?;
                text.trim()
                    .parse::<u64>()
                    .map_err(|_| TemplateError::NotANumber(cut(text, MAX_SHOWN_TEXT)))
            };
            let key = render(&key_t)?;
            let target = (|| -> Result<Target, TemplateError> {
                let range = match &range_t {
                    Some((o, l)) => Some((number(o)?, number(l)?)),
                    None => None,
                };
                Ok((render(&url_t)?, range))
            })();
            let mut spent = rendered.get();
            let target = target.map_err(|e| {
                let kind = usize::from(matches!(e, TemplateError::NotANumber(_)));
                let why = failures[kind].get_or_insert_with(|| {
                    let why: Arc<str> = Arc::from(cut(e.to_string(), MAX_SHOWN));
                    spent += why.len() as u64;
                    why
                });
                why.clone()
            });
            budget.bytes = budget
                .bytes
                .checked_sub(spent)
                .ok_or(TemplateError::TooMany)?;
            out.push((key, target));
            // The next combination, last dimension fastest (itertools.product's order).
            for d in (0..dims.len()).rev() {
                index[d] += 1;
                if index[d] < dims[d].1.len() {
                    break;
                }
                index[d] = 0;
            }
        }
        Ok(out)
    }
}

/// A gen entry's dimensions: a list of values, or `{start, stop, step}` as Python's `range`.
fn dimensions(
    dims: Option<&serde_json::Value>,
) -> Result<Vec<(String, Vec<Value>)>, TemplateError> {
    let Some(serde_json::Value::Object(dims)) = dims else {
        return Err(TemplateError::NoDimensions);
    };
    let mut out = Vec::new();
    for (name, spec) in dims {
        let bad = |why| TemplateError::Dimension {
            name: name.clone(),
            why,
        };
        let values: Vec<Value> = match spec {
            serde_json::Value::Array(list) => list.iter().map(Value::from_serialize).collect(),
            serde_json::Value::Object(r) => {
                let int = |k: &'static str, default: Option<i64>| {
                    r.get(k)
                        .map(|v| v.as_i64().ok_or(()))
                        .unwrap_or(default.ok_or(()))
                        .map_err(|()| bad(BadDimension::Bound(k)))
                };
                let (start, stop, step) = (
                    int("start", Some(0))?,
                    int("stop", None)?,
                    int("step", Some(1))?,
                );
                if step == 0 {
                    return Err(bad(BadDimension::Step));
                }
                // As Python's range, downwards for a negative step. i128: a range from
                // i64::MIN to i64::MAX is too long, not empty.
                let span = (i128::from(stop) - i128::from(start)) * i128::from(step.signum());
                let count = (span.max(0) as u128).div_ceil(u128::from(step.unsigned_abs()));
                if count > u128::from(MAX_GENERATED) {
                    return Err(bad(BadDimension::TooMany));
                }
                (0..count as i64)
                    .map(|i| Value::from(start + i * step))
                    .collect()
            }
            _ => return Err(bad(BadDimension::Form)),
        };
        out.push((name.clone(), values));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_plain_and_function_templates() {
        let t = json!({"u": "server.org/path", "f": "{{ c }}-x"});
        let t = Templates::new(t.as_object().unwrap());
        assert_eq!(
            t.render("http://{{u}}/a").unwrap(),
            "http://server.org/path/a"
        );
        assert_eq!(
            t.render("http://{{ f(c='text') }}").unwrap(),
            "http://text-x"
        );
        assert!(t.render("{{ nope(").is_err());
        assert!(t
            .render(
                "{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}"
            )
            .is_err());
    }

    #[test]
    fn generates_the_product_of_the_dimensions_in_order() {
        let t = Templates::new(json!({"u": "h"}).as_object().unwrap());
        let gen = json!({
            "key": "v/{{i}}.{{j}}", "url": "s3://{{u}}/f{{i}}",
            "offset": "{{ (j + 1) * 100 }}", "length": "10",
            "dimensions": {"i": {"stop": 2}, "j": [0, 5]}
        });
        let got: Vec<(String, Target)> = t
            .generate(&gen, &mut Budget::default())
            .unwrap()
            .into_iter()
            .map(|(key, target)| (key, target.unwrap()))
            .collect();
        let want: Vec<(String, Target)> = vec![
            ("v/0.0".into(), ("s3://h/f0".into(), Some((100, 10)))),
            ("v/0.5".into(), ("s3://h/f0".into(), Some((600, 10)))),
            ("v/1.0".into(), ("s3://h/f1".into(), Some((100, 10)))),
            ("v/1.5".into(), ("s3://h/f1".into(), Some((600, 10)))),
        ];
        assert_eq!(got, want);
        let huge = json!({"key": "{{i}}", "url": "x", "dimensions": {"i": {"stop": 1u64 << 40}}});
        assert!(t.generate(&huge, &mut Budget::default()).is_err());
        let widest = json!({"key": "{{i}}", "url": "x",
            "dimensions": {"i": {"start": i64::MIN, "stop": i64::MAX}}});
        assert!(
            t.generate(&widest, &mut Budget::default()).is_err(),
            "too many, not none"
        );
        let half = json!({"key": "{{i}}", "url": "x", "offset": "0", "dimensions": {"i": [0]}});
        assert!(
            matches!(t.generate(&half, &mut Budget::default()), Err(TemplateError::NoField(f)) if f == "length"),
            "an offset without a length"
        );
    }

    #[test]
    fn python_string_methods_and_downward_ranges_work_as_in_fsspec() {
        let t = Templates::new(json!({}).as_object().unwrap());
        let keys = |gen: serde_json::Value| -> Vec<String> {
            t.generate(&gen, &mut Budget::default())
                .unwrap()
                .into_iter()
                .map(|g| g.0)
                .collect()
        };
        // Each written as fsspec's jinja2 renders it.
        let gen = json!({"key": "gc/{{ '{:03d}'.format(i) }}.{{ 'ab'.upper() }}", "url": "x",
            "dimensions": {"i": {"start": 3, "stop": 0, "step": -2}}});
        assert_eq!(keys(gen), ["gc/003.AB", "gc/001.AB"]);
        let gen = json!({"key": "{{ '%02d'|format(i) }}", "url": "x",
            "dimensions": {"i": {"stop": 2}}});
        assert_eq!(keys(gen), ["00", "01"]);
        let printf = json!({"key": "gc/{{ '%d' % i }}.0", "url": "x", "dimensions": {"i": [3]}});
        let err = t
            .generate(&printf, &mut Budget::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("'%03d'|format(i)"), "{err}");
        let zero = json!({"key": "{{i}}", "url": "x", "dimensions": {"i": {"stop": 3, "step": 0}}});
        assert!(t.generate(&zero, &mut Budget::default()).is_err());
    }

    #[test]
    fn the_gen_entries_of_a_set_share_one_budget_of_references_and_bytes() {
        let t = Templates::new(json!({}).as_object().unwrap());
        let gen = json!({"key": "k{{i}}", "url": "x", "dimensions": {"i": {"stop": 6}}});
        let mut budget = Budget {
            references: 10,
            bytes: 1000,
        };
        assert_eq!(t.generate(&gen, &mut budget).unwrap().len(), 6);
        assert!(
            t.generate(&gen, &mut budget).is_err(),
            "12 references of 10"
        );
        // A short template rendering long URLs.
        let long =
            json!({"key": "{{i}}", "url": "{{ 'x' * 400 }}", "dimensions": {"i": [0, 1, 2]}});
        let mut budget = Budget {
            references: 10,
            bytes: 1000,
        };
        assert!(
            t.generate(&long, &mut budget).is_err(),
            "1203 bytes of 1000"
        );
    }

    #[test]
    fn the_references_of_a_gen_entry_failing_alike_share_one_short_reason_within_budget() {
        let t = Templates::new(json!({}).as_object().unwrap());
        let gen = json!({"key": "k{{i}}", "url": "x", "offset": "{{ 'x' * 1000 }}{{i}}",
            "length": "1", "dimensions": {"i": {"stop": 4}}});
        let mut budget = Budget {
            references: 10,
            bytes: 1 << 20,
        };
        let made = t.generate(&gen, &mut budget).unwrap();
        let why: Vec<&Arc<str>> = made.iter().map(|(_, r)| r.as_ref().unwrap_err()).collect();
        assert_eq!(why.len(), 4);
        assert!(
            why.iter().all(|w| Arc::ptr_eq(w, why[0])),
            "one shared reason"
        );
        assert!(why[0].starts_with("gen: \"xxx"), "{}", why[0]);
        assert!(
            why[0].ends_with("…\" is not a byte offset or length"),
            "{}",
            why[0]
        );
        assert!(why[0].len() < 200, "cut short: {}", why[0].len());
        // The keys, the offsets rendered (each fails before its length and URL are), and the
        // reason once.
        let spent = 4 * 2 + 4 * 1001 + why[0].len() as u64;
        assert_eq!(budget.bytes, (1 << 20) - spent);
        // A failure of another kind has its own reason.
        let gen = json!({"key": "k{{i}}", "url": "{{ nope() if i == 1 else 'u' }}",
            "offset": "{{ 'x' ~ i if i % 3 == 0 else 1 }}", "length": "1",
            "dimensions": {"i": {"stop": 4}}});
        let made = t.generate(&gen, &mut Budget::default()).unwrap();
        let why: Vec<Option<&Arc<str>>> = made.iter().map(|(_, r)| r.as_ref().err()).collect();
        let (x0, nope, x3) = (why[0].unwrap(), why[1].unwrap(), why[3].unwrap());
        assert!(x0.contains("\"x0\" is not a byte offset"), "{x0}");
        assert!(Arc::ptr_eq(x0, x3), "{x3}");
        assert!(nope.contains("nope"), "{nope}");
        assert_eq!(made[2].1, Ok(("u".to_string(), Some((1, 1)))));
    }
}
