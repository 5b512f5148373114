//! Remote stores (S3, GCS, Azure Blob, plain HTTP) on the `object_store` crate, behind the
//! synchronous [`Store`] trait: one shared tokio runtime runs the requests, and every call is
//! bounded by a deadline so a hung server never holds a caller forever.

use super::location::Location;
use super::{check_key, Entry, EntryKind, Object, ObjectMeta, Store, StoreError};
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::http::HttpBuilder;
use object_store::path::Path;
use object_store::{
    BackoffConfig, ClientOptions, GetOptions, GetRange, ObjectStore, ObjectStoreExt, RetryConfig,
};
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

/// How a remote store is reached: the command line's remote options.
#[derive(Clone, Debug)]
pub struct RemoteOptions {
    /// An S3-compatible server (MinIO, Ceph, s3s) or an Azure endpoint, addressed path-style.
    pub endpoint: Option<String>,
    /// The S3 region (default: AWS_REGION / AWS_DEFAULT_REGION, else us-east-1).
    pub region: Option<String>,
    /// Unsigned requests (public buckets); no credentials are looked for.
    pub anonymous: bool,
    /// The longest one store operation may take, retries included.
    pub timeout: Duration,
}

impl Default for RemoteOptions {
    fn default() -> Self {
        RemoteOptions {
            endpoint: None,
            region: None,
            anonymous: false,
            timeout: Duration::from_secs(30),
        }
    }
}

/// Connection attempts give up after this long (or one attempt's time, when shorter).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Retries of one request on 5xx, throttling, resets and timeouts.
const MAX_RETRIES: usize = 4;

/// The runtime every remote store shares, started on first use (after the mount command has
/// daemonized: threads do not survive fork).
fn runtime() -> Result<&'static tokio::runtime::Runtime, &'static str> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("zarrfs-net")
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the network runtime: {e}"))
        })
        .as_ref()
        .map_err(String::as_str)
}

/// A bucket, container or URL prefix read through `object_store`.
pub struct ObjectStoreBackend {
    inner: Arc<dyn ObjectStore>,
    /// Key prefix inside the bucket (no leading or trailing `/`).
    prefix: String,
    /// The store's URL as shown to the user.
    url: String,
    /// False for plain HTTP, which cannot list.
    listable: bool,
    timeout: Duration,
    opened: SystemTime,
}

impl ObjectStoreBackend {
    /// Builds the client for a remote `location` (shown to the user as `url`). No request is
    /// made yet.
    pub fn open(location: &Location, url: &str, opts: &RemoteOptions) -> Result<Self, StoreError> {
        let client = client_options(opts);
        let retry = retry_config(opts.timeout);
        let invalid = |e: object_store::Error| StoreError::Invalid(format!("{url}: {e}"));
        let (inner, prefix, listable): (Arc<dyn ObjectStore>, &str, bool) = match location {
            Location::S3 {
                bucket,
                prefix,
                endpoint,
                region,
            } => {
                let mut b = with_profile(AmazonS3Builder::from_env(), opts.anonymous)
                    .with_bucket_name(bucket)
                    .with_client_options(client)
                    .with_retry(retry);
                if let Some(r) = opts.region.as_ref().or(region.as_ref()) {
                    b = b.with_region(r);
                }
                if let Some(e) = opts.endpoint.as_ref().or(endpoint.as_ref()) {
                    b = b.with_endpoint(e).with_virtual_hosted_style_request(false);
                }
                let plain_http = b
                    .get_config_value(&AmazonS3ConfigKey::Endpoint)
                    .is_some_and(|e| e.starts_with("http://"));
                b = b
                    .with_allow_http(plain_http)
                    .with_skip_signature(opts.anonymous);
                (Arc::new(b.build().map_err(invalid)?), prefix, true)
            }
            Location::Gcs { bucket, prefix } => {
                no_endpoint(opts, url)?;
                let b = GoogleCloudStorageBuilder::from_env()
                    .with_bucket_name(bucket)
                    .with_client_options(client)
                    .with_retry(retry)
                    .with_skip_signature(opts.anonymous);
                (Arc::new(b.build().map_err(invalid)?), prefix, true)
            }
            Location::Azure { url: az, prefix } => {
                let mut b = MicrosoftAzureBuilder::from_env();
                // The names the az command line uses.
                if let Ok(account) = std::env::var("AZURE_STORAGE_ACCOUNT") {
                    b = b.with_account(account);
                }
                if let Ok(key) = std::env::var("AZURE_STORAGE_KEY") {
                    b = b.with_access_key(key);
                }
                b = b
                    .with_url(az)
                    .with_client_options(client)
                    .with_retry(retry)
                    .with_skip_signature(opts.anonymous);
                if let Some(e) = &opts.endpoint {
                    b = b
                        .with_endpoint(e.clone())
                        .with_allow_http(e.starts_with("http://"));
                }
                (Arc::new(b.build().map_err(invalid)?), prefix, true)
            }
            Location::Http { url: base } => {
                no_endpoint(opts, url)?;
                let b = HttpBuilder::new()
                    .with_url(base.as_str())
                    .with_client_options(client.with_allow_http(true))
                    .with_retry(retry);
                (Arc::new(b.build().map_err(invalid)?), "", false)
            }
            Location::Local { .. } => {
                return Err(StoreError::Invalid(format!("{url}: not a remote store")))
            }
        };
        Ok(ObjectStoreBackend {
            inner,
            prefix: prefix.to_string(),
            url: url.to_string(),
            listable,
            timeout: opts.timeout,
            opened: SystemTime::now(),
        })
    }

    /// The object path of `key` (checked first: no request leaves the store's prefix).
    fn path(&self, key: &str) -> Result<Path, StoreError> {
        check_key(key)?;
        let full = match (self.prefix.is_empty(), key.is_empty()) {
            (true, _) => key.to_string(),
            (false, true) => self.prefix.clone(),
            (false, false) => format!("{}/{key}", self.prefix),
        };
        Path::parse(&full).map_err(|e| StoreError::Invalid(format!("{}: {e}", self.what(key))))
    }

    /// The URL of `key`, for messages.
    fn what(&self, key: &str) -> String {
        if key.is_empty() {
            self.url.clone()
        } else {
            format!("{}/{key}", self.url.trim_end_matches('/'))
        }
    }

    /// When an operation started now must be over.
    fn deadline(&self) -> Instant {
        Instant::now() + self.timeout
    }

    /// Runs `fut` on the shared runtime until `deadline`; an absent key is `None`.
    fn run<T>(
        &self,
        key: &str,
        deadline: Instant,
        fut: impl Future<Output = object_store::Result<T>>,
    ) -> Result<Option<T>, StoreError> {
        let rt = runtime().map_err(|e| StoreError::Remote {
            what: self.what(key),
            cause: e.to_string(),
        })?;
        // The timer is made inside the runtime (it needs the runtime's context).
        match rt.block_on(async { tokio::time::timeout_at(deadline.into(), fut).await }) {
            Ok(Ok(v)) => Ok(Some(v)),
            Ok(Err(object_store::Error::NotFound { .. })) => Ok(None),
            Ok(Err(e)) => Err(self.error(key, e)),
            Err(_) => Err(StoreError::TimedOut {
                what: self.what(key),
                after: self.timeout,
            }),
        }
    }

    fn error(&self, key: &str, e: object_store::Error) -> StoreError {
        let what = self.what(key);
        let mut cause = full_cause(&e);
        if cause.contains("169.254.169.254") {
            cause.push_str(
                " (no AWS credentials in the environment or ~/.aws, so the EC2 instance \
                 metadata service was asked; use --anonymous for public buckets)",
            );
        }
        match e {
            object_store::Error::PermissionDenied { .. }
            | object_store::Error::Unauthenticated { .. } => StoreError::Denied { what, cause },
            _ => StoreError::Remote { what, cause },
        }
    }

    /// Size and modification time of `key`, within `deadline`.
    fn head_until(&self, key: &str, deadline: Instant) -> Result<Option<ObjectMeta>, StoreError> {
        let path = self.path(key)?;
        self.run(key, deadline, async {
            let meta = self.inner.head(&path).await?;
            Ok(ObjectMeta {
                size: meta.size,
                mtime: mtime(&meta),
            })
        })
    }

    /// `len` bytes of `key` from `start`, within `deadline`. A range starting at or past the end
    /// is refused by servers (416): when the read fails, the object's size tells whether that
    /// was the cause (then it is an empty read, as for local stores).
    fn range_until(
        &self,
        key: &str,
        start: u64,
        len: u64,
        deadline: Instant,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.path(key)?;
        if len == 0 {
            return Ok(self.head_until(key, deadline)?.map(|_| Vec::new()));
        }
        let options = GetOptions {
            range: Some(GetRange::Bounded(start..start.saturating_add(len))),
            ..GetOptions::default()
        };
        let got = self.run(key, deadline, async {
            let bytes = self.inner.get_opts(&path, options).await?.bytes().await?;
            Ok(Vec::from(bytes))
        });
        match got {
            Err(e) if !matches!(e, StoreError::TimedOut { .. }) => {
                match self.head_until(key, deadline)? {
                    None => Ok(None),
                    Some(meta) if meta.size <= start => Ok(Some(Vec::new())),
                    Some(_) => Err(e),
                }
            }
            other => other,
        }
    }
}

/// The error and its sources, one line.
fn full_cause(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// Keys and region of the AWS profile (`AWS_PROFILE`, else `default`) where the environment
/// names none.
fn with_profile(mut b: AmazonS3Builder, anonymous: bool) -> AmazonS3Builder {
    let has = |b: &AmazonS3Builder, k| b.get_config_value(&k).is_some();
    if anonymous || has(&b, AmazonS3ConfigKey::AccessKeyId) {
        return b;
    }
    let Some(profile) = super::aws_profile::load() else {
        return b;
    };
    if let (Some(id), Some(secret)) = (profile.access_key_id, profile.secret_access_key) {
        b = b.with_access_key_id(id).with_secret_access_key(secret);
        if let Some(token) = profile.session_token {
            b = b.with_token(token);
        }
    }
    let region_set =
        has(&b, AmazonS3ConfigKey::Region) || has(&b, AmazonS3ConfigKey::DefaultRegion);
    match profile.region {
        Some(region) if !region_set => b.with_region(region),
        _ => b,
    }
}

fn no_endpoint(opts: &RemoteOptions, url: &str) -> Result<(), StoreError> {
    match opts.endpoint {
        Some(_) => Err(StoreError::Invalid(format!(
            "{url}: --endpoint applies to s3:// and az:// stores only"
        ))),
        None => Ok(()),
    }
}

/// Connect and request timeouts within the operation's bound: one attempt (headers and body)
/// may take a third of it (10 s of the default 30 s), so that a stalled attempt leaves time to
/// retry.
fn client_options(opts: &RemoteOptions) -> ClientOptions {
    let attempt = (opts.timeout / 3)
        .max(Duration::from_secs(1))
        .min(opts.timeout);
    ClientOptions::new()
        .with_connect_timeout(CONNECT_TIMEOUT.min(attempt))
        .with_timeout(attempt)
        .with_pool_max_idle_per_host(64)
}

/// A few retries with short back-off, all within the operation's bound (the deadline in
/// [`ObjectStoreBackend::run`] stops whatever is left).
fn retry_config(timeout: Duration) -> RetryConfig {
    RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            base: 2.0,
        },
        max_retries: MAX_RETRIES,
        retry_timeout: timeout,
    }
}

fn mtime(meta: &object_store::ObjectMeta) -> Option<SystemTime> {
    Some(SystemTime::from(meta.last_modified))
}

impl Store for ObjectStoreBackend {
    fn get(&self, key: &str) -> Result<Option<Object>, StoreError> {
        let path = self.path(key)?;
        self.run(key, self.deadline(), async {
            let got = self.inner.get_opts(&path, GetOptions::default()).await?;
            let mtime = mtime(&got.meta);
            let bytes = got.bytes().await?;
            Ok(Object {
                bytes: Vec::from(bytes),
                mtime,
            })
        })
    }

    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Option<Vec<u8>>, StoreError> {
        self.range_until(key, start, len, self.deadline())
    }

    fn get_suffix(&self, key: &str, len: u64) -> Result<Option<(Vec<u8>, u64)>, StoreError> {
        let path = self.path(key)?;
        let deadline = self.deadline();
        let options = GetOptions {
            range: Some(GetRange::Suffix(len)),
            ..GetOptions::default()
        };
        let got = self.run(key, deadline, async {
            let got = self.inner.get_opts(&path, options).await?;
            let size = got.meta.size;
            Ok((Vec::from(got.bytes().await?), size))
        });
        match got {
            // An empty suffix, or one longer than the value, which some servers refuse: the
            // object's size, then a plain range.
            Err(e) if !matches!(e, StoreError::TimedOut { .. }) => {
                let Some(meta) = self.head_until(key, deadline)? else {
                    return Ok(None);
                };
                if len != 0 && meta.size > len {
                    return Err(e);
                }
                let start = meta.size.saturating_sub(len);
                let bytes = self.range_until(key, start, meta.size - start, deadline)?;
                Ok(bytes.map(|b| (b, meta.size)))
            }
            other => other,
        }
    }

    fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        self.head_until(key, self.deadline())
    }

    fn list_dir(&self, prefix: &str) -> Result<Vec<Entry>, StoreError> {
        if !self.listable {
            return Err(StoreError::CannotList(self.what(prefix)));
        }
        let path = self.path(prefix)?;
        let dir = (!path.as_ref().is_empty()).then_some(&path);
        let listed = self.run(prefix, self.deadline(), self.inner.list_with_delimiter(dir))?;
        let Some(listed) = listed else {
            return Ok(Vec::new());
        };
        let mut out: Vec<Entry> = listed
            .common_prefixes
            .iter()
            .filter_map(|p| p.filename())
            .map(|name| Entry {
                name: name.to_string(),
                kind: EntryKind::Prefix,
                mtime: None,
            })
            .chain(listed.objects.iter().filter_map(|m| {
                Some(Entry {
                    name: m.location.filename()?.to_string(),
                    kind: EntryKind::Object(m.size),
                    mtime: mtime(m),
                })
            }))
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out.dedup_by(|a, b| a.name == b.name);
        Ok(out)
    }

    fn mtime(&self) -> SystemTime {
        self.opened
    }

    fn describe(&self) -> String {
        self.url.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::location::parse;

    fn open(url: &str, opts: &RemoteOptions) -> Result<ObjectStoreBackend, StoreError> {
        ObjectStoreBackend::open(&parse(url).unwrap(), url, opts)
    }

    #[test]
    fn builds_every_backend_without_a_request() {
        let anonymous = RemoteOptions {
            anonymous: true,
            ..RemoteOptions::default()
        };
        for url in [
            "s3://bucket/a/b.zarr",
            "gs://bucket/a/b.zarr",
            "abfs://container@account.dfs.core.windows.net/a/b.zarr",
            "https://example.org/data/b.zarr",
            "https://s3.eu-west-1.amazonaws.com/bucket/b.zarr#mode=zarr,s3",
        ] {
            let store = open(url, &anonymous).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(store.describe(), url);
            assert_eq!(store.what("c/0"), format!("{url}/c/0"));
        }
        let s3 = open("s3://bucket/a/b.zarr", &anonymous).unwrap();
        assert_eq!(s3.path("c/0.0").unwrap().as_ref(), "a/b.zarr/c/0.0");
        assert_eq!(s3.path("").unwrap().as_ref(), "a/b.zarr");
    }

    #[test]
    fn refuses_keys_and_options_that_do_not_fit() {
        let http = open("http://127.0.0.1:9/x.zarr", &RemoteOptions::default()).unwrap();
        // Checked before any request (nothing listens on port 9).
        assert!(matches!(http.get("../y"), Err(StoreError::BadKey(_))));
        assert!(matches!(http.list_dir(""), Err(StoreError::CannotList(_))));
        let endpoint = RemoteOptions {
            endpoint: Some("http://127.0.0.1:9000".into()),
            ..RemoteOptions::default()
        };
        for url in ["gs://bucket/x", "https://example.org/x"] {
            let err = open(url, &endpoint).err().unwrap().to_string();
            assert!(err.contains("--endpoint"), "{url}: {err}");
        }
    }
}
