//! The bytes of a selection gathered in memory, shared without locks: every row is written
//! once, by the one thread copying its chunk in, and read only after that chunk's progress
//! says the row is in (see [`super::selection_buffer`], whose lock orders the two). Writers
//! and readers thus never touch the same bytes at the same time, and a reader's bytes go to
//! the kernel without a copy. Since every byte is written before it is read, the memory is
//! never zeroed first: a fresh 16 MiB selection would spend milliseconds there, before its
//! first chunk could start decoding.

use std::ptr::NonNull;

/// One selection's bytes (one allocation: of huge pages when large, see [`crate::memory`]).
pub(super) struct SelectionBytes {
    /// The memory (its capacity: the vector stays empty), accessed only through `start`.
    _buf: Vec<u8>,
    start: NonNull<u8>,
    len: usize,
}

// SAFETY: the bytes are owned; concurrent access follows the rules of `write` and `read`.
unsafe impl Send for SelectionBytes {}
unsafe impl Sync for SelectionBytes {}

impl SelectionBytes {
    /// Room for `len` bytes, not initialized: each is written before it is read.
    pub fn new(len: usize) -> Self {
        let mut buf = Vec::with_capacity(len);
        let start = NonNull::new(buf.as_mut_ptr()).unwrap_or(NonNull::dangling());
        SelectionBytes {
            _buf: buf,
            start,
            len,
        }
    }

    /// Its length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Writes `src` at byte `at`; `None` when out of bounds.
    ///
    /// # Safety
    /// No other thread may read or write these bytes meanwhile.
    pub unsafe fn write(&self, at: usize, src: &[u8]) -> Option<()> {
        if at.checked_add(src.len())? > self.len {
            return None;
        }
        std::ptr::copy_nonoverlapping(src.as_ptr(), self.start.as_ptr().add(at), src.len());
        Some(())
    }

    /// Bytes `at..end`; `None` when out of bounds.
    ///
    /// # Safety
    /// Every one of these bytes has been written, and no thread may write them while the
    /// slice lives.
    pub unsafe fn read(&self, at: usize, end: usize) -> Option<&[u8]> {
        if at > end || end > self.len {
            return None;
        }
        Some(std::slice::from_raw_parts(
            self.start.as_ptr().add(at),
            end - at,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_reads_in_bounds_only() {
        let b = SelectionBytes::new(10);
        // SAFETY: one thread.
        unsafe {
            assert_eq!(b.write(8, b"ab"), Some(()));
            assert_eq!(b.write(9, b"ab"), None);
            assert_eq!(b.write(7, b"z"), Some(()));
            assert_eq!(b.read(7, 10), Some(&[b'z', b'a', b'b'][..]));
            assert_eq!(b.read(7, 11), None);
            assert_eq!(b.read(3, 2), None);
        }
        assert_eq!(b.len(), 10);
    }
}
