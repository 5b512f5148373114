//! Every dialect fixture mounted with real FUSE and compared byte for byte.

use crate::common;

#[test]
fn every_dialect_reads_exactly_through_fuse() {
    if !common::mount::fuse_ready() {
        return;
    }
    common::check_all(
        "dialects/manifest.json",
        15,
        common::fuse_check::check_store,
    );
}
