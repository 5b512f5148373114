//! Whether an object a read finds absent is really absent: it is asked for again, after
//! pauses; for one a listing showed, a fresh listing of its prefix then decides whether it is
//! gone or a fault. A chunk (see `fetch`) and a kerchunk Parquet record file are checked this
//! way (a record file also where the store cannot list, as its absence is kept), so that a
//! transient 404 is never taken for "nothing stored here" (the fill value).

use super::{EntryKind, Store, StoreError};
use std::time::Duration;

/// The pauses before each new ask for an object the store answered as absent.
const PAUSES: [Duration; 2] = [Duration::from_millis(200), Duration::from_secs(1)];

/// How many times an object is asked for before it counts as absent (or, listed, a fault).
pub const ASKS: usize = PAUSES.len() + 1;

/// What asking again for a listed object the store answered as absent found.
#[derive(Debug, PartialEq, Eq)]
pub enum Recheck<T> {
    /// Found when asked again (the first answer was a transient fault).
    Found(T),
    /// A fresh listing of its prefix no longer shows it: removed since it was listed.
    Removed,
    /// Still listed, and answered as absent [`ASKS`] times: a fault.
    Fault,
}

/// Asks for the object `key` again with `ask`, after each pause, once the store answered it as
/// absent: what a later ask found, or `None` when every ask still found nothing. An object no
/// listing can vouch for (a store that cannot list) is taken as absent only then, so that one
/// transient 404 is not kept as "nothing stored here".
pub fn ask_again<T, E>(
    key: &str,
    mut ask: impl FnMut() -> Result<Option<T>, E>,
) -> Result<Option<T>, E> {
    for pause in PAUSES {
        std::thread::sleep(pause);
        if let Some(found) = ask()? {
            log::warn!(
                "{key}: answered as absent, then found when asked again (a transient fault)"
            );
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// Asks for the object `key` of `store` again with `ask` (see [`ask_again`]) once the store
/// answered it as absent although a listing showed it; then lists its prefix afresh.
pub fn recheck<T, E: From<StoreError>>(
    store: &dyn Store,
    key: &str,
    ask: impl FnMut() -> Result<Option<T>, E>,
) -> Result<Recheck<T>, E> {
    if let Some(found) = ask_again(key, ask)? {
        return Ok(Recheck::Found(found));
    }
    let (prefix, name) = key.rsplit_once('/').unwrap_or(("", key));
    let still_listed = store
        .list_dir(prefix)?
        .iter()
        .any(|e| e.name == name && matches!(e.kind, EntryKind::Object(_)));
    Ok(if still_listed {
        Recheck::Fault
    } else {
        Recheck::Removed
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;
    use std::cell::Cell;

    /// An ask that answers absent `misses` times, then `Some(7)`, counting in `asked`.
    fn ask(asked: &Cell<u32>, misses: u32) -> Result<Option<u8>, StoreError> {
        asked.set(asked.get() + 1);
        Ok((asked.get() > misses).then_some(7))
    }

    #[test]
    fn found_again_removed_or_a_fault() {
        let asked = Cell::new(0);
        let got = recheck(&MemoryStore::new(), "a/1", || ask(&asked, 1));
        assert_eq!((got.unwrap(), asked.get()), (Recheck::Found(7), 2));
        let mut store = MemoryStore::new();
        store.insert("a/1", b"x".to_vec());
        let asked = Cell::new(0);
        let got = recheck(&store, "a/1", || ask(&asked, u32::MAX));
        assert_eq!((got.unwrap(), asked.get()), (Recheck::Fault, 2));
        let got = recheck(&MemoryStore::new(), "a/1", || ask(&asked, u32::MAX));
        assert_eq!(got.unwrap(), Recheck::Removed);
    }
}
