//! Stores as real writers produce them (issue 10; fixtures by scripts/make_wild_fixtures.py):
//! datetimes, zarr-python 3.1's v3 types, bare NaN tokens, lzma/pcodec, object codecs, NCZarr
//! zipped as one top folder. Read byte-exact through the view, then through a real FUSE mount.

mod common;

const MANIFEST: &str = "wild/manifest.json";

#[test]
fn wild_stores_read_exactly_through_the_view() {
    common::check_all(MANIFEST, 6, common::view_check::check_store);
}

#[test]
fn wild_stores_read_exactly_through_fuse() {
    if !common::mount::fuse_ready() {
        return;
    }
    common::check_all(MANIFEST, 6, common::fuse_check::check_store);
}
