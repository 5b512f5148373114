//! kerchunk reference sets (JSON versions 0 and 1 with templates and `gen`, a MultiZarrToZarr
//! combination, a Parquet directory) read byte-exact through the view and through FUSE, against
//! zarr-python reading them with fsspec; and what happens when references point where they may
//! not, at missing files or past a file's end.

mod common;

#[test]
fn every_reference_set_reads_exactly_through_the_view() {
    common::check_all(
        "references/manifest.json",
        5,
        common::view_check::check_store,
    );
}

#[test]
fn every_reference_set_reads_exactly_through_fuse() {
    if !common::mount::fuse_ready() {
        return;
    }
    common::check_all(
        "references/manifest.json",
        5,
        common::fuse_check::check_store,
    );
}
