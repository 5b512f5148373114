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
    let (id, repo_spec) = version::resolve(repo.as_ref(), name)?;
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
        ("icechunk.spec_version", repo_spec.to_string()),
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
        ReferenceStore::new(Box::new(catalog), repo, None, location, remote)?
            .with_about(about.into())
            .with_version(format!("icechunk snapshot {id}")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{DirStore, Layer, Request};
    use std::sync::atomic::{AtomicU32, Ordering};

    /// The fixture repository, its manifest reads counted and slowed down.
    struct SlowManifests {
        inner: DirStore,
        reads: AtomicU32,
    }

    impl Layer for SlowManifests {
        type Step = ();

        fn inner(&self) -> Result<&dyn Store, StoreError> {
            Ok(&self.inner)
        }

        fn before(&self, request: &Request<'_>) -> Result<(), StoreError> {
            if request.key().starts_with("manifests/") {
                self.reads.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            Ok(())
        }
    }

    #[test]
    fn lookups_at_once_read_a_manifest_once() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/icechunk/repo_v2"
        );
        let repo = Arc::new(SlowManifests {
            inner: DirStore::new(std::path::Path::new(dir)).unwrap(),
            reads: AtomicU32::new(0),
        });
        let store = open(repo.clone(), dir, &RemoteOptions::default()).unwrap();
        let before = repo.reads.load(Ordering::SeqCst);
        std::thread::scope(|s| {
            let lookups: Vec<_> = (0..8)
                .map(|_| s.spawn(|| store.get("temp/c/0/0")))
                .collect();
            for lookup in lookups {
                assert!(lookup.join().unwrap().unwrap().is_some());
            }
        });
        assert_eq!(repo.reads.load(Ordering::SeqCst) - before, 1);
    }

    /// A repository whose listings are recorded, by prefix.
    struct ListingsSeen {
        inner: DirStore,
        listed: parking_lot::Mutex<Vec<String>>,
    }

    impl Layer for ListingsSeen {
        type Step = ();

        fn inner(&self) -> Result<&dyn Store, StoreError> {
            Ok(&self.inner)
        }

        fn before(&self, request: &Request<'_>) -> Result<(), StoreError> {
            if let Request::List(prefix) = request {
                self.listed.lock().push(prefix.to_string());
            }
            Ok(())
        }
    }

    #[test]
    fn a_ref_that_does_not_exist_lists_the_refs_once_to_name_them() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/icechunk/repo_v1"
        );
        let repo = Arc::new(ListingsSeen {
            inner: DirStore::new(std::path::Path::new(dir)).unwrap(),
            listed: Default::default(),
        });
        let remote = RemoteOptions {
            version: Some("nope".into()),
            ..RemoteOptions::default()
        };
        let err = open(repo.clone(), dir, &remote).err().unwrap().to_string();
        assert!(err.contains("(branches: dev, main; tags: v1)"), "{err}");
        let listed = repo.listed.lock().clone();
        assert_eq!(
            listed.iter().filter(|p| *p == "refs").count(),
            1,
            "{listed:?}"
        );
    }

    #[test]
    fn small_manifests_stay_however_many_there_are() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/icechunk/repo_many"
        );
        let repo = Arc::new(SlowManifests {
            inner: DirStore::new(std::path::Path::new(dir)).unwrap(),
            reads: AtomicU32::new(0),
        });
        let store = open(repo.clone(), dir, &RemoteOptions::default()).unwrap();
        let before = repo.reads.load(Ordering::SeqCst);
        // Twenty arrays, a manifest each, read in turn twice: each manifest is read once.
        for _ in 0..2 {
            for i in 0..20 {
                assert!(store.get(&format!("a{i:02}/c/1")).unwrap().is_some());
            }
        }
        assert_eq!(repo.reads.load(Ordering::SeqCst) - before, 20);
    }
}
