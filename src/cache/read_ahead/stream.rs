//! Access-pattern detection per open file: sequential reads and constant-stride reads (a C-order
//! walk along an axis that is not contiguous, e.g. `numpy.memmap` column slices) both predict
//! which bytes come next, so their chunks can be decoded ahead.

/// Reads closer than this to where the last one ended still count as sequential: the kernel
/// sends readahead requests concurrently, so they arrive slightly out of order.
pub(super) const SEQUENTIAL_SLACK: u64 = 4 << 20;
/// Consecutive confirmations before a pattern is trusted.
const CONFIRM: u32 = 2;
/// The look-ahead of a first read, as a fraction of the full window.
const FIRST_READ_FRACTION: u64 = 4;

/// What one open file has been doing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stream {
    /// How many times what has been read in order to look ahead.
    ramp: u64,
    /// Whether the look-ahead also doubles with every read in order.
    doubling: bool,
    last_offset: Option<u64>,
    last_end: u64,
    stride: Option<i128>,
    sequential_hits: u32,
    stride_hits: u32,
    /// Only one read so far.
    first: bool,
    /// Where the current run of reads in order began.
    run_start: u64,
    /// Where the ranges predicted for the current run end: a later prediction starts there,
    /// so every read asks only for what no earlier one did.
    predicted: u64,
}

/// Byte ranges predicted to be read next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prediction {
    /// Nothing to prefetch (random access, or not yet confirmed).
    None,
    /// One contiguous range `start..end`.
    Range(u64, u64),
    /// `count` reads of `len` bytes at `start`, `start + stride`, ...
    Strided {
        start: u64,
        stride: u64,
        len: u64,
        count: u64,
    },
}

impl Stream {
    /// A reader not seen yet, whose look-ahead will be `ramp` times its run of reads in order,
    /// and with `doubling` at least twice what it was at the read before.
    pub fn new(ramp: u64, doubling: bool) -> Self {
        Stream {
            ramp,
            doubling,
            last_offset: None,
            last_end: 0,
            stride: None,
            sequential_hits: 0,
            stride_hits: 0,
            first: false,
            run_start: 0,
            predicted: 0,
        }
    }

    /// True once reads in order are confirmed (and until the pattern breaks).
    pub fn is_sequential(&self) -> bool {
        self.sequential_hits >= CONFIRM
    }

    /// True when the last read was the first, or went on from where an earlier one ended.
    pub fn in_order(&self) -> bool {
        self.sequential_hits > 0 || self.first
    }

    /// The rest of the window of a confirmed sequential reader that doubles its look-ahead (over
    /// the network), past what its reads have predicted: from there to `window` bytes past its
    /// last read. Finished fetches of its chunks queue these, without waiting for its next read.
    pub fn beyond(&self, window: u64) -> Prediction {
        let from = self.last_end.max(self.predicted);
        let to = self.last_end.saturating_add(window);
        if self.doubling && self.is_sequential() && to > from {
            Prediction::Range(from, to)
        } else {
            Prediction::None
        }
    }

    /// Records a read of `len` bytes at `offset`; predicts what comes next within `window` bytes.
    /// A first read only looks ahead up to `first_limit` (the end of the chunks it touches), so a
    /// reader of one frame does not pay for decoding the next; with `doubling` (over the
    /// network), a first read at the start of the file asks for the whole window at once: such
    /// a reader most likely reads on, and each round trip spent growing the window would cost
    /// the store's latency (100-200 ms for object storage). Reads in order look ahead `ramp`
    /// times as far as they have come, up to `window` (like the kernel's readahead ramp), so one
    /// large read, which arrives as several requests, does not set off decoding far beyond
    /// itself; with `doubling`, at least twice as far ahead as the read before looked (as
    /// mountpoint-s3 does: a reader waiting for its first chunks still gets the whole window
    /// asked for within a few reads).
    pub fn record(&mut self, offset: u64, len: u64, window: u64, first_limit: u64) -> Prediction {
        let end = offset.saturating_add(len);
        self.first = self.last_offset.is_none();
        if self.first {
            self.last_offset = Some(offset);
            self.last_end = end;
            self.run_start = offset;
            let ahead = if self.doubling && offset == 0 {
                end.saturating_add(window)
            } else {
                end.saturating_add(window / FIRST_READ_FRACTION)
                    .min(first_limit)
            };
            self.predicted = ahead;
            return if ahead > end {
                Prediction::Range(end, ahead)
            } else {
                Prediction::None
            };
        }
        let sequential = self.last_offset.is_some()
            && offset.abs_diff(self.last_end) <= SEQUENTIAL_SLACK
            && offset + SEQUENTIAL_SLACK >= self.last_end;
        let stride = self
            .last_offset
            .map(|prev| i128::from(offset) - i128::from(prev));
        self.sequential_hits = if sequential {
            self.sequential_hits + 1
        } else {
            self.run_start = offset;
            self.predicted = 0;
            0
        };
        self.stride_hits = match (stride, self.stride) {
            (Some(s), Some(prev)) if s == prev && s.unsigned_abs() > u128::from(len.max(1)) => {
                self.stride_hits + 1
            }
            _ => 0,
        };
        self.stride = stride;
        self.last_offset = Some(offset);
        // Out-of-order requests of one run keep its furthest end; a jump (back to the start
        // for a second pass, or anywhere else) starts a new run from the read itself.
        self.last_end = if sequential {
            self.last_end.max(end)
        } else {
            end
        };
        if self.sequential_hits >= CONFIRM {
            let ramp = self
                .last_end
                .saturating_sub(self.run_start)
                .saturating_mul(self.ramp);
            let ahead = self.predicted.saturating_sub(self.last_end);
            let grown = if self.doubling {
                ahead.saturating_mul(2)
            } else {
                0
            };
            let from = self.last_end.max(self.predicted);
            let to = self.last_end.saturating_add(window.min(ramp.max(grown)));
            if to <= from {
                return Prediction::None;
            }
            self.predicted = to;
            return Prediction::Range(from, to);
        }
        match self.stride {
            Some(s) if self.stride_hits >= CONFIRM && s > 0 && window > 0 => {
                let stride = s as u64;
                let count = (window / len.max(1)).clamp(1, 1024);
                Prediction::Strided {
                    start: offset + stride,
                    stride,
                    len: len.max(1),
                    count,
                }
            }
            _ => Prediction::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_reads_predict_the_next_window() {
        let mut s = Stream::new(2, false);
        assert_eq!(
            s.record(0, 1 << 20, 8 << 20, u64::MAX),
            Prediction::Range(1 << 20, 3 << 20)
        );
        assert_eq!(
            s.record(1 << 20, 1 << 20, 8 << 20, u64::MAX),
            Prediction::None
        );
        // Confirmed after 3 MiB in order: twice that ahead, ramping up to the window.
        assert_eq!(
            s.record(2 << 20, 1 << 20, 8 << 20, u64::MAX),
            Prediction::Range(3 << 20, 9 << 20)
        );
        // Out-of-order readahead requests keep it sequential; each prediction starts where
        // the last one ended.
        assert_eq!(
            s.record(5 << 20, 1 << 20, 8 << 20, u64::MAX),
            Prediction::Range(9 << 20, 14 << 20)
        );
        assert_eq!(
            s.record(4 << 20, 1 << 20, 8 << 20, u64::MAX),
            Prediction::None,
            "nothing new to ask for"
        );
        assert_eq!(
            s.record(6 << 20, 1 << 20, 8 << 20, u64::MAX),
            Prediction::Range(14 << 20, 15 << 20)
        );
        // A jump starts a new run, which ramps up again.
        s.record(100 << 20, 1 << 20, 8 << 20, u64::MAX);
        s.record(101 << 20, 1 << 20, 8 << 20, u64::MAX);
        assert_eq!(
            s.record(102 << 20, 1 << 20, 8 << 20, u64::MAX),
            Prediction::Range(103 << 20, 109 << 20)
        );
    }

    #[test]
    fn a_second_pass_from_the_start_is_sequential_again() {
        let mut s = Stream::new(2, false);
        let mib = 1 << 20;
        for k in 0..64 {
            s.record(k * mib, mib, 8 * mib, u64::MAX);
        }
        assert!(s.is_sequential());
        // Back to the start: a new run, confirmed as soon as it goes on in order.
        s.record(0, mib, 8 * mib, u64::MAX);
        assert!(!s.is_sequential());
        s.record(mib, mib, 8 * mib, u64::MAX);
        assert_eq!(
            s.record(2 * mib, mib, 8 * mib, u64::MAX),
            Prediction::Range(3 * mib, 9 * mib)
        );
        // The same after reading the file's tail first.
        let mut s = Stream::new(2, false);
        s.record(900 * mib, mib, 8 * mib, u64::MAX);
        s.record(0, mib, 8 * mib, u64::MAX);
        s.record(mib, mib, 8 * mib, u64::MAX);
        s.record(2 * mib, mib, 8 * mib, u64::MAX);
        assert!(s.is_sequential());
    }

    #[test]
    fn a_doubling_look_ahead_doubles_with_every_read_in_order() {
        let mut s = Stream::new(2, true);
        let mib = 1 << 20;
        // A reader starting in the middle of the file (at 100 MiB).
        let at = |n: u64| (100 + n) * mib;
        assert_eq!(
            s.record(at(0), mib, 64 * mib, at(8)),
            Prediction::Range(at(1), at(8))
        );
        s.record(at(1), mib, 64 * mib, u64::MAX);
        // 5 MiB were ahead of the reader (3 to 8): now 10.
        assert_eq!(
            s.record(at(2), mib, 64 * mib, u64::MAX),
            Prediction::Range(at(8), at(13))
        );
        // 9 ahead: now 18.
        assert_eq!(
            s.record(at(3), mib, 64 * mib, u64::MAX),
            Prediction::Range(at(13), at(22))
        );
        // The rest of the window goes on from there.
        assert_eq!(s.beyond(64 * mib), Prediction::Range(at(22), at(68)));
        assert_eq!(
            Stream::new(2, false).beyond(64 * mib),
            Prediction::None,
            "not confirmed"
        );
    }

    #[test]
    fn over_the_network_a_first_read_at_the_start_of_a_file_opens_the_whole_window() {
        let mib = 1 << 20;
        assert_eq!(
            Stream::new(8, true).record(0, mib, 256 * mib, 64 * mib),
            Prediction::Range(mib, 257 * mib)
        );
        // Elsewhere, or for a local store, a first read looks ahead as far as its bands.
        assert_eq!(
            Stream::new(8, true).record(mib, mib, 256 * mib, 64 * mib),
            Prediction::Range(2 * mib, 64 * mib)
        );
        assert_eq!(
            Stream::new(2, false).record(0, mib, 256 * mib, 64 * mib),
            Prediction::Range(mib, 64 * mib)
        );
    }

    #[test]
    fn constant_strides_predict_the_next_reads() {
        let mut s = Stream::new(2, false);
        let row = 100 << 20;
        for k in 0..4 {
            s.record(k * row + 40, 4096, 64 << 10, u64::MAX);
        }
        assert_eq!(
            s.record(4 * row + 40, 4096, 64 << 10, u64::MAX),
            Prediction::Strided {
                start: 5 * row + 40,
                stride: row,
                len: 4096,
                count: 16
            }
        );
    }

    #[test]
    fn random_reads_predict_nothing() {
        let mut s = Stream::new(2, false);
        s.record(1 << 30, 4096, 8 << 20, u64::MAX);
        for off in [900u64 << 20, 3 << 20, 700 << 20, 11 << 20, 400 << 20] {
            assert_eq!(s.record(off, 4096, 8 << 20, u64::MAX), Prediction::None);
        }
    }
}
