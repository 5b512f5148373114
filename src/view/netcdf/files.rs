//! The `.header.cdl` and `.ncstream` files of every group, made together at the first use of
//! one: netCDF's model of a group depends on the whole tree (a pure Zarr store's anonymous
//! dimensions live in the root group), so the whole tree is loaded first.

use super::model::NcType;
use super::ncstream::{NcStreamLayout, Source, Strings};
use crate::meta::{ArrayMeta, DataType, NodeKind};
use crate::view::vlen_file::Part;
use crate::view::{ArrayPart, Content, TextFile, View, ROOT_INO};
use std::collections::HashMap;
use std::sync::Arc;

/// The netCDF files of every group directory, by the directory's inode.
#[derive(Default)]
pub struct NetcdfFiles {
    cdl: HashMap<u64, Arc<[u8]>>,
    streams: HashMap<u64, NcStreamLayout>,
}

impl NetcdfFiles {
    /// The netCDF files of every group of `view`, whose tree is loaded.
    pub(in crate::view) fn new(view: &View) -> NetcdfFiles {
        let hierarchy = view.zoms.hierarchy();
        let mut out = NetcdfFiles::default();
        let root_name = view.root_name.as_str();
        let Some(dataset) = super::model::dataset(&hierarchy, root_name) else {
            return out;
        };
        let dirs = group_dirs(view);
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
            let file = view.dir(dir).ok().and_then(|d| d.get(name));
            let (Some(ino), Some(meta)) = (file, metas.get(var.path.as_str())) else {
                continue;
            };
            // An array whose element count overflows cannot be read: left out of the stream.
            let Some(count) = meta.element_count() else {
                continue;
            };
            let source = match view.known(ino).content {
                Content::Array(ArrayPart {
                    array: k,
                    npy: false,
                }) if view.arrays[k as usize].check_readable().is_ok() => {
                    match (var.ty, &meta.dtype) {
                        (NcType::String, DataType::Bytes(_) | DataType::Unicode(_)) => {
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
                            bytes: view.arrays[k as usize].data_size(),
                        },
                    }
                }
                Content::Text(TextFile {
                    vlen: k,
                    part: Part::Text,
                }) => Source::Strings {
                    strings: Strings::Vlen(k),
                    count,
                },
                // An array that cannot be read is declared in the stream, its values left out.
                _ => continue,
            };
            sources.insert(var.path.clone(), source);
        }
        for (path, dir) in dirs {
            let Some(group) = dataset.find(&path) else {
                continue;
            };
            let name = if path.is_empty() {
                root_name
            } else {
                &group.name
            };
            let cdl = super::cdl::header(group, name);
            out.cdl.insert(dir, Arc::from(cdl.into_bytes()));
            out.streams
                .insert(dir, NcStreamLayout::new(group, &sources));
        }
        out
    }

    /// The `.header.cdl` of the group shown by directory `dir`.
    pub(in crate::view) fn cdl(&self, dir: u64) -> Arc<[u8]> {
        self.cdl.get(&dir).cloned().unwrap_or_default()
    }

    /// The `.ncstream` of the group shown by directory `dir`.
    pub(in crate::view) fn stream(&self, dir: u64) -> Option<&NcStreamLayout> {
        self.streams.get(&dir)
    }
}

/// Every group directory of `view` (whose tree is loaded), by the group's path; the root
/// directory also for a store whose root is an array.
fn group_dirs(view: &View) -> HashMap<String, u64> {
    let mut dirs = HashMap::from([(String::new(), ROOT_INO)]);
    let mut level = vec![ROOT_INO];
    while let Some(ino) = level.pop() {
        let Ok(listing) = view.dir(ino) else {
            continue;
        };
        for &(_, child) in &listing.entries {
            if let Some(d) = view.known_dir(child) {
                if let Some(group) = &d.group {
                    dirs.insert(group.path.to_string(), child);
                    level.push(child);
                }
            }
        }
    }
    dirs
}
