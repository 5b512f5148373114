//! Every test that mounts zarrfs with real FUSE, in one binary, a module per operation or
//! feature. Each mount has a timeout and is always unmounted; where FUSE cannot run the tests
//! print `skipping ...` and pass (`ZARRFS_REQUIRE_FUSE=1` makes them fail instead).
//!
//! - [`reads`]: every fixture store listed and read byte-exact (whole, at odd offsets, by mmap);
//!   [`dialects`]: every dialect fixture the same way.
//! - [`slices`]: selection files (`A[SEL]`, `.npy`, `.json`) through tools and numpy.
//! - [`tools`]: dd, od, cp, numpy on a mount; read-only (EROFS).
//! - [`views`]: extended attributes, `.zom.json`, `df`'s totals.
//! - [`hostile`]: hostile stores mount, list and fail only the bad reads.
//! - [`lazy`]: groups loaded at their first listing or lookup, once; one level per listing over
//!   S3.
//! - [`memory`]: a 100 GB array reads within the cache budget.
//! - [`cache_dir`], [`cache_integrity`]: `--cache-dir` across remounts and shared mounts, and
//!   never a wrong byte from it.
//! - [`remote`]: the fixtures over S3 (s3s-fs) and plain HTTP (nginx) on 127.0.0.1, and their
//!   faults (503s, a hung or killed server); [`remote_references`]: reference sets and an
//!   Icechunk repository over S3; [`remote_records`]: their record files, manifests and refs
//!   read as few times as they need, and never a transient 404 taken for missing chunks;
//!   [`remote_quirks`]: servers and settings off the common path (endpoints from the
//!   environment, servers that ignore or refuse ranges, slow bodies, long listings, shards
//!   rewritten while read).
//! - [`stalls`]: stalled remote reads get EIO in time while the mount keeps answering;
//!   [`metadata_stalls`]: the same for lookups, `stat`, listings and `df`.
//! - [`store_safety`]: links, FIFOs and devices in a local store.
//! - [`cli`], [`lifecycle`], [`fstab`]: the command line, signals, unmounting, logging, and
//!   mounting through mount(8) and /etc/fstab.
//!
//! Apart, in binaries of their own: `clouds` (it sets the process's environment for the GCS
//! client and SSL_CERT_FILE, which every mount started meanwhile would inherit) and `soak` (a
//! load test, kept away from the tests that check timing); the format tests (`icechunk`,
//! `references`, `types`, `wild`) and `docs` mount too, after their view checks.

#[path = "../common/mod.rs"]
mod common;

mod cache_dir;
mod cache_integrity;
mod cli;
mod dialects;
mod fstab;
mod hostile;
mod lazy;
mod lifecycle;
mod memory;
mod metadata_stalls;
mod reads;
mod remote;
mod remote_quirks;
mod remote_records;
mod remote_references;
mod slices;
mod stalls;
mod store_safety;
mod tools;
mod views;
