//! Icechunk repositories (format spec v1 and v2) as stores: one snapshot, chosen by branch, tag
//! or id, whose nodes and chunks are read with the `icechunk-format` crate from files fetched
//! through the store layer.

mod catalog;
mod containers;
mod files;
mod version;

pub use version::is_repository;

use super::references::ReferenceStore;
use super::{RemoteOptions, Store, StoreError};
use icechunk_format::format_constants::FileTypeBin;
use std::sync::Arc;

/// The snapshot `remote.version` names (default: the tip of `main`) of the repository `repo`,
/// found at `location`.
pub fn open(
    repo: Arc<dyn Store>,
    location: &str,
    remote: &RemoteOptions,
) -> Result<ReferenceStore, StoreError> {
    let name = remote.version.as_deref().unwrap_or(version::DEFAULT_BRANCH);
    let id = version::resolve(repo.as_ref(), name)?;
    let key = format!("snapshots/{id}");
    let (spec, buffer) = files::read(repo.as_ref(), &key, FileTypeBin::Snapshot)?
        .ok_or_else(|| files::corrupt(repo.as_ref(), &key, "missing"))?;
    let snapshot = icechunk_format::serializers::deserialize_snapshot(spec, buffer)
        .map_err(|e| files::corrupt(repo.as_ref(), &key, e))?;
    let flushed = snapshot
        .flushed_at()
        .map(|t| t.to_rfc3339())
        .unwrap_or_default();
    let about = [
        ("icechunk.ref", name.to_string()),
        ("icechunk.snapshot", id.to_string()),
        ("icechunk.message", snapshot.message()),
        ("icechunk.time", flushed),
        ("icechunk.spec_version", (spec as u8).to_string()),
    ]
    .map(|(fact, value)| (fact.to_string(), value));
    log::info!(
        "{location}: Icechunk snapshot {id} ({name}): {:?}",
        snapshot.message()
    );
    let catalog = catalog::SnapshotCatalog::new(
        repo.clone(),
        &snapshot,
        containers::Containers::load(repo.as_ref())?,
    )?;
    // A snapshot never changes: its id names every byte it shows.
    Ok(
        ReferenceStore::new(Box::new(catalog), repo, location, remote)?
            .with_about(about.into())
            .with_version(format!("icechunk snapshot {id}")),
    )
}
