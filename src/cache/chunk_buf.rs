//! Memory for one decoded chunk. Buffers of 2 MiB and more are anonymous mappings aligned to
//! 2 MiB and marked for transparent huge pages: the first write to each 2 MiB then costs one
//! page fault instead of 512, which is most of the kernel time of a cold read. Smaller buffers,
//! and any buffer the kernel refuses to map, live on the heap.

use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// The size of a transparent huge page on x86-64 and arm64 (4 KiB base pages).
const HUGE_PAGE: usize = 2 << 20;

/// A zero-initialised byte buffer of fixed length.
pub struct ChunkBuf(Backing);

enum Backing {
    Heap(Vec<u8>),
    Mapped(Mapping),
}

/// An anonymous private mapping owned by one `ChunkBuf`.
struct Mapping {
    ptr: NonNull<u8>,
    /// Bytes in use.
    len: usize,
    /// Bytes mapped: `len` rounded up to whole pages.
    mapped: usize,
}

// SAFETY: the mapping is owned exclusively by its `ChunkBuf` (like a `Vec`'s allocation).
unsafe impl Send for Mapping {}
// SAFETY: shared access only reads through `&[u8]`.
unsafe impl Sync for Mapping {}

impl ChunkBuf {
    /// `len` zero bytes.
    pub fn zeroed(len: usize) -> Self {
        if len >= HUGE_PAGE {
            if let Some(mapping) = Mapping::new(len) {
                return ChunkBuf(Backing::Mapped(mapping));
            }
        }
        ChunkBuf(Backing::Heap(vec![0; len]))
    }
}

impl Mapping {
    /// Maps `len` bytes starting on a huge-page boundary, or `None` if the kernel refuses.
    fn new(len: usize) -> Option<Self> {
        let mapped = len.next_multiple_of(page_size());
        let reserve = mapped.checked_add(HUGE_PAGE)?;
        // SAFETY: a fresh anonymous mapping; no existing memory is touched.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                reserve,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        let start = (base as usize).next_multiple_of(HUGE_PAGE);
        let head = start - base as usize;
        let tail = reserve - head - mapped;
        // SAFETY: both ranges lie inside the mapping just made and outside the part kept. A
        // failed madvise only loses the huge pages.
        unsafe {
            if head > 0 {
                libc::munmap(base, head);
            }
            if tail > 0 {
                libc::munmap((start + mapped) as *mut libc::c_void, tail);
            }
            libc::madvise(start as *mut libc::c_void, mapped, libc::MADV_HUGEPAGE);
        }
        Some(Mapping {
            ptr: NonNull::new(start as *mut u8)?,
            len,
            mapped,
        })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the range this mapping owns; nothing borrows it any more.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.mapped);
        }
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096).max(1)
}

impl std::fmt::Debug for ChunkBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ChunkBuf({} bytes)", self.len())
    }
}

impl PartialEq for ChunkBuf {
    fn eq(&self, other: &Self) -> bool {
        self[..] == other[..]
    }
}

impl Eq for ChunkBuf {}

impl From<Vec<u8>> for ChunkBuf {
    fn from(v: Vec<u8>) -> Self {
        ChunkBuf(Backing::Heap(v))
    }
}

impl Deref for ChunkBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.0 {
            Backing::Heap(v) => v,
            // SAFETY: the mapping holds `len` readable bytes, initialised (zero-filled by the
            // kernel), and lives as long as `self`.
            Backing::Mapped(m) => unsafe { std::slice::from_raw_parts(m.ptr.as_ptr(), m.len) },
        }
    }
}

impl DerefMut for ChunkBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        match &mut self.0 {
            Backing::Heap(v) => v,
            // SAFETY: as in `deref`, and `&mut self` makes this the only borrow.
            Backing::Mapped(m) => unsafe { std::slice::from_raw_parts_mut(m.ptr.as_ptr(), m.len) },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large_buffers_are_zeroed_writable_and_exact() {
        for len in [0, 1, 4096, HUGE_PAGE - 1, HUGE_PAGE, 3 * HUGE_PAGE + 12345] {
            let mut buf = ChunkBuf::zeroed(len);
            assert!(buf.iter().all(|&b| b == 0), "len {len}");
            if len > 0 {
                assert_eq!(buf.len(), len);
                buf[len - 1] = 7;
                assert_eq!(buf[len - 1], 7);
            }
        }
        let large = ChunkBuf::zeroed(HUGE_PAGE);
        assert_eq!(
            large.as_ptr() as usize % HUGE_PAGE,
            0,
            "aligned for huge pages"
        );
    }

    #[test]
    fn wraps_a_vec() {
        let buf = ChunkBuf::from(vec![1, 2, 3]);
        assert_eq!(&buf[..], &[1, 2, 3]);
    }
}
