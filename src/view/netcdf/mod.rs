//! The netCDF view of a hierarchy: its netCDF data model ([`model`]) and the `.header.cdl` file of
//! every group ([`cdl`]), which prints a group's subtree as `ncdump -h` does.

pub mod cdl;
pub mod model;

/// The file holding a group's CDL header inside its directory.
pub const CDL_SIDECAR: &str = ".header.cdl";
