//! Every dialect fixture (sharding, NCZarr generations, v3 drafts, consolidated metadata,
//! variable-length strings, names), read through the view and compared byte for byte.

use crate::common;

#[test]
fn every_dialect_reads_exactly_through_the_view() {
    common::check_all(
        "dialects/manifest.json",
        15,
        common::view_check::check_store,
    );
}
