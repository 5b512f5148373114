//! [`Pipeline`]: a codec chain built for one chunk shape and element type.

use super::array_chain::ArrayChain;
use super::array_to_bytes::vlen::VlenPipeline;
use super::registry::{
    build_array_to_bytes, build_bytes_to_bytes, is_array_to_array_only, is_array_to_bytes,
};
use super::DecodeTarget;
use super::{ArrayToBytes, BytesToBytes, ChunkRepr, CodecError, Prefix, Size, StoredElem};
use crate::meta::{CodecSpec, DataType};
use crate::stats::STATS;
use std::fmt;

/// A codec chain built for one array (or one shard's inner chunks). `Send + Sync`: one pipeline
/// serves all threads.
pub struct Pipeline(Kind);

enum Kind {
    /// Fixed-size elements: chunks decode to exactly `decoded_len` bytes.
    Fixed(FixedPipeline),
    /// Variable-length elements (`vlen-utf8`, `vlen-bytes`).
    Vlen(VlenPipeline),
}

impl Pipeline {
    /// Builds the chain for chunks of `chunk_shape` elements of `dtype`. `codecs` is in Zarr v3
    /// order; without an array→bytes codec, `bytes` little-endian is assumed after the leading
    /// array→array codecs. Fails with `Unsupported` naming the codec for unknown names, and with
    /// `BadConfig` for invalid configurations or codecs in the wrong place.
    pub fn new(
        codecs: &[CodecSpec],
        dtype: &DataType,
        chunk_shape: &[u64],
    ) -> Result<Self, CodecError> {
        if dtype.is_variable() {
            return VlenPipeline::new(codecs, chunk_shape).map(|v| Pipeline(Kind::Vlen(v)));
        }
        FixedPipeline::new(codecs, dtype, chunk_shape).map(|f| Pipeline(Kind::Fixed(f)))
    }

    /// Byte length of a decoded chunk of fixed-size elements: product(chunk_shape) *
    /// dtype.size(); 0 for variable-length elements, whose decoded size varies.
    pub fn decoded_len(&self) -> usize {
        match &self.0 {
            Kind::Fixed(f) => f.decoded_len,
            Kind::Vlen(_) => 0,
        }
    }

    /// Refuses variable-length chunks whose serialized form exceeds `max` bytes (a reader
    /// passes what it can keep); fixed-size chunks have their exact size already.
    pub fn limit_decoded(mut self, max: usize) -> Self {
        if let Kind::Vlen(v) = &mut self.0 {
            v.limit(max);
        }
        self
    }

    /// The largest size, in bytes, a chunk takes anywhere along the chain (decoded, after each
    /// array→array codec, serialized, between bytes→bytes codecs, and the bound its outermost
    /// codec gives for the stored form); `None` for variable-length elements.
    pub fn largest_form_len(&self) -> Option<usize> {
        match &self.0 {
            Kind::Fixed(f) => Some(f.largest_form),
            Kind::Vlen(_) => None,
        }
    }

    /// Decodes one stored chunk into `target`: for fixed-size elements exactly
    /// [`Pipeline::decoded_len`] bytes, C order, little-endian; for variable-length elements
    /// (into an owned buffer only) the item index and bytes described in [`super::vlen`].
    /// Without array→array codecs the last decompressor writes straight into the target and
    /// big-endian data is swapped there in place: no extra copy. [`Need::Front`] decodes step
    /// by step, stopping after the step that reaches its need, for `bytes` (little-endian) then
    /// zstd alone, on a chunk with no content checksum whose frames state its exact decoded
    /// length (see `Prefix::pays`); else whole, its checksums and length verified, then
    /// reports once.
    pub fn decode<'a>(
        &self,
        encoded: &[u8],
        target: impl Into<Target<'a>>,
    ) -> Result<(), CodecError> {
        let (f, mut room, need) = match (&self.0, target.into()) {
            (Kind::Vlen(v), Target::Owned(out)) => return v.decode(encoded).map(|d| *out = d),
            (Kind::Vlen(v), Target::Room(..)) => {
                return Err(CodecError::bad_config(
                    v.name(),
                    "variable-length chunks have no fixed size to decode into",
                ))
            }
            (Kind::Fixed(f), Target::Owned(out)) => {
                if out.len() != f.decoded_len {
                    *out = vec![0u8; f.decoded_len];
                }
                return f.decode_into(encoded, out);
            }
            (Kind::Fixed(f), Target::Room(room, need)) => (f, room, need),
        };
        let len = room.len();
        let (need, mut progress) = match need {
            Need::Whole => (len, None),
            Need::Front(need, progress) => (need, Some(progress)),
        };
        let stepper = self
            .stepper(len)
            .filter(|(kind, _)| kind.pays(encoded, len));
        if let (Some(progress), Some((kind, name))) = (&mut progress, stepper) {
            let run = || kind.decode(name, encoded, &mut room, need, *progress);
            return STATS.decode(name, run, |_| need);
        }
        f.decode_into(encoded, room.undecoded(0, len))?;
        let decoded = room.decoded(len);
        if let Some(progress) = progress {
            progress(decoded);
        }
        Ok(())
    }

    /// True when [`Pipeline::decode`] into room for `len` decoded bytes may go step by step:
    /// it does for a chunk whose stored bytes end with no checksum and state its length (see
    /// `Prefix::pays`), and else decodes whole, then reports once.
    pub fn streams(&self, len: usize) -> bool {
        self.stepper(len).is_some()
    }

    /// The step-by-step decoder (and its codec's name) for room of `len` bytes.
    fn stepper(&self, len: usize) -> Option<(Prefix, &str)> {
        match &self.0 {
            Kind::Fixed(f) if len == f.decoded_len => f
                .streamable
                .as_ref()
                .map(|(kind, name)| (*kind, name.as_str())),
            _ => None,
        }
    }
}

/// Where [`Pipeline::decode`] puts a chunk's decoded bytes.
pub enum Target<'a> {
    /// This buffer, made exactly the decoded chunk (the only target of variable-length
    /// elements, whose size the decode finds).
    Owned(&'a mut Vec<u8>),
    /// Room for exactly one decoded chunk of fixed-size elements, maybe shared with readers
    /// (see [`DecodeTarget`]), decoded as far as the [`Need`] says.
    Room(DecodeTarget<'a>, Need<'a>),
}

/// How much of a chunk [`Pipeline::decode`] must decode into room.
pub enum Need<'a> {
    /// The whole chunk, in one go.
    Whole,
    /// At least its first that many bytes, step by step where that pays, the decoded part
    /// handed to the callback after each step.
    Front(usize, &'a mut dyn FnMut(&[u8])),
}

impl<'a> From<&'a mut Vec<u8>> for Target<'a> {
    fn from(out: &'a mut Vec<u8>) -> Self {
        Target::Owned(out)
    }
}

impl<'a> From<&'a mut [u8]> for Target<'a> {
    fn from(out: &'a mut [u8]) -> Self {
        Target::Room(DecodeTarget::new(out), Need::Whole)
    }
}

/// The chain for fixed-size elements.
struct FixedPipeline {
    /// The array→array codecs.
    array_to_array: ArrayChain,
    /// The array→bytes codec.
    array_to_bytes: Box<dyn ArrayToBytes>,
    /// Byte length of the array→bytes codec's data.
    serialized_len: usize,
    /// Bytes→bytes codecs in chain order, each with the size of its decoded form.
    bytes_to_bytes: Vec<(Box<dyn BytesToBytes>, Size)>,
    /// Byte length of a decoded chunk.
    decoded_len: usize,
    /// The largest form a chunk takes along the chain (see [`Pipeline::largest_form_len`]).
    largest_form: usize,
    /// The chain's only codec and its name, when the chain is `bytes` (little-endian) then a
    /// compressor that decodes progressively.
    streamable: Option<(Prefix, String)>,
}

impl FixedPipeline {
    fn new(
        codecs: &[CodecSpec],
        dtype: &DataType,
        chunk_shape: &[u64],
    ) -> Result<Self, CodecError> {
        let (split, serializer) = match codecs.iter().position(|c| is_array_to_bytes(&c.name)) {
            None => {
                let n = codecs
                    .iter()
                    .take_while(|c| is_array_to_array_only(&c.name))
                    .count();
                (n, None)
            }
            Some(i) => (i, Some(codecs[i].clone())),
        };
        let rest = &codecs[split + usize::from(serializer.is_some())..];
        let serializer =
            serializer.unwrap_or_else(|| CodecSpec::new("bytes", serde_json::json!({})));

        let decoded = ChunkRepr::new(chunk_shape.to_vec(), dtype.clone());
        let decoded_len = decoded.byte_len("pipeline")?;
        let (array_to_array, repr) =
            ArrayChain::build(&codecs[..split], &decoded, |_, _, _| Ok(()))?;

        let serialized_len = repr.byte_len(&serializer.name)?;
        let mut bytes_to_bytes = Vec::with_capacity(rest.len());
        let array_to_bytes = build_array_to_bytes(&serializer, &repr)?;
        let mut size = array_to_bytes.encoded_size(Size::Exact(serialized_len));
        let mut elem = StoredElem::le(repr.dtype);
        elem.big_endian = serializer.config.get("endian").and_then(|e| e.as_str()) == Some("big");
        for spec in rest {
            let codec = build_bytes_to_bytes(spec, &elem)?;
            // A numcodecs filter hands the codecs after it its encoded elements (v2 filters
            // come after the array→bytes codec): `astype`, say, turns float64 into int16.
            if let Some(encoded) = codec.elements().and_then(|e| e.encoded) {
                elem = encoded;
            }
            let encoded = codec.encoded_size(size);
            bytes_to_bytes.push((codec, size));
            size = encoded;
        }
        let largest_form = array_to_array
            .form_lens()
            .chain(bytes_to_bytes.iter().map(|(_, size)| size.max()))
            .chain([decoded_len, serialized_len, size.max()])
            .max()
            .unwrap_or(decoded_len);

        // Streaming writes the decompressed bytes as they are: only behind a `bytes` codec
        // that leaves them so (not big-endian, not low bits, not a packing codec).
        let plain = array_to_bytes.in_place().is_some_and(|c| c.is_identity());
        let streamable = match bytes_to_bytes.as_slice() {
            [(only, _)] if array_to_array.is_empty() && plain => only
                .progressive()
                .map(|kind| (kind, only.name().to_string())),
            _ => None,
        };
        Ok(FixedPipeline {
            streamable,
            array_to_array,
            array_to_bytes,
            serialized_len,
            bytes_to_bytes,
            decoded_len,
            largest_form,
        })
    }

    fn decode_into(&self, encoded: &[u8], out: &mut [u8]) -> Result<(), CodecError> {
        if out.len() != self.decoded_len {
            return Err(CodecError::bad_config(
                "pipeline",
                format!(
                    "output buffer of {} bytes, chunk has {}",
                    out.len(),
                    self.decoded_len
                ),
            ));
        }
        if self.array_to_array.is_empty() {
            return self.decode_serialized(encoded, out);
        }
        let mut serialized = vec![0u8; self.serialized_len];
        self.decode_serialized(encoded, &mut serialized)?;
        self.array_to_array.decode_into(&serialized, out)
    }

    /// Runs the bytes→bytes codecs last to first, then the array→bytes codec into `target`. A
    /// `bytes` codec decodes in place: the chain's first bytes→bytes codec writes straight into
    /// `target`. Checksum codecs only narrow the input, without copying.
    fn decode_serialized(&self, encoded: &[u8], target: &mut [u8]) -> Result<(), CodecError> {
        let in_place = self.array_to_bytes.in_place();
        let mut held: Option<Vec<u8>> = None;
        let mut range = 0..encoded.len();
        let mut innermost = self.array_to_bytes.name();
        for (i, (codec, size)) in self.bytes_to_bytes.iter().enumerate().rev() {
            let input = &held.as_deref().unwrap_or(encoded)[range.clone()];
            innermost = codec.name();
            if let Some(payload) = codec.payload(input)? {
                range = range.start + payload.start..range.start + payload.end;
                continue;
            }
            if let (0, Some(bytes)) = (i, in_place) {
                let written = STATS.decode(codec.name(), || codec.decode(input, target), |&n| n)?;
                size.check(codec.name(), written)?;
                bytes.decode_in_place(target);
                return Ok(());
            }
            let mut next = vec![0u8; size.max()];
            let written = STATS.decode(codec.name(), || codec.decode(input, &mut next), |&n| n)?;
            size.check(codec.name(), written)?;
            next.truncate(written);
            range = 0..written;
            held = Some(next);
        }
        let input = &held.as_deref().unwrap_or(encoded)[range];
        let codec = &self.array_to_bytes;
        if in_place.is_some() {
            if input.len() != target.len() {
                return Err(CodecError::corrupt(
                    innermost,
                    format!("{} bytes, expected {}", input.len(), target.len()),
                ));
            }
            codec.decode(input, target)?;
            return Ok(());
        }
        let written = STATS.decode(codec.name(), || codec.decode(input, target), |&n| n)?;
        Size::Exact(target.len()).check(codec.name(), written)
    }
}

impl fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Kind::Fixed(p) => {
                let array: Vec<&str> = p.array_to_array.names().collect();
                let bytes: Vec<&str> = p.bytes_to_bytes.iter().map(|(c, _)| c.name()).collect();
                f.debug_struct("Pipeline")
                    .field("array_to_array", &array)
                    .field("array_to_bytes", &p.array_to_bytes.name())
                    .field("bytes_to_bytes", &bytes)
                    .field("decoded_len", &p.decoded_len)
                    .finish_non_exhaustive()
            }
            Kind::Vlen(v) => f
                .debug_struct("Pipeline")
                .field("vlen", &v.name())
                .finish_non_exhaustive(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::testutil::{self, decoded};
    use serde_json::json;

    #[test]
    fn only_plain_bytes_stream() {
        let streams = |serializer: CodecSpec, dtype: DataType| {
            let codecs = [serializer, spec("zstd", json!({}))];
            Pipeline::new(&codecs, &dtype, &[64]).unwrap().streams(64)
        };
        assert!(streams(spec("bytes", json!({})), DataType::Int(1)));
        let low_bits = spec("bytes", json!({"low_bits": 4}));
        assert!(!streams(low_bits, DataType::Int(1)), "int4 low bits");
        let big = spec("bytes", json!({"endian": "big"}));
        assert!(!streams(big, DataType::Int(2)));
        let packed = spec("packbits", json!({}));
        assert!(!streams(packed, DataType::Bool), "packbits decodes first");
        let compressor_streams = |name: &str| {
            let codecs = [spec("bytes", json!({})), spec(name, json!({}))];
            let p = Pipeline::new(&codecs, &DataType::Int(1), &[64]).unwrap();
            p.streams(64)
        };
        assert!(compressor_streams("numcodecs.zstd"));
        for name in ["gzip", "numcodecs.zlib", "numcodecs.lz4"] {
            assert!(!compressor_streams(name), "{name} decodes whole");
        }
    }

    #[test]
    fn a_chunk_ending_with_a_checksum_is_handed_out_only_once_verified() {
        let raw: Vec<u8> = (0..1u32 << 20).map(|i| (i * 7 / 3 % 251) as u8).collect();
        let codecs = [
            spec("bytes", json!({})),
            spec("zstd", json!({"checksum": true})),
        ];
        let p = Pipeline::new(&codecs, &DataType::UInt(1), &[raw.len() as u64]).unwrap();
        let mut c = zstd::bulk::Compressor::new(3).unwrap();
        c.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))
            .unwrap();
        let good = c.compress(&raw).unwrap();
        let plain = zstd::bulk::compress(&raw, 3).unwrap();
        let decode = |encoded: &[u8]| {
            let mut out = vec![0u8; raw.len()];
            let mut seen = Vec::new();
            let mut progress = |d: &[u8]| seen.push(d.len());
            let need = Need::Front(1000, &mut progress);
            let done = p.decode(encoded, Target::Room(DecodeTarget::new(&mut out), need));
            (done.map(|()| out), seen)
        };
        let (out, seen) = decode(&plain);
        assert!(
            seen.iter().all(|&n| n < raw.len()),
            "unchecked: step by step {seen:?}"
        );
        assert_eq!(out.unwrap()[..seen[0]], raw[..seen[0]]);
        let (out, seen) = decode(&good);
        assert_eq!(seen, [raw.len()], "checked: handed out whole, once");
        assert_eq!(out.unwrap(), raw);
        // A flipped bit the checksum alone can tell: nothing is handed out.
        let mut bad = good.clone();
        let at = bad.len() - 2;
        bad[at] ^= 1;
        let (out, seen) = decode(&bad);
        assert!(out.is_err() && seen.is_empty(), "{seen:?}");
    }

    #[test]
    fn a_chunk_of_the_wrong_length_is_not_handed_out_in_part() {
        const LEN: usize = 1 << 20;
        let codecs = [spec("bytes", json!({})), spec("zstd", json!({}))];
        let p = Pipeline::new(&codecs, &DataType::UInt(1), &[LEN as u64]).unwrap();
        let decode = |encoded: &[u8], need: usize| {
            let mut out = vec![0u8; LEN];
            let mut seen = Vec::new();
            let mut progress = |d: &[u8]| seen.push(d.len());
            let need = Need::Front(need, &mut progress);
            let done = p.decode(encoded, Target::Room(DecodeTarget::new(&mut out), need));
            (done.map(|()| out), seen)
        };
        let raw: Vec<u8> = (0..2 * LEN as u32)
            .map(|i| (i * 7 / 3 % 251) as u8)
            .collect();
        let (out, seen) = decode(&zstd::bulk::compress(&raw[..LEN], 3).unwrap(), 100);
        assert!(
            seen[0] < LEN,
            "the right length goes step by step: {seen:?}"
        );
        assert_eq!(out.unwrap()[..100], raw[..100]);
        // Half the chunk's length, or twice it in a frame that does not state its size:
        // refused, whatever part a reader needs.
        let mut no_size = zstd::bulk::Compressor::new(3).unwrap();
        no_size
            .set_parameter(zstd::zstd_safe::CParameter::ContentSizeFlag(false))
            .unwrap();
        let short = zstd::bulk::compress(&raw[..LEN / 2], 3).unwrap();
        let long = no_size.compress(&raw).unwrap();
        for (n, wrong) in [(LEN / 2, short), (2 * LEN, long)] {
            for need in [100, LEN] {
                let (out, seen) = decode(&wrong, need);
                assert!(out.is_err() && seen.is_empty(), "{n} {need}: {seen:?}");
            }
        }
    }

    #[test]
    fn codecs_after_a_v2_filter_see_its_encoded_type() {
        // numcodecs: FixedScaleOffset(offset=1000, scale=10, dtype='<f8', astype='<i2') then
        // PCodec, which compresses the int16 numbers the filter made.
        let fso = json!({"id": "fixedscaleoffset", "scale": 10, "offset": 1000,
            "dtype": "<f8", "astype": "<i2"});
        let codecs = [
            spec("bytes", json!({"endian": "little"})),
            spec("fixedscaleoffset", fso),
            spec("pcodec", json!({"id": "pcodec", "level": 8})),
        ];
        let p = Pipeline::new(&codecs, &DataType::Float(8), &[6]).unwrap();
        let stored: [i16; 6] = [-300, 0, 7, 12345, -32768, 32767];
        let encoded = pco::standalone::simple_compress(&stored, &Default::default()).unwrap();
        // numcodecs' FixedScaleOffset.decode of those int16 values.
        let want = [970.0, 1000.0, 1000.7, 2234.5, -2276.8, 4276.7f64];
        let want: Vec<u8> = want.iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(decoded(&p, &encoded).unwrap(), want);
    }

    fn spec(name: &str, config: serde_json::Value) -> CodecSpec {
        CodecSpec::new(name, config)
    }

    fn i4_data(n: i32) -> Vec<u8> {
        (0..n).flat_map(|i| (i * 1000 - 7).to_le_bytes()).collect()
    }

    #[test]
    fn is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Pipeline>();
    }

    #[test]
    fn whole_chains_from_zarr_python_detect_damage() {
        testutil::damaged_inputs_fail("zarr3_transpose_big_zstd_crc32c");
        testutil::flips_detected("zarr3_transpose_big_zstd_crc32c", 40);
        testutil::flips_detected("zarr3_delta_big_zstd_crc32c", 40);
        testutil::damaged_inputs_fail("zarr2_order_f_big_delta_blosc");
        testutil::damaged_inputs_fail("zarr3_packbits_gzip");
    }

    #[test]
    fn random_damage_never_panics() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n.max(1) as u64) as usize
        };
        for case in testutil::cases() {
            let p = case.pipeline(None).unwrap();
            for _ in 0..30 {
                let mut bad = case.encoded.clone();
                match next(3) {
                    0 => bad.truncate(next(bad.len())),
                    1 => bad.insert(next(bad.len() + 1), next(256) as u8),
                    _ => {
                        for _ in 0..=next(4) {
                            let i = next(bad.len());
                            if let Some(b) = bad.get_mut(i) {
                                *b ^= 1 << next(8);
                            }
                        }
                    }
                }
                if let Ok(decoded) = decoded(&p, &bad) {
                    assert_eq!(decoded.len(), p.decoded_len(), "{}", case.name);
                }
            }
        }
    }

    #[test]
    fn missing_array_to_bytes_means_little_endian_bytes() {
        let data = i4_data(10);
        let p = Pipeline::new(&[], &DataType::Int(4), &[10]).unwrap();
        assert_eq!(decoded(&p, &data).unwrap(), data);
        let compressed = zstd::bulk::compress(&data, 1).unwrap();
        let p = Pipeline::new(&[spec("zstd", json!({}))], &DataType::Int(4), &[10]).unwrap();
        assert_eq!(decoded(&p, &compressed).unwrap(), data);
        let t = [
            spec("transpose", json!({"order": [1, 0]})),
            spec("zstd", json!({})),
        ];
        let p = Pipeline::new(&t, &DataType::Int(4), &[1, 10]).unwrap();
        assert_eq!(decoded(&p, &compressed).unwrap(), data);
    }

    #[test]
    fn checksum_inside_a_compressor_and_double_compression() {
        let data = i4_data(50);
        let mut framed = data.clone();
        framed.extend_from_slice(&crc32c::crc32c(&data).to_le_bytes());
        let codecs = [
            spec("bytes", json!({})),
            spec("crc32c", json!({})),
            spec("zstd", json!({})),
        ];
        let p = Pipeline::new(&codecs, &DataType::Int(4), &[50]).unwrap();
        assert_eq!(
            decoded(&p, &zstd::bulk::compress(&framed, 3).unwrap()).unwrap(),
            data
        );
        framed[0] ^= 1;
        assert!(decoded(&p, &zstd::bulk::compress(&framed, 3).unwrap()).is_err());

        let twice = zstd::bulk::compress(&zstd::bulk::compress(&data, 3).unwrap(), 3).unwrap();
        let codecs = [
            spec("bytes", json!({})),
            spec("zstd", json!({})),
            spec("zstd", json!({})),
        ];
        let p = Pipeline::new(&codecs, &DataType::Int(4), &[50]).unwrap();
        assert_eq!(decoded(&p, &twice).unwrap(), data);
        let p = Pipeline::new(&codecs, &DataType::Int(4), &[49]).unwrap();
        assert!(decoded(&p, &twice).is_err());
    }

    #[test]
    fn decompression_bombs_fail_without_allocating() {
        let bomb = zstd::bulk::compress(&vec![0u8; 64 << 20], 19).unwrap();
        let codecs = [spec("bytes", json!({})), spec("zstd", json!({}))];
        let p = Pipeline::new(&codecs, &DataType::UInt(1), &[1000]).unwrap();
        assert!(matches!(
            decoded(&p, &bomb),
            Err(CodecError::Corrupt { .. })
        ));
        let codecs = [
            spec("bytes", json!({})),
            spec("zstd", json!({})),
            spec("zstd", json!({})),
        ];
        let p = Pipeline::new(&codecs, &DataType::UInt(1), &[1000]).unwrap();
        let double = zstd::bulk::compress(&bomb, 1).unwrap();
        assert!(matches!(
            decoded(&p, &double),
            Err(CodecError::Corrupt { .. })
        ));
    }

    #[test]
    fn misplaced_and_unknown_codecs_are_refused() {
        let dt = DataType::Int(4);
        let b = || spec("bytes", json!({}));
        let err = |codecs: &[CodecSpec]| Pipeline::new(codecs, &dt, &[4]).err();
        assert!(matches!(
            err(&[b(), b()]),
            Some(CodecError::BadConfig { .. })
        ));
        assert!(matches!(
            err(&[spec("gzip", json!({})), b()]),
            Some(CodecError::BadConfig { .. })
        ));
        let late_transpose = [b(), spec("transpose", json!({"order": [0]}))];
        assert!(matches!(
            err(&late_transpose),
            Some(CodecError::BadConfig { .. })
        ));
        assert_eq!(
            err(&[b(), spec("foo", json!({}))]),
            Some(CodecError::Unsupported("foo".into()))
        );
        let sharding = err(&[spec("sharding_indexed", json!({}))]).unwrap();
        assert!(sharding
            .to_string()
            .starts_with("unsupported codec 'sharding_indexed'"));
        let vlen = err(&[spec("vlen-utf8", json!({}))]).unwrap();
        assert!(matches!(vlen, CodecError::Unsupported(_)));
        let huge = Pipeline::new(&[b()], &dt, &[u64::MAX, 2]).err();
        assert!(matches!(huge, Some(CodecError::BadConfig { .. })));
    }

    #[test]
    fn wrong_sizes_are_errors() {
        let p = Pipeline::new(
            &[spec("bytes", json!({"endian": "big"}))],
            &DataType::Int(4),
            &[3],
        )
        .unwrap();
        assert_eq!(p.decoded_len(), 12);
        assert!(decoded(&p, &[0; 11]).is_err());
        assert!(decoded(&p, &[0; 13]).is_err());
        assert!(p.decode(&[0; 12], &mut [0; 11][..]).is_err());
        assert_eq!(
            decoded(&p, &[0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3]).unwrap(),
            [1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0]
        );
        let empty = Pipeline::new(&[spec("bytes", json!({}))], &DataType::Int(4), &[0]).unwrap();
        assert_eq!(decoded(&empty, &[]).unwrap(), Vec::<u8>::new());
    }
}
