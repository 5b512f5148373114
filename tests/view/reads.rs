//! Every fixture store, read through the view (no FUSE): listings, bytes of `A` and `A.npy`
//! at many offsets, `A.json` and `.group.json` fields, and the error cases.

use crate::common;

#[test]
fn every_fixture_reads_exactly_through_the_view() {
    common::check_all("manifest.json", 10, common::view_check::check_store);
}
