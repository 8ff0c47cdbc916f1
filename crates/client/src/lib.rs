//! `ApiClient`: typed async calls to a v3 API (the real service or the
//! built-in server) over HTTP with keep-alive. Every call goes through
//! [`ApiClient::call`], the one place that turns a response into `Ok(T)` or
//! a [`ClientError`] carrying the status and the server's message.
//!
//! Beside the calls: [`oauth`], the token service's grants, and [`login`],
//! the browser login (authorization code through a loopback listener) and
//! the check of a credentials file.
// No `unwrap` or `expect` outside tests: bad input is an error, never a panic.

mod attributes;
pub mod backoff;
mod blacklist;
mod clients;
mod debug;
mod error;
mod extensions;
mod filters;
mod forms;
mod groups;
pub mod login;
pub mod oauth;
mod rate;
mod receivers;
mod tags;

pub use error::ClientError;
pub use rate::{Answered, RateHeaders, answered};
pub use receivers::Page;

use listpipe_api::ErrorBody;
use reqwest::Method;
use serde::de::DeserializeOwned;
use std::sync::{Arc, Once, RwLock};
use std::time::Duration;

/// Installs rustls' ring provider once per process; without it building
/// any reqwest client panics (even for plain http://).
pub fn init_tls() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Deliberately ignored: an error means a provider is installed
        // already (by the process embedding this library), which serves.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

pub fn http_client(timeout: Duration) -> std::result::Result<reqwest::Client, ClientError> {
    init_tls();
    reqwest::Client::builder()
        .timeout(timeout)
        .pool_idle_timeout(Duration::from_secs(60))
        .user_agent(concat!("listpipe/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(ClientError::Build)
}

#[derive(Clone)]
pub struct ApiClient {
    http: reqwest::Client,
    base: String,
    token: Arc<RwLock<String>>,
}

/// What every call answers.
pub type Result<T> = std::result::Result<T, ClientError>;

impl ApiClient {
    /// A client for `base_url` (e.g. `http://127.0.0.1:8080`) with a bearer token.
    pub fn new(base_url: &str, token: &str) -> Result<Self> {
        Self::with_timeout(base_url, token, Duration::from_secs(30))
    }

    pub fn with_timeout(base_url: &str, token: &str, timeout: Duration) -> Result<Self> {
        let base = base_url.trim().trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(ClientError::BadUrl(base_url.to_string()));
        }
        Ok(ApiClient {
            http: http_client(timeout)?,
            base,
            token: Arc::new(RwLock::new(token.to_string())),
        })
    }

    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// Replaces the bearer token (after a refresh or an exchange).
    pub fn set_token(&self, token: &str) {
        *self.token.write().unwrap_or_else(|p| p.into_inner()) = token.to_string();
    }

    pub fn token(&self) -> String {
        self.token.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Sends one request and decodes the answer: the single place where a
    /// status becomes `Ok` or a typed error.
    pub async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&dyn erased::Body>,
    ) -> Result<T> {
        let bytes = self.send(method.clone(), path, query, body).await?;
        decode(&method, path, &bytes)
    }

    /// Sends one request and gives back the body of a successful answer
    /// undecoded; any other status is the error it carries.
    async fn send(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&dyn erased::Body>,
    ) -> Result<bytes::Bytes> {
        let mut req = self
            .http
            .request(method.clone(), format!("{}{path}", self.base))
            .bearer_auth(self.token());
        if !query.is_empty() {
            req = req.query(query);
        }
        if let Some(body) = body {
            // A body that cannot be written as JSON is not sent (before,
            // `{}` went in its place).
            let json = body.to_json().map_err(|source| ClientError::Encode {
                method: method.to_string(),
                path: path.to_string(),
                source,
            })?;
            req = req
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(json);
        }
        let transport = |source| ClientError::Transport {
            method: method.to_string(),
            path: path.to_string(),
            source,
        };
        let res = req.send().await.map_err(transport)?;
        let status = res.status();
        // A clock before 1970 reads as 0: reset times given as Unix times
        // then count from 1970, longer than asked, never shorter.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let rate = RateHeaders::read(res.headers(), now);
        if let Some(r) = rate {
            rate::note(r);
        }
        // Without `Retry-After`, a 429's `X-RateLimit-Reset` says how long.
        // A `Retry-After` neither seconds nor an HTTP date is not one: the
        // backoff's own delay applies.
        let retry_after = res
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| rate::retry_after(v, now))
            .or_else(|| {
                (status.as_u16() == 429)
                    .then(|| rate.and_then(|r| r.reset_secs))
                    .flatten()
            });
        let bytes = res.bytes().await.map_err(transport)?;
        if !status.is_success() {
            let message = serde_json::from_slice::<ErrorBody>(&bytes)
                .map(|b| b.error.message)
                .unwrap_or_else(|_| String::from_utf8_lossy(&bytes).chars().take(300).collect());
            return Err(ClientError::Api {
                method: method.to_string(),
                path: path.to_string(),
                status: status.as_u16(),
                message,
                retry_after,
            });
        }
        Ok(bytes)
    }

    pub(crate) async fn get<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<T> {
        self.call(Method::GET, path, query, None).await
    }
    pub(crate) async fn post<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &dyn erased::Body,
    ) -> Result<T> {
        self.call(Method::POST, path, &[], Some(body)).await
    }
    pub(crate) async fn put<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &dyn erased::Body,
    ) -> Result<T> {
        self.call(Method::PUT, path, &[], Some(body)).await
    }
    pub(crate) async fn delete(&self, path: &str, query: &[(&str, String)]) -> Result<bool> {
        self.call(Method::DELETE, path, query, None).await
    }
    /// A list of receivers kept undecoded (see [`Page`]).
    pub(crate) async fn page(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&dyn erased::Body>,
    ) -> Result<Page> {
        let bytes = self.send(method.clone(), path, query, body).await?;
        Ok(Page {
            method,
            path: path.to_string(),
            bytes,
        })
    }
}

/// A successful answer's body as `T`, which may borrow from it; the error
/// names the request and shows the body's start.
///
/// The body is checked as UTF-8 once, whole: read from bytes, serde_json
/// checks each string it borrows on its own, a tenth of an export's
/// decoding. A body not UTF-8 throughout is read from bytes as before
/// (serde_json checks only the strings it keeps).
fn decode<'a, T: serde::Deserialize<'a>>(
    method: &Method,
    path: &str,
    bytes: &'a [u8],
) -> Result<T> {
    match std::str::from_utf8(bytes) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(bytes),
    }
    .map_err(|e| ClientError::Decode {
        method: method.to_string(),
        path: path.to_string(),
        detail: format!(
            "{e} in {}",
            String::from_utf8_lossy(bytes)
                .chars()
                .take(200)
                .collect::<String>()
        ),
    })
}

/// Request bodies as trait objects, so [`ApiClient::call`] is not generic
/// over the body type (one copy of the send path, not one per body type).
pub mod erased {
    pub trait Body: Sync {
        fn to_json(&self) -> Result<Vec<u8>, serde_json::Error>;
    }
    impl<T: serde::Serialize + Sync> Body for T {
        fn to_json(&self) -> Result<Vec<u8>, serde_json::Error> {
            serde_json::to_vec(self)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    #[derive(serde::Deserialize, Debug)]
    struct Named<'a> {
        #[serde(borrow)]
        name: Cow<'a, str>,
    }

    fn named(bytes: &[u8]) -> Result<Named<'_>> {
        decode(&Method::GET, "/v3/x", bytes)
    }

    /// A body whose `Serialize` fails, as a map with non-string keys does.
    struct Unwritable;
    impl serde::Serialize for Unwritable {
        fn serialize<S: serde::Serializer>(&self, _: S) -> std::result::Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("a key that is not a string"))
        }
    }

    #[tokio::test]
    async fn a_body_that_cannot_be_written_is_not_sent_and_says_why() {
        // Nothing listens on port 9 of this address: a request sent would
        // fail as a transport error, not as the encoding error expected.
        let c = ApiClient::new("http://127.0.0.1:9", "t").unwrap();
        let err = c
            .post::<serde_json::Value>("/v3/groups", &Unwritable)
            .await
            .unwrap_err();
        assert!(matches!(err, ClientError::Encode { .. }), "{err:?}");
        assert_eq!(
            listpipe_base::cause::flat(&err),
            "POST /v3/groups: the request body cannot be written as JSON: a key that is not a string"
        );
        assert!(!err.is_transient());
    }

    #[test]
    fn a_body_is_read_the_same_whether_it_is_utf8_throughout_or_not() {
        let ok = named(r#"{"name":"Görlitz","other":"x"}"#.as_bytes()).unwrap();
        assert_eq!(ok.name, "Görlitz");
        assert!(matches!(ok.name, Cow::Borrowed(_)));
        // Not UTF-8 in a field nobody reads: read as before, from bytes.
        let skipped = named(b"{\"name\":\"Halle\",\"other\":\"\xff\"}").unwrap();
        assert_eq!(skipped.name, "Halle");
        // Not UTF-8 where it is kept: refused, naming the request.
        let err = named(b"{\"name\":\"Hal\xffle\"}").unwrap_err().to_string();
        assert!(err.contains("/v3/x"), "{err}");
    }
}
