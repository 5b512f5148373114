//! Certificate errors fail at once: the HTTP client of every remote store marks them as final,
//! so they are not retried (a retry cannot make a certificate trusted), and says the cure.

use async_trait::async_trait;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse, HttpService,
    ReqwestConnector,
};
use object_store::ClientOptions;

/// The reqwest client of `object_store`, with certificate errors made final.
#[derive(Debug, Default)]
pub struct CertificateAware;

impl HttpConnector for CertificateAware {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let inner = ReqwestConnector::default().connect(options)?;
        Ok(HttpClient::new(Service(inner)))
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
