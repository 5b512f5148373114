//! Fetched objects in reused memory: a fetch writes into a spare buffer (see
//! [`crate::memory::buffers`]), given back when the fetched bytes are dropped.

use std::ops::Deref;

/// The bytes of one fetched object; the buffer is kept for another fetch when dropped.
pub(super) struct Fetched(Vec<u8>);

impl Fetched {
    /// Fills a spare buffer with room for `room` bytes (or a new one), emptied first, with
    /// `fill` (false: the object is absent).
    pub fn with<E>(
        room: usize,
        fill: impl FnOnce(&mut Vec<u8>) -> Result<bool, E>,
    ) -> Result<Option<Self>, E> {
        let mut buf = crate::memory::buffers().take_empty(room);
        let present = fill(&mut buf);
        let fetched = Fetched(buf);
        Ok(present?.then_some(fetched))
    }

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
        crate::memory::buffers().give(std::mem::take(&mut self.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_what_was_fetched_or_nothing() {
        let first = Fetched::with(0, |b| {
            b.extend_from_slice(b"abc");
            Ok::<_, ()>(true)
        })
        .unwrap()
        .unwrap();
        assert_eq!(&*first, b"abc");
        drop(first);
        let second = Fetched::with(0, |b| {
            assert!(b.is_empty(), "a reused buffer comes empty");
            b.push(7);
            Ok::<_, ()>(true)
        });
        assert_eq!(second.unwrap().as_deref(), Some(&[7u8][..]));
        assert!(Fetched::with(0, |_| Ok::<_, ()>(false)).unwrap().is_none());
        assert!(Fetched::with(0, |_| Err::<bool, _>("gone")).is_err());
    }
}
