//! The one buffer readers use while writers still fill it; all its unsafe code is here.
//!
//! A [`FillingBuffer`] has parts (one for a chunk decoded front to back, one per chunk of a
//! selection), each with one writer (a [`Filler`], claimed once) and a mark that only moves
//! forward: readers wait until a part's mark reaches their need, or the part fails. A chunk is
//! decoded through a [`DecodeTarget`]: what the decoder reports decoded becomes readable, and
//! only what lies past it may be written. A selection's rows are scattered over the buffer and
//! kept apart by the caller's layout, so those writes and reads stay `unsafe`.

use parking_lot::{Condvar, Mutex};
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

/// A part's mark once complete: it serves any need.
const DONE: usize = usize::MAX;
/// A part's states: nobody has claimed it, its writer is at work, or its writer gave up (its
/// mark stays where it was).
const PENDING: u8 = 0;
const RUNNING: u8 = 1;
const FAILED: u8 = 2;

/// A buffer of parts filled by their writers while readers use what is in.
pub struct FillingBuffer {
    /// The memory, written and read only through `start` until complete; `bytes.len()` is
    /// `len` when made initialized ([`FillingBuffer::new`]), 0 when not.
    bytes: Arc<Vec<u8>>,
    start: NonNull<u8>,
    len: usize,
    /// Per part: how far it is in (in the unit its writer and readers agree on).
    marks: Box<[AtomicUsize]>,
    states: Box<[AtomicU8]>,
    /// The least need of the waiting readers (`usize::MAX`: none), so that writers take the
    /// lock only when one may go on.
    wake_at: AtomicUsize,
    /// (part, need) per waiting reader.
    waits: Mutex<Vec<(usize, usize)>>,
    changed: Condvar,
}

// SAFETY: the bytes are owned; each part has one writer (a claimed `Filler`), writes land only
// where no reader reads (past the published mark, or where an `unsafe` caller vouches), and the
// marks and states are atomics.
unsafe impl Send for FillingBuffer {}
unsafe impl Sync for FillingBuffer {}

impl FillingBuffer {
    /// The bytes of `buf`, as one part (a chunk decoded front to back).
    pub fn new(buf: Vec<u8>) -> Self {
        let len = buf.len();
        Self::with(buf, len, 1)
    }

    /// Room for `len` bytes in `parts` parts, not initialized: every byte is written (through
    /// [`Filler::write`]) before it is read. The room is a spare buffer of about that size when
    /// there is one, and goes back to the spares when the buffer is dropped.
    pub fn uninit(len: usize, parts: usize) -> Self {
        Self::with(super::buffers().take_about(len), len, parts)
    }

    fn with(mut buf: Vec<u8>, len: usize, parts: usize) -> Self {
        FillingBuffer {
            start: NonNull::new(buf.as_mut_ptr()).unwrap_or(NonNull::dangling()),
            bytes: Arc::new(buf),
            len,
            marks: (0..parts).map(|_| AtomicUsize::new(0)).collect(),
            states: (0..parts).map(|_| AtomicU8::new(PENDING)).collect(),
            wake_at: AtomicUsize::new(usize::MAX),
            waits: Mutex::default(),
            changed: Condvar::new(),
        }
    }

    /// The writer of `part`, unless someone claimed it before (or there is no such part).
    pub fn claim(&self, part: usize) -> Option<Filler<'_>> {
        let state = self.states.get(part)?;
        state
            .compare_exchange(PENDING, RUNNING, SeqCst, SeqCst)
            .ok()?;
        Some(Filler {
            buf: self,
            part,
            done: false,
        })
    }

    fn serves(&self, part: usize, need: usize) -> bool {
        self.marks[part].load(SeqCst) >= need || self.states[part].load(SeqCst) == FAILED
    }

    /// Moves the mark of `part` to `to` (never back), waking the readers that can go on.
    fn advance(&self, part: usize, to: usize) {
        self.marks[part].fetch_max(to, SeqCst);
        self.wake(to);
    }

    /// Wakes the readers a change (to mark `to`) lets go on.
    fn wake(&self, to: usize) {
        let at = self.wake_at.load(SeqCst);
        if at == usize::MAX || to < at {
            return;
        }
        let waits = self.waits.lock();
        let (mut served, mut least) = (false, usize::MAX);
        for &(part, need) in waits.iter() {
            match self.serves(part, need) {
                true => served = true,
                false => least = least.min(need),
            }
        }
        self.wake_at.store(least, SeqCst);
        drop(waits);
        if served {
            self.changed.notify_all();
        }
    }

    /// Waits until the mark of `part` reaches `need`; false when the part failed short of it
    /// (or does not exist). An unclaimed part is waited for until someone claims and fills it.
    pub fn wait(&self, part: usize, need: usize) -> bool {
        let Some(mark) = self.marks.get(part) else {
            return false;
        };
        if mark.load(SeqCst) >= need {
            return true;
        }
        let mut waits = self.waits.lock();
        waits.push((part, need));
        self.wake_at.fetch_min(need, SeqCst);
        while !self.serves(part, need) {
            self.changed.wait(&mut waits);
        }
        if let Some(i) = waits.iter().position(|&w| w == (part, need)) {
            waits.swap_remove(i);
        }
        mark.load(SeqCst) >= need
    }

    /// True when the writer of `part` gave up.
    pub fn failed(&self, part: usize) -> bool {
        self.states.get(part).map(|s| s.load(SeqCst)) == Some(FAILED)
    }

    /// The bytes in of a one-part buffer made initialized, once at least `need` are (fewer
    /// when it is shorter); `None` when its writer failed short of them.
    pub fn wait_prefix(&self, need: usize) -> Option<&[u8]> {
        assert!(self.marks.len() == 1 && self.bytes.len() == self.len);
        if !self.wait(0, need.min(self.len)) {
            return None;
        }
        let n = self.marks[0].load(SeqCst).min(self.len);
        // SAFETY: initialized; bytes below the mark are never written again (`undecoded`
        // refuses them; `Filler::write` promises not to).
        unsafe { self.read(0, n) }
    }

    /// The whole buffer, once its one part is complete.
    pub fn whole(&self) -> Option<Arc<Vec<u8>>> {
        let complete = self.marks.len() == 1 && self.marks[0].load(SeqCst) == DONE;
        (complete && self.bytes.len() == self.len).then(|| self.bytes.clone())
    }

    /// Bytes `at..end`; `None` when out of bounds.
    ///
    /// # Safety
    /// Every one of them has been written, and no writer may write them while the slice lives
    /// (the parts whose marks cover them say so).
    pub unsafe fn read(&self, at: usize, end: usize) -> Option<&[u8]> {
        if at > end || end > self.len {
            return None;
        }
        // SAFETY: in bounds; written and left alone, says the caller.
        Some(unsafe { std::slice::from_raw_parts(self.start.as_ptr().add(at), end - at) })
    }
}

/// The least room a dropped buffer must have to be kept as a spare.
const SPARE_MIN: usize = 1 << 20;

/// A buffer nobody else holds (a selection let go, a chunk that failed) becomes a spare.
impl Drop for FillingBuffer {
    fn drop(&mut self) {
        if let Some(buf) = Arc::get_mut(&mut self.bytes).filter(|b| b.capacity() >= SPARE_MIN) {
            super::buffers().give(std::mem::take(buf));
        }
    }
}

/// The one writer of a part: it moves the part's mark, and fails the part (waking its
/// readers) when dropped before [`Filler::finish`].
pub struct Filler<'a> {
    buf: &'a FillingBuffer,
    part: usize,
    done: bool,
}

impl<'a> Filler<'a> {
    /// Reports the part in up to `mark`, waking the readers waiting for that.
    pub fn publish(&self, mark: usize) {
        self.buf.advance(self.part, mark);
    }

    /// Reports the part complete.
    pub fn finish(mut self) {
        self.done = true;
        self.buf.advance(self.part, DONE);
    }

    /// The room a decoder fills front to back, publishing what it reports decoded; for a
    /// one-part buffer made initialized.
    pub fn target(&mut self) -> DecodeTarget<'_> {
        let buf = self.buf;
        assert!(buf.marks.len() == 1 && buf.bytes.len() == buf.len);
        DecodeTarget {
            start: buf.start,
            len: buf.len,
            filled: 0,
            shared: Some(buf),
            _room: PhantomData,
        }
    }

    /// Writes `src` at byte `at`; `None` when out of bounds.
    ///
    /// # Safety
    /// No other writer writes these bytes, and no reader reads them before the part's mark
    /// says they are in.
    pub unsafe fn write(&mut self, at: usize, src: &[u8]) -> Option<()> {
        if at.checked_add(src.len())? > self.buf.len {
            return None;
        }
        // SAFETY: in bounds; nobody else touches these bytes, says the caller.
        unsafe {
            let to = self.buf.start.as_ptr().add(at);
            std::ptr::copy_nonoverlapping(src.as_ptr(), to, src.len());
        }
        Some(())
    }
}

impl Drop for Filler<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.buf.states[self.part].store(FAILED, SeqCst);
            self.buf.wake(DONE);
        }
    }
}

/// Room for one decoded chunk, filled front to back: a plain slice, or a [`FillingBuffer`]
/// whose readers get each part as the decoder reports it decoded.
pub struct DecodeTarget<'a> {
    start: NonNull<u8>,
    len: usize,
    /// Bytes written so far (what zstd's output buffer reports).
    filled: usize,
    /// The buffer whose readers see the decoded part.
    shared: Option<&'a FillingBuffer>,
    _room: PhantomData<&'a mut [u8]>,
}

// SAFETY: a target is the one writer of its bytes, like `&mut [u8]`; what it shares is `Sync`.
unsafe impl Send for DecodeTarget<'_> {}

impl<'a> DecodeTarget<'a> {
    /// The bytes of `out`.
    pub fn new(out: &'a mut [u8]) -> Self {
        DecodeTarget {
            len: out.len(),
            start: NonNull::from(out).cast(),
            filled: 0,
            shared: None,
            _room: PhantomData,
        }
    }

    /// Its length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// How far readers may read: bytes below are never written again.
    fn published(&self) -> usize {
        self.shared.map_or(0, |b| b.marks[0].load(SeqCst))
    }

    /// The first `n` bytes, decoded: from now on readers may read them, and they are never
    /// written again.
    pub fn decoded(&self, n: usize) -> &[u8] {
        assert!(n <= self.len);
        if let Some(buf) = self.shared {
            buf.advance(0, n);
        }
        // SAFETY: in bounds and initialized (a slice, or a buffer made initialized); the
        // first `n` bytes are no longer written (`undecoded` refuses them).
        unsafe { std::slice::from_raw_parts(self.start.as_ptr(), n) }
    }

    /// Bytes `from..to`, not yet decoded, to write.
    pub fn undecoded(&mut self, from: usize, to: usize) -> &mut [u8] {
        assert!(self.published() <= from && from <= to && to <= self.len);
        // SAFETY: in bounds; readers read only below the published mark, which `from` is not
        // below, and the borrow of `self` keeps this the only writer.
        unsafe { std::slice::from_raw_parts_mut(self.start.as_ptr().add(from), to - from) }
    }
}

// SAFETY: `as_slice` covers the bytes zstd reported written, `as_mut_ptr` the whole room of
// `capacity` bytes; zstd writes only past the bytes it reported (and reads back only those),
// and readers read only up to what the decoder reported decoded, which `as_mut_ptr` checks is
// no more than that.
unsafe impl zstd::zstd_safe::WriteBuf for DecodeTarget<'_> {
    fn as_slice(&self) -> &[u8] {
        self.decoded(self.filled)
    }

    fn capacity(&self) -> usize {
        self.len
    }

    fn as_mut_ptr(&mut self) -> *mut u8 {
        assert!(self.published() <= self.filled);
        self.start.as_ptr()
    }

    unsafe fn filled_until(&mut self, n: usize) {
        self.filled = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::{catch_unwind, AssertUnwindSafe};

    /// The byte a writer puts at `i`.
    fn pattern(i: usize) -> u8 {
        (i * 7 % 251) as u8 + 1
    }

    fn is_pattern(bytes: &[u8], from: usize) -> bool {
        bytes
            .iter()
            .enumerate()
            .all(|(i, &b)| b == pattern(from + i))
    }

    #[test]
    fn readers_see_only_decoded_bytes_as_they_grow() {
        let buf = FillingBuffer::new(vec![0; 100_000]);
        std::thread::scope(|s| {
            for r in 0..3 {
                let buf = &buf;
                s.spawn(move || {
                    let mut seen = 0;
                    while seen < buf.len {
                        let got = buf.wait_prefix(seen + 1 + r * 10).expect("no failure");
                        assert!(got.len() > seen && is_pattern(got, 0));
                        seen = got.len();
                    }
                });
            }
            let mut filler = buf.claim(0).expect("unclaimed");
            assert!(buf.claim(0).is_none(), "one writer");
            let mut target = filler.target();
            for from in (0..100_000).step_by(997) {
                let to = (from + 997).min(100_000);
                let room = target.undecoded(from, to);
                room.iter_mut()
                    .enumerate()
                    .for_each(|(i, b)| *b = pattern(from + i));
                assert_eq!(target.decoded(to).len(), to);
            }
            filler.finish();
        });
        assert!(is_pattern(&buf.whole().expect("complete"), 0));
    }

    #[test]
    fn marks_only_move_forward_and_decoded_bytes_stay_written() {
        let buf = FillingBuffer::new(vec![0; 10]);
        let mut filler = buf.claim(0).unwrap();
        filler.publish(6);
        filler.publish(3);
        assert_eq!(buf.wait_prefix(1).map(<[u8]>::len), Some(6));
        let mut target = filler.target();
        let rewrite = catch_unwind(AssertUnwindSafe(|| target.undecoded(5, 8).fill(1)));
        assert!(rewrite.is_err(), "bytes readers may read are not written");
        target.undecoded(6, 10).fill(9);
        assert!(buf.whole().is_none(), "not complete yet");
    }

    #[test]
    fn a_failed_writer_wakes_its_readers_and_keeps_what_was_in() {
        let buf = FillingBuffer::new(vec![0; 100]);
        let filler = buf.claim(0).unwrap();
        std::thread::scope(|s| {
            let reader = s.spawn(|| buf.wait_prefix(80).is_none());
            filler.publish(50);
            std::thread::sleep(std::time::Duration::from_millis(20));
            drop(filler);
            assert!(reader.join().unwrap(), "the reader gives up");
        });
        assert_eq!(buf.wait_prefix(40).map(<[u8]>::len), Some(50));
        assert!(
            buf.whole().is_none() && buf.claim(0).is_none(),
            "failed for good"
        );
    }

    #[test]
    fn parts_written_apart_are_read_once_their_marks_say_so() {
        const PARTS: usize = 8;
        const ROWS: usize = 64;
        const ROW: usize = 32;
        // Row `r` of part `p` is row `r * PARTS + p` of the buffer: the parts interleave.
        let at = |p: usize, r: usize| (r * PARTS + p) * ROW;
        let buf = FillingBuffer::uninit(PARTS * ROWS * ROW, PARTS);
        std::thread::scope(|s| {
            for p in 0..PARTS {
                let buf = &buf;
                s.spawn(move || {
                    let mut filler = buf.claim(p).unwrap();
                    for r in 0..ROWS {
                        let row: Vec<u8> = (0..ROW).map(|i| pattern(at(p, r) + i)).collect();
                        // SAFETY: rows of part `p` are its own, read after the mark passes.
                        unsafe { filler.write(at(p, r), &row).unwrap() };
                        filler.publish(r + 1);
                    }
                    filler.finish();
                });
                s.spawn(move || {
                    for r in 0..ROWS {
                        assert!(buf.wait(p, r + 1));
                        // SAFETY: the mark of part `p` covers row `r`, written once.
                        let row = unsafe { buf.read(at(p, r), at(p, r) + ROW).unwrap() };
                        assert!(is_pattern(row, at(p, r)));
                    }
                });
            }
        });
        assert!(buf.wait(0, usize::MAX), "a finished part serves any need");
        assert!(!buf.wait(PARTS, 0), "no such part");
        // SAFETY: out of bounds, nothing is read.
        assert!(unsafe { buf.read(0, buf.len + 1) }.is_none());
    }
}
