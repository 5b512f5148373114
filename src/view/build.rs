//! Building the tree of files from a loaded hierarchy.

use super::array_file::Unreadable;
use super::chunk_source::ChunkSource;
use super::netcdf::model::NcType;
use super::netcdf::ncstream::{NcStreamFile, Source, Strings};
use super::preview::{rendered_cache, Preview};
use super::vlen_file::Sizer;
use super::xattrs::{array_xattrs, group_xattrs, Xattrs};
use super::zom::{store_version, ZOM_FILE};
use super::zom_files::ZomFiles;
use super::{ArrayFile, Content, Dir, Inode, IoCause, Layout, View, VlenFile, ROOT_INO};
use crate::cache::read_ahead::ReadPolicy;
use crate::cache::ChunkCache;
use crate::fetch::ChunkReader;
use crate::meta::{ArrayMeta, DataType, Hierarchy, MetaError, Node, NodeKind};
use crate::store::Store;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

/// Longest file name most filesystems and tools accept, in bytes.
const NAME_MAX: usize = 255;

/// The file holding a group's metadata inside its directory.
pub const GROUP_SIDECAR: &str = ".group.json";

/// A file to add to a directory once every real node is in place.
struct Sidecar {
    dir: u64,
    name: String,
    content: Content,
    mtime: SystemTime,
    /// Extended attributes of the sidecar file (an `.npy` carries its array's).
    xattrs: Option<Xattrs>,
}

struct Builder {
    inodes: Vec<Inode>,
    arrays: Vec<ArrayFile>,
    vlen: Vec<Arc<VlenFile>>,
    ncstreams: Vec<NcStreamFile>,
    sidecars: Vec<Sidecar>,
    previews: Vec<Preview>,
    xattrs: HashMap<u64, Xattrs>,
    /// The `.zom.json` files, rendered on first use.
    zoms: ZomFiles,
    /// The Zarr version of the store (2 or 3), for `user.zarr.format`.
    version: u8,
    store: Arc<dyn Store>,
    cache: Arc<ChunkCache>,
}

/// Pretty-printed JSON with a trailing newline.
fn json_bytes(doc: &serde_json::Map<String, serde_json::Value>) -> Arc<[u8]> {
    let mut text = serde_json::to_vec_pretty(doc).unwrap_or_default();
    text.push(b'\n');
    Arc::from(text)
}

impl Builder {
    fn push(&mut self, parent: u64, content: Content, mtime: SystemTime) -> u64 {
        self.inodes.push(Inode {
            parent,
            content,
            mtime,
        });
        self.inodes.len() as u64
    }

    fn dir_mut(&mut self, ino: u64) -> &mut Dir {
        match &mut self.inodes[(ino - 1) as usize].content {
            Content::Dir(d) => d,
            _ => unreachable!("entries are only added to directories"),
        }
    }

    /// Adds `name` to `dir` unless taken; returns false when it was taken.
    fn link(&mut self, dir: u64, name: &str, ino: u64) -> bool {
        let d = self.dir_mut(dir);
        if d.by_name.contains_key(name) {
            return false;
        }
        d.by_name.insert(name.to_string(), ino);
        d.entries.push((name.to_string(), ino));
        true
    }

    /// Queues the `.group.json` of the group `node` shown as directory `dir`.
    /// Also queues its `.zom.json` and sets the directory's extended attributes.
    fn add_group_sidecar(
        &mut self,
        dir: u64,
        node: &Node,
        kept: u32,
        doc: Arc<[u8]>,
        mtime: SystemTime,
    ) {
        self.sidecars.push(Sidecar {
            dir,
            name: GROUP_SIDECAR.into(),
            content: Content::Json(doc),
            mtime,
            xattrs: None,
        });
        self.sidecars.push(Sidecar {
            dir,
            name: ZOM_FILE.into(),
            content: Content::Zom(self.zoms.add_file(kept)),
            mtime,
            xattrs: None,
        });
        self.xattrs.insert(dir, group_xattrs(node, self.version));
    }

    /// The chunks of array number `id` at `path`, or why they cannot be read: the codec chain
    /// is unsupported or unusable, the geometry overflows, or one chunk (with its shard index)
    /// is larger than the whole cache, which would decode it again on every read.
    fn source(
        &self,
        id: u32,
        path: &str,
        meta: &Arc<ArrayMeta>,
    ) -> Result<ChunkSource, Unreadable> {
        let reader =
            ChunkReader::new(self.store.clone(), path, meta.clone()).map_err(|e| Unreadable {
                cause: e.cause.into(),
                reason: e.message,
            })?;
        let reader = reader.limit_decoded(self.cache.budget());
        let layout =
            Layout::new(&meta.shape, reader.read_chunk_shape()).map_err(|reason| Unreadable {
                cause: IoCause::BadConfig,
                reason,
            })?;
        let need = reader.cached_bytes_per_chunk();
        if !self.cache.fits(need) {
            return Err(Unreadable {
                cause: IoCause::TooLargeForCache,
                reason: format!(
                    "one chunk takes {need} bytes in the cache, more than its whole budget of {} \
                     bytes; mount with a larger --cache-size",
                    self.cache.budget()
                ),
            });
        }
        Ok(ChunkSource {
            id,
            reader: Arc::new(reader),
            layout: Arc::new(layout),
        })
    }

    /// Adds an array's data file under `name` and queues its `.json` and `.npy` sidecars.
    fn add_array(&mut self, dir: u64, name: &str, node: &Node, doc: Arc<[u8]>, mtime: SystemTime) {
        // One number space for both kinds: it keys the shared chunk cache.
        let id = (self.arrays.len() + self.vlen.len()) as u32;
        let (meta, source) = match &node.kind {
            NodeKind::Array(Ok(meta)) => (Some(meta), self.source(id, &node.path, meta)),
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
        if let Err(u) = &source {
            let shown = if node.path.is_empty() {
                "/"
            } else {
                &node.path
            };
            log::warn!("{shown}: data cannot be read: {}", u.reason);
        }
        let xattrs = array_xattrs(node, meta.map(|m| m.as_ref()), self.version);
        let (data, npy) = match source {
            Ok(source) if source.reader.meta().dtype.is_variable() => {
                let k = self.vlen.len() as u32;
                self.vlen
                    .push(Arc::new(VlenFile::new(&node.path, source, doc.clone())));
                (Content::Text(k), Content::TextNpy(k))
            }
            other => {
                let k = self.arrays.len() as u32;
                let meta = meta.map(|m| m.as_ref());
                let preview = meta
                    .filter(|_| other.is_ok())
                    .and_then(|m| Preview::of(k, &node.path, m));
                if let Some(preview) = preview {
                    self.sidecars.push(Sidecar {
                        dir,
                        name: format!("{name}.png"),
                        content: Content::Preview(self.previews.len() as u32),
                        mtime,
                        xattrs: None,
                    });
                    self.previews.push(preview);
                }
                self.arrays
                    .push(ArrayFile::new(&node.path, meta, other, doc.clone()));
                (Content::Data(k), Content::Npy(k))
            }
        };
        let ino = self.push(dir, data, mtime);
        self.link(dir, name, ino);
        self.xattrs.insert(ino, xattrs.clone());
        self.sidecars.push(Sidecar {
            dir,
            name: format!("{name}.json"),
            content: Content::Json(doc),
            mtime,
            xattrs: None,
        });
        self.sidecars.push(Sidecar {
            dir,
            name: format!("{name}.npy"),
            content: npy,
            mtime,
            xattrs: Some(xattrs),
        });
    }
}

impl Builder {
    /// Queues the netCDF files of every group directory in `dirs` (see [`super::netcdf`]).
    fn add_netcdf_sidecars(
        &mut self,
        hierarchy: &Hierarchy,
        dirs: &HashMap<&str, u64>,
        root_name: &str,
    ) {
        let Some(dataset) = super::netcdf::model::dataset(hierarchy, root_name) else {
            return;
        };
        let metas: HashMap<&str, &ArrayMeta> = hierarchy
            .nodes
            .iter()
            .filter_map(|n| match &n.kind {
                NodeKind::Array(Ok(meta)) => Some((n.path.as_str(), meta.as_ref())),
                _ => None,
            })
            .collect();
        let mut sources = HashMap::new();
        for var in dataset.all_vars() {
            let (parent, name) = match var.path.rsplit_once('/') {
                Some(split) => split,
                // The array at the store root, shown as `root_name`.
                None if var.path.is_empty() => ("", root_name),
                None => ("", var.path.as_str()),
            };
            let Some(&dir) = dirs.get(parent) else {
                continue;
            };
            let file = match &self.inodes[(dir - 1) as usize].content {
                Content::Dir(d) => d.by_name.get(name).copied(),
                _ => None,
            };
            let (Some(ino), Some(meta)) = (file, metas.get(var.path.as_str())) else {
                continue;
            };
            // An array whose element count overflows cannot be read: left out of the stream.
            let Some(count) = meta.element_count() else {
                continue;
            };
            let source = match self.inodes[(ino - 1) as usize].content {
                // An array that cannot be read is declared in the stream, its values left out.
                Content::Data(k) if self.arrays[k as usize].check_readable().is_err() => continue,
                Content::Data(k) => match (var.ty, &meta.dtype) {
                    (Some(NcType::String), DataType::Bytes(_) | DataType::Unicode(_)) => {
                        Source::Strings {
                            strings: Strings::Fixed {
                                array: k,
                                width: meta.dtype.size(),
                                utf32: matches!(meta.dtype, DataType::Unicode(_)),
                            },
                            count,
                        }
                    }
                    _ => Source::Values {
                        array: k,
                        bytes: self.arrays[k as usize].data_size(),
                    },
                },
                Content::Text(k) => Source::Strings {
                    strings: Strings::Vlen(k),
                    count,
                },
                _ => continue,
            };
            sources.insert(var.path.clone(), source);
        }
        for (&path, &dir) in dirs {
            let Some(group) = dataset.find(path) else {
                continue;
            };
            let name = if path.is_empty() {
                root_name
            } else {
                &group.name
            };
            let cdl = super::netcdf::cdl::header(group, name);
            let mtime = self.inodes[(dir - 1) as usize].mtime;
            self.sidecars.push(Sidecar {
                dir,
                name: super::netcdf::CDL_SIDECAR.into(),
                content: Content::Cdl(Arc::from(cdl.into_bytes())),
                mtime,
                xattrs: None,
            });
            self.sidecars.push(Sidecar {
                dir,
                name: super::netcdf::NCSTREAM_SIDECAR.into(),
                content: Content::NcStream(self.ncstreams.len() as u32),
                mtime,
                xattrs: None,
            });
            self.ncstreams.push(NcStreamFile::new(group, &sources));
        }
    }
}

impl View {
    /// Builds the view of `hierarchy`. `root_name` names the files of an array at the store root.
    pub fn build(
        hierarchy: &Hierarchy,
        store: Arc<dyn Store>,
        cache: Arc<ChunkCache>,
        root_name: &str,
    ) -> View {
        let store_mtime = store.mtime();
        let mut b = Builder {
            inodes: Vec::new(),
            arrays: Vec::new(),
            vlen: Vec::new(),
            ncstreams: Vec::new(),
            sidecars: Vec::new(),
            previews: Vec::new(),
            xattrs: HashMap::new(),
            zoms: ZomFiles::new(store_version(hierarchy)),
            version: store_version(hierarchy),
            store,
            cache: cache.clone(),
        };
        let mut dirs: HashMap<&str, u64> = HashMap::new();
        let mtime_of = |n: &Node| n.mtime.unwrap_or(store_mtime);

        let root = b.push(ROOT_INO, Content::Dir(Dir::default()), store_mtime);
        for node in &hierarchy.nodes {
            // One copy of the document for every file that shows it.
            let doc = json_bytes(&node.document);
            let array = match &node.kind {
                NodeKind::Group => None,
                NodeKind::Array(meta) => Some(meta.as_ref().ok().cloned()),
            };
            let kept = b.zoms.keep(&node.path, &node.document, doc.clone(), array);
            if node.path.is_empty() {
                match node.kind {
                    NodeKind::Group => {
                        dirs.insert("", root);
                        b.add_group_sidecar(root, node, kept, doc, mtime_of(node));
                    }
                    NodeKind::Array(_) => {
                        // Its netCDF view shows it as the root group's one variable.
                        dirs.insert("", root);
                        b.add_array(root, root_name, node, doc, mtime_of(node));
                    }
                }
                continue;
            }
            let (parent_path, name) = node.path.rsplit_once('/').unwrap_or(("", &node.path));
            let Some(&parent) = dirs.get(parent_path) else {
                continue; // Its parent was left out.
            };
            if name.len() > NAME_MAX {
                log::warn!(
                    "{}: left out: the name is longer than {NAME_MAX} bytes",
                    node.path
                );
                continue;
            }
            match node.kind {
                NodeKind::Group => {
                    let ino = b.push(parent, Content::Dir(Dir::default()), mtime_of(node));
                    b.link(parent, name, ino);
                    dirs.insert(&node.path, ino);
                    b.add_group_sidecar(ino, node, kept, doc, mtime_of(node));
                }
                NodeKind::Array(_) => b.add_array(parent, name, node, doc, mtime_of(node)),
            }
        }
        // What the store says of the version it shows (an Icechunk snapshot), on the root.
        let about = b.store.about();
        if !about.is_empty() {
            let mut list = b.xattrs.get(&root).map(|x| x.to_vec()).unwrap_or_default();
            list.extend(
                about
                    .into_iter()
                    .map(|(name, value)| (format!("user.zarrfs.{name}"), value.into_bytes())),
            );
            b.xattrs.insert(root, Arc::from(list));
        }
        b.add_netcdf_sidecars(hierarchy, &dirs, root_name);
        let (dir, stats) = super::stats_file::contents();
        let zarrfs = b.push(root, dir, store_mtime);
        if b.link(root, super::ZARRFS_DIR, zarrfs) {
            let file = b.push(zarrfs, stats, store_mtime);
            b.link(zarrfs, super::STATS_FILE, file);
        } else {
            log::warn!(
                "/{}: a node has this name, so statistics are not shown",
                super::ZARRFS_DIR
            );
            b.inodes.pop();
        }
        for car in std::mem::take(&mut b.sidecars) {
            if car.name.len() > NAME_MAX {
                log::warn!(
                    "{}: sidecar left out: its name is longer than {NAME_MAX} bytes",
                    car.name
                );
                continue;
            }
            let ino = b.push(car.dir, car.content, car.mtime);
            if !b.link(car.dir, &car.name, ino) {
                log::warn!(
                    "{}: a node has this name, so it is shown instead of the sidecar",
                    car.name
                );
                b.inodes.pop();
            } else if let Some(x) = car.xattrs {
                b.xattrs.insert(ino, x);
            }
        }
        for ino in 1..=b.inodes.len() as u64 {
            if let Content::Dir(d) = &mut b.inodes[(ino - 1) as usize].content {
                d.entries.sort();
            }
        }
        View {
            inodes: b.inodes,
            arrays: b.arrays,
            vlen: b.vlen,
            ncstreams: b.ncstreams,
            previews: b.previews,
            rendered: rendered_cache(),
            xattrs: b.xattrs,
            zoms: b.zoms,
            sizer: Sizer::new(cache.clone()),
            cache,
            policy: ReadPolicy::local(0),
            prefetcher: None,
            handles: Default::default(),
            snapshots: Default::default(),
            next_handle: Default::default(),
            backing: None,
            slices: Default::default(),
        }
    }
}
