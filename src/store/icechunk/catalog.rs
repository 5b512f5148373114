//! The keys of one Icechunk snapshot: each node's `zarr.json` (kept in the snapshot), and each
//! chunk through the manifests the array's node names: inline bytes, a native chunk (a range of
//! an object under `chunks/`) or a virtual chunk (a range of a file by URL, with the ETag or
//! modification time it had when it was referenced).

use super::containers::Containers;
use super::files;
use crate::store::references::{list_references, Catalog, Recorded, Reference};
use crate::store::{accept_key, join_key, Entry, FlightLru, Store, StoreError};
use icechunk_format::format_constants::FileTypeBin;
use icechunk_format::manifest::{Checksum, ChunkPayload, Manifest, ManifestRef};
use icechunk_format::snapshot::{NodeData, Snapshot};
use icechunk_format::{ChunkIndices, IcechunkFormatErrorKind, NodeId};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Bytes of parsed manifests kept: the largest manifest read ([`files::MAX_FILE`]), so that
/// any manifest can stay while its chunks are read.
const MANIFEST_BYTES_KEPT: u64 = files::MAX_FILE;

/// One array of the snapshot.
struct ArrayNode {
    id: NodeId,
    manifests: Vec<ManifestRef>,
    /// Chunk keys: `c/0/1` (`true`, separator `/`) or v2's `0.1` (`false`, `.`).
    prefixed: bool,
    separator: char,
}

/// The keys of one snapshot of a repository.
pub struct SnapshotCatalog {
    repo: Arc<dyn Store>,
    /// `zarr.json` of every node.
    metadata: BTreeMap<String, Reference>,
    /// Arrays by path (`""` for an array at the root).
    arrays: HashMap<String, ArrayNode>,
    /// Parsed manifests, counted by their bytes, and manifests found malformed or too large
    /// (kept too: a bad manifest is not read again for every chunk it holds).
    manifests: FlightLru<String, Result<Arc<Manifest>, StoreError>, StoreError>,
    /// Where relative (`vcc://`) virtual chunks are.
    containers: Containers,
}

impl SnapshotCatalog {
    /// The nodes of `snapshot`, whose chunks are in `repo` or, for relative virtual chunks, in
    /// `containers`.
    pub fn new(
        repo: Arc<dyn Store>,
        snapshot: &Snapshot,
        containers: Containers,
    ) -> Result<Self, StoreError> {
        let what = repo.describe();
        let mut metadata = BTreeMap::new();
        let mut arrays = HashMap::new();
        for node in snapshot.iter() {
            let node = node.map_err(|e| files::corrupt(repo.as_ref(), "snapshot", e))?;
            let path = node.path.to_string().trim_matches('/').to_string();
            let key = join_key(&path, "zarr.json");
            if !accept_key(&what, &key) {
                continue;
            }
            if let NodeData::Array { manifests, .. } = &node.node_data {
                let (prefixed, separator) = chunk_key_encoding(&node.user_data);
                arrays.insert(
                    path,
                    ArrayNode {
                        id: node.id.clone(),
                        manifests: manifests.clone(),
                        prefixed,
                        separator,
                    },
                );
            }
            metadata.insert(key, Reference::Inline(Arc::from(&node.user_data[..])));
        }
        Ok(SnapshotCatalog {
            repo,
            metadata,
            arrays,
            manifests: FlightLru::new(MANIFEST_BYTES_KEPT, |m| match m {
                Ok(m) => m.bytes().len() as u64,
                Err(e) => e.to_string().len() as u64,
            }),
            containers,
        })
    }

    /// The array a chunk key belongs to and the chunk's coordinates.
    fn chunk(&self, key: &str) -> Option<(&ArrayNode, ChunkIndices)> {
        let split = std::iter::once(0)
            .chain(key.match_indices('/').map(|(i, _)| i))
            .collect::<Vec<_>>();
        split.into_iter().rev().find_map(|at| {
            let (path, rest) = if at == 0 {
                ("", key)
            } else {
                (&key[..at], &key[at + 1..])
            };
            let array = self.arrays.get(path)?;
            Some((array, coordinates(array, rest)?))
        })
    }

    /// Manifest `id`, parsed; read once however many lookups want it at the same time. One
    /// that was read but is malformed or too large stays an error without being read again; a
    /// missing one, or a failure of the store, is asked for again by the next lookup.
    fn manifest(&self, id: &str) -> Result<Arc<Manifest>, StoreError> {
        let key = format!("manifests/{id}");
        let repo = self.repo.as_ref();
        self.manifests.get_or_load(
            id.to_string(),
            || files::corrupt(repo, &key, "its reader panicked"),
            || {
                let (version, buffer) = match files::read(repo, &key, FileTypeBin::Manifest) {
                    Ok(Some(read)) => read,
                    Ok(None) => return Err(files::corrupt(repo, &key, "missing")),
                    Err(e @ (StoreError::Invalid(_) | StoreError::TooLarge { .. })) => {
                        return Ok(Err(e))
                    }
                    Err(e) => return Err(e),
                };
                Ok(
                    icechunk_format::serializers::deserialize_manifest(version, buffer)
                        .map(Arc::new)
                        .map_err(|e| files::corrupt(repo, &key, e)),
                )
            },
        )?
    }
}

/// The chunk key encoding of an array's `zarr.json`.
fn chunk_key_encoding(zarr_json: &[u8]) -> (bool, char) {
    let doc: serde_json::Value = serde_json::from_slice(zarr_json).unwrap_or_default();
    let encoding = &doc["chunk_key_encoding"];
    let v2 = encoding["name"] == "v2";
    let default = if v2 { '.' } else { '/' };
    let separator = encoding["configuration"]["separator"]
        .as_str()
        .and_then(|s| s.chars().next())
        .unwrap_or(default);
    (!v2, separator)
}

/// The coordinates a chunk key (below its array) names, if it is one.
fn coordinates(array: &ArrayNode, rest: &str) -> Option<ChunkIndices> {
    let indices = if array.prefixed {
        match rest.strip_prefix('c') {
            Some("") => "",
            Some(r) => r.strip_prefix(array.separator)?,
            None => return None,
        }
    } else {
        rest
    };
    let coords: Option<Vec<u32>> = if indices.is_empty() || (!array.prefixed && indices == "0") {
        Some(Vec::new())
    } else {
        indices
            .split(array.separator)
            .map(|i| i.parse().ok())
            .collect()
    };
    Some(ChunkIndices(coords?))
}

impl Catalog for SnapshotCatalog {
    fn lookup(&self, key: &str) -> Result<Option<Reference>, StoreError> {
        if let Some(r) = self.metadata.get(key) {
            return Ok(Some(r.clone()));
        }
        let Some((array, coords)) = self.chunk(key) else {
            return Ok(None);
        };
        let Some(manifest_ref) = array
            .manifests
            .iter()
            .find(|m| m.extents.contains(&coords.0))
        else {
            return Ok(None);
        };
        let id = manifest_ref.object_id.to_string();
        let manifest = self.manifest(&id)?;
        let corrupt =
            |why: String| files::corrupt(self.repo.as_ref(), &format!("manifests/{id}"), why);
        let payload = match manifest.get_chunk_payload(&array.id, &coords) {
            Ok(p) => p,
            Err(e)
                if matches!(
                    e.kind(),
                    IcechunkFormatErrorKind::ChunkCoordinatesNotFound { .. }
                ) =>
            {
                return Ok(None)
            }
            Err(e) => return Err(corrupt(e.to_string())),
        };
        Ok(Some(match payload {
            ChunkPayload::Inline(bytes) => Reference::Inline(Arc::from(&bytes[..])),
            ChunkPayload::Ref(chunk) => Reference::Stored {
                key: format!("chunks/{}", chunk.id),
                offset: chunk.offset,
                length: chunk.length,
            },
            ChunkPayload::Virtual(v) => Reference::Target {
                url: Arc::from(self.containers.url(&v.location)?),
                range: Some((v.offset, v.length)),
                recorded: v.checksum.map(|c| match c {
                    Checksum::LastModified(s) => Recorded::ModifiedBy(u64::from(s.0)),
                    Checksum::ETag(tag) => Recorded::ETag(tag.0),
                }),
            },
            // ChunkPayload is non-exhaustive: a kind of chunk a later format adds.
            _ => return Err(corrupt("unknown chunk payload".into())),
        }))
    }

    fn list_dir(&self, prefix: &str) -> Result<Vec<Entry>, StoreError> {
        Ok(list_references(
            &self.repo.describe(),
            &self.metadata,
            prefix,
        ))
    }
}
