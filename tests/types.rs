//! What zarr-python 3.4 and tensorstore write (issue 20; fixtures by
//! scripts/make_types_fixtures.py): tensorstore's `int4`/`int2` (low bits only) and `bfloat16`
//! in v3 and v2, the `struct` data type, the `scale_offset` and `cast_value` codecs. Read
//! byte-exact through the view, then through a real FUSE mount.

mod common;

const MANIFEST: &str = "types/manifest.json";

#[test]
fn new_types_read_exactly_through_the_view() {
    common::check_all(MANIFEST, 4, common::view_check::check_store);
}

#[test]
fn new_types_read_exactly_through_fuse() {
    if !common::mount::fuse_ready() {
        return;
    }
    common::check_all(MANIFEST, 4, common::fuse_check::check_store);
}
