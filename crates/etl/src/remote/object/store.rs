//! One client per bucket, configured from the environment in each cloud's usual way
//! (`AmazonS3Builder::from_env`, `GoogleCloudStorageBuilder::from_env`,
//! `MicrosoftAzureBuilder::from_env`): `AWS_ACCESS_KEY_ID`, `AWS_REGION`, `AWS_ENDPOINT_URL`
//! (an S3-compatible store such as MinIO) with `AWS_ALLOW_HTTP=true` for a plain-http
//! endpoint; `GOOGLE_APPLICATION_CREDENTIALS`; `AZURE_STORAGE_ACCOUNT_NAME` and its key. And
//! what a failure of the store means, in words that name the object and never a credential.
//!
//! Decisions: connecting is bounded by the pipeline's `timeout_secs`; a whole request only by
//! [`REQUEST_CEILING`], since a large object's download is one request (the caller bounds
//! each wait for an answer or for the next bytes by `timeout_secs` instead). Failures that may
//! pass (5xx, a connection reset) are retried by object_store itself, [`RETRIES`] times
//! with the backoff the HTTP downloads use.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::{BackoffConfig, ClientConfigKey, ObjectStore, RetryConfig};

use super::url::{Cloud, ObjectUrl};

/// Tries after the first for a request that may pass (as for URL downloads).
pub const RETRIES: usize = 3;

/// The longest one request may take, body included (a large download or upload part).
pub const REQUEST_CEILING: Duration = Duration::from_secs(60 * 60);

/// The clients of one run, one per cloud and bucket, built when first needed.
pub struct Stores {
    timeout: Duration,
    built: HashMap<(Cloud, String), Arc<dyn ObjectStore>>,
}

impl Stores {
    pub fn new(timeout: Duration) -> Stores {
        Stores {
            timeout,
            built: HashMap::new(),
        }
    }

    /// The client for the URL's bucket.
    pub fn get(&mut self, url: &ObjectUrl) -> Result<Arc<dyn ObjectStore>, object_store::Error> {
        let id = (url.cloud, url.bucket.clone());
        if let Some(store) = self.built.get(&id) {
            return Ok(store.clone());
        }
        let store = build(url, self.timeout)?;
        self.built.insert(id, store.clone());
        Ok(store)
    }
}

/// A client for the URL's bucket, configured from the environment.
pub fn build(
    url: &ObjectUrl,
    timeout: Duration,
) -> Result<Arc<dyn ObjectStore>, object_store::Error> {
    listpipe_client::init_tls();
    let client = [
        (
            ClientConfigKey::ConnectTimeout,
            format!("{}s", timeout.as_secs().max(1)),
        ),
        (
            ClientConfigKey::Timeout,
            format!("{}s", REQUEST_CEILING.as_secs()),
        ),
        (
            ClientConfigKey::UserAgent,
            concat!("listpipe/", env!("CARGO_PKG_VERSION")).to_string(),
        ),
    ];
    let retry = RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(5),
            base: 2.0,
        },
        max_retries: RETRIES,
        retry_timeout: Duration::from_secs(3 * 60),
    };
    Ok(match url.cloud {
        Cloud::S3 => {
            let mut b = AmazonS3Builder::from_env()
                .with_bucket_name(&url.bucket)
                .with_retry(retry);
            for (k, v) in client {
                b = b.with_config(AmazonS3ConfigKey::Client(k), v);
            }
            Arc::new(b.build()?)
        }
        Cloud::Gcs => {
            let mut b = GoogleCloudStorageBuilder::from_env()
                .with_bucket_name(&url.bucket)
                .with_retry(retry);
            for (k, v) in client {
                b = b.with_config(GoogleConfigKey::Client(k), v);
            }
            Arc::new(b.build()?)
        }
        Cloud::Azure => {
            let mut b = MicrosoftAzureBuilder::from_env()
                .with_container_name(&url.bucket)
                .with_retry(retry);
            for (k, v) in client {
                b = b.with_config(AzureConfigKey::Client(k), v);
            }
            Arc::new(b.build()?)
        }
    })
}

/// What a failure of the store means for `url`, and what to do: the cause part of a
/// message that names the URL. object_store's own text is used only where no case below
/// fits, and then only its innermost cause (a status line or a connection error), which
/// holds no credential: they travel in headers, never in the request's URL.
pub fn cause(url: &ObjectUrl, e: &object_store::Error, timeout: Duration) -> String {
    let cloud = url.cloud;
    let text = listpipe_base::cause::Chain(e).to_string();
    match e {
        object_store::Error::NotFound { .. } if missing_bucket(&text) => format!(
            "the {word} \"{bucket}\" does not exist; check the {word} in the URL{endpoint}",
            word = cloud.bucket_word(),
            bucket = url.bucket,
            endpoint = if cloud == Cloud::S3 {
                " (and AWS_ENDPOINT_URL or AWS_REGION)"
            } else {
                ""
            }
        ),
        object_store::Error::NotFound { .. } => {
            "not found; check the bucket and key in the URL".to_string()
        }
        object_store::Error::PermissionDenied { .. }
        | object_store::Error::Unauthenticated { .. } => {
            format!(
                "access denied; check the credentials in the environment ({}) and that they may use this object",
                cloud.credentials_hint()
            )
        }
        object_store::Error::Generic { .. }
            if text.contains("HTTP scheme is not allowed")
                || text.contains("URL scheme is not allowed") =>
        {
            "the endpoint is plain http; set AWS_ALLOW_HTTP=true to allow it".to_string()
        }
        _ => match http_kind(e) {
            Some(object_store::client::HttpErrorKind::Timeout) => timed_out(timeout),
            Some(object_store::client::HttpErrorKind::Connect) => {
                format!("cannot connect ({})", listpipe_base::cause::root(e))
            }
            _ => match status(&text) {
                Some(code) if code >= 500 => format!("the store failed (HTTP {code})"),
                Some(code) => format!("the store refused (HTTP {code})"),
                None => listpipe_base::cause::root(e),
            },
        },
    }
}

/// The words for a wait longer than the pipeline's timeout.
pub fn timed_out(timeout: Duration) -> String {
    format!("no answer within {} s (timed out)", timeout.as_secs())
}

/// Whether a "not found" is the bucket's, by the codes S3, GCS and Azure answer with.
fn missing_bucket(text: &str) -> bool {
    ["NoSuchBucket", "ContainerNotFound", "bucket does not exist"]
        .iter()
        .any(|code| text.contains(code))
}

/// The kind of the HTTP failure under `e`, if one is.
fn http_kind(e: &object_store::Error) -> Option<object_store::client::HttpErrorKind> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(http) = c.downcast_ref::<object_store::client::HttpError>() {
            return Some(http.kind());
        }
        cause = c.source();
    }
    None
}

/// The status code in object_store's "Server returned non-2xx status code: 503 ..." line.
fn status(text: &str) -> Option<u16> {
    let after = text.split("status code: ").nth(1)?;
    after.get(..3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url() -> ObjectUrl {
        ObjectUrl::parse("s3://exports/daily.csv").unwrap()
    }

    fn not_found(body: &str) -> object_store::Error {
        object_store::Error::NotFound {
            path: "daily.csv".into(),
            source: body.to_string().into(),
        }
    }

    #[test]
    fn a_missing_bucket_is_told_from_a_missing_object() {
        let t = Duration::from_secs(30);
        assert_eq!(
            cause(&url(), &not_found("<Code>NoSuchBucket</Code>"), t),
            "the bucket \"exports\" does not exist; check the bucket in the URL (and AWS_ENDPOINT_URL or AWS_REGION)"
        );
        assert_eq!(
            cause(&url(), &not_found("<Code>NoSuchKey</Code>"), t),
            "not found; check the bucket and key in the URL"
        );
    }

    #[test]
    fn a_refusal_names_the_variables_that_hold_the_credentials() {
        let e = object_store::Error::PermissionDenied {
            path: "daily.csv".into(),
            source: "AccessDenied".to_string().into(),
        };
        assert_eq!(
            cause(&url(), &e, Duration::from_secs(30)),
            "access denied; check the credentials in the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN), or the machine's role) and that they may use this object"
        );
    }

    #[test]
    fn a_status_line_is_read_for_its_code() {
        assert_eq!(
            status("Server returned non-2xx status code: 503 Service Unavailable: x"),
            Some(503)
        );
        assert_eq!(status("connection refused"), None);
    }
}
