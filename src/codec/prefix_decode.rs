//! Decoding a compressed chunk progressively, straight into its output buffer, and stopping
//! once the bytes a reader needs are there: a selection that needs only the first planes of a
//! chunk decodes only those, and a reader can use the first bytes while the rest are still
//! decoding.

use super::{CodecError, DecodeTarget};
use flate2::bufread::{MultiGzDecoder, ZlibDecoder};
use std::cell::RefCell;
use std::io::{ErrorKind, Read};
use zstd::zstd_safe::{DCtx, DParameter, InBuffer, OutBuffer, ResetDirective};

/// Decoded bytes per step, about: the inflaters stop there; the zstd decoder is handed the
/// compressed bytes that make that much at the chunk's mean ratio (it decodes the blocks they
/// complete, each at most 128 KiB).
const STEP: usize = 128 << 10;
/// The fewest compressed bytes handed to the zstd decoder per step.
const MIN_ZSTD_STEP: usize = 512;

/// The compressors whose chunks decode progressively.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Prefix {
    Zstd,
    Gzip,
    Zlib,
}

impl Prefix {
    /// True when decoding the first `need` of `len` bytes step by step is worth it: always for
    /// zstd (as fast as a whole decode); for gzip and zlib when it saves a third, since the
    /// whole decode (libdeflate) is faster than the streaming inflater by about that much
    /// (BENCHMARKS.md, "Reading the numbers").
    pub fn pays(self, need: usize, len: usize) -> bool {
        self == Prefix::Zstd || need.saturating_mul(3) < len.saturating_mul(2)
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
        match self {
            Prefix::Gzip => {
                return inflate_prefix(name, MultiGzDecoder::new(encoded), out, need, progress)
            }
            Prefix::Zlib => {
                return inflate_prefix(name, ZlibDecoder::new(encoded), out, need, progress)
            }
            Prefix::Zstd => {}
        }
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

/// [`Prefix::decode`] for an inflater: `need` must be less than `out.len()` (whole chunks
/// take the whole decode, which checks the length).
fn inflate_prefix(
    name: &str,
    mut reader: impl Read,
    out: &mut DecodeTarget,
    need: usize,
    progress: &mut dyn FnMut(&[u8]),
) -> Result<(), CodecError> {
    let mut pos = 0;
    while pos < need {
        let end = pos.saturating_add(STEP).min(out.len());
        match reader.read(out.undecoded(pos, end)) {
            Ok(0) => {
                return Err(CodecError::corrupt(
                    name,
                    format!("decoded to {pos} bytes, expected {}", out.len()),
                ))
            }
            Ok(n) => pos += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(CodecError::corrupt(name, e.to_string())),
        }
        progress(out.decoded(pos));
    }
    Ok(())
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

    #[test]
    fn inflaters_stop_early() {
        use std::io::Write;
        let raw = data(1 << 20);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&raw).unwrap();
        let gz = gz.finish().unwrap();
        let mut zl = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        zl.write_all(&raw).unwrap();
        let zl = zl.finish().unwrap();
        for (kind, encoded) in [(Prefix::Gzip, gz), (Prefix::Zlib, zl)] {
            assert_stops_early(kind, &encoded, &raw);
            let mut out = vec![0u8; raw.len()];
            let cut = &encoded[..100];
            assert!(kind
                .decode(
                    "z",
                    cut,
                    &mut DecodeTarget::new(&mut out),
                    500_000,
                    &mut |_| {}
                )
                .is_err());
        }
        assert!(Prefix::Gzip.pays(100, 300) && !Prefix::Gzip.pays(200, 300));
        assert!(Prefix::Zstd.pays(300, 300));
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
