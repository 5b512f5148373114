//! Where references may point, and reading what they point at through the other backends.
//!
//! A reference set (kerchunk JSON or Parquet) or an Icechunk repository names files by URL. Those
//! in the same place as the references themselves (the directory that holds them, their bucket,
//! container or host) are read; others only below a prefix the user allowed (`--allow-target`).
//! URLs are as fsspec reads kerchunk's: local paths and object keys verbatim (`a%41.nc` is
//! that name), HTTP URLs percent-encoded.
//! Local targets are opened with a [`DirStore`] rooted at the allowed directory, so a link cannot
//! lead out of it and only regular files are read.

use super::location;
use super::references::Recorded;
use super::{
    check_key, etag_text, DirStore, ObjectMeta, ObjectStoreBackend, RemoteOptions, Store,
    StoreError,
};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Refuses the target `shown`, seen as `version`, unless it is as `recorded` (its ETag, or
/// modified no later).
fn as_recorded(shown: &str, version: &ObjectMeta, recorded: &Recorded) -> Result<(), StoreError> {
    let changed = |what: String| {
        StoreError::Invalid(format!(
            "{shown}: {what} since it was referenced (the repository's virtual chunk no longer \
             matches it)"
        ))
    };
    match recorded {
        Recorded::ModifiedBy(secs) => {
            let modified = version
                .mtime
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_secs());
            match modified {
                Some(m) if m <= *secs => Ok(()),
                Some(m) => Err(changed(format!("modified at {m}, after {secs},"))),
                None => Err(changed("no modification time known".into())),
            }
        }
        Recorded::ETag(want) => match &version.tag {
            Some(tag) if etag_text(tag) == etag_text(want) => Ok(()),
            Some(tag) => Err(changed(format!("ETag {tag} instead of {want}"))),
            None => Err(changed(format!("no ETag to compare with {want}"))),
        },
    }
}

/// True when `url` is the place `prefix` (a URL prefix targets may be read from: `file:///dir`,
/// `s3://bucket/prefix`, ...) or below it.
fn holds(prefix: &str, url: &str) -> bool {
    url.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || prefix.ends_with('/') || rest.starts_with('/'))
}

/// The targets a reference set or repository may read, and the stores that read them.
pub struct Targets {
    /// Where the references are, first; then the allowed prefixes.
    places: Vec<String>,
    /// What relative target paths are relative to (a URL, no trailing `/`).
    base: String,
    remote: RemoteOptions,
    /// Target stores opened so far, by root URL (`file:///dir`, `s3://bucket`, ...).
    stores: Mutex<HashMap<String, Arc<dyn Store>>>,
}

impl Targets {
    /// The targets of references kept at `home` (a local path or a URL naming the reference file
    /// or directory): its directory (bucket, container, host) and `remote.allow_targets`.
    pub fn new(home: &str, remote: &RemoteOptions) -> Result<Self, StoreError> {
        let url = as_url(home, "")?;
        let base = parent(&url);
        let mut places = local_forms(&match root_of(&url) {
            Some((root, _)) => root,
            None => base.clone(),
        });
        for allowed in &remote.allow_targets {
            let prefix = as_url(allowed.trim_end_matches('/'), "")
                .map_err(|e| StoreError::Invalid(format!("--allow-target {allowed}: {e}")))?;
            places.extend(local_forms(&prefix));
        }
        Ok(Targets {
            places,
            base,
            remote: remote.clone(),
            stores: Mutex::new(HashMap::new()),
        })
    }

    /// All of the target `url`, refused unread when its store tells it is larger than `max`;
    /// an error when it is absent.
    pub fn read_whole(&self, url: &str, max: u64) -> Result<Vec<u8>, StoreError> {
        let (store, key, shown) = self.open(url)?;
        match store.get_bounded(&key, max)? {
            Some(object) => Ok(object.bytes),
            None => Err(missing(&shown)),
        }
    }

    /// `len` bytes of the target `url` from `offset`; an error when it is absent or shorter,
    /// or not as `recorded`.
    pub fn read(
        &self,
        url: &str,
        offset: u64,
        len: u64,
        recorded: Option<&Recorded>,
    ) -> Result<Vec<u8>, StoreError> {
        let (bytes, shown) = self.read_part_as(url, offset, len, recorded)?;
        if (bytes.len() as u64) < len {
            return Err(StoreError::Invalid(format!(
                "{shown}: the reference asks for bytes {offset}..{} but the file ends at {}",
                offset.saturating_add(len),
                offset + bytes.len() as u64
            )));
        }
        Ok(bytes)
    }

    /// Up to `len` bytes of the target `url` from `offset` (fewer at its end); an error when
    /// it is absent or not as `recorded`.
    pub fn read_part(
        &self,
        url: &str,
        offset: u64,
        len: u64,
        recorded: Option<&Recorded>,
    ) -> Result<Vec<u8>, StoreError> {
        Ok(self.read_part_as(url, offset, len, recorded)?.0)
    }

    /// [`Targets::read_part`], and the URL as shown. The version checked is the one the read
    /// itself saw: a target changed before the read, or during it, is refused; one checked
    /// by a separate request could change between the check and the read.
    fn read_part_as(
        &self,
        url: &str,
        offset: u64,
        len: u64,
        recorded: Option<&Recorded>,
    ) -> Result<(Vec<u8>, String), StoreError> {
        let (store, key, shown) = self.open(url)?;
        let Some(recorded) = recorded else {
            let bytes = store.get_range(&key, offset, len)?;
            return Ok((bytes.ok_or_else(|| missing(&shown))?, shown));
        };
        let (bytes, version) = store
            .get_range_versioned(&key, offset, len)?
            .ok_or_else(|| missing(&shown))?;
        as_recorded(&shown, &version, recorded)?;
        Ok((bytes, shown))
    }

    /// Size and modification time of the target `url`; an error when it is absent.
    pub fn head(&self, url: &str) -> Result<ObjectMeta, StoreError> {
        let (store, key, shown) = self.open(url)?;
        store.head(&key)?.ok_or_else(|| missing(&shown))
    }

    /// The store reading the target `url`, the key of the target in it, and the URL as shown.
    fn open(&self, url: &str) -> Result<(Arc<dyn Store>, String, String), StoreError> {
        let full = as_url(url, &self.base)?;
        // The innermost place that holds the target as written or, locally, with its links
        // resolved (a link below one place may lead into another one allowed).
        let forms = local_forms(&full);
        let found = self
            .places
            .iter()
            .flat_map(|p| forms.iter().filter(|f| holds(p, f)).map(move |f| (p, f)))
            .max_by_key(|(p, _)| p.len());
        let Some((place, target)) = found else {
            return Err(StoreError::Invalid(format!(
                "{full}: the references point outside the places they may read ({}); \
                 allow it with --allow-target PREFIX",
                self.places[0]
            )));
        };
        let (root, key) = match target.strip_prefix("file://") {
            Some(path) => local_root(place, path)?,
            None => root_of(target).ok_or_else(|| bad_url(target))?,
        };
        check_key(&key)
            .map_err(|_| StoreError::Invalid(format!("{full}: not a plain path below {root}")))?;
        let mut stores = self.stores.lock();
        if let Some(store) = stores.get(&root) {
            return Ok((store.clone(), key, full));
        }
        let store: Arc<dyn Store> = match root.strip_prefix("file://") {
            Some(dir) => Arc::new(DirStore::new(Path::new(dir))?),
            None => {
                let parsed = location::parse(&root)?;
                Arc::new(ObjectStoreBackend::open(&parsed, &root, &self.remote)?)
            }
        };
        stores.insert(root, store.clone());
        Ok((store, key, full))
    }
}

fn missing(url: &str) -> StoreError {
    StoreError::Invalid(format!(
        "{url}: the file a reference points to does not exist"
    ))
}

fn bad_url(url: &str) -> StoreError {
    StoreError::Invalid(format!("{url}: not a URL zarrfs can read"))
}

/// A target as a URL: `file:///abs/path` for local paths (relative ones below `base`), schemes
/// spelled as zarrfs knows them (`s3a://` is `s3://`, `gcs://` is `gs://`), `.` and `..`
/// segments resolved (`dir/../x.nc` is beside `dir`, and must be allowed there).
fn as_url(target: &str, base: &str) -> Result<String, StoreError> {
    let url = spelled(target, base)?;
    let (scheme, rest) = url.split_once("://").ok_or_else(|| bad_url(target))?;
    let mut segments: Vec<&str> = Vec::new();
    for seg in rest.split('/') {
        match seg {
            "." => {}
            // Never above the authority (bucket, host) or the file system root.
            ".." if segments.len() > 1 => {
                segments.pop();
            }
            ".." => return Err(bad_url(target)),
            _ => segments.push(seg),
        }
    }
    Ok(format!("{scheme}://{}", segments.join("/")))
}

/// [`as_url`] before `.` and `..` are resolved.
fn spelled(target: &str, base: &str) -> Result<String, StoreError> {
    if let Some((scheme, rest)) = target.split_once("://") {
        let scheme = match scheme {
            "s3a" => "s3",
            "gcs" => "gs",
            "file" | "s3" | "gs" | "az" | "abfs" | "abfss" | "adl" | "azure" | "http" | "https" => {
                scheme
            }
            _ => return Err(bad_url(target)),
        };
        return Ok(format!("{scheme}://{rest}"));
    }
    if target.starts_with('/') {
        return Ok(format!("file://{target}"));
    }
    if base.is_empty() {
        let cwd = std::env::current_dir().map_err(|e| StoreError::io(target, e))?;
        return Ok(format!("file://{}", cwd.join(target).display()));
    }
    Ok(format!("{base}/{}", target.trim_start_matches("./")))
}

/// The URL without its last segment.
fn parent(url: &str) -> String {
    let trimmed = url.trim_end_matches('/');
    match trimmed.rsplit_once('/') {
        Some((dir, _)) if !dir.ends_with('/') => dir.to_string(),
        _ => trimmed.to_string(),
    }
}

/// A remote URL split into the root a store opens (`scheme://authority`) and the key below it.
/// `None` for `file://` URLs.
fn root_of(url: &str) -> Option<(String, String)> {
    let (scheme, rest) = url.split_once("://")?;
    if scheme == "file" {
        return None;
    }
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let path = path.trim_matches('/');
    // An HTTP URL's path is percent-encoded; object keys are verbatim (as fsspec reads them).
    let key = match scheme {
        "http" | "https" => percent_encoding::percent_decode_str(path)
            .decode_utf8_lossy()
            .into_owned(),
        _ => path.to_string(),
    };
    Some((format!("{scheme}://{authority}"), key))
}

/// A local place as written and with its links resolved (references may name either).
fn local_forms(prefix: &str) -> Vec<String> {
    let mut out = vec![prefix.to_string()];
    if let Some(path) = prefix.strip_prefix("file://") {
        if let Ok(real) = std::fs::canonicalize(path) {
            let real = format!("file://{}", real.display());
            if real != prefix {
                out.push(real);
            }
        }
    }
    out
}

/// The directory a local target is read from (the allowed place, or its parent when the place
/// is one file) and the target's key in it.
fn local_root(place: &str, path: &str) -> Result<(String, String), StoreError> {
    let dir = place.strip_prefix("file://").unwrap_or(place);
    let dir = if Path::new(dir).is_dir() {
        PathBuf::from(dir)
    } else {
        Path::new(dir)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    };
    let key = Path::new(path)
        .strip_prefix(&dir)
        .map_err(|_| bad_url(path))?
        .to_string_lossy()
        .into_owned();
    Ok((format!("file://{}", dir.display()), key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(home: &str, allow: &[&str]) -> Targets {
        let remote = RemoteOptions {
            allow_targets: allow.iter().map(|s| s.to_string()).collect(),
            ..RemoteOptions::default()
        };
        Targets::new(home, &remote).unwrap()
    }

    #[test]
    fn reads_beside_the_references_and_where_allowed_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("refs/sub")).unwrap();
        std::fs::create_dir_all(root.join("other")).unwrap();
        std::fs::write(root.join("refs/sub/a.nc"), b"0123456789").unwrap();
        std::fs::write(root.join("other/b.nc"), b"abcdef").unwrap();
        std::fs::write(root.join("secret"), b"s").unwrap();
        std::os::unix::fs::symlink(root.join("secret"), root.join("refs/link")).unwrap();
        let home = root.join("refs/r.json").display().to_string();
        let t = targets(&home, &[]);
        let inside = root.join("refs/sub/a.nc").display().to_string();
        assert_eq!(t.read(&inside, 2, 3, None).unwrap(), b"234");
        assert_eq!(t.read("sub/a.nc", 8, 2, None).unwrap(), b"89");
        assert_eq!(
            t.read_whole(&format!("file://{inside}"), u64::MAX)
                .unwrap()
                .len(),
            10
        );
        let large = t.read_whole(&inside, 9).unwrap_err();
        assert!(
            matches!(large, StoreError::TooLarge { size: 10, .. }),
            "{large}"
        );
        let past = t.read(&inside, 8, 4, None).unwrap_err().to_string();
        assert!(past.contains("ends at 10"), "{past}");
        let gone = t
            .read_whole("sub/none.nc", u64::MAX)
            .unwrap_err()
            .to_string();
        assert!(gone.contains("does not exist"), "{gone}");
        let other = root.join("other/b.nc").display().to_string();
        let refused = t.read_whole(&other, u64::MAX).unwrap_err().to_string();
        assert!(refused.contains("--allow-target"), "{refused}");
        for escape in ["link", "../secret", "sub/../../secret", "s3://bucket/x"] {
            assert!(t.read_whole(escape, u64::MAX).is_err(), "{escape}");
        }
        assert_eq!(t.read("sub/../sub/./a.nc", 0, 1, None).unwrap(), b"0");
        let allowed = targets(&home, &[&root.join("other").display().to_string()]);
        assert_eq!(allowed.read_whole(&other, u64::MAX).unwrap(), b"abcdef");
        assert_eq!(
            allowed.read_whole("../other/b.nc", u64::MAX).unwrap(),
            b"abcdef"
        );
    }

    #[test]
    fn a_target_changed_since_it_was_recorded_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.bin"), b"abc").unwrap();
        let t = targets(&dir.path().join("repo").display().to_string(), &[]);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert!(t
            .read("a.bin", 0, 3, Some(&Recorded::ModifiedBy(now + 3600)))
            .is_ok());
        let later = t
            .read_part("a.bin", 1, 9, Some(&Recorded::ModifiedBy(1)))
            .unwrap_err();
        assert!(
            later.to_string().contains("since it was referenced"),
            "{later}"
        );
        let etag = t
            .read("a.bin", 0, 3, Some(&Recorded::ETag("x".into())))
            .unwrap_err();
        assert!(etag.to_string().contains("no ETag"), "{etag}");
    }

    #[test]
    fn remote_places_are_buckets_and_hosts() {
        let t = targets("s3://bucket/refs/r.json", &["https://data.org/pub/"]);
        let place = |url: &str| {
            t.places
                .iter()
                .any(|p| holds(p, &as_url(url, &t.base).unwrap()))
        };
        assert!(place("s3://bucket/other/x.nc"));
        assert!(place("s3a://bucket/x.nc"));
        assert!(place("x.nc"));
        assert!(!place("s3://bucket2/x.nc"));
        assert!(place("https://data.org/pub/x.nc"));
        assert!(!place("https://data.org/public/x.nc"));
        assert!(!place("/etc/passwd"));
        assert_eq!(as_url("x.nc", &t.base).unwrap(), "s3://bucket/refs/x.nc");
    }
}
