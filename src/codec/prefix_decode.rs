//! Decoding a compressed chunk progressively, straight into its output buffer, and stopping
//! once the bytes a reader needs are there: a selection that needs only the first planes of a
//! chunk decodes only those, and a reader can use the first bytes while the rest are still
//! decoding. Only a stream with no check at its end decodes so: bytes handed out before a
//! checksum that comes last (gzip's CRC-32, zlib's Adler-32, a zstd frame's content checksum)
//! would be bytes nothing has verified.

use super::{CodecError, DecodeTarget};
use std::cell::RefCell;
use zstd::zstd_safe::{DCtx, DParameter, InBuffer, OutBuffer, ResetDirective};

/// Decoded bytes per step, about: the zstd decoder is handed the compressed bytes that make
/// that much at the chunk's mean ratio (it decodes the blocks they complete, each at most
/// 128 KiB).
const STEP: usize = 128 << 10;
/// The fewest compressed bytes handed to the zstd decoder per step.
const MIN_ZSTD_STEP: usize = 512;
/// The magic number of a zstd frame, and of skippable frames (its low 4 bits aside).
const ZSTD_MAGIC: u32 = 0xFD2F_B528;
const SKIPPABLE_MAGIC: u32 = 0x184D_2A50;
/// The content checksum flag of a zstd frame header's descriptor byte.
const CONTENT_CHECKSUM: u8 = 1 << 2;

/// The compressors whose chunks decode progressively.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Prefix {
    Zstd,
}

impl Prefix {
    /// True when `encoded` may be decoded step by step, its first bytes used before the rest
    /// are decoded: when none of its zstd frames ends with a content checksum and every one
    /// states its content size, the sizes adding up to exactly `len`, the chunk's decoded
    /// length (else, or when its frames cannot be walked, it decodes whole, its checksums and
    /// length verified first: a decode stopped early never sees the end of the data).
    pub fn pays(self, encoded: &[u8], len: usize) -> bool {
        let mut rest = encoded;
        let mut total = 0u64;
        while let Some(magic) = rest.first_chunk::<4>().map(|m| u32::from_le_bytes(*m)) {
            if magic & !0xF != SKIPPABLE_MAGIC {
                let checked = rest.get(4).map(|d| d & CONTENT_CHECKSUM != 0);
                if magic != ZSTD_MAGIC || checked != Some(false) {
                    return false;
                }
                match zstd::zstd_safe::get_frame_content_size(rest) {
                    Ok(Some(n)) => match total.checked_add(n) {
                        Some(t) => total = t,
                        None => return false,
                    },
                    _ => return false,
                }
            }
            match zstd::zstd_safe::find_frame_compressed_size(rest) {
                Ok(n) if n > 0 && n <= rest.len() => rest = &rest[n..],
                _ => return false,
            }
        }
        rest.is_empty() && !encoded.is_empty() && total == len as u64
    }

    /// Decodes `encoded` into `out` (the whole decoded chunk's room) until at least `need`
    /// bytes are there, calling `progress` with the bytes decoded so far after each step. With
    /// `need == out.len()` the data must decode to exactly `out.len()` bytes; with less, zstd
    /// decodes the bytes past the first `need` only as far as the step that reached `need`.
    pub fn decode(
        self,
        name: &str,
        encoded: &[u8],
        out: &mut DecodeTarget,
        need: usize,
        progress: &mut dyn FnMut(&[u8]),
    ) -> Result<(), CodecError> {
        let corrupt = |e: &str| CodecError::corrupt(name, e.to_string());
        let zstd_err = |code| corrupt(zstd::zstd_safe::get_error_name(code));
        CONTEXT.with(|cell| {
            let mut slot = cell.borrow_mut();
            let dctx = match &mut *slot {
                Some(dctx) => dctx,
                empty => {
                    let mut dctx =
                        DCtx::try_create().ok_or_else(|| corrupt("no memory for a context"))?;
                    dctx.set_parameter(DParameter::StableOutBuffer(true))
                        .map_err(zstd_err)?;
                    empty.insert(dctx)
                }
            };
            dctx.reset(ResetDirective::SessionOnly).map_err(zstd_err)?;
            let ratio_step = encoded.len() as u128 * STEP as u128 / out.len().max(1) as u128;
            let step = (ratio_step as usize).max(MIN_ZSTD_STEP);
            let (mut at, mut pos) = (0usize, 0usize);
            loop {
                let end = at.saturating_add(step).min(encoded.len());
                let mut input = InBuffer::around(&encoded[..end]);
                input.set_pos(at);
                let mut output = OutBuffer::around_pos(out, pos);
                let hint = dctx
                    .decompress_stream(&mut output, &mut input)
                    .map_err(zstd_err)?;
                let (next_at, next_pos) = (input.pos(), output.pos());
                if next_pos > pos {
                    progress(out.decoded(next_pos));
                }
                if next_pos >= need && need < out.len() {
                    return Ok(());
                }
                if next_at == encoded.len() && hint == 0 {
                    // Every frame ended.
                    return if next_pos == out.len() {
                        Ok(())
                    } else {
                        Err(corrupt(&format!(
                            "decoded to {next_pos} bytes, expected {}",
                            out.len()
                        )))
                    };
                }
                if next_at == at && next_pos == pos && end == encoded.len() {
                    return Err(corrupt(if pos == out.len() {
                        "decoded data exceeds the chunk"
                    } else {
                        "the data ends inside a frame"
                    }));
                }
                (at, pos) = (next_at, next_pos);
            }
        })
    }
}

thread_local! {
    /// One streaming context per thread, decoding into the caller's buffer (no window copy).
    static CONTEXT: RefCell<Option<DCtx<'static>>> = const { RefCell::new(None) };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 / 3 % 251) as u8).collect()
    }

    #[test]
    fn whole_and_prefix_decodes_match() {
        let raw = data(1 << 20);
        let z = zstd::bulk::compress(&raw, 3).unwrap();
        let mut out = vec![0u8; raw.len()];
        let mut steps = 0;
        Prefix::Zstd
            .decode(
                "zstd",
                &z,
                &mut DecodeTarget::new(&mut out),
                raw.len(),
                &mut |d| {
                    assert_eq!(d, &raw[..d.len()]);
                    steps += 1;
                },
            )
            .unwrap();
        assert_eq!(out, raw);
        assert!(steps > 1, "progress comes in pieces");
        assert_stops_early(Prefix::Zstd, &z, &raw);
    }

    /// Decoding the first 1000 bytes of `encoded` (`raw`, compressed) stops after them, short of
    /// the whole, with the right bytes.
    fn assert_stops_early(kind: Prefix, encoded: &[u8], raw: &[u8]) {
        let mut out = vec![0u8; raw.len()];
        let mut reached = 0;
        kind.decode(
            "z",
            encoded,
            &mut DecodeTarget::new(&mut out),
            1000,
            &mut |d| reached = d.len(),
        )
        .unwrap();
        assert!(
            reached >= 1000 && reached < raw.len(),
            "{kind:?}: {reached}"
        );
        assert_eq!(out[..reached], raw[..reached]);
    }

    /// `raw` compressed by zstd with a content checksum.
    fn checked(raw: &[u8]) -> Vec<u8> {
        let mut c = zstd::bulk::Compressor::new(3).unwrap();
        c.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))
            .unwrap();
        c.compress(raw).unwrap()
    }

    #[test]
    fn only_frames_without_a_content_checksum_decode_step_by_step() {
        let raw = data(100_000);
        let n = raw.len();
        let plain = zstd::bulk::compress(&raw, 3).unwrap();
        assert!(Prefix::Zstd.pays(&plain, n));
        assert!(!Prefix::Zstd.pays(&checked(&raw), n));
        let two = [plain.clone(), checked(&raw)].concat();
        assert!(!Prefix::Zstd.pays(&two, 2 * n), "one checked frame of two");
        let skippable = [
            &0x184D_2A5Au32.to_le_bytes()[..],
            &3u32.to_le_bytes(),
            b"abc",
        ]
        .concat();
        assert!(Prefix::Zstd.pays(&[skippable, plain.clone()].concat(), n));
        assert!(
            !Prefix::Zstd.pays(&plain[..plain.len() - 1], n),
            "a cut frame"
        );
        assert!(!Prefix::Zstd.pays(b"not zstd at all", n));
        assert!(!Prefix::Zstd.pays(&[], 0));
    }

    #[test]
    fn only_frames_stating_the_chunk_length_decode_step_by_step() {
        let raw = data(100_000);
        let plain = zstd::bulk::compress(&raw, 3).unwrap();
        for len in [0, 1000, 99_999, 100_001, 200_000] {
            assert!(!Prefix::Zstd.pays(&plain, len), "{len}");
        }
        let two = [plain.clone(), plain.clone()].concat();
        assert!(Prefix::Zstd.pays(&two, 200_000));
        assert!(!Prefix::Zstd.pays(&two, 100_000));
        let mut c = zstd::bulk::Compressor::new(3).unwrap();
        c.set_parameter(zstd::zstd_safe::CParameter::ContentSizeFlag(false))
            .unwrap();
        let no_size = c.compress(&raw).unwrap();
        assert!(!Prefix::Zstd.pays(&no_size, raw.len()), "no content size");
        assert!(!Prefix::Zstd.pays(&[plain, no_size].concat(), 200_000));
    }

    #[test]
    fn concatenated_frames_damage_and_bombs() {
        let (a, b) = (data(100_000), data(50_000));
        let z = [
            zstd::bulk::compress(&a, 1).unwrap(),
            zstd::bulk::compress(&b, 1).unwrap(),
        ]
        .concat();
        let run = |encoded: &[u8], out: &mut [u8], need: usize| {
            Prefix::Zstd.decode(
                "zstd",
                encoded,
                &mut DecodeTarget::new(out),
                need,
                &mut |_| {},
            )
        };
        let mut out = vec![0u8; 150_000];
        run(&z, &mut out, 150_000).unwrap();
        assert_eq!(out, [a, b].concat());
        assert!(run(&z, &mut vec![0u8; 149_999], 149_999).is_err());
        assert!(run(&z, &mut vec![0u8; 150_001], 150_001).is_err());
        assert!(run(&z[..z.len() - 1], &mut out, 150_000).is_err());
        assert!(run(b"not zstd at all", &mut out, 10).is_err());
        // The context recovers from an error.
        run(&z, &mut out, 150_000).unwrap();
    }
}
