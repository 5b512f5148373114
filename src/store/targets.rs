//! Where references may point, and reading what they point at through the other backends.
//!
//! A reference set (kerchunk JSON or Parquet) or an Icechunk repository names files by URL. Those
//! in the same place as the references themselves (the directory that holds them, their bucket,
//! container or host) are read; others only below a prefix the user allowed (`--allow-target`).
//! URLs are as fsspec reads kerchunk's: local paths and object keys verbatim (`a%41.nc` is
//! that name), HTTP URLs sent as written, query included; an HTTP target or redirect whose path
//! has a segment that decodes to `.` or `..` (`..%2F`) is refused, as a server may resolve it.
//!
//! Every local place is opened once, with the references, and its targets are opened beneath
//! that descriptor with the rules of a [`DirStore`]: renaming the directory away, or swapping it
//! or a directory above it for a link, changes nothing; a link cannot lead out of it; only
//! regular files are read. A target named through a link that leads into another place is read
//! beneath that place, by the path the link resolves to. Remote targets are read by clients
//! that follow a redirect only to a URL inside a place ([`Redirects::Within`]).

use super::flight_lru::FlightLru;
use super::location;
use super::references::Recorded;
use super::{
    check_key, display_url, etag_text, join_key, safe_open, weak_etag, DirStore, ObjectMeta,
    ObjectStoreBackend, Redirects, RemoteOptions, Store, StoreError, Within,
};
use std::path::Path;
use std::sync::Arc;

/// Refuses the target `url`, seen as `version`, unless it is as `recorded` (its ETag, or
/// modified no later). ETags are compared strongly, as `If-Match` compares them: a weak one
/// matches nothing.
fn as_recorded(url: &str, version: &ObjectMeta, recorded: &Recorded) -> Result<(), StoreError> {
    let changed = |what: String| {
        StoreError::Invalid(format!(
            "{}: {what} since it was referenced (the repository's virtual chunk no longer \
             matches it)",
            display_url(url)
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
            Some(tag) if weak_etag(tag) || weak_etag(want) => Err(changed(format!(
                "a weak ETag ({tag}, recorded {want}) does not promise the same bytes; not \
                 changed for certain, but not known to be the same"
            ))),
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

/// A store, and a key in it.
type Keyed = (Arc<dyn Store>, String);

/// One place targets may be read from.
struct Place {
    /// The URL prefix it holds: `file:///dir` (as written, or with its links resolved),
    /// `s3://bucket/prefix`, `https://host/path`.
    prefix: String,
    /// A local place: the directory opened with the references, and the place's key in it
    /// (empty for that directory itself; a name for a file, or for a place not there yet).
    local: Option<Keyed>,
}

impl Place {
    /// The place `prefix` (a URL), under each name references may give it. `home_dir`, when
    /// given, is the directory `prefix` names, already open.
    fn open(prefix: &str, home_dir: Option<Arc<dyn Store>>) -> Result<Vec<Place>, StoreError> {
        let Some(path) = prefix.strip_prefix("file://") else {
            return Ok(vec![Place {
                prefix: prefix.to_string(),
                local: None,
            }]);
        };
        let opened = match home_dir {
            Some(dir) => (dir, String::new()),
            None => open_local(Path::new(path))?,
        };
        let mut places = Vec::new();
        // The same place with its links resolved: references may name either.
        if let Ok(real) = std::fs::canonicalize(path) {
            let real_url = format!("file://{}", real.display());
            if real_url != prefix {
                let local = match opened.1.is_empty() {
                    // A directory has one resolved path: the one opened.
                    true => opened.clone(),
                    false => open_local(&real)?,
                };
                places.push(Place {
                    prefix: real_url,
                    local: Some(local),
                });
            }
        }
        places.insert(
            0,
            Place {
                prefix: prefix.to_string(),
                local: Some(opened),
            },
        );
        Ok(places)
    }
}

/// The directory `path` opened, or, for a file or a path not there yet, the directory holding
/// it and its name there.
fn open_local(path: &Path) -> Result<Keyed, StoreError> {
    let shown = || path.display().to_string();
    match safe_open::open_path(path) {
        Ok(opened) if opened.is_dir() => Ok((
            Arc::new(DirStore::from_opened(path, opened)?),
            String::new(),
        )),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(StoreError::io(shown(), e)),
        _ => match (path.parent(), path.file_name()) {
            (Some(dir), Some(name)) => Ok((
                Arc::new(DirStore::new(dir)?),
                name.to_string_lossy().into_owned(),
            )),
            _ => Err(StoreError::Invalid(format!("{}: not a place", shown()))),
        },
    }
}

/// The targets a reference set or repository may read, and the stores that read them.
pub struct Targets {
    /// Where the references are, first; then the allowed prefixes.
    places: Vec<Place>,
    /// What relative target paths are relative to (a URL, no trailing `/`).
    base: String,
    /// The options of target stores: redirects only into the places.
    remote: RemoteOptions,
    /// Stores opened so far, the most recently used: bucket and container stores by root URL
    /// (`s3://bucket`, ...), HTTP ones by the file's URL.
    stores: FlightLru<String, Arc<dyn Store>, StoreError>,
}

impl Targets {
    /// The targets of references kept at `home` (a local path or a URL naming the reference file
    /// or directory): its directory (bucket, container, host) and `remote.allow_targets`. Local
    /// places are opened here; `home_dir`, when given, is the directory holding `home`, already
    /// open (a JSON file's store).
    pub fn new(
        home: &str,
        home_dir: Option<Arc<dyn Store>>,
        remote: &RemoteOptions,
    ) -> Result<Self, StoreError> {
        let url = as_url(home, "")?;
        let base = parent(&bare(&url));
        let home_place = match root_of(&url) {
            Some((root, _)) => root,
            None if url.starts_with("file://") => base.clone(),
            None => origin(&url).ok_or_else(|| bad_url(&url))?,
        };
        let mut places = Place::open(&home_place, home_dir)?;
        for allowed in &remote.allow_targets {
            let refused =
                |e: StoreError| StoreError::Invalid(format!("--allow-target {allowed}: {e}"));
            let prefix = as_url(without_trailing_slash(allowed), "").map_err(refused)?;
            places.extend(Place::open(&prefix, None).map_err(refused)?);
        }
        let http: Vec<String> = places
            .iter()
            .filter(|p| is_http(&p.prefix))
            .map(|p| p.prefix.clone())
            .collect();
        let within = Within::new(move |url| !climbs(url) && http.iter().any(|p| holds(p, url)));
        Ok(Targets {
            places,
            base,
            remote: RemoteOptions {
                redirects: Redirects::Within(Arc::new(within)),
                ..remote.clone()
            },
            stores: FlightLru::new(STORES_KEPT, |_| 1),
        })
    }

    /// True when some place is remote: reads of targets may then go over the network.
    pub fn any_remote(&self) -> bool {
        self.places.iter().any(|p| p.local.is_none())
    }

    /// All of the target `url`, refused unread when its store tells it is larger than `max`;
    /// an error when it is absent.
    pub fn read_whole(&self, url: &str, max: u64) -> Result<Vec<u8>, StoreError> {
        let (object, full) = self.on_target(url, |store, key| store.get_bounded(key, max))?;
        object.map(|o| o.bytes).ok_or_else(|| missing(&full))
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
        let (bytes, full) = self.read_part_as(url, offset, len, recorded)?;
        if (bytes.len() as u64) < len {
            return Err(StoreError::Invalid(format!(
                "{}: the reference asks for bytes {offset}..{} but the file ends at {}",
                display_url(&full),
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

    /// [`Targets::read_part`], and the target's full URL. The version checked is the one the read
    /// itself saw: a target changed before the read, or during it, is refused; one checked
    /// by a separate request could change between the check and the read.
    fn read_part_as(
        &self,
        url: &str,
        offset: u64,
        len: u64,
        recorded: Option<&Recorded>,
    ) -> Result<(Vec<u8>, String), StoreError> {
        let Some(recorded) = recorded else {
            let (bytes, full) =
                self.on_target(url, |store, key| store.get_range(key, offset, len))?;
            return Ok((bytes.ok_or_else(|| missing(&full))?, full));
        };
        let (got, full) = self.on_target(url, |store, key| {
            store.get_range_versioned(key, offset, len)
        })?;
        let (bytes, version) = got.ok_or_else(|| missing(&full))?;
        as_recorded(&full, &version, recorded)?;
        Ok((bytes, full))
    }

    /// Size and modification time of the target `url`; an error when it is absent.
    pub fn head(&self, url: &str) -> Result<ObjectMeta, StoreError> {
        let (meta, full) = self.on_target(url, |store, key| store.head(key))?;
        meta.ok_or_else(|| missing(&full))
    }

    /// What `read` gives for the target `url` in the store that reads it, and its full URL
    /// (shown with [`display_url`] in messages).
    fn on_target<T>(
        &self,
        url: &str,
        read: impl Fn(&dyn Store, &str) -> Result<T, StoreError>,
    ) -> Result<(T, String), StoreError> {
        let full = as_url(url, &self.base)?;
        let Some(path) = full.strip_prefix("file://") else {
            let (store, key) = self.remote_store(&full)?;
            let got = read(store.as_ref(), &key)?;
            return Ok((got, full));
        };
        let shown = display_url(&full);
        let held = match self.local_place(&full, &shown)? {
            Some((store, key)) => match read(store.as_ref(), &key) {
                // A link on the way leads out of the place (the store refuses it).
                Err(StoreError::BadKey(_)) => true,
                other => return Ok((other?, full)),
            },
            None => false,
        };
        // Named through a link into a place (or from one place into another): read by the
        // path the link resolves to, beneath the place that holds that path. Whatever the
        // file system says here, the read opens nothing outside a place's directory.
        let real = std::fs::canonicalize(path)
            .ok()
            .map(|r| format!("file://{}", r.display()))
            .filter(|r| *r != full);
        let resolved = match &real {
            Some(real) => self.local_place(real, &shown)?,
            None => None,
        };
        let leads_out = || {
            StoreError::Invalid(format!(
                "{shown}: a symbolic link on its path leads out of the places the references \
                 may read; allow where it leads with --allow-target PREFIX"
            ))
        };
        match resolved {
            Some((store, key)) => match read(store.as_ref(), &key) {
                Err(StoreError::BadKey(_)) => Err(leads_out()),
                other => Ok((other?, full)),
            },
            None if held => Err(leads_out()),
            None => Err(self.outside(&shown)),
        }
    }

    /// The innermost place holding `url` (compared as [`bare`] gives it).
    fn place(&self, url: &str) -> Option<&Place> {
        let url = bare(url);
        self.places
            .iter()
            .filter(|p| holds(&p.prefix, &url))
            .max_by_key(|p| p.prefix.len())
    }

    /// The directory and key of the local target `url` (shown as `shown`), when a place holds
    /// it.
    fn local_place(&self, url: &str, shown: &str) -> Result<Option<Keyed>, StoreError> {
        let Some(place) = self.place(url) else {
            return Ok(None);
        };
        let Some((store, at)) = &place.local else {
            return Ok(None);
        };
        let rest = &url[place.prefix.len()..];
        let rest = rest.strip_prefix('/').unwrap_or(rest);
        let key = match rest {
            "" => at.clone(),
            rest => join_key(at, rest),
        };
        check_key(&key).map_err(|_| {
            StoreError::Invalid(format!("{shown}: not a plain path below {}", place.prefix))
        })?;
        Ok(Some((store.clone(), key)))
    }

    /// The store reading the remote target `url`, and its key there: opened the first time,
    /// checked then (a place holds it), and kept among the last [`STORES_KEPT`] used.
    fn remote_store(&self, url: &str) -> Result<Keyed, StoreError> {
        let gone =
            || StoreError::Invalid(format!("{}: opening its store failed", display_url(url)));
        if is_http(url) {
            // Its own store, whose URL is the file's as written (a percent-escape, a `%2F`, a
            // query with a signature are sent as they are); its HTTP client is shared.
            let store = self.stores.get_or_load(url.to_string(), gone, || {
                let shown = display_url(url);
                if climbs(url) {
                    return Err(StoreError::Invalid(format!(
                        "{shown}: a segment of its path decodes to `.` or `..` (`%2F` and `%2E` \
                         escapes); a server that decodes them would read another file; not read"
                    )));
                }
                if self.place(url).is_none() {
                    return Err(self.outside(&shown));
                }
                let parsed = location::parse(url)?;
                let store = ObjectStoreBackend::open(&parsed, &shown, &self.remote)?;
                Ok(Arc::new(store) as Arc<dyn Store>)
            })?;
            return Ok((store, String::new()));
        }
        if self.place(url).is_none() {
            return Err(self.outside(&display_url(url)));
        }
        let (root, key) = root_of(url).ok_or_else(|| bad_url(url))?;
        check_key(&key).map_err(|_| {
            StoreError::Invalid(format!(
                "{}: not a plain path below {root}",
                display_url(url)
            ))
        })?;
        let store = self.stores.get_or_load(root.clone(), gone, || {
            let parsed = location::parse(&root)?;
            let store = ObjectStoreBackend::open(&parsed, &display_url(&root), &self.remote)?;
            Ok(Arc::new(store) as Arc<dyn Store>)
        })?;
        Ok((store, key))
    }

    /// Why the target `shown` is not read: no place holds it.
    fn outside(&self, shown: &str) -> StoreError {
        StoreError::Invalid(format!(
            "{shown}: the references point outside the places they may read ({}); allow it \
             with --allow-target PREFIX",
            display_url(&self.places[0].prefix)
        ))
    }
}

/// Stores of targets kept open, at most (a reference set may name a file per chunk).
const STORES_KEPT: u64 = 1024;

/// Why the target `url` is not read: it does not exist.
fn missing(url: &str) -> StoreError {
    StoreError::Invalid(format!(
        "{}: the file a reference points to does not exist",
        display_url(url)
    ))
}

fn bad_url(url: &str) -> StoreError {
    StoreError::Invalid(format!("{}: not a URL zarrfs can read", display_url(url)))
}

fn is_http(url: &str) -> bool {
    url.starts_with("http://") || url.starts_with("https://")
}

/// An `--allow-target` prefix without its trailing `/` (but `/` itself, and `file:///`, are
/// the root).
fn without_trailing_slash(prefix: &str) -> &str {
    let mut p = prefix;
    while p.len() > 1 && p.ends_with('/') && !p.ends_with("://") && !p.ends_with(":///") {
        p = &p[..p.len() - 1];
    }
    p
}

/// A target as a URL: `file:///abs/path` for local paths (relative ones below `base`), schemes
/// spelled as zarrfs knows them (`s3a://` is `s3://`, `gcs://` is `gs://`), `.` and `..`
/// segments resolved (`dir/../x.nc` is beside `dir`, and must be allowed there). An HTTP URL is
/// as a client sends it: its dot segments resolved (`%2e` ones too), its fragment dropped.
fn as_url(target: &str, base: &str) -> Result<String, StoreError> {
    let url = spelled(target, base)?;
    let (scheme, rest) = url.split_once("://").ok_or_else(|| bad_url(target))?;
    if is_http(&url) {
        let mut parsed = url::Url::parse(&url).map_err(|_| bad_url(target))?;
        parsed.set_fragment(None);
        return Ok(parsed.into());
    }
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

/// A URL as places are compared with it: an HTTP one without its query and `user:password@`
/// (which do not change where it is), others as they are.
fn bare(url: &str) -> String {
    if !is_http(url) {
        return url.to_string();
    }
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            parsed.set_query(None);
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.into()
        }
        Err(_) => url.to_string(),
    }
}

/// True when a segment of the HTTP URL `url`'s path, percent-decoded, is `.` or `..` or holds
/// one between slashes (`..%2F..%2Fprivate`): a server that decodes and normalises paths
/// (nginx) would read it from outside the place its prefix seems to name. URL parsing resolves
/// only literal and `%2e` dot segments. An unparsable URL climbs.
fn climbs(url: &str) -> bool {
    let Ok(parsed) = url::Url::parse(url) else {
        return true;
    };
    parsed.path_segments().into_iter().flatten().any(|seg| {
        let decoded = percent_encoding::percent_decode_str(seg).decode_utf8_lossy();
        decoded
            .split(['/', '\\'])
            .any(|part| part == "." || part == "..")
    })
}

/// The root of an HTTP URL's server (`https://host:port/`).
fn origin(url: &str) -> Option<String> {
    let mut parsed = url::Url::parse(url).ok()?;
    parsed.set_path("/");
    parsed.set_query(None);
    parsed.set_username("").ok()?;
    parsed.set_password(None).ok()?;
    Some(parsed.into())
}

/// A bucket or container URL split into the root a store opens (`scheme://authority`) and the
/// key below it, verbatim (as fsspec reads object keys). `None` for `file://` and HTTP URLs.
fn root_of(url: &str) -> Option<(String, String)> {
    let (scheme, rest) = url.split_once("://")?;
    if matches!(scheme, "file" | "http" | "https") {
        return None;
    }
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    Some((
        format!("{scheme}://{authority}"),
        path.trim_matches('/').to_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(home: &str, allow: &[&str]) -> Targets {
        let remote = RemoteOptions {
            allow_targets: allow.iter().map(|s| s.to_string()).collect(),
            ..RemoteOptions::default()
        };
        Targets::new(home, None, &remote).unwrap()
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
    fn a_remote_target_s_store_is_opened_once_and_few_are_kept() {
        let t = targets("s3://bucket/refs/r.json", &["https://data.org/pub"]);
        let opened = || t.stores.stats().loads;
        for _ in 0..3 {
            for url in [
                "https://data.org/pub/a.nc?sig=1",
                "s3://bucket/x.nc",
                "y.nc",
            ] {
                let full = as_url(url, &t.base).unwrap();
                t.remote_store(&full).unwrap();
            }
        }
        assert_eq!(opened(), 2, "one for the file, one for the bucket");
        for i in 0..STORES_KEPT + 10 {
            let url = format!("https://data.org/pub/{i}.nc");
            t.remote_store(&url).unwrap();
        }
        assert_eq!(t.stores.stats().entries, STORES_KEPT);
        // Refused ones are not kept, and refused again.
        for _ in 0..2 {
            let outside = t.remote_store("https://data.org/private/x.nc");
            assert!(outside.is_err());
        }
        assert_eq!(t.stores.stats().entries, STORES_KEPT);
    }

    #[test]
    fn remote_places_are_buckets_and_hosts() {
        let t = targets("s3://bucket/refs/r.json", &["https://data.org/pub/"]);
        let place = |url: &str| {
            t.places
                .iter()
                .any(|p| holds(&p.prefix, &bare(&as_url(url, &t.base).unwrap())))
        };
        assert!(place("s3://bucket/other/x.nc"));
        assert!(place("s3a://bucket/x.nc"));
        assert!(place("x.nc"));
        assert!(!place("s3://bucket2/x.nc"));
        assert!(place("https://data.org/pub/x.nc"));
        assert!(!place("https://data.org/public/x.nc"));
        assert!(!place("/etc/passwd"));
        for climbing in [
            "https://data.org/pub/..%2F..%2Fprivate/x",
            "https://data.org/pub/%2E%2E%2fprivate/x",
            "https://data.org/pub/a/..%5Cx",
            "https://data.org/pub/%2e%2e/x/.%2F..%2Fy",
        ] {
            let url = as_url(climbing, &t.base).unwrap();
            assert!(climbs(&url), "{climbing}");
            let err = t.read_whole(climbing, 1).unwrap_err().to_string();
            assert!(err.contains("decodes to `.` or `..`"), "{climbing}: {err}");
        }
        for plain in [
            "https://data.org/pub/a%2Fb.nc",
            "https://data.org/pub/..a%2E/x",
        ] {
            assert!(!climbs(&as_url(plain, &t.base).unwrap()), "{plain}");
        }
        assert_eq!(as_url("x.nc", &t.base).unwrap(), "s3://bucket/refs/x.nc");
    }
}
