//! The netCDF view of a hierarchy: its netCDF data model ([`model`]) and the `.header.cdl` file of
//! every group ([`cdl`]), which prints a group's subtree as `ncdump -h` does, and the group's
//! `.ncstream` ([`ncstream`]), its subtree in netCDF-Java's streaming format.

pub mod cdl;
pub mod files;
pub mod model;
pub mod ncstream;
pub mod proto;

/// The file holding a group's CDL header inside its directory.
pub const CDL_SIDECAR: &str = ".header.cdl";
/// The file holding a group's subtree as an ncstream inside its directory.
pub const NCSTREAM_SIDECAR: &str = ".ncstream";
