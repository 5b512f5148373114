//! Every fixture store, read through the view (no FUSE): listings, bytes of `A` and `A.npy`
//! at many offsets, `A.json` and `.group.json` fields, and the error cases.

mod common;

#[test]
fn every_fixture_reads_exactly_through_the_view() {
    let cases = common::load_manifest("manifest.json");
    assert!(cases.len() >= 10, "the manifest lists too few stores");
    let errors: Vec<String> = cases
        .iter()
        .flat_map(common::view_check::check_store)
        .collect();
    assert!(
        errors.is_empty(),
        "{} problems:\n{}",
        errors.len(),
        errors.join("\n")
    );
}
