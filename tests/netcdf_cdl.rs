//! `.header.cdl` of every group, compared with what netCDF-c prints: `ncdump -h` as netCDF-c 4.10
//! reads pure Zarr stores, Debian's `ncdump -h` (4.9.0) of an NCZarr store, and CDL written by
//! hand from netCDF's rules (tests/fixtures/netcdf/*.cdl) for the others (Zarr v3, subgroups).

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

/// `ncdump -h` of a local store in `mode` (`zarr` or `nczarr`); `None` when ncdump is not
/// installed (the test is skipped, or fails under ZARRFS_REQUIRE_FUSE=1, as CI sets it).
fn ncdump(store: &Path, mode: &str) -> Option<String> {
    let url = format!("file://{}#mode={mode},file", store.display());
    match Command::new("ncdump").args(["-h", &url]).output() {
        Ok(out) => {
            assert!(
                out.status.success(),
                "ncdump -h {url} failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            Some(String::from_utf8(out.stdout).unwrap())
        }
        Err(e) => {
            assert!(
                std::env::var("ZARRFS_REQUIRE_FUSE").as_deref() != Ok("1"),
                "ncdump is required (apt-get install netcdf-bin): {e}"
            );
            eprintln!("skipped: ncdump (Debian netcdf-bin) is not installed: {e}");
            None
        }
    }
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

/// Pure Zarr v2 stores, against `ncdump -h` as netCDF-c 4.10 reads them (written by
/// scripts/make_netcdf_cdl.py from netCDF4-python 1.7.5's netCDF-c into
/// tests/fixtures/netcdf/netcdf_c_4.10/; Debian's netCDF-c is 4.9.0, which names anonymous
/// dimensions `_zdim_<len>` and types attributes otherwise). Left out: `consolidated_v2_stale`
/// (zarrfs reads the consolidated metadata, netCDF-c the stale documents).
#[test]
fn pure_zarr_v2_headers_equal_netcdf_c_4_10() {
    for store in [
        "dialects/consolidated_v2_zarr2.zarr",
        "dialects/consolidated_v2_zarr3.zarr",
        "v2_codecs.zarr",
        "netcdf/netcdf_c_4.10/dims_v2.zarr",
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

/// Stores and groups ncdump cannot show (Zarr v3; a subgroup alone, with the root dimensions it
/// uses declared in it; a store whose root is an array; NCZarr of netCDF-c 4.10, which Debian's
/// ncdump 4.9.0 crashes on: checked against netCDF4-python's reading of it), against CDL
/// written from netCDF's rules in tests/fixtures/netcdf/.
#[test]
fn headers_equal_hand_written_cdl() {
    for (store, group, expected) in [
        ("dialects/sharding_v3.zarr", "", "sharding_v3.cdl"),
        ("v3_attrs.zarr", "", "v3_attrs.cdl"),
        // A store whose root is an array: the root group's one variable (netCDF-c shows an
        // empty dataset).
        ("temp.zarr", "", "temp.cdl"),
        ("dialects/nczarr_gen4.zarr", "", "nczarr_gen4.cdl"),
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
