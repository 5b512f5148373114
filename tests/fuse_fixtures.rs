//! Every fixture store mounted with real FUSE: `find` and `ls -lR` list the hierarchy, and
//! `A`, `A.npy`, `A.json` and `.group.json` read byte-exact, whole, at odd offsets and by mmap.

mod common;

#[test]
fn every_fixture_reads_exactly_through_fuse() {
    let cases = common::load_manifest("manifest.json");
    let errors: Vec<String> = cases
        .iter()
        .flat_map(common::fuse_check::check_store)
        .collect();
    assert!(
        errors.is_empty(),
        "{} problems:\n{}",
        errors.len(),
        errors.join("\n")
    );
}
