//! Fetched objects in reused memory: the buffers of finished fetches are kept for the next
//! ones, so a fetch writes into pages already mapped (the page faults of a fresh buffer cost
//! about as much as decoding the chunk it holds).

use parking_lot::Mutex;
use std::ops::Deref;

/// Largest buffer kept (larger ones are mapped with huge pages anyway)...
const SPARE_MAX: usize = 4 << 20;
/// ...and how many: about one per thread that fetches at the same time.
const SPARES: usize = 8;

static SPARE: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

fn spares() -> parking_lot::MutexGuard<'static, Vec<Vec<u8>>> {
    SPARE.lock()
}

/// The bytes of one fetched object; the buffer is kept for another fetch when dropped.
pub(super) struct Fetched(Vec<u8>);

impl Fetched {
    /// Fills a spare buffer (or a new one) with `fill` (false: the object is absent).
    pub fn with<E>(fill: impl FnOnce(&mut Vec<u8>) -> Result<bool, E>) -> Result<Option<Self>, E> {
        let mut buf = spares().pop().unwrap_or_default();
        let present = fill(&mut buf);
        let fetched = Fetched(buf);
        Ok(present?.then_some(fetched))
    }
}

impl Fetched {
    /// Bytes fetched elsewhere (a part of a larger fetch).
    pub fn from_vec(bytes: Vec<u8>) -> Self {
        Fetched(bytes)
    }

    /// The bytes, no longer kept for reuse.
    pub fn into_vec(mut self) -> Vec<u8> {
        std::mem::take(&mut self.0)
    }
}

impl Deref for Fetched {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Fetched {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.0);
        let mut spare = spares();
        if buf.capacity() <= SPARE_MAX && spare.len() < SPARES {
            spare.push(buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_what_was_fetched_or_nothing() {
        let first = Fetched::with(|b| {
            b.clear();
            b.extend_from_slice(b"abc");
            Ok::<_, ()>(true)
        })
        .unwrap()
        .unwrap();
        assert_eq!(&*first, b"abc");
        drop(first);
        let second = Fetched::with(|b| {
            b.clear();
            b.push(7);
            Ok::<_, ()>(true)
        });
        assert_eq!(second.unwrap().as_deref(), Some(&[7u8][..]));
        assert!(Fetched::with(|_| Ok::<_, ()>(false)).unwrap().is_none());
        assert!(Fetched::with(|_| Err::<bool, _>("gone")).is_err());
    }
}
