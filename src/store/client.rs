//! Building the `object_store` client of a remote location: S3, GCS, Azure Blob or plain HTTP,
//! with credentials from the providers' usual variables and files, and time bounds a
//! filesystem user accepts.

use super::location::Location;
use super::tls::{CertificateAware, Redirects};
use super::StoreError;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::http::HttpBuilder;
use object_store::list::PaginatedListStore;
use object_store::{BackoffConfig, ClientConfigKey, ObjectStore, RetryConfig};
use std::sync::Arc;
use std::time::Duration;

/// How a remote store is reached: the command line's remote options.
#[derive(Clone, Debug)]
pub struct RemoteOptions {
    /// An S3-compatible server (MinIO, Ceph, s3s), a GCS or an Azure endpoint (emulators),
    /// addressed path-style.
    pub endpoint: Option<String>,
    /// The S3 region (default: AWS_REGION / AWS_DEFAULT_REGION, else us-east-1).
    pub region: Option<String>,
    /// Unsigned requests (public buckets); no credentials are looked for.
    pub anonymous: bool,
    /// The longest one store operation may take, retries included.
    pub timeout: Duration,
    /// Reference sets and Icechunk repositories: the version to mount (a branch, a tag or a
    /// snapshot id; default the tip of `main`).
    pub version: Option<String>,
    /// Reference sets and Icechunk repositories: URL or path prefixes their targets may be read
    /// from, besides the place of the references themselves.
    pub allow_targets: Vec<String>,
    /// Where the store's HTTP client follows redirects: anywhere for the store named on the
    /// command line; for the stores of reference targets, only where their references may read.
    pub redirects: Redirects,
}

impl Default for RemoteOptions {
    fn default() -> Self {
        RemoteOptions {
            endpoint: None,
            region: None,
            anonymous: false,
            timeout: Duration::from_secs(30),
            version: None,
            allow_targets: Vec::new(),
            redirects: Redirects::Anywhere,
        }
    }
}

/// Connection attempts give up after this long (or one attempt's time, when shorter).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Retries of one request on 5xx, throttling, resets and timeouts.
const MAX_RETRIES: usize = 4;

/// The client of a remote location: its store, its paginated listing where it can list (plain
/// HTTP cannot), and the key prefix inside its bucket or container.
pub struct Client<'a> {
    pub store: Arc<dyn ObjectStore>,
    pub pages: Option<Arc<dyn PaginatedListStore>>,
    pub prefix: &'a str,
}

/// A client that lists, from a built bucket or container client.
fn listing<T: ObjectStore + PaginatedListStore>(built: T, prefix: &str) -> Client<'_> {
    let built = Arc::new(built);
    Client {
        store: built.clone(),
        pages: Some(built),
        prefix,
    }
}

/// The client of a remote `location` (named `url` in messages).
pub fn build<'a>(
    location: &'a Location,
    url: &str,
    opts: &RemoteOptions,
) -> Result<Client<'a>, StoreError> {
    let invalid = |e: object_store::Error| StoreError::Invalid(format!("{url}: {e}"));
    let no_endpoint = || match opts.endpoint {
        Some(_) => Err(StoreError::Invalid(format!(
            "{url}: --endpoint applies to s3://, gs:// and az:// stores only"
        ))),
        None => Ok(()),
    };
    Ok(match location {
        Location::S3 {
            bucket,
            prefix,
            endpoint,
            region,
            virtual_hosted,
        } => {
            let endpoint = match &opts.endpoint {
                Some(e) => Some((e.as_str(), false)),
                None => endpoint.as_deref().map(|e| (e, *virtual_hosted)),
            };
            let b = s3(opts, bucket, endpoint, region.as_deref());
            listing(b.build().map_err(invalid)?, prefix)
        }
        Location::Gcs { bucket, prefix } => {
            listing(gcs(opts, bucket).build().map_err(invalid)?, prefix)
        }
        Location::Azure { url: az, prefix } => {
            listing(azure(opts, az).build().map_err(invalid)?, prefix)
        }
        Location::Http { url: base } => {
            no_endpoint()?;
            let mut b = HttpBuilder::new()
                .with_url(base.as_str())
                .with_config(ClientConfigKey::AllowHttp, "true")
                .with_http_connector(CertificateAware::new(&opts.redirects))
                .with_retry(retry_config(opts.timeout));
            for (key, value) in client_config(opts) {
                b = b.with_config(key, value);
            }
            Client {
                store: Arc::new(b.build().map_err(invalid)?),
                pages: None,
                prefix: "",
            }
        }
        Location::Local { .. } => {
            return Err(StoreError::Invalid(format!("{url}: not a remote store")))
        }
    })
}

/// S3: AWS_* variables, then the AWS profile; `--region` over the URL's region; `endpoint`
/// (`--endpoint`, else the URL's: path-style, or virtual-hosted when its flag says so) over
/// AWS_ENDPOINT_URL_S3 and AWS_ENDPOINT_URL; plain http allowed when the endpoint used is
/// http://.
fn s3(
    opts: &RemoteOptions,
    bucket: &str,
    endpoint: Option<(&str, bool)>,
    region: Option<&str>,
) -> AmazonS3Builder {
    let profile = super::aws_profile::load();
    let mut b = with_profile(AmazonS3Builder::from_env(), profile, opts.anonymous)
        .with_bucket_name(bucket)
        .with_http_connector(CertificateAware::new(&opts.redirects))
        .with_retry(retry_config(opts.timeout));
    for (key, value) in client_config(opts) {
        b = b.with_config(AmazonS3ConfigKey::Client(key), value);
    }
    if let Some(r) = opts.region.as_deref().or(region) {
        b = b.with_region(r);
    }
    if let Some((e, virtual_hosted)) = endpoint {
        // Both keys: the client prefers AWS_ENDPOINT_URL_S3's over AWS_ENDPOINT_URL's, and an
        // endpoint given explicitly wins over both, as with the aws command line.
        b = b
            .with_endpoint(e)
            .with_config(AmazonS3ConfigKey::S3Endpoint, e)
            .with_virtual_hosted_style_request(virtual_hosted);
    }
    let plain_http = [AmazonS3ConfigKey::S3Endpoint, AmazonS3ConfigKey::Endpoint]
        .iter()
        .find_map(|k| b.get_config_value(k))
        .is_some_and(|e| e.starts_with("http://"));
    // AWS_ALLOW_HTTP from the environment stays for an https:// endpoint.
    match plain_http {
        true => b.with_allow_http(true),
        false => b,
    }
    .with_skip_signature(opts.anonymous)
}

/// Azure: AZURE_* variables (and the az command line's AZURE_STORAGE_ACCOUNT/KEY), the account
/// and container from the URL, `--endpoint` for Azurite.
fn azure(opts: &RemoteOptions, url: &str) -> MicrosoftAzureBuilder {
    let mut b = MicrosoftAzureBuilder::from_env();
    if let Ok(account) = std::env::var("AZURE_STORAGE_ACCOUNT") {
        b = b.with_account(account);
    }
    if let Ok(key) = std::env::var("AZURE_STORAGE_KEY") {
        b = b.with_access_key(key);
    }
    b = b
        .with_url(url)
        .with_http_connector(CertificateAware::new(&opts.redirects))
        .with_retry(retry_config(opts.timeout))
        .with_skip_signature(opts.anonymous);
    for (key, value) in client_config(opts) {
        b = b.with_config(AzureConfigKey::Client(key), value);
    }
    match &opts.endpoint {
        Some(e) if e.starts_with("http://") => b.with_endpoint(e.clone()).with_allow_http(true),
        Some(e) => b.with_endpoint(e.clone()),
        None => b,
    }
}

/// GCS: GOOGLE_* variables (GOOGLE_APPLICATION_CREDENTIALS, GOOGLE_SERVICE_ACCOUNT, ...),
/// `--endpoint` for an emulator (fake-gcs-server), plain http allowed for an http:// one.
fn gcs(opts: &RemoteOptions, bucket: &str) -> GoogleCloudStorageBuilder {
    let mut b = GoogleCloudStorageBuilder::from_env()
        .with_bucket_name(bucket)
        .with_http_connector(CertificateAware::new(&opts.redirects))
        .with_retry(retry_config(opts.timeout))
        .with_skip_signature(opts.anonymous);
    for (key, value) in client_config(opts) {
        b = b.with_config(GoogleConfigKey::Client(key), value);
    }
    match &opts.endpoint {
        Some(e) if e.starts_with("http://") => b
            .with_base_url(e)
            .with_config(GoogleConfigKey::Client(ClientConfigKey::AllowHttp), "true"),
        Some(e) => b.with_base_url(e),
        None => b,
    }
}

/// The AWS `profile`'s settings where the environment gives none, as the aws command line
/// takes them: its keys unless the environment has keys or requests go unsigned, and its region
/// unless the environment names one, wherever the keys come from.
fn with_profile(
    mut b: AmazonS3Builder,
    profile: Option<super::aws_profile::Profile>,
    anonymous: bool,
) -> AmazonS3Builder {
    let has = |b: &AmazonS3Builder, k| b.get_config_value(&k).is_some();
    let Some(profile) = profile else {
        return b;
    };
    if !anonymous && !has(&b, AmazonS3ConfigKey::AccessKeyId) {
        if let (Some(id), Some(secret)) = (profile.access_key_id, profile.secret_access_key) {
            b = b.with_access_key_id(id).with_secret_access_key(secret);
            if let Some(token) = profile.session_token {
                b = b.with_token(token);
            }
        } else if let Some(how) = profile.keys_through {
            log::warn!(
                "AWS profile {} gets its keys through {how}, which zarrfs does not read: \
                 export them first (eval \"$(aws configure export-credentials --format env)\")",
                profile.name
            );
        }
    }
    let region_set =
        has(&b, AmazonS3ConfigKey::Region) || has(&b, AmazonS3ConfigKey::DefaultRegion);
    match profile.region {
        Some(region) if !region_set => b.with_region(region),
        _ => b,
    }
}

/// Time bounds within the operation's (`--timeout`). An attempt that receives nothing for a
/// third of it (10 s of the default 30 s), headers or body, is given up, so that a stalled
/// attempt leaves time to retry; connecting, after 3 s. One that keeps receiving runs on to the
/// operation's own bound: a cap on the whole attempt would cut a large body on a slow link, and
/// object_store resumes a cut body only where the server gives an ETag, so each retry would be
/// cut again. Set key by key, so that the client settings a builder read from the environment
/// (`allow_http`, proxies, ...) stay.
fn client_config(opts: &RemoteOptions) -> [(ClientConfigKey, String); 4] {
    let stall = (opts.timeout / 3)
        .max(Duration::from_secs(1))
        .min(opts.timeout);
    let ms = |d: Duration| format!("{}ms", d.as_millis());
    [
        (
            ClientConfigKey::ConnectTimeout,
            ms(CONNECT_TIMEOUT.min(stall)),
        ),
        (ClientConfigKey::ReadTimeout, ms(stall)),
        (ClientConfigKey::Timeout, ms(opts.timeout)),
        (ClientConfigKey::PoolMaxIdlePerHost, "64".into()),
    ]
}

/// A few retries with short back-off, all within the operation's bound (the store's deadline
/// on every call stops whatever is left).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::aws_profile::Profile;

    fn profile(region: Option<&str>) -> Option<Profile> {
        Some(Profile {
            name: "p".into(),
            access_key_id: Some("AKPROFILE".into()),
            secret_access_key: Some("profile-secret".into()),
            region: region.map(String::from),
            ..Profile::default()
        })
    }

    fn value(b: &AmazonS3Builder, key: AmazonS3ConfigKey) -> Option<String> {
        b.get_config_value(&key)
    }

    /// Keys in the environment and the region in `~/.aws/config` only: the profile's region
    /// applies (else S3 answers a request signed for us-east-1 with a bare 301), its keys not.
    #[test]
    fn the_profile_region_applies_whatever_gives_the_keys() {
        let env = || {
            AmazonS3Builder::new()
                .with_access_key_id("AKENV")
                .with_secret_access_key("env-secret")
        };
        let b = with_profile(env(), profile(Some("eu-west-3")), false);
        assert_eq!(
            value(&b, AmazonS3ConfigKey::Region).as_deref(),
            Some("eu-west-3")
        );
        assert_eq!(
            value(&b, AmazonS3ConfigKey::AccessKeyId).as_deref(),
            Some("AKENV")
        );
        let unsigned = with_profile(AmazonS3Builder::new(), profile(Some("eu-west-3")), true);
        assert_eq!(
            value(&unsigned, AmazonS3ConfigKey::Region).as_deref(),
            Some("eu-west-3")
        );
        assert_eq!(value(&unsigned, AmazonS3ConfigKey::AccessKeyId), None);
        let keys = with_profile(AmazonS3Builder::new(), profile(None), false);
        assert_eq!(
            value(&keys, AmazonS3ConfigKey::AccessKeyId).as_deref(),
            Some("AKPROFILE")
        );
        // A region in the environment wins.
        let named = with_profile(
            env().with_region("ap-south-1"),
            profile(Some("eu-west-3")),
            false,
        );
        assert_eq!(
            value(&named, AmazonS3ConfigKey::Region).as_deref(),
            Some("ap-south-1")
        );
    }
}
