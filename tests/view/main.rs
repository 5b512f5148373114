//! The view driven directly (no FUSE): the filesystem minus the kernel, in one binary, a module
//! per operation or feature.
//!
//! - [`reads`]: every fixture store's listings, bytes of `A` and `A.npy` at many offsets,
//!   `A.json` and `.group.json`; [`dialects`]: every dialect fixture the same way.
//! - [`slices`]: selection files against a model of numpy's basic indexing.
//! - [`tools`]: `.zom.json`, extended attributes, the `df` totals.
//! - [`streaming`]: drop-behind for sequential readers; [`read_ahead`]: the read-ahead over a
//!   store with latency (each chunk requested once, a read waits only for its own chunks).
//! - [`errors`], [`faults`]: bad input and injected store faults fail only what they touch.
//! - [`no_wait`]: calls told not to wait answer what is in memory while the store stalls.

#[path = "../common/mod.rs"]
mod common;
#[path = "../synth/mod.rs"]
mod synth;

mod dialects;
mod errors;
mod faults;
mod no_wait;
mod read_ahead;
mod reads;
mod slices;
mod streaming;
mod tools;
