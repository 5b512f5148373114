//! Writes tests/fixtures/wild/zarrs/: a Zarr v3 store of zarrs' headerless `zfp` codec in every
//! mode (expert, fixed rate, fixed precision, fixed accuracy, reversible), for the data types
//! zarrs codes with it (float32/64, int32/64, datetime64, and int8/uint8/int16/uint16/uint32/
//! uint64 that zarrs promotes to zfp's 32/64-bit integers), 1 to 4 dimensions, with the values
//! zarrs reads back as expected `.npy` files and the manifest tests/wild.rs reads.
//!
//! Run from the repository root (libzfp is built by zfp-sys with cmake: `apt-get install cmake`):
//! cargo run --manifest-path scripts/zarrs_writer/Cargo.toml

use serde_json::{json, Value};
use std::error::Error;
use std::fs;
use std::num::NonZeroU32;
use std::path::Path;
use std::sync::Arc;
use zarrs::array::codec::ZfpCodec;
use zarrs::array::data_type::NumpyTimeUnit;
use zarrs::array::{data_type, ArrayBuilder, ArrayBytes, ArraySubset, DataType, FillValue};
use zarrs::filesystem::FilesystemStore;
use zarrs::group::GroupBuilder;

const OUT: &str = "tests/fixtures/wild/zarrs";
const STORE: &str = "zarrs_zfp.zarr";

/// One array: its name, zarrs data type, numpy `descr`, element size, shape, chunk shape, codec
/// and whether zarrs must give back the written values exactly (reversible mode on values the
/// type's promotion keeps).
struct Case {
    name: &'static str,
    dtype: DataType,
    descr: &'static str,
    size: usize,
    shape: Vec<u64>,
    chunks: Vec<u64>,
    codec: ZfpCodec,
    exact: bool,
}

/// A smooth field with some noise, `n` values in [-1, 1].
fn field(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let x = i as f64;
            0.8 * (x * 0.07).sin() + 0.15 * (x * 1.3).cos() + 0.05 * ((x * 7.7).sin() * 3.1).sin()
        })
        .collect()
}

/// `n` values of the case's type, as little-endian bytes: the field scaled to the type's range
/// (unsigned types span all of it, so the clamps of uint32/uint64's promotion are exercised).
fn values(descr: &str, n: usize) -> Vec<u8> {
    let f = field(n);
    let mut out = Vec::new();
    for v in f {
        match descr {
            "<f4" => out.extend((v as f32 * 1000.0).to_le_bytes()),
            "<f8" => out.extend((v * 1.0e6).to_le_bytes()),
            "|i1" => out.extend(((v * 127.0) as i8).to_le_bytes()),
            "|u1" => out.extend((((v + 1.0) * 127.5) as u8).to_le_bytes()),
            "<i2" => out.extend(((v * 32000.0) as i16).to_le_bytes()),
            "<u2" => out.extend((((v + 1.0) * 32767.0) as u16).to_le_bytes()),
            "<i4" => out.extend(((v * 2.0e9) as i32).to_le_bytes()),
            "<u4" => out.extend((((v + 1.0) * 1.2e9) as u32).to_le_bytes()),
            "<i8" => out.extend(((v * 9.0e18) as i64).to_le_bytes()),
            "<M8[s]" => out.extend((1_700_000_000 + (v * 1.0e7) as i64).to_le_bytes()),
            "<u8" => out.extend((((v + 1.0) * 5.0e18) as u64).to_le_bytes()),
            other => panic!("no values for {other}"),
        }
    }
    out
}

/// uint32/uint64 values clamped to the signed maximum, as zarrs promotes them.
fn clamped(descr: &str, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in data.chunks_exact(if descr == "<u4" { 4 } else { 8 }) {
        if descr == "<u4" {
            let u = u32::from_le_bytes(v.try_into().unwrap());
            out.extend(u.min(i32::MAX as u32).to_le_bytes());
        } else {
            let u = u64::from_le_bytes(v.try_into().unwrap());
            out.extend(u.min(i64::MAX as u64).to_le_bytes());
        }
    }
    out
}

/// An NPY 1.0 file as numpy's `np.save` writes it.
fn npy(descr: &str, shape: &[u64], data: &[u8]) -> Vec<u8> {
    let dims = match shape {
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
    let total = (10 + header.len() + 1).div_ceil(64) * 64;
    header.push_str(&" ".repeat(total - 10 - header.len() - 1));
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((header.len() as u16).to_le_bytes());
    out.extend(header.as_bytes());
    out.extend(data);
    out
}

fn cases() -> Vec<Case> {
    let case = |name, dtype, descr, size, shape: &[u64], chunks: &[u64], codec, exact| Case {
        name,
        dtype,
        descr,
        size,
        shape: shape.to_vec(),
        chunks: chunks.to_vec(),
        codec,
        exact,
    };
    vec![
        case(
            "rate_f4_2d",
            data_type::float32(),
            "<f4",
            4,
            &[20, 30],
            &[8, 16],
            ZfpCodec::new_fixed_rate(10.5),
            false,
        ),
        case(
            "rate_f8_4d",
            data_type::float64(),
            "<f8",
            8,
            &[3, 5, 4, 6],
            &[2, 5, 4, 3],
            ZfpCodec::new_fixed_rate(16.0),
            false,
        ),
        case(
            "rate_i4_1d",
            data_type::int32(),
            "<i4",
            4,
            &[70],
            &[32],
            ZfpCodec::new_fixed_rate(20.0),
            false,
        ),
        case(
            "rate_i2_3d",
            data_type::int16(),
            "<i2",
            2,
            &[6, 7, 5],
            &[4, 4, 5],
            ZfpCodec::new_fixed_rate(8.0),
            false,
        ),
        case(
            "precision_f8_3d",
            data_type::float64(),
            "<f8",
            8,
            &[6, 7, 5],
            &[5, 6, 3],
            ZfpCodec::new_fixed_precision(20),
            false,
        ),
        case(
            "precision_i8_1d",
            data_type::int64(),
            "<i8",
            8,
            &[50],
            &[24],
            ZfpCodec::new_fixed_precision(40),
            false,
        ),
        case(
            "precision_u1_2d",
            data_type::uint8(),
            "|u1",
            1,
            &[12, 10],
            &[8, 8],
            ZfpCodec::new_fixed_precision(10),
            false,
        ),
        case(
            "accuracy_f8_1d",
            data_type::float64(),
            "<f8",
            8,
            &[100],
            &[40],
            ZfpCodec::new_fixed_accuracy(1e-3),
            false,
        ),
        case(
            "accuracy_f4_4d",
            data_type::float32(),
            "<f4",
            4,
            &[3, 4, 5, 6],
            &[3, 4, 5, 6],
            ZfpCodec::new_fixed_accuracy(0.01),
            false,
        ),
        case(
            "expert_f4_2d",
            data_type::float32(),
            "<f4",
            4,
            &[9, 11],
            &[9, 11],
            ZfpCodec::new_expert(100, 300, 18, -10),
            false,
        ),
        case(
            "expert_i4_2d",
            data_type::int32(),
            "<i4",
            4,
            &[10, 10],
            &[5, 10],
            ZfpCodec::new_expert(1, 200, 24, -1074),
            false,
        ),
        case(
            "reversible_f4_2d",
            data_type::float32(),
            "<f4",
            4,
            &[20, 30],
            &[8, 16],
            ZfpCodec::new_reversible(),
            true,
        ),
        case(
            "reversible_f8_3d",
            data_type::float64(),
            "<f8",
            8,
            &[5, 6, 7],
            &[5, 3, 7],
            ZfpCodec::new_reversible(),
            true,
        ),
        case(
            "reversible_i1_2d",
            data_type::int8(),
            "|i1",
            1,
            &[16, 20],
            &[8, 8],
            ZfpCodec::new_reversible(),
            true,
        ),
        case(
            "reversible_u2_1d",
            data_type::uint16(),
            "<u2",
            2,
            &[64],
            &[30],
            ZfpCodec::new_reversible(),
            true,
        ),
        case(
            "reversible_i8_2d",
            data_type::int64(),
            "<i8",
            8,
            &[7, 9],
            &[4, 4],
            ZfpCodec::new_reversible(),
            true,
        ),
        case(
            "reversible_datetime_1d",
            data_type::numpy_datetime64(NumpyTimeUnit::Second, NonZeroU32::MIN),
            "<M8[s]",
            8,
            &[20],
            &[8],
            ZfpCodec::new_reversible(),
            true,
        ),
        case(
            "precision_datetime_1d",
            data_type::numpy_datetime64(NumpyTimeUnit::Second, NonZeroU32::MIN),
            "<M8[s]",
            8,
            &[20],
            &[8],
            ZfpCodec::new_fixed_precision(52),
            false,
        ),
        case(
            "reversible_u4_1d",
            data_type::uint32(),
            "<u4",
            4,
            &[40],
            &[16],
            ZfpCodec::new_reversible(),
            false,
        ),
        case(
            "reversible_u8_2d",
            data_type::uint64(),
            "<u8",
            8,
            &[6, 6],
            &[6, 6],
            ZfpCodec::new_reversible(),
            false,
        ),
    ]
}

fn main() -> Result<(), Box<dyn Error>> {
    let out = Path::new(OUT);
    if out.exists() {
        fs::remove_dir_all(out)?;
    }
    fs::create_dir_all(out.join("expected/zarrs_zfp"))?;
    let store = Arc::new(FilesystemStore::new(out.join(STORE))?);
    GroupBuilder::new()
        .build(store.clone(), "/")?
        .store_metadata()?;
    let mut nodes = vec![json!({"path": "", "type": "group"})];
    for c in cases() {
        let array = ArrayBuilder::new(
            c.shape.clone(),
            c.chunks.clone(),
            c.dtype.clone(),
            FillValue::new(vec![0; c.size]),
        )
        .array_to_bytes_codec(Arc::new(c.codec))
        .build(store.clone(), &format!("/{}", c.name))?;
        array.store_metadata()?;
        let n = c.shape.iter().product::<u64>() as usize;
        let written = values(c.descr, n);
        let all = ArraySubset::new_with_shape(c.shape.clone());
        array.store_array_subset(&all, ArrayBytes::new_flen(written.clone()))?;
        let read = array
            .retrieve_array_subset::<ArrayBytes>(&all)?
            .into_fixed()?
            .into_owned();
        assert_eq!(read.len(), n * c.size, "{}", c.name);
        if c.exact {
            assert!(
                read == written,
                "{}: reversible mode changed values",
                c.name
            );
        }
        if c.name.starts_with("reversible_u") && !c.exact {
            assert!(
                read == clamped(c.descr, &written),
                "{}: not the clamped values",
                c.name
            );
        }
        let rel = format!("expected/zarrs_zfp/{}.npy", c.name);
        fs::write(out.join(&rel), npy(c.descr, &c.shape, &read))?;
        let metadata: Value = serde_json::from_str(&array.metadata().to_string())?;
        nodes.push(json!({
            "path": c.name,
            "type": "array",
            "json": {"data_type": metadata["data_type"], "codecs": metadata["codecs"]},
            "npy": rel,
        }));
    }
    let manifest = json!({
        "generator": "scripts/zarrs_writer (cargo run --manifest-path scripts/zarrs_writer/Cargo.toml)",
        "versions": {"zarrs": "0.23.14", "zfp-sys": "0.4.3 (libzfp 1.0.1)"},
        "stores": [{
            "name": "zarrs_zfp",
            "store": STORE,
            "writer": "zarrs 0.23.14 (zfp feature)",
            "note": "zarrs' headerless zfp array→bytes codec in expert, fixed rate, fixed precision, \
                     fixed accuracy and reversible modes; float32/64, int32/64 and the types zarrs \
                     promotes (int8, uint8, int16, uint16, uint32, uint64) and numpy.datetime64 (as int64); 1 to 4 dimensions, edge \
                     chunks. Expected values: zarrs reading the store back (reversible mode: the \
                     written values, but for uint32/uint64 values above the signed maximum, which \
                     zarrs' promotion clamps). No hand-edits.",
            "nodes": nodes,
        }],
    });
    fs::write(
        out.join("manifest.json"),
        serde_json::to_string_pretty(&manifest)? + "\n",
    )?;
    Ok(())
}
