//! Icechunk repositories (format spec v1 and v2, written by icechunk 2.3) read byte-exact
//! through the view and through FUSE at every version (`main`, a tag, another branch, a snapshot
//! id), against zarr-python reading them through icechunk; the mounted version shown on the
//! root; unknown `--ref` names and corrupt metadata refused.

mod common;

#[test]
fn every_repository_version_reads_exactly_through_the_view() {
    common::check_all("icechunk/manifest.json", 8, common::view_check::check_store);
}

#[test]
fn every_repository_version_reads_exactly_through_fuse() {
    if !common::mount::fuse_ready() {
        return;
    }
    common::check_all("icechunk/manifest.json", 8, common::fuse_check::check_store);
}
