//! The one buffer readers use while writers still fill it; all its unsafe code is here.
//!
//! A [`FillingBuffer`] has parts (one for a chunk decoded front to back, one per chunk of a
//! selection), each with one writer (a [`Filler`], claimed once) and a mark that only moves
//! forward: readers wait until a part's mark reaches their need, or the part fails. A chunk is
//! decoded through a [`DecodeTarget`]: what the decoder reports decoded becomes readable, and
//! only what lies past it may be written. A selection's rows are scattered over the buffer: its
//! units (a length all its rows start and end on) are taken by one writer before they are
//! written and marked written after, and a read is served only where every unit is written.

use parking_lot::{Condvar, Mutex};
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize};
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
    /// For a buffer written in scattered pieces ([`FillingBuffer::uninit`]): which units are
    /// taken and written.
    units: Option<Units>,
}

/// Per unit of `grain` bytes of a scattered buffer, a bit in each map: taken (by one writer,
/// before it writes) and written (after).
struct Units {
    grain: usize,
    taken: Box<[AtomicU64]>,
    written: Box<[AtomicU64]>,
}

impl Units {
    /// Words of each map for `len` bytes in units of `grain`.
    fn words_for(len: usize, grain: usize) -> usize {
        len.div_ceil(grain.max(1)).div_ceil(64)
    }

    fn new(len: usize, grain: usize) -> Self {
        let map = || {
            (0..Self::words_for(len, grain))
                .map(|_| AtomicU64::new(0))
                .collect()
        };
        Units {
            grain,
            taken: map(),
            written: map(),
        }
    }

    /// The words of units `lo..hi`, each with the mask of those units in it.
    fn words(lo: usize, hi: usize) -> impl Iterator<Item = (usize, u64)> {
        let end = if lo < hi { hi.div_ceil(64) } else { lo / 64 };
        (lo / 64..end).map(move |w| {
            let from = lo.max(w * 64) - w * 64;
            let to = hi.min(w * 64 + 64) - w * 64;
            let mask = (u64::MAX >> (64 - (to - from))) << from;
            (w, mask)
        })
    }

    /// Takes units `lo..hi` for one writer; false when any of them was taken before (they
    /// then stay taken: of two writes that overlap, the later one fails, and both when they
    /// race).
    fn take(&self, lo: usize, hi: usize) -> bool {
        Self::words(lo, hi).fold(true, |free, (w, mask)| {
            free & (self.taken[w].fetch_or(mask, Relaxed) & mask == 0)
        })
    }

    /// Marks units `lo..hi` written (their bytes are in, for any reader that sees it).
    fn mark_written(&self, lo: usize, hi: usize) {
        for (w, mask) in Self::words(lo, hi) {
            self.written[w].fetch_or(mask, Release);
        }
    }

    /// True when every unit of `lo..hi` is written.
    fn all_written(&self, lo: usize, hi: usize) -> bool {
        Self::words(lo, hi).all(|(w, mask)| self.written[w].load(Acquire) & mask == mask)
    }
}

// SAFETY: the bytes are owned; each part has one writer (a claimed `Filler`), writes land only
// where no reader reads (past the published mark, or in units taken by that writer alone and
// read only once marked written), and the marks, states and units are atomics.
unsafe impl Send for FillingBuffer {}
unsafe impl Sync for FillingBuffer {}

impl FillingBuffer {
    /// Bytes the buffer holds, written or not.
    pub fn size(&self) -> usize {
        self.len
    }

    /// The bytes of `buf`, as one part (a chunk decoded front to back).
    pub fn new(buf: Vec<u8>) -> Self {
        let len = buf.len();
        Self::with(buf, len, 1)
    }

    /// Room for `len` bytes in `parts` parts, not initialized, written in pieces of whole units
    /// of `grain` bytes (through [`Filler::write`]) and read where written
    /// ([`FillingBuffer::read_written`]). The room is a spare buffer of about that size when
    /// there is one, and goes back to the spares when the buffer is dropped.
    pub fn uninit(len: usize, parts: usize, grain: usize) -> Self {
        let mut buf = Self::with(super::buffers().take_about(len), len, parts);
        buf.units = Some(Units::new(len, grain.max(1)));
        buf
    }

    /// The bytes a buffer made by [`FillingBuffer::uninit`] takes besides its room: each
    /// part's mark and state, and the units' two maps.
    pub fn uninit_overhead(len: usize, parts: usize, grain: usize) -> usize {
        let part = size_of::<AtomicUsize>() + size_of::<AtomicU8>();
        let maps = 2 * Units::words_for(len, grain) * size_of::<AtomicU64>();
        parts.saturating_mul(part).saturating_add(maps)
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
            units: None,
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

    /// Waits until the mark of `part` reaches `need`; false when the part failed (or does not
    /// exist): the bytes of a writer that gave up are not used, even below its mark. An
    /// unclaimed part is waited for until someone claims and fills it.
    pub fn wait(&self, part: usize, need: usize) -> bool {
        let Some(mark) = self.marks.get(part) else {
            return false;
        };
        if mark.load(SeqCst) >= need {
            return !self.failed(part);
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
        mark.load(SeqCst) >= need && !self.failed(part)
    }

    /// True when the writer of `part` gave up.
    pub fn failed(&self, part: usize) -> bool {
        self.states.get(part).map(|s| s.load(SeqCst)) == Some(FAILED)
    }

    /// The bytes in of a one-part buffer made initialized, once at least `need` are (fewer
    /// when it is shorter); `None` when its writer failed.
    pub fn wait_prefix(&self, need: usize) -> Option<&[u8]> {
        assert!(self.marks.len() == 1 && self.bytes.len() == self.len);
        if !self.wait(0, need.min(self.len)) {
            return None;
        }
        let n = self.marks[0].load(SeqCst).min(self.len);
        // SAFETY: initialized; bytes below the mark are never written again (`undecoded`
        // refuses them; `Filler::write` writes scattered buffers only).
        unsafe { self.read(0, n) }
    }

    /// The whole buffer, once its one part is complete.
    pub fn whole(&self) -> Option<Arc<Vec<u8>>> {
        let complete = self.marks.len() == 1 && self.marks[0].load(SeqCst) == DONE;
        (complete && self.bytes.len() == self.len).then(|| self.bytes.clone())
    }

    /// Bytes `at..end` of a scattered buffer; `None` when out of bounds, or when any of them
    /// is not written yet (wait for the parts first).
    pub fn read_written(&self, at: usize, end: usize) -> Option<&[u8]> {
        let units = self.units.as_ref()?;
        if at > end || end > self.len {
            return None;
        }
        if at < end && !units.all_written(at / units.grain, end.div_ceil(units.grain)) {
            return None;
        }
        // SAFETY: every unit touched is written, by the one writer that took it, which writes
        // it no more.
        unsafe { self.read(at, end) }
    }

    /// Bytes `at..end`; `None` when out of bounds.
    ///
    /// # Safety
    /// Every one of them has been written, and no writer may write them while the slice lives.
    unsafe fn read(&self, at: usize, end: usize) -> Option<&[u8]> {
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

    /// Writes `src` at byte `at` of a scattered buffer, whole units only; `None` when out of
    /// bounds, not in whole units, or when another write took any of these units before.
    pub fn write(&mut self, at: usize, src: &[u8]) -> Option<()> {
        let units = self.buf.units.as_ref()?;
        let end = at.checked_add(src.len())?;
        let whole = at.is_multiple_of(units.grain) && end.is_multiple_of(units.grain);
        if end > self.buf.len || !whole || !units.take(at / units.grain, end / units.grain) {
            return None;
        }
        // SAFETY: in bounds, and in units this writer alone took, which no reader reads before
        // they are marked written below.
        unsafe {
            let to = self.buf.start.as_ptr().add(at);
            std::ptr::copy_nonoverlapping(src.as_ptr(), to, src.len());
        }
        units.mark_written(at / units.grain, end / units.grain);
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
    fn a_failed_writer_wakes_its_readers_and_what_it_wrote_is_not_used() {
        let buf = FillingBuffer::new(vec![0; 100]);
        let filler = buf.claim(0).unwrap();
        std::thread::scope(|s| {
            let reader = s.spawn(|| buf.wait_prefix(80).is_none());
            filler.publish(50);
            std::thread::sleep(std::time::Duration::from_millis(20));
            drop(filler);
            assert!(reader.join().unwrap(), "the reader gives up");
        });
        assert!(buf.wait_prefix(40).is_none(), "not even below its mark");
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
        let buf = FillingBuffer::uninit(PARTS * ROWS * ROW, PARTS, 4);
        std::thread::scope(|s| {
            for p in 0..PARTS {
                let buf = &buf;
                s.spawn(move || {
                    let mut filler = buf.claim(p).unwrap();
                    for r in 0..ROWS {
                        let row: Vec<u8> = (0..ROW).map(|i| pattern(at(p, r) + i)).collect();
                        filler.write(at(p, r), &row).unwrap();
                        filler.publish(r + 1);
                    }
                    filler.finish();
                });
                s.spawn(move || {
                    for r in 0..ROWS {
                        assert!(buf.wait(p, r + 1));
                        let row = buf.read_written(at(p, r), at(p, r) + ROW).unwrap();
                        assert!(is_pattern(row, at(p, r)));
                    }
                });
            }
        });
        assert!(buf.wait(0, usize::MAX), "a finished part serves any need");
        assert!(!buf.wait(PARTS, 0), "no such part");
        assert!(buf.read_written(0, buf.len + 1).is_none(), "out of bounds");
    }

    #[test]
    fn scattered_writes_refuse_what_another_took_and_reads_wait_for_every_unit() {
        let buf = FillingBuffer::uninit(64, 2, 4);
        assert_eq!(
            FillingBuffer::uninit_overhead(64, 2, 4),
            2 * 9 + 2 * 8,
            "two parts' marks and states, and a word per map for 16 units"
        );
        let (mut a, mut b) = (buf.claim(0).unwrap(), buf.claim(1).unwrap());
        assert_eq!(a.write(8, &[1; 8]), Some(()));
        assert_eq!(b.write(12, &[2; 8]), None, "overlaps a's units");
        assert_eq!(
            b.write(16, &[2; 8]),
            None,
            "its first unit was taken by the refused write"
        );
        assert_eq!(b.write(30, &[2; 4]), None, "not in whole units");
        assert_eq!(b.write(60, &[2; 8]), None, "out of bounds");
        assert_eq!(b.write(24, &[2; 4]), Some(()));
        assert_eq!(buf.read_written(8, 16), Some(&[1u8; 8][..]));
        assert_eq!(
            buf.read_written(9, 14),
            Some(&[1u8; 5][..]),
            "any bytes of written units"
        );
        assert_eq!(buf.read_written(8, 24), None, "16..20 is not written");
        assert_eq!(buf.read_written(24, 28), Some(&[2u8; 4][..]));
        assert_eq!(buf.read_written(0, 0), Some(&[][..]));
        assert_eq!(
            buf.read_written(33, 33),
            Some(&[][..]),
            "empty, in a unit not written"
        );
        let chunk = FillingBuffer::new(vec![0; 8]);
        let mut writer = chunk.claim(0).unwrap();
        assert_eq!(
            writer.write(0, &[1; 4]),
            None,
            "a chunk decoded front to back is not scattered"
        );
    }
}
