//! Every fixture store mounted with real FUSE: `find` and `ls -lR` list the hierarchy, and
//! `A`, `A.npy`, `A.json` and `.group.json` read byte-exact, whole, at odd offsets and by mmap.

use crate::common;

#[test]
fn every_fixture_reads_exactly_through_fuse() {
    if !common::mount::fuse_ready() {
        return;
    }
    common::check_all("manifest.json", 10, common::fuse_check::check_store);
}
