//! Bytes→bytes codecs: compressors (`gzip`, `zlib`, `zstd`, `blosc`, `lz4`, `bz2`, `lzma`,
//! `pcodec`), checksums (all framed by [`checksum`], where `crc32c`, `crc32` and `adler32` are
//! built; `fletcher32` and `jenkins_lookup3` in files of their own) and byte rearrangements
//! (`shuffle`, `base64`). They see the array→bytes codec's output, so a decoder is told the
//! stored element type ([`super::StoredElem`]) where it needs it.

pub(crate) mod base64;
pub(crate) mod blosc;
pub(crate) mod bz2;
pub(crate) mod checksum;
pub(crate) mod fletcher32;
pub(crate) mod inflate;
pub(crate) mod jenkins_lookup3;
pub(crate) mod lz4;
pub(crate) mod lzma;
pub(crate) mod pcodec;
pub(crate) mod shuffle;
mod stream;
pub(crate) mod zstd;
