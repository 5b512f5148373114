//! Every dialect fixture mounted with real FUSE and compared byte for byte.

mod common;

#[test]
fn every_dialect_reads_exactly_through_fuse() {
    let cases = common::load_manifest("dialects/manifest.json");
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
