//! Loading the groups a walk will visit next, before it asks: when a directory is first used
//! (listed or looked up), the first [`WINDOW`] subgroups it holds, and the [`WINDOW`] siblings
//! that follow it in its parent, are loaded on a few worker threads. `find`, `ls -R` and
//! `du` visit a directory's subdirectories in name order, so they find them made.
//!
//! Bounded both ways: the workers never go further than one level below, and [`WINDOW`]
//! entries past, what was used; and as many groups load at once as there are workers (each
//! with its store's requests in flight). Loading ahead never changes what a directory shows
//! (the mount is a snapshot, each directory made once whoever comes first), and a user's
//! request for a directory a worker is making waits for it instead of making it again. A
//! group a worker fails to load is not kept as loaded: its next use loads it again.
//!
//! This is apart from the chunks' read-ahead (`cache::read_ahead`): that one schedules chunk
//! fetches within the cache's byte budget, from readers' offsets; this one makes directories of
//! the view from metadata, in the order a walk goes.

use super::{Dir, View};
use parking_lot::Mutex;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Weak};

/// How many subgroups of a directory, and siblings after it, are loaded ahead.
const WINDOW: usize = 8;

/// The most workers loading groups ahead.
const MAX_WORKERS: usize = 4;

/// The queue of directories to make, read by the workers.
pub(super) struct LookAhead {
    queue: Sender<u64>,
}

impl View {
    /// Starts loading groups ahead of their use (see the module doc), on as many workers as
    /// the store runs requests at once, at most `MAX_WORKERS`. Workers stop once the view
    /// is dropped.
    pub fn look_ahead(self: &Arc<Self>) {
        let (send, receive) = channel::<u64>();
        if self.ahead.set(LookAhead { queue: send }).is_err() {
            return;
        }
        let receive = Arc::new(Mutex::new(receive));
        for n in 0..self.store.parallelism().clamp(1, MAX_WORKERS) {
            let (view, receive) = (Arc::downgrade(self), receive.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("look-ahead-{n}"))
                .spawn(move || work(&view, &receive));
            if let Err(e) = spawned {
                log::warn!("groups are not loaded ahead: no thread ({e})");
            }
        }
    }

    /// Marks directory `ino` (`dir`, made) as used; at its first use, counts its group loaded
    /// and queues the groups a walk visits next.
    pub(super) fn used(&self, ino: u64, dir: &Dir) {
        let first = !dir.used.load(Ordering::Relaxed) && !dir.used.swap(true, Ordering::Relaxed);
        if dir.group.is_none() || !first {
            return;
        }
        self.groups_loaded.fetch_add(1, Ordering::Relaxed);
        let Some(ahead) = self.ahead.get() else {
            return;
        };
        let mut next: Vec<u64> = self.subgroups(ino).iter().take(WINDOW).copied().collect();
        let parent = self.known(ino).parent;
        if parent != ino {
            let siblings = self.subgroups(parent);
            let after = siblings.partition_point(|&s| s <= ino);
            next.extend(siblings[after..].iter().take(WINDOW));
        }
        for ino in next {
            if let Some(d) = self.known_dir(ino) {
                if d.listing.get().is_none() && !d.queued.swap(true, Ordering::Relaxed) {
                    let _ = ahead.queue.send(ino);
                }
            }
        }
    }

    /// The directories of groups in directory `ino`, by inode (which is name order), if made.
    fn subgroups(&self, ino: u64) -> &[u64] {
        let listing = self.known_dir(ino).and_then(|d| d.listing.get());
        listing.map_or(&[], |l| &l.subgroups)
    }
}

/// A worker: makes the queued directories until the view is gone.
fn work(view: &Weak<View>, queue: &Mutex<Receiver<u64>>) {
    loop {
        let Ok(ino) = queue.lock().recv() else {
            return;
        };
        let Some(view) = view.upgrade() else {
            return;
        };
        if let Some(d) = view.known_dir(ino) {
            // A failure is logged; the directory's next use tries again.
            if let Ok((_, true)) = d.listing_or(|| view.make_listing(ino, d)) {
                view.groups_ahead.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
