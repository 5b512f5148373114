//! zarrfs: mount a Zarr hierarchy as a read-only filesystem of plain files.
//!
//! Data flows through one module each, each using only those before it:
//! [`store`] → [`meta`] → [`codec`] → [`fetch`] → [`cache`] → [`backing`] → [`view`] → [`fuse`] and [`cli`].
//! [`stats`] counts what they do, for `.zarrfs/stats`; [`memory`] allocates and reuses their buffers.

pub mod backing;
pub mod cache;
pub mod cli;
pub mod codec;
pub mod fetch;
pub mod fuse;
pub mod memory;
pub mod meta;
pub mod stats;
pub mod store;
pub mod view;
