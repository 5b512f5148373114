//! The bytes of a zip file, read at positions ([`ZipBytes`]), and as `Read + Seek` for the `zip`
//! crate ([`Cursor`]).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;

/// Positioned reads of the bytes of a zip file.
pub trait ZipBytes: Send + Sync {
    /// Fills `buf` from `offset`.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()>;
    /// The file's size.
    fn size(&self) -> std::io::Result<u64>;
}

impl ZipBytes for File {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        FileExt::read_exact_at(self, buf, offset)
    }

    fn size(&self) -> std::io::Result<u64> {
        Ok(self.metadata()?.len())
    }
}

/// `bytes`, of which the span at `at` has been read already into `ahead`.
pub(super) struct Ahead<'a> {
    pub bytes: &'a dyn ZipBytes,
    pub at: u64,
    pub ahead: &'a [u8],
}

impl ZipBytes for Ahead<'_> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let from = offset.checked_sub(self.at).map(|d| d as usize);
        match from.and_then(|f| self.ahead.get(f..f.checked_add(buf.len())?)) {
            Some(span) => buf.copy_from_slice(span),
            None => self.bytes.read_exact_at(buf, offset)?,
        }
        Ok(())
    }

    fn size(&self) -> std::io::Result<u64> {
        self.bytes.size()
    }
}

/// `Read` and `Seek` over the first `size` bytes of [`ZipBytes`], for the `zip` crate.
pub(super) struct Cursor<'a> {
    bytes: &'a dyn ZipBytes,
    size: u64,
    pos: u64,
}

impl<'a> Cursor<'a> {
    /// At the start of the `size` bytes of `bytes`.
    pub fn new(bytes: &'a dyn ZipBytes, size: u64) -> Self {
        Cursor {
            bytes,
            size,
            pos: 0,
        }
    }
}

impl Read for Cursor<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = (self.size.saturating_sub(self.pos)).min(buf.len() as u64) as usize;
        self.bytes.read_exact_at(&mut buf[..n], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for Cursor<'_> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        let pos = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.size.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = pos.ok_or_else(|| std::io::Error::other("seek before the start"))?;
        Ok(self.pos)
    }
}
