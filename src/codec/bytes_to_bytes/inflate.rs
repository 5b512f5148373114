//! `gzip` (v3 and numcodecs: gzip members, RFC 1952, concatenated members allowed as Python's
//! `gzip` module does) and numcodecs `zlib` (RFC 1950: deflate with a header and an Adler-32
//! trailer). A chunk is inflated in one call with libdeflate, which decodes a whole buffer
//! faster than a streaming inflater (BENCHMARKS.md, "Reading the numbers"). Anything it cannot
//! settle alone (data after the first member, output that does not fit, damage) goes to the
//! streaming decoder, which handles concatenated members and words the error.

use super::stream::read_bounded;
use crate::codec::{BytesToBytes, CodecError};
use flate2::bufread::{MultiGzDecoder, ZlibDecoder};
use libdeflate_sys as ffi;
use std::cell::RefCell;
use std::ptr::NonNull;

/// The container around the deflate data.
#[derive(Clone, Copy)]
pub(crate) enum Container {
    /// RFC 1952.
    Gzip,
    /// RFC 1950.
    Zlib,
}

/// The `gzip` or `zlib` codec, under the name it was configured with (its `level` does not
/// matter for decoding).
pub(crate) struct Inflate(pub String, pub Container);

impl BytesToBytes for Inflate {
    fn name(&self) -> &str {
        &self.0
    }

    fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize, CodecError> {
        if let Some(n) = inflate_whole(self.1, encoded, out) {
            return Ok(n);
        }
        match self.1 {
            Container::Gzip => read_bounded(&self.0, MultiGzDecoder::new(encoded), out),
            Container::Zlib => read_bounded(&self.0, ZlibDecoder::new(encoded), out),
        }
    }
}

/// A libdeflate decompressor, freed on drop.
struct Decompressor(NonNull<ffi::libdeflate_decompressor>);

impl Drop for Decompressor {
    fn drop(&mut self) {
        // SAFETY: allocated by libdeflate_alloc_decompressor and freed once.
        unsafe { ffi::libdeflate_free_decompressor(self.0.as_ptr()) }
    }
}

thread_local! {
    /// One decompressor per thread, reused across chunks.
    static DECOMPRESSOR: RefCell<Option<Decompressor>> = const { RefCell::new(None) };
}

/// Inflates `encoded`, one complete member with nothing after it, into `out`; returns the
/// bytes written, or `None` when the streaming decoder must decide.
pub(crate) fn inflate_whole(container: Container, encoded: &[u8], out: &mut [u8]) -> Option<usize> {
    DECOMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        let d = match &mut *slot {
            Some(d) => d,
            // SAFETY: allocation has no preconditions; NULL (out of memory) gives None.
            empty => empty.insert(Decompressor(NonNull::new(unsafe {
                ffi::libdeflate_alloc_decompressor()
            })?)),
        };
        let (mut used, mut written) = (0usize, 0usize);
        let decompress = match container {
            Container::Gzip => ffi::libdeflate_gzip_decompress_ex,
            Container::Zlib => ffi::libdeflate_zlib_decompress_ex,
        };
        // SAFETY: the pointers and lengths describe `encoded` and `out`, which outlive the call;
        // libdeflate writes only inside `out` and reports the input used and output written.
        let result = unsafe {
            decompress(
                d.0.as_ptr(),
                encoded.as_ptr().cast(),
                encoded.len(),
                out.as_mut_ptr().cast(),
                out.len(),
                &mut used,
                &mut written,
            )
        };
        (result == ffi::libdeflate_result_LIBDEFLATE_SUCCESS && used == encoded.len())
            .then_some(written)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::{GzEncoder, ZlibEncoder};
    use flate2::Compression;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn whole_members_inflate_and_the_rest_is_left_to_the_caller() {
        let data: Vec<u8> = (0..10_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let n = data.len();
        let mut out = vec![0u8; n];
        let gz = gzip(&data);
        let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
        z.write_all(&data).unwrap();
        let z = z.finish().unwrap();
        for (container, encoded) in [(Container::Gzip, &gz), (Container::Zlib, &z)] {
            out.fill(0);
            assert_eq!(inflate_whole(container, encoded, &mut out), Some(n));
            assert_eq!(out, data);
        }
        let two = [gzip(&data[..100]), gzip(&data[100..])].concat();
        for (container, encoded, room, why) in [
            (Container::Gzip, &two[..], n, "second member"),
            (Container::Gzip, &gz[..], 10, "too big"),
            (Container::Gzip, &gz[..gz.len() - 1], n, "truncated"),
            (Container::Zlib, &gz[..], n, "wrong container"),
        ] {
            assert_eq!(
                inflate_whole(container, encoded, &mut out[..room]),
                None,
                "{why}"
            );
        }
    }
}
