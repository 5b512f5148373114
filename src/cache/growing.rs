//! A chunk being decoded front to back whose decoded part readers may use before the rest is
//! there: a reader of a chunk's first megabyte gets it after a quarter of a 4 MiB chunk's
//! decode, and its reply travels while the decoder goes on.

use crate::codec::DecodeTarget;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// One chunk's buffer while it decodes.
pub struct GrowingChunk {
    /// The buffer, handed to the cache once complete; its bytes are written through `start`
    /// only, and read only below `ready` until then.
    data: Arc<Vec<u8>>,
    start: NonNull<u8>,
    /// Bytes decoded so far (they never change again).
    ready: AtomicUsize,
    /// The least `need` of the readers waiting (`usize::MAX`: none), so that the decoder wakes
    /// them only when one can go on.
    wake_at: AtomicUsize,
    waits: Mutex<Waits>,
    changed: Condvar,
}

#[derive(Default)]
struct Waits {
    /// What each waiting reader needs.
    needs: Vec<usize>,
    /// The decoder is done (or failed): `ready` is final.
    ended: bool,
}

// SAFETY: the bytes behind `start` belong to `data`, which the chunk owns; they are written by
// the one decoder holding the target (single flight) past `ready`, and read below it.
unsafe impl Send for GrowingChunk {}
unsafe impl Sync for GrowingChunk {}

impl GrowingChunk {
    /// A chunk to decode into `buf` (its decoded length).
    pub fn new(mut buf: Vec<u8>) -> Self {
        let start = NonNull::new(buf.as_mut_ptr()).unwrap_or(NonNull::dangling());
        GrowingChunk {
            data: Arc::new(buf),
            start,
            ready: AtomicUsize::new(0),
            wake_at: AtomicUsize::new(usize::MAX),
            waits: Mutex::default(),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Waits> {
        self.waits.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The room the decoder fills. Only the cache's loader of this chunk calls it, once.
    pub(super) fn target(&self) -> DecodeTarget<'_> {
        // SAFETY: the bytes live as long as `self`; this loader is their only writer, and
        // readers read only what `publish` reported decoded.
        unsafe { DecodeTarget::from_raw(self.start, self.data.len()) }
    }

    /// Reports the first `n` bytes decoded, waking the readers that waited for them.
    pub(super) fn publish(&self, n: usize) {
        self.ready.store(n, Ordering::SeqCst);
        if n >= self.wake_at.load(Ordering::SeqCst) {
            let waits = self.lock();
            let rest = waits.needs.iter().copied().filter(|&k| k > n).min();
            self.wake_at
                .store(rest.unwrap_or(usize::MAX), Ordering::SeqCst);
            drop(waits);
            self.changed.notify_all();
        }
    }

    /// Ends the decode (`ok`: the whole chunk is in) and wakes every reader; the buffer, for
    /// the cache, when complete.
    pub(super) fn end(&self, ok: bool) -> Option<Arc<Vec<u8>>> {
        if ok {
            self.ready.store(self.data.len(), Ordering::SeqCst);
        }
        self.lock().ended = true;
        self.changed.notify_all();
        ok.then(|| self.data.clone())
    }

    /// Waits until the first `need` bytes are decoded and returns the decoded bytes (at least
    /// `need`); `None` when the decode ended without them (failed: read the chunk again
    /// through the cache, which reports why).
    pub fn wait(&self, need: usize) -> Option<&[u8]> {
        let need = need.min(self.data.len());
        let mut ready = self.ready.load(Ordering::SeqCst);
        if ready < need {
            let mut waits = self.lock();
            waits.needs.push(need);
            self.wake_at.fetch_min(need, Ordering::SeqCst);
            loop {
                ready = self.ready.load(Ordering::SeqCst);
                if ready >= need || waits.ended {
                    break;
                }
                waits = self.changed.wait(waits).unwrap_or_else(|p| p.into_inner());
            }
            if let Some(i) = waits.needs.iter().position(|&k| k == need) {
                waits.needs.swap_remove(i);
            }
        }
        // SAFETY: bytes below `ready` are decoded and never written again; `data` keeps them.
        (ready >= need).then(|| unsafe { std::slice::from_raw_parts(self.start.as_ptr(), ready) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_get_the_decoded_part_as_it_grows() {
        let chunk = Arc::new(GrowingChunk::new(vec![0; 1000]));
        let reader = {
            let chunk = chunk.clone();
            std::thread::spawn(move || chunk.wait(600).map(<[u8]>::to_vec))
        };
        let mut target = chunk.target();
        for step in 0..4 {
            let (from, to) = (step * 250, step * 250 + 250);
            target.undecoded(from, to).fill(step as u8 + 1);
            chunk.publish(to);
        }
        let got = reader.join().unwrap().expect("600 bytes came");
        assert!(got.len() >= 600);
        assert!(got
            .iter()
            .enumerate()
            .all(|(i, &b)| b == (i / 250) as u8 + 1));
        let whole = chunk.end(true).unwrap();
        assert_eq!(whole.len(), 1000);
        assert_eq!(chunk.wait(1000).unwrap(), &whole[..]);
    }

    #[test]
    fn a_failed_decode_releases_its_readers() {
        let chunk = Arc::new(GrowingChunk::new(vec![0; 100]));
        let reader = {
            let chunk = chunk.clone();
            std::thread::spawn(move || chunk.wait(80).is_none())
        };
        chunk.publish(50);
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(chunk.end(false).is_none());
        assert!(reader.join().unwrap(), "the reader gives up");
        assert_eq!(chunk.wait(40).map(<[u8]>::len), Some(50));
    }
}
