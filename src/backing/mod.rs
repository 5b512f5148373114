//! Decode once: a persistent directory of decoded arrays ("backing files").
//!
//! Each array read through a mount with `--cache-dir` gets one sparse file in that directory,
//! laid out exactly like the array's file `A`. Bytes the view decodes are written into it as
//! they are served, whole blocks at a time, and a map of 4 KiB blocks records which are present
//! (kept by page, in memory and in `KEY.map`, only where something was written: see
//! `block_map` and `records`). Nothing on the read path waits for the disk: the pages of the map
//! that changed are saved every few seconds (and at unmount) by a background job that syncs the
//! data first. When every block is present the file is synced
//! and renamed from `KEY.part` to `KEY.data` in the background: only a `.data` file counts as
//! complete, so a crash mid-write never leaves a file that passes as complete. `KEY` hashes the
//! array's identity (see [`Identity`]): when anything about the array changes, the key changes
//! and the array is decoded again into a new file (the old one ages out of the LRU).
//!
//! The directory belongs to the daemon (see `owned`): created 0700, or refused when another
//! user owns it or may write into it; every file is opened without following links and
//! checked on its descriptor. Every block carries a CRC-32C recorded as it is written (see
//! `sums`): blocks of a file being written are checked as they are copied out, a complete
//! file is checked whole before its first use in a mount, and a block or file that fails is
//! decoded again. Files of another format version are never read (the version is part of the
//! key).
//!
//! A variable-length array's files (its text `A` and fixed-width `A.npy`, sizes known only
//! after a scan) get backing files of their own, keyed `KEY.txt` and `KEY.npy` (see
//! [`Identity::of_kind`]).
//!
//! Once complete, `A.npy` may get a file of its own for passthrough, `KEY.npy` (NPY header then
//! the data, copied in the kernel from `KEY.data`, published by rename from `KEY.npypart`).
//!
//! Several mounts share a directory: the one holding `KEY.lock` (flock) writes `KEY.part` or
//! `KEY.npy`; the others serve that array uncached until `KEY.data` appears. Whole arrays are
//! evicted, least recently opened first, to keep the directory within its byte budget, each
//! under its lock, the lock file last (see [`BackingDir`]); a mount lets go of an array's lock
//! once its file is complete, so the budget holds for what a live mount wrote too, and an array
//! being written holds its full size in the budget from the start. A write error (a full disk)
//! turns writing off for the whole directory with one log line; reads go on uncached, and the
//! files being written give back the blocks their saved maps do not claim.
//! Running short of descriptors, memory or threads is no write error: the array is served
//! uncached and what failed is tried again later. The descriptors kept open are bounded (see
//! `fds`), as are the arrays written at once (each holds its lock file open).

mod block_map;
mod dir;
mod fds;
mod file;
mod identity;
mod owned;
mod records;

pub use dir::{default_budget, default_dir, BackingDir};
pub use file::BackingFile;

/// Where a file of a mount keeps its backing file: registered with [`BackingDir::hold`], it is
/// emptied when this process evicts the array, so that the file's disk space is freed as soon
/// as its last reader is done.
pub type Held = parking_lot::Mutex<Option<std::sync::Arc<BackingFile>>>;
pub use identity::Identity;

/// Bytes per block of the presence map.
pub const BLOCK: u64 = 4096;
