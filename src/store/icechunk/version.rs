//! Which snapshot of an Icechunk repository is mounted: the tip of a branch, a tag, or a
//! snapshot id. Spec v2 keeps branches and tags in the `repo` file; spec v1 in
//! `refs/branch.NAME/ref.json` and `refs/tag.NAME/ref.json` (`{"snapshot": "ID"}`).

use super::files;
use crate::store::{probe, EntryKind, Store, StoreError};
use icechunk_format::format_constants::FileTypeBin;
use icechunk_format::SnapshotId;

/// The branch mounted when no `--ref` is given.
pub const DEFAULT_BRANCH: &str = "main";

/// The snapshot `name` (a branch, a tag or a snapshot id, in that order) names in `repo`, and
/// the repository's format spec version (its `repo` file's, 1 without one); or an error listing
/// the branches and tags. Spec v1 references are looked up by name (a branch, then a tag): the
/// references are listed only to name them in that error.
pub fn resolve(repo: &dyn Store, name: &str) -> Result<(SnapshotId, u8), StoreError> {
    let info = files::optional(files::read(repo, "repo", FileTypeBin::RepoInfo))?;
    let (spec, found, all) = match info {
        Some((version, buffer)) => {
            let corrupt = |e: icechunk_format::IcechunkFormatError| files::corrupt(repo, "repo", e);
            let info = icechunk_format::serializers::deserialize_repo_info(version, buffer)
                .map_err(corrupt)?;
            let owned = |(name, id): (&str, SnapshotId)| (name.to_string(), id);
            let branches: Vec<_> = info.branches().map_err(corrupt)?.map(owned).collect();
            let tags: Vec<_> = info.tags().map_err(corrupt)?.map(owned).collect();
            let found = branches
                .iter()
                .chain(&tags)
                .find(|(n, _)| n == name)
                .map(|(_, id)| id.clone());
            (version as u8, found, Some((branches, tags)))
        }
        None => {
            let found = match v1_ref(repo, &format!("refs/branch.{name}"))? {
                Some(id) => Some(id),
                None => v1_ref(repo, &format!("refs/tag.{name}"))?,
            };
            (1, found, None)
        }
    };
    if let Some(id) = found {
        return Ok((id, spec));
    }
    if let Ok(id) = SnapshotId::try_from(name) {
        if probe(repo, &format!("snapshots/{id}"))? {
            return Ok((id, spec));
        }
    }
    let (branches, tags) = match all {
        Some(all) => all,
        None => match v1_refs(repo) {
            Ok(all) => all,
            // A server that cannot list (plain HTTP), or a bucket that may not be listed:
            // none to name.
            Err(e) if unlisted(&e) => (Vec::new(), Vec::new()),
            Err(e) => return Err(e),
        },
    };
    let names = |list: &[(String, SnapshotId)]| {
        let n: Vec<&str> = list.iter().map(|(n, _)| n.as_str()).collect();
        if n.is_empty() {
            "none".to_string()
        } else {
            n.join(", ")
        }
    };
    Err(StoreError::Invalid(format!(
        "{}: no branch, tag or snapshot {name:?} (branches: {}; tags: {})",
        repo.describe(),
        names(&branches),
        names(&tags)
    )))
}

/// A repository's references by name, with the snapshots they name.
type Refs = Vec<(String, SnapshotId)>;

/// The spec v1 branches and tags (the directories `refs/branch.NAME` and `refs/tag.NAME`), from
/// one listing of `refs`.
fn v1_refs(repo: &dyn Store) -> Result<(Refs, Refs), StoreError> {
    let (mut branches, mut tags) = (Vec::new(), Vec::new());
    for entry in repo.list_dir("refs")? {
        if entry.kind != EntryKind::Prefix {
            continue;
        }
        let (out, name) = match (
            entry.name.strip_prefix("branch."),
            entry.name.strip_prefix("tag."),
        ) {
            (Some(name), _) => (&mut branches, name),
            (_, Some(name)) => (&mut tags, name),
            _ => continue,
        };
        if let Some(id) = v1_ref(repo, &format!("refs/{}", entry.name))? {
            out.push((name.to_string(), id));
        }
    }
    Ok((branches, tags))
}

/// True when `e` says that the store cannot list (plain HTTP) or may not (a bucket readable
/// but not listable).
fn unlisted(e: &StoreError) -> bool {
    matches!(e, StoreError::CannotList(_) | StoreError::Denied { .. })
}

/// The snapshot the spec v1 reference directory `dir` names; `None` when it is absent or a
/// deleted tag. Files are looked for as [`probe`] does: a bucket that may be read but not
/// listed answers "access denied" (403) for a key it does not hold.
fn v1_ref(repo: &dyn Store, dir: &str) -> Result<Option<SnapshotId>, StoreError> {
    // A deleted tag keeps its `ref.json` beside a tombstone: it no longer resolves.
    if probe(repo, &format!("{dir}/ref.json.deleted"))? {
        return Ok(None);
    }
    // `ref.json`; older v1 writers kept versions `ZZZZZZZZ.json`, the newest first (found by
    // listing, where the store can list).
    let file = match files::optional(repo.get(&format!("{dir}/ref.json")))? {
        Some(f) => f,
        None => {
            let listed = match repo.list_dir(dir) {
                Ok(listed) => listed,
                Err(e) if unlisted(&e) => return Ok(None),
                Err(e) => return Err(e),
            };
            let Some(first) = listed.iter().find(|e| e.name.ends_with(".json")) else {
                return Ok(None);
            };
            match repo.get(&format!("{dir}/{}", first.name))? {
                Some(f) => f,
                None => return Ok(None),
            }
        }
    };
    let doc: serde_json::Value =
        serde_json::from_slice(&file.bytes).map_err(|e| files::corrupt(repo, dir, e))?;
    let id = doc
        .get("snapshot")
        .and_then(|s| s.as_str())
        .and_then(|s| SnapshotId::try_from(s).ok())
        .ok_or_else(|| files::corrupt(repo, dir, "no snapshot id"))?;
    Ok(Some(id))
}

/// True when `repo` is laid out as an Icechunk repository: a `repo` file (spec v2), or
/// `refs/branch.*` directories beside `snapshots/` (spec v1). Each key is looked for with
/// [`probe`]: access denied is "absent", other failures are errors.
pub fn is_repository(repo: &dyn Store) -> Result<bool, StoreError> {
    if probe(repo, "repo")? {
        return Ok(true);
    }
    // Every repository holds its first snapshot under this fixed id.
    if !probe(repo, "snapshots/1CECHNKREP0F1RSTCMT0")? {
        return Ok(false);
    }
    match repo.list_dir("refs") {
        Ok(refs) => Ok(refs.iter().any(|e| e.name.starts_with("branch."))),
        // A store that cannot list (plain HTTP), or may not (a bucket without the right to
        // list): the default branch, by name.
        Err(e) if unlisted(&e) => probe(repo, "refs/branch.main/ref.json"),
        Err(e) => Err(e),
    }
}
