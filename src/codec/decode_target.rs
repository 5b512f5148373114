//! The room a progressive decoder writes one chunk into, front to back: the part already
//! decoded may be read, by other threads too, while the decoder writes the rest. Decoders only
//! ever borrow the part not yet written, so readers of the decoded part never alias a writer.

use std::marker::PhantomData;
use std::ptr::NonNull;
use zstd::zstd_safe::WriteBuf;

/// Room for one decoded chunk, filled front to back.
pub struct DecodeTarget<'a> {
    start: NonNull<u8>,
    len: usize,
    /// Bytes written so far (what zstd's output buffer reports).
    filled: usize,
    _room: PhantomData<&'a mut [u8]>,
}

// SAFETY: a target is a unique handle on its bytes (see `from_raw`), like `&mut [u8]`.
unsafe impl Send for DecodeTarget<'_> {}

impl<'a> DecodeTarget<'a> {
    /// The bytes of `out`.
    pub fn new(out: &'a mut [u8]) -> Self {
        DecodeTarget {
            len: out.len(),
            start: NonNull::from(out).cast(),
            filled: 0,
            _room: PhantomData,
        }
    }

    /// The `len` bytes at `start`.
    ///
    /// # Safety
    /// They must be valid for reads and writes for `'a`, and nothing but this target may write
    /// them meanwhile. Others may read the bytes the decoder has reported as decoded (through
    /// its progress calls); no one may read the rest.
    pub unsafe fn from_raw(start: NonNull<u8>, len: usize) -> Self {
        DecodeTarget {
            start,
            len,
            filled: 0,
            _room: PhantomData,
        }
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first `n` bytes (decoded ones: the decoder never writes them again).
    pub fn decoded(&self, n: usize) -> &[u8] {
        assert!(n <= self.len);
        // SAFETY: in bounds; readers may share decoded bytes (see `from_raw`).
        unsafe { std::slice::from_raw_parts(self.start.as_ptr(), n) }
    }

    /// Bytes `from..to`, not yet decoded, to write.
    pub fn undecoded(&mut self, from: usize, to: usize) -> &mut [u8] {
        assert!(from <= to && to <= self.len);
        // SAFETY: in bounds; nobody reads bytes not reported decoded (see `from_raw`), and the
        // borrow of `self` keeps this the only writer.
        unsafe { std::slice::from_raw_parts_mut(self.start.as_ptr().add(from), to - from) }
    }
}

// SAFETY: `as_slice` covers the bytes zstd reported written, `as_mut_ptr` the whole room of
// `capacity` bytes; zstd writes only past the bytes it reported (and reads back only those).
unsafe impl WriteBuf for DecodeTarget<'_> {
    fn as_slice(&self) -> &[u8] {
        self.decoded(self.filled)
    }

    fn capacity(&self) -> usize {
        self.len
    }

    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.start.as_ptr()
    }

    unsafe fn filled_until(&mut self, n: usize) {
        self.filled = n;
    }
}
