//! The HTTP client of every remote store. Certificate errors fail at once: they are marked as
//! final, so they are not retried (a retry cannot make a certificate trusted), and the message
//! says the cure. The stores of reference targets follow a redirect only to a URL they may read
//! ([`Redirects::Within`]): a server the references point at must not turn a read into a request
//! to another host, such as the cloud metadata service at 169.254.169.254, and have its answer
//! served as chunk bytes.

use async_trait::async_trait;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse, HttpService,
    ReqwestConnector,
};
use object_store::{ClientConfigKey, ClientOptions};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

/// Redirects one request follows at most, as HTTP clients do.
const MAX_REDIRECTS: usize = 10;

/// Where the HTTP client of a store follows redirects.
#[derive(Clone, Debug, Default)]
pub enum Redirects {
    /// Anywhere: the store the user named, whose server the user chose.
    #[default]
    Anywhere,
    /// Only to the URLs [`Within`] allows: the files references name.
    Within(Arc<Within>),
}

/// Which URLs a redirect may lead to, and the clients built to follow only those (one per set
/// of client options, shared by every store that has them: a reference set may name thousands
/// of files on one server, read over one pool of connections).
pub struct Within {
    /// True for a URL a redirect may lead to (given without its query, fragment and
    /// `user:password@`).
    allows: Allows,
    clients: Mutex<HashMap<Settings, HttpClient>>,
}

impl Within {
    /// Redirects to the URLs `allows` accepts, given without query, fragment and credentials.
    pub fn new(allows: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        Within {
            allows: Arc::new(allows),
            clients: Mutex::new(HashMap::new()),
        }
    }

    /// The client for `options`, built the first time they are asked for.
    fn client(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let settings = settings(options);
        let mut clients = self.clients.lock();
        if let Some(client) = clients.get(&settings) {
            return Ok(client.clone());
        }
        let client = HttpClient::new(Service(HttpClient::new(
            restricted(&settings, self.allows.clone()).map_err(|e| {
                object_store::Error::Generic {
                    store: "HTTP",
                    source: Box::new(e),
                }
            })?,
        )));
        clients.insert(settings, client.clone());
        Ok(client)
    }
}

impl std::fmt::Debug for Within {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Within")
    }
}

/// Which URLs a redirect may lead to.
type Allows = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// True when `allows` lets a redirect lead to `url`.
fn allowed(allows: &Allows, url: &url::Url) -> bool {
    let mut bare = url.clone();
    bare.set_query(None);
    bare.set_fragment(None);
    // Neither fails for an http(s) URL, the only ones a redirect leads to.
    let _ = bare.set_username("");
    let _ = bare.set_password(None);
    allows(bare.as_str())
}

/// Client settings by key.
type Settings = Vec<(ClientConfigKey, Option<String>)>;

/// The client settings `object_store` builds its own reqwest client from, by key.
fn settings(options: &ClientOptions) -> Settings {
    use ClientConfigKey::*;
    [
        AllowHttp,
        AllowInvalidCertificates,
        NoSystemCertificates,
        ConnectTimeout,
        Http1Only,
        Http2KeepAliveInterval,
        Http2KeepAliveTimeout,
        Http2KeepAliveWhileIdle,
        Http2MaxFrameSize,
        Http2Only,
        PoolIdleTimeout,
        PoolMaxIdlePerHost,
        ProxyUrl,
        ProxyCaCertificate,
        ProxyExcludes,
        RandomizeAddresses,
        ReadTimeout,
        Timeout,
        UserAgent,
    ]
    .into_iter()
    .map(|key| (key, options.get_config_value(&key)))
    .collect()
}

/// A reqwest client set up as `object_store` sets up its own from the same `settings`, whose
/// redirects go only where `allows` lets them.
fn restricted(
    settings: &[(ClientConfigKey, Option<String>)],
    allows: Allows,
) -> reqwest::Result<reqwest::Client> {
    let value = |key: ClientConfigKey| {
        settings
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| v.as_deref())
    };
    // As object_store reads them (a setting from the environment is kept as written).
    let flag = |key| {
        value(key).is_some_and(|v| {
            matches!(
                v.to_ascii_lowercase().as_str(),
                "1" | "true" | "on" | "yes" | "y"
            )
        })
    };
    let duration = |key| value(key).and_then(|v| humantime::parse_duration(v).ok());
    let number = |key| value(key).and_then(|v| v.parse::<u32>().ok());
    let limited = reqwest::redirect::Policy::limited(MAX_REDIRECTS);
    let policy =
        reqwest::redirect::Policy::custom(move |attempt| match allowed(&allows, attempt.url()) {
            true => limited.redirect(attempt),
            false => {
                let to = super::display_url(attempt.url().as_str());
                attempt.error(RedirectRefused(to))
            }
        });
    let user_agent = value(ClientConfigKey::UserAgent)
        .unwrap_or(concat!("zarrfs/", env!("CARGO_PKG_VERSION")))
        .to_string();
    // Compression off, as object_store has it: it would change the lengths it checks.
    let mut b = reqwest::Client::builder()
        .redirect(policy)
        .user_agent(user_agent)
        .no_gzip()
        .no_brotli()
        .no_zstd()
        .no_deflate()
        .https_only(!flag(ClientConfigKey::AllowHttp))
        .danger_accept_invalid_certs(flag(ClientConfigKey::AllowInvalidCertificates));
    if let Some(url) = value(ClientConfigKey::ProxyUrl) {
        let mut proxy = reqwest::Proxy::all(url)?;
        if let Some(pem) = value(ClientConfigKey::ProxyCaCertificate) {
            let certificate = reqwest::tls::Certificate::from_pem(pem.as_bytes())?;
            b = b.tls_certs_merge(std::iter::once(certificate));
        }
        if let Some(excludes) = value(ClientConfigKey::ProxyExcludes) {
            proxy = proxy.no_proxy(reqwest::NoProxy::from_string(excludes));
        }
        b = b.proxy(proxy);
    }
    if flag(ClientConfigKey::NoSystemCertificates) {
        b = b.tls_certs_only(std::iter::empty());
    }
    if let Some(d) = duration(ClientConfigKey::Timeout) {
        b = b.timeout(d);
    }
    if let Some(d) = duration(ClientConfigKey::ConnectTimeout) {
        b = b.connect_timeout(d);
    }
    if let Some(d) = duration(ClientConfigKey::ReadTimeout) {
        b = b.read_timeout(d);
    }
    if let Some(d) = duration(ClientConfigKey::PoolIdleTimeout) {
        b = b.pool_idle_timeout(d);
    }
    if let Some(d) = duration(ClientConfigKey::Http2KeepAliveInterval) {
        b = b.http2_keep_alive_interval(d);
    }
    if let Some(d) = duration(ClientConfigKey::Http2KeepAliveTimeout) {
        b = b.http2_keep_alive_timeout(d);
    }
    if let Some(n) = number(ClientConfigKey::PoolMaxIdlePerHost) {
        b = b.pool_max_idle_per_host(n as usize);
    }
    if let Some(n) = number(ClientConfigKey::Http2MaxFrameSize) {
        b = b.http2_max_frame_size(n);
    }
    if flag(ClientConfigKey::Http2KeepAliveWhileIdle) {
        b = b.http2_keep_alive_while_idle(true);
    }
    if flag(ClientConfigKey::Http1Only) {
        b = b.http1_only();
    }
    if flag(ClientConfigKey::Http2Only) {
        b = b.http2_prior_knowledge();
    }
    // On unless turned off, as in object_store's own clients: the load spread over a name's
    // servers.
    if flag(ClientConfigKey::RandomizeAddresses) {
        b = b.dns_resolver(Arc::new(Shuffled));
    }
    b.build()
}

/// Resolves a name as the system does, its addresses in random order, as object_store's own
/// clients take them (`RandomizeAddresses`).
struct Shuffled;

impl reqwest::dns::Resolve for Shuffled {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let mut addrs: Vec<SocketAddr> = tokio::task::spawn_blocking(move || {
                (host.as_str(), 0).to_socket_addrs().map(Iterator::collect)
            })
            .await??;
            fastrand::shuffle(&mut addrs);
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// A redirect a reference target's store does not follow.
#[derive(Debug, thiserror::Error)]
#[error(
    "redirected to {0}, outside the places the references may read: not followed (allow it \
     with --allow-target PREFIX)"
)]
struct RedirectRefused(String);

/// The reqwest client of `object_store`, with certificate errors made final, and redirects
/// followed as `redirects` says.
#[derive(Debug, Default)]
pub struct CertificateAware {
    redirects: Redirects,
}

impl CertificateAware {
    /// The client of a store whose redirects go as `redirects` says.
    pub fn new(redirects: &Redirects) -> Self {
        CertificateAware {
            redirects: redirects.clone(),
        }
    }
}

impl HttpConnector for CertificateAware {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        match &self.redirects {
            Redirects::Anywhere => {
                let inner = ReqwestConnector::default().connect(options)?;
                Ok(HttpClient::new(Service(inner)))
            }
            Redirects::Within(within) => within.client(options),
        }
    }
}

#[derive(Debug)]
struct Service(HttpClient);

#[async_trait]
impl HttpService for Service {
    async fn call(&self, req: HttpRequest) -> Result<HttpResponse, HttpError> {
        self.0.execute(req).await.map_err(|e| {
            let chain = super::object::full_cause(&e);
            match chain.to_ascii_lowercase().contains("certificate") {
                // Unknown is the kind object_store does not retry.
                true => HttpError::new(HttpErrorKind::Unknown, CertificateError(chain)),
                false => e,
            }
        })
    }
}

/// A TLS certificate the client does not trust, and what to do about it.
#[derive(Debug, thiserror::Error)]
#[error(
    "TLS certificate not trusted ({0}); not retried. If the server's certificate authority is \
     one you trust (a private CA, an emulator), name its PEM file in SSL_CERT_FILE"
)]
struct CertificateError(String);

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::dns::Resolve;

    #[test]
    fn the_targets_client_takes_address_shuffling_from_the_options_and_resolves_as_the_system() {
        // Read from the options (on by default), so the client built from them shuffles.
        let on = settings(&ClientOptions::new());
        assert!(on.contains(&(ClientConfigKey::RandomizeAddresses, Some("true".into()))));
        let off = ClientOptions::new().with_config(ClientConfigKey::RandomizeAddresses, "false");
        assert_ne!(settings(&off), on, "another client for other settings");
        // The shuffling resolver gives the system's addresses.
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let name = "localhost".parse().unwrap();
        let got: Vec<SocketAddr> = runtime.block_on(Shuffled.resolve(name)).unwrap().collect();
        let mut want: Vec<SocketAddr> = ("localhost", 0).to_socket_addrs().unwrap().collect();
        let mut sorted = got.clone();
        sorted.sort();
        want.sort();
        assert_eq!(sorted, want);
    }
}
