//! The tree of files, made group by group: a directory's entries are made the first time it is
//! listed or looked up, from its group's children as the [`Tree`] loads them, and kept (the
//! mount is a snapshot). Concurrent first uses of one directory make it once. A load the store
//! fails is not kept: that use fails with EIO and the next one loads the group again.

use super::array_file::{Sources, Unreadable};
use super::kinds::{
    ArrayPart, CdlFile, JsonFile, NcStreamFile, PreviewFile, StatsFile, TextFile, ZomFile,
};
use super::netcdf::{CDL_SIDECAR, NCSTREAM_SIDECAR};
use super::preview::{rendered_cache, Preview};
use super::vlen_file::{Part, Sizer};
use super::xattrs::group_xattrs;
use super::zom::{store_version, ZOM_FILE};
use super::zom_files::ZomFiles;
use super::{
    ArrayFile, Attrs, Content, Dir, Group, Inode, IoCause, Listing, View, ViewError, VlenFile,
    ROOT_INO,
};
use crate::cache::read_ahead::ReadPolicy;
use crate::cache::ChunkCache;
use crate::meta::{MetaError, Node, NodeKind, Tree};
use crate::store::{join_key, shown_key, Store};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

/// Longest file name most filesystems and tools accept, in bytes.
const NAME_MAX: usize = 255;

/// The file holding a group's metadata inside its directory.
pub const GROUP_SIDECAR: &str = ".group.json";

/// A file to add to the directory once its nodes are in place (a node's name wins).
struct Sidecar {
    name: String,
    content: Content,
    mtime: SystemTime,
    /// Extended attributes of the sidecar file (an `.npy` carries its array's).
    xattrs: Attrs,
}

/// The entries of one directory as they are made.
struct Entries<'v> {
    view: &'v View,
    dir: u64,
    /// The group's key (`""` for the root), for the log.
    path: &'v str,
    listing: Listing,
    /// The names linked so far.
    taken: HashSet<String>,
    sidecars: Vec<Sidecar>,
}

impl View {
    fn push(&self, parent: u64, content: Content, mtime: SystemTime, xattrs: Attrs) -> u64 {
        let index = self.inodes.push(Inode {
            parent,
            content,
            mtime,
            xattrs,
        });
        index as u64 + 1
    }

    /// Keeps `node` for the `.zom.json` files; returns its number there.
    fn keep(&self, node: &Node) -> u32 {
        let array = match &node.kind {
            NodeKind::Group => None,
            NodeKind::Array(meta) => Some(meta.as_ref().ok().cloned()),
        };
        self.zoms
            .keep(&node.path, node.document.clone(), array, &node.dimensions)
    }

    /// The entries of directory `ino` (`dir`), made now: its group's children, loaded from the
    /// store, then its sidecars. When the store fails to load the children, logs why and
    /// fails with EIO, having made no inode.
    pub(super) fn make_listing(&self, ino: u64, dir: &Dir) -> Result<Listing, ViewError> {
        let Some(group) = &dir.group else {
            return Ok(Listing::default());
        };
        let doc = self.zoms.document(group.zom);
        let children = self.tree.children(&group.path, doc).map_err(|e| {
            log::error!(
                "{}: children not loaded (next use tries again): {e}",
                shown_key(&group.path)
            );
            crate::stats::STATS.error(&format!("{:?}", IoCause::Store));
            ViewError::Io(IoCause::Store)
        })?;
        let mut e = Entries::new(self, ino, &group.path);
        e.group_sidecars(group);
        let mut kept = Vec::with_capacity(children.len());
        for node in &children {
            let zom = self.keep(node);
            kept.push(zom);
            let name = node.name();
            if name.len() > NAME_MAX {
                log::warn!(
                    "{}: left out: the name is longer than {NAME_MAX} bytes",
                    node.path
                );
                continue;
            }
            let mtime = self.mtime_of(node);
            match node.kind {
                NodeKind::Group => {
                    let child = Dir::of(Group {
                        path: node.path.as_str().into(),
                        zom,
                        mtime,
                    });
                    let child = self.push(ino, Content::Dir(child), mtime, Attrs::Node(zom));
                    if e.link(name, child) {
                        e.listing.subgroups.push(child);
                    }
                }
                NodeKind::Array(_) => e.add_array(name, node, zom, mtime),
            }
        }
        self.zoms.set_children(group.zom, kept);
        self.log_loaded(children.len());
        Ok(e.finish())
    }

    /// Counts `n` nodes loaded, logging the count at every ten thousand.
    fn log_loaded(&self, n: usize) {
        const EVERY: usize = 10_000;
        let before = self.loaded.fetch_add(n, Ordering::Relaxed);
        if (before + n) / EVERY > before / EVERY {
            log::info!("{} nodes loaded", before + n);
        }
    }

    fn mtime_of(&self, node: &Node) -> SystemTime {
        node.mtime.unwrap_or(self.store_mtime)
    }
}

impl<'v> Entries<'v> {
    fn new(view: &'v View, dir: u64, path: &'v str) -> Self {
        Entries {
            view,
            dir,
            path,
            listing: Listing::default(),
            taken: HashSet::new(),
            sidecars: Vec::new(),
        }
    }

    /// Adds `name` unless taken; returns false when it was taken.
    fn link(&mut self, name: &str, ino: u64) -> bool {
        if !self.taken.insert(name.to_string()) {
            return false;
        }
        self.listing.entries.push((name.into(), ino));
        true
    }

    fn sidecar(&mut self, name: impl Into<String>, content: Content, mtime: SystemTime) {
        self.sidecars.push(Sidecar {
            name: name.into(),
            content,
            mtime,
            xattrs: Attrs::None,
        });
    }

    /// Queues the group's `.group.json` and `.zom.json`.
    fn group_sidecars(&mut self, group: &Group) {
        let doc = Content::Json(JsonFile(group.zom));
        self.sidecar(GROUP_SIDECAR, doc, group.mtime);
        self.sidecar(ZOM_FILE, Content::Zom(ZomFile(group.zom)), group.mtime);
    }

    /// Adds an array's data file under `name` and queues its `.json` and `.npy` sidecars;
    /// `zom` is its number in [`super::zom_files::ZomFiles`].
    fn add_array(&mut self, name: &str, node: &Node, zom: u32, mtime: SystemTime) {
        let view = self.view;
        // One number space for both kinds: it keys the shared chunk cache.
        let id = view.next_array_id.fetch_add(1, Ordering::Relaxed);
        let (meta, recipe) = match &node.kind {
            NodeKind::Array(Ok(meta)) => (Some(meta), Ok((id, meta.clone()))),
            NodeKind::Array(Err(e)) => (
                None,
                Err(Unreadable {
                    cause: match e {
                        MetaError::Unsupported(_) => IoCause::Unsupported,
                        _ => IoCause::Metadata,
                    },
                    reason: e.to_string(),
                }),
            ),
            NodeKind::Group => unreachable!("add_array takes arrays"),
        };
        let source = recipe
            .clone()
            .and_then(|(id, meta)| view.sources.make(id, &node.path, &meta));
        if let Err(u) = &source {
            log::warn!(
                "{}: data cannot be read: {}",
                shown_key(&node.path),
                u.reason
            );
        }
        let (data, npy) = match source {
            Ok(source) if source.reader.meta().dtype.is_variable() => {
                let doc = node.document.clone();
                let file = Arc::new(VlenFile::new(&node.path, source, doc));
                let vlen = view.vlen.push(file) as u32;
                let part = |part| Content::Text(TextFile { vlen, part });
                (part(Part::Text), part(Part::Npy))
            }
            other => {
                // An extension float's bits scaled as integers would picture nothing.
                let preview = meta
                    .filter(|_| other.is_ok() && view.previews_shown)
                    .and_then(|m| Preview::of(0, &node.path, m))
                    .filter(|_| !crate::meta::document_served_as_bits(&node.document.parse()));
                // The source was made to say now whether the data can be read; it is made again
                // when the array is first opened, so that a listed array keeps only its recipe.
                let recipe = other.and(recipe);
                let doc = node.document.clone();
                let array = ArrayFile::new(&node.path, meta, recipe, view.sources.clone(), doc);
                let k = view.arrays.push(array) as u32;
                if let Some(mut preview) = preview {
                    preview.array = k;
                    let p = view.previews.push(preview) as u32;
                    let png = Content::Preview(PreviewFile(p));
                    self.sidecar(format!("{name}.png"), png, mtime);
                }
                let part = |npy| Content::Array(ArrayPart { array: k, npy });
                (part(false), part(true))
            }
        };
        let ino = view.push(self.dir, data, mtime, Attrs::Node(zom));
        self.link(name, ino);
        self.sidecar(format!("{name}.json"), Content::Json(JsonFile(zom)), mtime);
        self.sidecars.push(Sidecar {
            name: format!("{name}.npy"),
            content: npy,
            mtime,
            xattrs: Attrs::Node(zom),
        });
    }

    /// Links the queued sidecars (the netCDF files last, the statistics directory first in the
    /// root) and sorts the entries.
    fn finish(mut self) -> Listing {
        let view = self.view;
        let mtime = view.known(self.dir).mtime;
        self.sidecar(CDL_SIDECAR, Content::Cdl(CdlFile), mtime);
        self.sidecar(NCSTREAM_SIDECAR, Content::NcStream(NcStreamFile), mtime);
        if self.dir == ROOT_INO {
            self.add_stats_dir();
        }
        for car in std::mem::take(&mut self.sidecars) {
            if car.name.len() > NAME_MAX {
                log::warn!(
                    "{}: sidecar left out: its name is longer than {NAME_MAX} bytes",
                    join_key(self.path, &car.name)
                );
                continue;
            }
            if self.taken.contains(&car.name) {
                log::warn!(
                    "{}: a node has this name, so it is shown instead of the sidecar",
                    join_key(self.path, &car.name)
                );
                continue;
            }
            let ino = view.push(self.dir, car.content, car.mtime, car.xattrs);
            self.link(&car.name, ino);
        }
        self.listing.entries.sort();
        // Kept for the mount's life: no room past its entries.
        self.listing.entries.shrink_to_fit();
        self.listing.subgroups.shrink_to_fit();
        self.listing
    }

    /// Adds `.zarrfs/stats` to the root, unless a node has the name.
    fn add_stats_dir(&mut self) {
        let view = self.view;
        if self.taken.contains(super::ZARRFS_DIR) {
            log::warn!(
                "/{}: a node has this name, so statistics are not shown",
                super::ZARRFS_DIR
            );
            return;
        }
        let dir = Content::Dir(Box::default());
        let zarrfs = view.push(ROOT_INO, dir, view.store_mtime, Attrs::None);
        let stats = Content::Stats(StatsFile);
        let file = view.push(zarrfs, stats, view.store_mtime, Attrs::None);
        let mut listing = Listing::default();
        listing.entries.push((super::STATS_FILE.into(), file));
        if let Some(d) = view.known_dir(zarrfs) {
            let _ = d.listing.set(listing);
        }
        self.link(super::ZARRFS_DIR, zarrfs);
    }
}

impl View {
    /// The view of the tree `tree` of `store`, made group by group as it is used.
    /// `root_name` names the files of an array at the store root.
    pub fn build(
        tree: Tree<'static>,
        store: Arc<dyn Store>,
        cache: Arc<ChunkCache>,
        root_name: &str,
    ) -> View {
        let store_mtime = store.mtime();
        let sources = Arc::new(Sources {
            store: store.clone(),
            cache: cache.clone(),
        });
        let root = tree.root().clone();
        let root_doc = root.document.parse();
        let version = store_version(&root_doc);
        let is_group = matches!(root.kind, NodeKind::Group);
        let mut root_xattrs = match is_group {
            true => group_xattrs(&root_doc, version).to_vec(),
            false => Vec::new(),
        };
        // What the store says of the version it shows (an Icechunk snapshot), on the root.
        root_xattrs.extend(
            store
                .about()
                .into_iter()
                .map(|(name, value)| (format!("user.zarrfs.{name}"), value.into_bytes())),
        );
        let xattrs = match root_xattrs.is_empty() {
            true => Attrs::None,
            false => Attrs::Root,
        };
        let view = View {
            inodes: boxcar::Vec::new(),
            arrays: boxcar::Vec::new(),
            vlen: boxcar::Vec::new(),
            previews: boxcar::Vec::new(),
            previews_shown: true,
            rendered: rendered_cache(),
            zoms: ZomFiles::new(version),
            long_xattrs: Default::default(),
            netcdf: OnceLock::new(),
            tree,
            store,
            store_mtime,
            version,
            root_name: root_name.to_string(),
            next_array_id: AtomicU32::new(0),
            groups_loaded: Default::default(),
            groups_ahead: Default::default(),
            loaded: Default::default(),
            ahead: OnceLock::new(),
            requests: None,
            sources,
            sizer: Sizer::new(cache.clone()),
            cache,
            policy: ReadPolicy::local(0),
            prefetcher: None,
            handles: Default::default(),
            snapshots: Default::default(),
            next_handle: Default::default(),
            backing: None,
            slices: Default::default(),
            root_xattrs: Arc::from(root_xattrs),
        };
        let zom = view.keep(&root);
        let group = is_group.then(|| Group {
            path: "".into(),
            zom,
            mtime: view.mtime_of(&root),
        });
        let dir = group.map_or_else(Box::default, Dir::of);
        view.push(ROOT_INO, Content::Dir(dir), store_mtime, xattrs);
        if !is_group {
            // An array at the root: its files, named `root_name`, and the netCDF files that
            // show it as the root group's one variable.
            let mut e = Entries::new(&view, ROOT_INO, "");
            e.add_array(root_name, &root, zom, view.mtime_of(&root));
            view.log_loaded(1);
            let listing = e.finish();
            if let Some(d) = view.known_dir(ROOT_INO) {
                let _ = d.listing.set(listing);
            }
        }
        view
    }
}

#[cfg(test)]
mod tests {
    use crate::meta::LoadOptions;
    use crate::store::{DirStore, Layer, Request, Store, StoreError};
    use parking_lot::Mutex;
    use std::sync::Arc;

    /// A fixture directory whose requests are recorded.
    struct Recorded {
        inner: DirStore,
        asked: Mutex<Vec<String>>,
    }

    impl Layer for Recorded {
        type Step = ();

        fn inner(&self) -> Result<&dyn Store, StoreError> {
            Ok(&self.inner)
        }

        fn before(&self, request: &Request<'_>) -> Result<(), StoreError> {
            self.asked.lock().push(format!("{request:?}"));
            Ok(())
        }
    }

    #[test]
    fn a_mount_reads_the_root_metadata_once() {
        let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
        // Each fixture with a child of its root.
        for (fixture, child) in [
            ("v2_zarr2.zarr", "zstd"),
            ("v3_attrs.zarr", "unicode_attr"),
            ("dialects/consolidated_v3_zarr3.zarr", "g1"),
            ("dialects/consolidated_v2_zarr2.zarr", "g1"),
        ] {
            let dir = format!("{fixtures}/{fixture}");
            let store = Arc::new(Recorded {
                inner: DirStore::new(std::path::Path::new(&dir)).unwrap(),
                asked: Mutex::default(),
            });
            let view =
                crate::view::from_store(store.clone(), &dir, 1 << 20, &LoadOptions::default())
                    .unwrap();
            let listed = view.readdir(crate::view::ROOT_INO, 0).unwrap();
            assert!(listed.iter().any(|e| e.name == child), "{fixture}");
            let asked = store.asked.lock().clone();
            for key in ["zarr.json", ".zgroup", ".zattrs", ".zmetadata"] {
                let times = asked
                    .iter()
                    .filter(|r| **r == format!("Get({key:?})"))
                    .count();
                assert!(times <= 1, "{fixture}: {key} read {times} times: {asked:?}");
            }
            assert!(
                asked.contains(&"Get(\"zarr.json\")".to_string()),
                "{fixture}"
            );
        }
    }
}
