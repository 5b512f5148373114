//! `.zarrfs/stats` at the mount root: the live counters of the mount as JSON, made anew on
//! every open (the file is served with direct I/O, so `cat` and `watch` see fresh values); the
//! reads of one open see one consistent text.

use super::View;
use crate::stats::STATS;
use serde_json::json;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The directory at the mount root holding zarrfs's own files.
pub const ZARRFS_DIR: &str = ".zarrfs";
/// The statistics file in [`ZARRFS_DIR`].
pub const STATS_FILE: &str = "stats";

impl View {
    /// The current counters as pretty JSON with a trailing newline.
    pub fn stats_json(&self) -> Vec<u8> {
        let cache = self.cache.stats();
        let mut doc = STATS.to_json();
        doc.insert(
            "cache".into(),
            json!({
                "budget_bytes": self.cache.budget(),
                "bytes": cache.used,
                "entries": cache.entries,
                "hits": cache.hits,
                "misses": cache.loads,
                "evictions": cache.evictions,
            }),
        );
        doc.insert(
            "metadata".into(),
            json!({
                "groups_loaded": self.groups_loaded.load(Ordering::Relaxed),
                "groups_loaded_ahead": self.groups_ahead.load(Ordering::Relaxed),
                "nodes_loaded": self.loaded.load(Ordering::Relaxed),
                "selection_lookups": self.slices.held(),
            }),
        );
        if let Some(counts) = &self.requests {
            doc.insert(
                "store".into(),
                json!({"requests": counts.requests(), "objects": counts.objects()}),
            );
        }
        if let Some(dir) = self.backing_dir() {
            doc.insert(
                "cache_dir".into(),
                json!({
                    "backing_hit_bytes": dir.hit_bytes(),
                    "passthrough_opens": dir.passthrough_opens(),
                }),
            );
        }
        let mut text = serde_json::to_vec_pretty(&doc).unwrap_or_default();
        text.push(b'\n');
        text
    }

    /// Opens `.zarrfs/stats`: its text now, kept for the handle's reads.
    pub(super) fn open_stats(&self) -> u64 {
        let fh = self.next_handle.fetch_add(1, Ordering::Relaxed) + 1;
        let text = Arc::from(self.stats_json());
        self.snapshots.lock().insert(fh, text);
        fh
    }

    /// The text handle `fh` reads (a fresh one for reads without a handle).
    pub(super) fn stats_snapshot(&self, fh: u64) -> Arc<[u8]> {
        let kept = self.snapshots.lock().get(&fh).cloned();
        kept.unwrap_or_else(|| Arc::from(self.stats_json()))
    }

    /// Forgets the text of handle `fh`.
    pub(super) fn forget_stats(&self, fh: u64) {
        self.snapshots.lock().remove(&fh);
    }
}
