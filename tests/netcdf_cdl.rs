//! `.header.cdl` of every group, compared with what netCDF-c prints: netCDF-c 4.10.1's `ncdump -h`
//! of pure Zarr stores and an NCZarr generation-4 store, Debian's `ncdump -h` (4.9.0) of NCZarr
//! stores it writes, and CDL written by hand from netCDF's rules (tests/fixtures/netcdf/*.cdl)
//! for the others (Zarr v3, subgroups).

mod common;

use std::path::Path;
use std::process::Command;
use zarrfs::meta::LoadOptions;
use zarrfs::view::View;

fn open(store: &Path) -> View {
    zarrfs::view::from_location(store.to_str().unwrap(), 64 << 20, &LoadOptions::default()).unwrap()
}

/// The whole file at `path` in `view`.
fn read(view: &View, path: &str) -> String {
    let ino = view
        .resolve(path)
        .unwrap_or_else(|e| panic!("{path}: {e:?}"));
    let size = view.getattr(ino).unwrap().size;
    let bytes = view.read(ino, 0, size as u32).unwrap();
    assert_eq!(
        bytes.len() as u64,
        size,
        "{path}: stat size and read length differ"
    );
    String::from_utf8(bytes).unwrap()
}

/// The output of netCDF-c's `tool` (`ncdump`, `ncgen`, `nccopy`) run with `args`; `None` when
/// it is not installed (the test is skipped, or fails under ZARRFS_REQUIRE_FUSE=1, as CI sets
/// it).
fn netcdf_tool(tool: &str, args: &[&str]) -> Option<String> {
    match Command::new(tool).args(args).output() {
        Ok(out) => {
            assert!(
                out.status.success(),
                "{tool} {args:?} failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            Some(String::from_utf8(out.stdout).unwrap())
        }
        Err(e) => {
            assert!(
                std::env::var("ZARRFS_REQUIRE_FUSE").as_deref() != Ok("1"),
                "{tool} is required (apt-get install netcdf-bin): {e}"
            );
            eprintln!("skipped: {tool} (Debian netcdf-bin) is not installed: {e}");
            None
        }
    }
}

/// `ncdump -h` of a local store in `mode` (`zarr` or `nczarr`).
fn ncdump(store: &Path, mode: &str) -> Option<String> {
    let url = format!("file://{}#mode={mode},file", store.display());
    netcdf_tool("ncdump", &["-h", &url])
}

/// Everything but the first line (`netcdf NAME {`).
fn body(cdl: &str) -> &str {
    cdl.split_once('\n').map_or("", |(_, rest)| rest)
}

/// Compares the root `.header.cdl` of `store` with `ncdump -h` of it in `mode`.
fn compare(store: &Path, mode: &str) {
    let Some(expected) = ncdump(store, mode) else {
        return;
    };
    let name = store.file_stem().unwrap().to_str().unwrap();
    let ours = read(&open(store), ".header.cdl");
    assert_eq!(
        ours.lines().next().unwrap(),
        format!("netcdf {name} {{"),
        "{name}: first line"
    );
    assert_eq!(
        body(&ours),
        body(&expected),
        "{name}: .header.cdl differs from ncdump -h"
    );
}

/// Pure Zarr v2 stores and an NCZarr generation-4 store, against `ncdump -h` of netCDF-c 4.10.1
/// (written by scripts/make_netcdf_cdl.py into tests/fixtures/netcdf/netcdf_c_4.10/ with
/// netCDF-c 4.10.1's ncdump; Debian's netCDF-c is 4.9.0, which names anonymous dimensions
/// `_zdim_<len>`, types attributes otherwise, and crashes on generation-4 stores and pure Zarr
/// `|S1` arrays). `attrs_v2` holds what netCDF-c does with attributes and names; `nczarr_gen4`
/// an unlimited dimension. Left out: `consolidated_v2_stale` (zarrfs reads the consolidated
/// metadata, netCDF-c the stale documents).
#[test]
fn headers_equal_netcdf_c_4_10() {
    for store in [
        "dialects/consolidated_v2_zarr2.zarr",
        "dialects/consolidated_v2_zarr3.zarr",
        "v2_codecs.zarr",
        "netcdf/netcdf_c_4.10/dims_v2.zarr",
        "netcdf/netcdf_c_4.10/attrs_v2.zarr",
        "dialects/nczarr_gen4.zarr",
    ] {
        let path = common::fixtures_dir().join(store);
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        let expected = common::fixtures_dir()
            .join("netcdf/netcdf_c_4.10")
            .join(format!("{name}.cdl"));
        let want = std::fs::read_to_string(expected).unwrap();
        let ours = read(&open(&path), ".header.cdl");
        assert_eq!(ours, want, "{name}: .header.cdl differs from netCDF-c 4.10");
    }
}

/// NCZarr generation 2 (netCDF-c 4.9.0, Debian's version). Debian's netCDF-c 4.9.0 crashes on
/// two of its variables (the netCDF scalar `t0`, and `température`), so both sides read a copy
/// whose root group does not list them.
#[test]
fn nczarr_header_equals_ncdump() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("nczarr_gen2.zarr");
    common::servers::copy_tree(
        &common::fixtures_dir().join("dialects/nczarr_gen2.zarr"),
        &store,
    );
    let zgroup = store.join(".zgroup");
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&zgroup).unwrap()).unwrap();
    let vars = doc["_NCZARR_GROUP"]["vars"].as_array_mut().unwrap();
    vars.retain(|v| v != "t0" && v != "température");
    std::fs::write(&zgroup, doc.to_string()).unwrap();
    for var in ["t0", "température"] {
        std::fs::remove_dir_all(store.join(var)).unwrap();
    }
    compare(&store, "nczarr");
}

/// CDL's printing rules, on an NCZarr store Debian's netCDF-c (4.9.0) writes from
/// tests/fixtures/netcdf/ncgen/cdl_rules.cdl (ncgen, then nccopy) and shows with `ncdump -h`:
/// variables named like CDL keywords (`data :units`), `%` in names (not escaped), text with
/// newlines (one literal), quotes, control characters and DEL (`\'`, `\001`, `\177`, raw in
/// the store's JSON as netCDF-c writes them), `NaNf` and `Infinity` typed by NCZarr, a uint64
/// at 2^63 - 1, subgroups in the order the group lists them; and attributes netCDF-c hides
/// (`CLASS`, `NAME`, ...; added to the root's `.zattrs`) or shows (`_nczarr_note`).
#[test]
fn nczarr_cdl_rules_equal_ncdump() {
    let tmp = tempfile::tempdir().unwrap();
    let cdl = common::fixtures_dir().join("netcdf/ncgen/cdl_rules.cdl");
    let nc = tmp.path().join("cdl_rules.nc");
    let store = tmp.path().join("cdl_rules.zarr");
    let (nc_arg, cdl_arg) = (nc.to_str().unwrap(), cdl.to_str().unwrap());
    if netcdf_tool("ncgen", &["-4", "-o", nc_arg, cdl_arg]).is_none() {
        return;
    }
    let url = format!("file://{}#mode=nczarr,file", store.display());
    if netcdf_tool("nccopy", &[nc_arg, &url]).is_none() {
        return;
    }
    // The root's attributes hold raw control characters (as netCDF-c writes them): appended to
    // as text.
    let zattrs = store.join(".zattrs");
    let text = std::fs::read(&zattrs).unwrap();
    let end = text.iter().rposition(|&b| b == b'}').unwrap();
    let mut patched = text[..end].to_vec();
    patched.extend_from_slice(
        br#", "CLASS": "c", "NAME": "n", "DIMENSION_LIST": "d", "REFERENCE_LIST": "r", "_Netcdf4Coordinates": "c", "_Netcdf4Dimid": "d", "_nczarr_note": "shown", "_NCZarr_note": "shown"}"#,
    );
    std::fs::write(&zattrs, patched).unwrap();
    compare(&store, "nczarr");
}

/// Stores and groups ncdump cannot show (Zarr v3; a subgroup alone, with the root dimensions it
/// uses declared in it, unlimited `time` included; a store whose root is an array; NC_CHAR and
/// NC_STRING fills as netCDF-c 4.10 writes them, which Debian's ncdump 4.9.0 crashes on:
/// checked against netCDF4-python's reading of it), against CDL
/// written from netCDF's rules in tests/fixtures/netcdf/.
#[test]
fn headers_equal_hand_written_cdl() {
    for (store, group, expected) in [
        ("dialects/sharding_v3.zarr", "", "sharding_v3.cdl"),
        ("v3_attrs.zarr", "", "v3_attrs.cdl"),
        // A store whose root is an array: the root group's one variable (netCDF-c shows an
        // empty dataset).
        ("temp.zarr", "", "temp.cdl"),
        // NC_CHAR and NC_STRING variables with fill values netCDF-c writes as text.
        ("dialects/nczarr_char_fill.zarr", "", "nczarr_char_fill.cdl"),
        (
            "dialects/nczarr_gen4.zarr",
            "forecast",
            "nczarr_gen4_forecast.cdl",
        ),
        (
            "dialects/consolidated_v2_zarr2.zarr",
            "g1",
            "consolidated_v2_zarr2_g1.cdl",
        ),
    ] {
        let view = open(&common::fixtures_dir().join(store));
        let ours = read(&view, &format!("{group}/.header.cdl"));
        let path = common::fixtures_dir().join("netcdf").join(expected);
        if std::env::var("ZARRFS_BLESS").is_ok() {
            std::fs::write(&path, &ours).unwrap();
        }
        let want = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            ours, want,
            "{store} {group}: .header.cdl differs from {expected}"
        );
    }
}

/// A store of int64 and uint64 variables whose `_FillValue`s are JSON floats at the edges of
/// their types: 2^63 (`i64::MAX` as a float rounds to it) and 2^64 (`u64::MAX` as a float) are
/// not values of them, -2^63 and the floats just below 2^63 and 2^64 are.
fn wide_fill_store() -> zarrfs::store::MemoryStore {
    let mut s = zarrfs::store::MemoryStore::new();
    s.insert(".zgroup", r#"{"zarr_format": 2}"#);
    for (name, dtype, fill) in [
        ("i", "<i8", "9.223372036854775807e18"),
        ("j", "<i8", "-9.223372036854775808e18"),
        ("k", "<i8", "9.2233720368547748e18"),
        ("u", "<u8", "1.8446744073709552e19"),
        ("v", "<u8", "1.844674407370955e19"),
    ] {
        s.insert(
            format!("{name}/.zarray"),
            format!(
                r#"{{"zarr_format": 2, "shape": [1], "chunks": [1], "dtype": "{dtype}", "compressor": null, "fill_value": 0, "order": "C", "filters": null}}"#
            ),
        );
        s.insert(
            format!("{name}/.zattrs"),
            format!(r#"{{"_FillValue": {fill}}}"#),
        );
    }
    s
}

/// `_FillValue`s at 2^63 on int64 and 2^64 on uint64 are left out (with a note), not written
/// as -2^63 and 0; those at the edges the types hold are kept exactly, in `.header.cdl` and in
/// the `.ncstream` header alike.
#[test]
fn fill_values_at_two_to_the_63_and_64_are_not_int64_or_uint64() {
    use prost::Message;
    use zarrfs::view::netcdf::proto;
    let view = zarrfs::view::from_store(
        std::sync::Arc::new(wide_fill_store()),
        "mem",
        1 << 20,
        &LoadOptions::default(),
    )
    .unwrap();
    let cdl = read(&view, ".header.cdl");
    let variables = cdl.split_once("variables:\n").unwrap().1;
    assert_eq!(
        variables,
        "\tint64 i(_Anonymous_Dim_1) ;\n\
         \t\ti:comment = \"_FillValue 9.223372036854776e+18 left out: not a int64 value\" ;\n\
         \tint64 j(_Anonymous_Dim_1) ;\n\
         \t\tj:_FillValue = -9223372036854775808LL ;\n\
         \tint64 k(_Anonymous_Dim_1) ;\n\
         \t\tk:_FillValue = 9223372036854774784LL ;\n\
         \tuint64 u(_Anonymous_Dim_1) ;\n\
         \t\tu:comment = \"_FillValue 1.8446744073709552e+19 left out: not a uint64 value\" ;\n\
         \tuint64 v(_Anonymous_Dim_1) ;\n\
         \t\tv:_FillValue = 18446744073709549568ULL ;\n\
         }\n"
    );
    let ino = view.resolve(".ncstream").unwrap();
    let size = view.getattr(ino).unwrap().size;
    let stream = view.read(ino, 0, size as u32).unwrap();
    let header = proto::Header::decode_length_delimited(&stream[8..]).unwrap();
    // Each variable's attributes: their names and bytes.
    type Attrs = Vec<(String, Vec<u8>)>;
    let attrs: Vec<(String, Attrs)> = (header.root.unwrap().vars.iter())
        .map(|v| {
            let attrs = v.atts.iter().map(|a| (a.name.clone(), a.data.clone()));
            (v.name.clone(), attrs.collect())
        })
        .collect();
    let fill = |bytes: [u8; 8]| vec![("_FillValue".to_string(), bytes.to_vec())];
    let note = |text: &str| vec![("comment".to_string(), text.as_bytes().to_vec())];
    assert_eq!(
        attrs,
        [
            (
                "i".into(),
                note("_FillValue 9.223372036854776e+18 left out: not a int64 value")
            ),
            ("j".into(), fill(i64::MIN.to_be_bytes())),
            ("k".into(), fill((i64::MAX - 1023).to_be_bytes())),
            (
                "u".into(),
                note("_FillValue 1.8446744073709552e+19 left out: not a uint64 value")
            ),
            ("v".into(), fill((u64::MAX - 2047).to_be_bytes())),
        ]
    );
}
