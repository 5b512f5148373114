//! Selections by name: numpy's basic indexing (`0:10,5,:`, `...`, `time=0:24`) parsed and
//! resolved against an array's shape and dimension names.

/// What one axis of the source array contributes to a selection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AxisSel {
    /// First source index selected.
    pub start: u64,
    /// Distance between selected indices (at least 1).
    pub step: u64,
    /// Number of indices selected.
    pub count: u64,
    /// True when an integer selected the axis: it is dropped from the result's shape.
    pub dropped: bool,
}

impl AxisSel {
    /// How many of the selected indices lie before source index `at`.
    pub fn selected_before(&self, at: u64) -> u64 {
        at.saturating_sub(self.start)
            .div_ceil(self.step)
            .min(self.count)
    }
}

/// A selection resolved against a shape: one [`AxisSel`] per source axis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// Per source axis, what is selected.
    pub axes: Vec<AxisSel>,
}

/// Why a selection's text does not select from an array.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectionError {
    #[error("whitespace is not allowed in a selection")]
    Whitespace,
    #[error("'{0}' is not an index or a dimension name")]
    NotAnIndex(String),
    #[error("'{0}' has more than two ':'")]
    TooManyColons(String),
    #[error("'{0}' in '{1}' is not an integer")]
    NotAnInteger(String, String),
    #[error("the step in '{0}' must be at least 1")]
    StepBelowOne(String),
    #[error("index {0} is out of range for axis {1} of length {2}")]
    OutOfRange(i128, usize, u64),
    #[error("dimension names and positions cannot be mixed")]
    NamesAndPositions,
    #[error("'{0}' is not a dimension name")]
    NotADimension(String),
    #[error("dimension '{0}' is selected twice")]
    SelectedTwice(String),
    #[error("'{0}': '...' cannot be named")]
    EllipsisNamed(String),
    #[error("'...' may appear only once")]
    EllipsisTwice,
    #[error("{0} indices for an array of {1} dimensions")]
    TooManyIndices(usize, usize),
}

/// One comma-separated item, before it meets a shape.
enum Item {
    Index(i128),
    Slice(Option<i128>, Option<i128>, Option<i128>),
    Ellipsis,
}

/// A decimal integer with an optional sign, as Python writes them; one past the range of
/// `i128` is taken as its end (it only matters as a slice bound, which clips).
fn parse_int(s: &str) -> Option<i128> {
    let (negative, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let magnitude = digits.parse::<i128>().unwrap_or(i128::MAX);
    Some(if negative { -magnitude } else { magnitude })
}

fn parse_item(text: &str) -> Result<Item, SelectionError> {
    if text == "..." {
        return Ok(Item::Ellipsis);
    }
    if !text.contains(':') {
        return parse_int(text)
            .map(Item::Index)
            .ok_or_else(|| SelectionError::NotAnIndex(text.into()));
    }
    let parts: Vec<&str> = text.split(':').collect();
    if parts.len() > 3 {
        return Err(SelectionError::TooManyColons(text.into()));
    }
    let part = |i: usize| -> Result<Option<i128>, SelectionError> {
        match parts.get(i) {
            None | Some(&"") => Ok(None),
            Some(p) => parse_int(p)
                .map(Some)
                .ok_or_else(|| SelectionError::NotAnInteger(p.to_string(), text.into())),
        }
    };
    let step = part(2)?;
    if step.is_some_and(|s| s < 1) {
        return Err(SelectionError::StepBelowOne(text.into()));
    }
    Ok(Item::Slice(part(0)?, part(1)?, step))
}

/// Resolves `item` on an axis of length `len` (axis number `axis`), numpy's way: negative
/// positions count from the end, slice bounds clip, integers out of range are errors.
fn resolve(item: &Item, len: u64, axis: usize) -> Result<AxisSel, SelectionError> {
    let n = i128::from(len);
    match *item {
        Item::Index(i) => {
            let at = i + if i < 0 { n } else { 0 };
            if at < 0 || at >= n {
                return Err(SelectionError::OutOfRange(i, axis, len));
            }
            Ok(AxisSel {
                start: at as u64,
                step: 1,
                count: 1,
                dropped: true,
            })
        }
        Item::Slice(start, stop, step) => {
            let bound = |v: Option<i128>, default: i128| match v {
                None => default,
                Some(v) if v < 0 => (n + v).max(0),
                Some(v) => v.min(n),
            };
            let (lo, hi) = (bound(start, 0), bound(stop, n));
            let step = u64::try_from(step.unwrap_or(1)).unwrap_or(u64::MAX);
            let count = if hi > lo {
                ((hi - lo) as u64).div_ceil(step)
            } else {
                0
            };
            // The step of one element or none is no step: then it never meets a product.
            let step = if count > 1 { step } else { 1 };
            Ok(AxisSel {
                start: lo as u64,
                step,
                count,
                dropped: false,
            })
        }
        Item::Ellipsis => unreachable!("ellipses are expanded before resolving"),
    }
}

impl Selection {
    /// Parses `text` (what is between the brackets of `A[...]`) for an array of `shape` whose
    /// axes are named `dims` (empty or `None` where unnamed).
    pub fn parse(
        text: &str,
        shape: &[u64],
        dims: &[Option<String>],
    ) -> Result<Self, SelectionError> {
        if text.chars().any(char::is_whitespace) {
            return Err(SelectionError::Whitespace);
        }
        let whole = |&count: &u64| AxisSel {
            start: 0,
            step: 1,
            count,
            dropped: false,
        };
        let mut axes: Vec<AxisSel> = shape.iter().map(whole).collect();
        // One trailing comma is Python's (`a[0,]` is `a[0]`).
        let text = match text.strip_suffix(',') {
            Some(body) if !body.is_empty() && !body.ends_with(',') => body,
            _ => text,
        };
        let raw: Vec<&str> = text.split(',').filter(|_| !text.is_empty()).collect();
        let named = raw.iter().filter(|r| r.contains('=')).count();
        if named > 0 {
            if named < raw.len() {
                return Err(SelectionError::NamesAndPositions);
            }
            let mut seen = vec![false; shape.len()];
            for r in raw {
                let (name, spec) = r.split_once('=').unwrap_or((r, ""));
                let axis = dims
                    .iter()
                    .position(|d| d.as_deref().is_some_and(|d| dim_matches(d, name)))
                    .ok_or_else(|| SelectionError::NotADimension(name.into()))?;
                if std::mem::replace(&mut seen[axis], true) {
                    return Err(SelectionError::SelectedTwice(name.into()));
                }
                let item = parse_item(spec)?;
                if matches!(item, Item::Ellipsis) {
                    return Err(SelectionError::EllipsisNamed(r.to_string()));
                }
                axes[axis] = resolve(&item, shape[axis], axis)?;
            }
            return Ok(Selection { axes });
        }
        let items = raw
            .iter()
            .map(|r| parse_item(r))
            .collect::<Result<Vec<_>, _>>()?;
        let ellipses = items.iter().filter(|i| matches!(i, Item::Ellipsis)).count();
        if ellipses > 1 {
            return Err(SelectionError::EllipsisTwice);
        }
        let given = items.len() - ellipses;
        if given > shape.len() {
            return Err(SelectionError::TooManyIndices(given, shape.len()));
        }
        let mut axis = 0;
        for item in &items {
            if matches!(item, Item::Ellipsis) {
                axis += shape.len() - given;
                continue;
            }
            axes[axis] = resolve(item, shape[axis], axis)?;
            axis += 1;
        }
        Ok(Selection { axes })
    }

    /// The shape of the result (dropped axes left out).
    pub fn shape(&self) -> Vec<u64> {
        self.axes
            .iter()
            .filter(|a| !a.dropped)
            .map(|a| a.count)
            .collect()
    }

    /// Number of selected elements (at most the array's, so it cannot overflow; 0 when an axis
    /// selects none, however many the others do).
    pub fn element_count(&self) -> u64 {
        let counts: Vec<u64> = self.axes.iter().map(|a| a.count).collect();
        crate::meta::element_count(&counts).unwrap_or(u64::MAX)
    }

    /// The selection in normal form: every axis, `start:stop:step` with explicit non-negative
    /// bounds (stop excluded, clipped, the step left out when 1), integers for dropped axes.
    pub fn normalized(&self) -> String {
        let items: Vec<String> = self
            .axes
            .iter()
            .map(|a| {
                if a.dropped {
                    return a.start.to_string();
                }
                let stop = if a.count == 0 {
                    a.start
                } else {
                    a.start + (a.count - 1) * a.step + 1
                };
                if a.step == 1 {
                    format!("{}:{stop}", a.start)
                } else {
                    format!("{}:{stop}:{}", a.start, a.step)
                }
            })
            .collect();
        items.join(",")
    }
}

/// True when dimension name `dim` is `name` (NCZarr names dimensions by path: `/x` is `x`).
fn dim_matches(dim: &str, name: &str) -> bool {
    dim == name || dim.rsplit('/').next() == Some(name)
}

/// Splits a file name `A[SEL]`, `A[SEL].npy` or `A[SEL].json` into the array name, the
/// selection text and the suffix (`""`, `".npy"` or `".json"`); `None` for other names.
pub fn split_name(name: &str) -> Option<(&str, &str, &str)> {
    let (body, suffix) = [".npy", ".json"]
        .iter()
        .find_map(|s| name.strip_suffix(s).map(|b| (b, *s)))
        .filter(|(b, _)| b.ends_with(']'))
        .unwrap_or((name, ""));
    let body = body.strip_suffix(']')?;
    let open = body.rfind('[')?;
    (open > 0).then(|| (&body[..open], &body[open + 1..], suffix))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(text: &str, shape: &[u64]) -> Result<Vec<(u64, u64, u64, bool)>, String> {
        let dims = [Some("time".into()), Some("/lat".into()), None];
        let parsed = Selection::parse(text, shape, &dims[..shape.len().min(3)]);
        parsed.map_err(|e| e.to_string()).map(|s| {
            s.axes
                .iter()
                .map(|a| (a.start, a.step, a.count, a.dropped))
                .collect()
        })
    }

    #[test]
    fn numpy_basic_indexing() {
        let s = [10, 20, 30];
        assert_eq!(
            sel("0:10,5,:", &s).unwrap(),
            [(0, 1, 10, false), (5, 1, 1, true), (0, 1, 30, false)]
        );
        assert_eq!(sel("-1", &s).unwrap()[0], (9, 1, 1, true));
        assert_eq!(sel("-3:", &s).unwrap()[0], (7, 1, 3, false));
        assert_eq!(sel("::3", &s).unwrap()[0], (0, 3, 4, false));
        assert_eq!(sel("2:100:4", &s).unwrap()[0], (2, 4, 2, false));
        assert_eq!(sel("8:2", &s).unwrap()[0].2, 0);
        assert_eq!(sel("...,4", &s).unwrap()[2], (4, 1, 1, true));
        assert_eq!(sel("1,...", &s).unwrap()[1], (0, 1, 20, false));
        assert_eq!(sel("", &s).unwrap()[2], (0, 1, 30, false));
        assert_eq!(sel("lat=3,time=0:24", &s).unwrap()[1], (3, 1, 1, true));
        assert_eq!(sel("time=0:24", &s).unwrap()[0], (0, 1, 10, false));
        // Python's spellings: a trailing comma, a `+` sign, bounds past any integer type.
        assert_eq!(sel("5,", &s).unwrap(), sel("5", &s).unwrap());
        assert_eq!(sel("+1,+2:", &s).unwrap(), sel("1,2:", &s).unwrap());
        let huge = "0:99999999999999999999999999999999999999999999,-99999999999999999999:";
        assert_eq!(sel(huge, &s).unwrap(), sel(":,:", &s).unwrap());
        assert_eq!(
            sel("::99999999999999999999", &s).unwrap()[0],
            (0, 1, 1, false)
        );
        let n = Selection::parse("1:8:3,-2", &[10, 5], &[]).unwrap();
        assert_eq!((n.normalized(), n.shape()), ("1:8:3,3".into(), vec![3]));
    }

    #[test]
    fn bad_selections_say_why() {
        let s = [10, 20, 30];
        for (text, why) in [
            ("5,x", "'x' is not an index or a dimension name"),
            ("10", "out of range"),
            ("-11", "out of range"),
            ("0, 1", "whitespace"),
            ("::0", "at least 1"),
            ("::-1", "at least 1"),
            ("1,2,3,4", "4 indices"),
            ("...,...", "only once"),
            ("lon=3", "'lon' is not a dimension name"),
            ("time=1,2", "mixed"),
            ("time=1,time=2", "twice"),
            ("1:2:3:4", "more than two"),
            ("a:2", "not an integer"),
            (",", "not an index"),
            ("5,,", "not an index"),
            ("+-1", "not an index"),
            ("99999999999999999999", "out of range"),
        ] {
            let err = sel(text, &s).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
    }

    #[test]
    fn names_split_into_array_selection_and_suffix() {
        assert_eq!(split_name("t[0:2]"), Some(("t", "0:2", "")));
        assert_eq!(split_name("t[0].npy"), Some(("t", "0", ".npy")));
        assert_eq!(split_name("a.b[...].json"), Some(("a.b", "...", ".json")));
        assert_eq!(split_name("t.npy"), None);
        assert_eq!(split_name("[0]"), None);
        assert_eq!(split_name("t[0]x"), None);
    }
}
