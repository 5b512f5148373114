//! Stores as real writers produce them (issue 10; fixtures by scripts/make_wild_fixtures.py):
//! datetimes, zarr-python 3.1's v3 types, bare NaN tokens, lzma (raw streams too), pcodec, zfpy
//! in every mode, zarr-extensions packbits, object codecs, NCZarr zipped as one top folder and
//! NCZarr strings from netCDF4-python's netCDF-c; and zarrs' own `zfp` codec in every mode
//! (fixtures by scripts/zarrs_writer, zarrs itself). Read byte-exact through the view, then
//! through a real FUSE mount.

mod common;

const MANIFEST: &str = "wild/manifest.json";
/// The stores zarrs wrote (scripts/zarrs_writer).
const ZARRS_MANIFEST: &str = "wild/zarrs/manifest.json";

#[test]
fn wild_stores_read_exactly_through_the_view() {
    common::check_all(MANIFEST, 11, common::view_check::check_store);
}

#[test]
fn wild_stores_read_exactly_through_fuse() {
    if !common::mount::fuse_ready() {
        return;
    }
    common::check_all(MANIFEST, 11, common::fuse_check::check_store);
}

#[test]
fn zarrs_stores_read_exactly_through_the_view() {
    common::check_all(ZARRS_MANIFEST, 1, common::view_check::check_store);
}

#[test]
fn zarrs_stores_read_exactly_through_fuse() {
    if !common::mount::fuse_ready() {
        return;
    }
    common::check_all(ZARRS_MANIFEST, 1, common::fuse_check::check_store);
}

/// `.header.cdl` of the stores whose expected header the fixture script wrote from netCDF-c's
/// own reading of the store (`header_cdl` in the manifest).
#[test]
fn nczarr_headers_match_netcdf_c() {
    let dir = common::fixtures_dir().join("wild");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let mut checked = 0;
    for store in manifest["stores"].as_array().unwrap() {
        let Some(cdl) = store["header_cdl"].as_str() else {
            continue;
        };
        let expected = std::fs::read_to_string(dir.join(cdl)).unwrap();
        let path = dir.join(store["store"].as_str().unwrap());
        let options = zarrfs::meta::LoadOptions::default();
        let view = zarrfs::view::from_location(path.to_str().unwrap(), 64 << 20, &options).unwrap();
        let ino = view.resolve(".header.cdl").unwrap();
        let size = view.getattr(ino).unwrap().size;
        let got = String::from_utf8(view.read(ino, 0, size as u32).unwrap()).unwrap();
        assert_eq!(got, expected, "{cdl}");
        checked += 1;
    }
    assert!(checked > 0, "no store has a header_cdl");
}
