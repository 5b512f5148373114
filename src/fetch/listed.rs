//! Whether an absent chunk is missing or a fault: a chunk object the store's listing showed
//! (when the array's prefix was listed, as a cache directory does for the array's identity)
//! but that a read then finds absent (a transient 404) is asked for again, and read as the
//! fill value only when a fresh listing no longer shows it; else the read fails. Whether any
//! object was asked for before the listing is remembered: an answer given then (bytes, or
//! absent, read as the fill value) may be of a version older than the one the listing shows,
//! and a cache above may keep it.

use super::{FetchCause, FetchError};
use crate::store::absent::{self, Recheck};
use crate::store::Store;
use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::OnceLock;

/// The objects a listing of an array's prefix showed (store keys), once listed.
#[derive(Default)]
pub(super) struct Listed {
    keys: OnceLock<HashSet<String>>,
    /// Whether an object was asked for before the listing.
    asked_before: Mutex<bool>,
}

impl Listed {
    /// Records the keys the listing showed (the first listing counts); true when an object
    /// was asked for before it.
    pub fn set(&self, keys: HashSet<String>) -> bool {
        let asked_before = self.asked_before.lock();
        self.keys.set(keys).is_ok() && *asked_before
    }

    /// Whether `key` is listed (not before the listing is known).
    fn listed(&self, key: &str) -> bool {
        self.keys.get().is_some_and(|keys| keys.contains(key))
    }

    /// `ask()`'s answer for the object `key` of `store`, where an absent answer is checked: an
    /// object the listing showed is asked for again, and counts as absent only when a fresh
    /// listing of its prefix no longer shows it (see [`absent::recheck`]); otherwise the
    /// answer is an error.
    pub fn confirm<T>(
        &self,
        store: &dyn Store,
        key: &str,
        mut ask: impl FnMut() -> Result<Option<T>, FetchError>,
    ) -> Result<Option<T>, FetchError> {
        {
            // Recorded before the ask, under the lock `set` takes: a listing made while the
            // object is read knows of it.
            let mut asked_before = self.asked_before.lock();
            if self.keys.get().is_none() {
                *asked_before = true;
            }
        }
        if let Some(found) = ask()? {
            return Ok(Some(found));
        }
        if !self.listed(key) {
            return Ok(None);
        }
        match absent::recheck(store, key, ask)? {
            Recheck::Found(found) => Ok(Some(found)),
            Recheck::Removed => {
                log::info!(
                    "{key}: removed from the store since it was listed: read as the fill value"
                );
                Ok(None)
            }
            Recheck::Fault => Err(FetchError::new(
                FetchCause::Store,
                format!(
                    "{key}: the store lists it but answered {} times that it does not exist; a fault, not read as the fill value",
                    absent::ASKS
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;
    use std::cell::Cell;

    fn listed(keys: &[&str]) -> Listed {
        let l = Listed::default();
        assert!(!l.set(keys.iter().map(|k| k.to_string()).collect()));
        l
    }

    #[test]
    fn any_object_asked_for_before_the_listing_makes_it_doubtful() {
        let store = MemoryStore::new();
        let names = |keys: &[&str]| keys.iter().map(|k| k.to_string()).collect();
        for misses in [0, u32::MAX] {
            let (asked, l) = (Cell::new(0), Listed::default());
            l.confirm(&store, "a/3", || ask(&asked, misses)).unwrap();
            assert!(l.set(names(&["a/0", "a/1"])), "found or absent: {misses}");
            assert!(!l.set(names(&["a/0"])), "the first listing counts");
        }
        let (asked, l) = (Cell::new(0), Listed::default());
        assert!(!l.set(names(&["a/0"])));
        l.confirm(&store, "a/0", || ask(&asked, 0)).unwrap();
        assert!(!l.set(names(&["a/0"])), "asked after the listing");
    }

    /// An ask that answers absent `misses` times, then `Some(7)`, counting in `asked`.
    fn ask(asked: &Cell<u32>, misses: u32) -> Result<Option<u8>, FetchError> {
        asked.set(asked.get() + 1);
        Ok((asked.get() > misses).then_some(7))
    }

    #[test]
    fn an_unlisted_absent_chunk_is_absent_at_the_first_answer() {
        let store = MemoryStore::new();
        let asked = Cell::new(0);
        let got = listed(&["a/0"]).confirm(&store, "a/1", || ask(&asked, u32::MAX));
        assert_eq!((got, asked.get()), (Ok(None), 1));
    }

    #[test]
    fn a_listed_chunk_answered_absent_once_is_asked_again() {
        let store = MemoryStore::new();
        let asked = Cell::new(0);
        let got = listed(&["a/1"]).confirm(&store, "a/1", || ask(&asked, 1));
        assert_eq!((got, asked.get()), (Ok(Some(7)), 2));
    }

    #[test]
    fn a_listed_chunk_always_absent_is_a_fault_unless_a_fresh_listing_lost_it() {
        let mut store = MemoryStore::new();
        store.insert("a/1", b"x".to_vec());
        let asked = Cell::new(0);
        let got = listed(&["a/1"]).confirm(&store, "a/1", || ask(&asked, u32::MAX));
        let err = got.unwrap_err();
        assert_eq!(err.cause, FetchCause::Store);
        assert!(err.message.contains("not read as the fill value"), "{err}");
        assert_eq!(asked.get(), 3);
        // Deleted since it was listed: the store says it does not exist now.
        let asked = Cell::new(0);
        let got = listed(&["a/1"]).confirm(&MemoryStore::new(), "a/1", || ask(&asked, u32::MAX));
        assert_eq!(got, Ok(None));
    }
}
