//! Every dialect fixture (sharding, NCZarr generations, v3 drafts, consolidated metadata,
//! variable-length strings, names), read through the view and compared byte for byte.

mod common;

#[test]
fn every_dialect_reads_exactly_through_the_view() {
    let cases = common::load_manifest("dialects/manifest.json");
    assert!(
        cases.len() >= 15,
        "the dialect manifest lists too few stores"
    );
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
