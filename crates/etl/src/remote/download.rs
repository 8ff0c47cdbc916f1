//! One URL downloaded to one file: streamed chunk by chunk to disk (never whole in memory),
//! asked conditionally when validators are known, retried on what may pass (5xx, 429,
//! connection errors, a body cut off), and checked complete before anyone reads it.
//!
//! Decision: a download is complete only when the body ended cleanly *and* its length is
//! the `Content-Length` the server announced (when it announced one); anything else is an
//! error, so a cut transfer is never imported as a whole export. Every message names the URL
//! as [`super::url::shown`] shows it, and reqwest's own errors are stripped of their URL
//! (`without_url`) before their text is used: the password in `https://user:pass@host/` is
//! never printed.

use std::path::Path;
use std::time::Duration;

use reqwest::header::{ETAG, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED, RETRY_AFTER};
use reqwest::{StatusCode, Url};
use tokio::io::AsyncWriteExt;

use super::RemoteError;
use super::validators::Validators;
use listpipe_client::backoff;

/// Tries after the first for a failure that may pass: with the backoff's windows (200 ms,
/// 400 ms, 800 ms) a server restarting gets about a second and a half.
pub(super) const RETRIES: u32 = 3;

/// What a download came to.
#[derive(Debug)]
pub enum Got {
    /// `304 Not Modified`: the remembered content is current; nothing was written.
    Unchanged,
    /// The body is in the file, whole; the validators it came with.
    Downloaded {
        etag: Option<String>,
        last_modified: Option<String>,
    },
}

/// Why one try failed, and whether another may do better.
struct Failed {
    cause: String,
    transient: bool,
    retry_after: Option<u64>,
}

/// Downloads `url` into `dest` (created or truncated), asking with `known`'s validators.
pub(super) async fn download(
    client: &reqwest::Client,
    url: &Url,
    shown: &str,
    dest: &Path,
    known: Option<&Validators>,
    timeout: Duration,
) -> Result<Got, RemoteError> {
    let mut attempt = 0;
    loop {
        match try_once(client, url, dest, known, timeout).await {
            Ok(got) => return Ok(got),
            Err(Attempt::Write(source)) => {
                return Err(RemoteError::Write {
                    url: shown.to_string(),
                    file: dest.to_path_buf(),
                    source,
                });
            }
            Err(Attempt::Failed(f)) if f.transient && attempt < RETRIES => {
                tracing::debug!(target: log_target!(), url = shown, attempt, cause = %f.cause, "download retried");
                tokio::time::sleep(backoff::delay(attempt, f.retry_after.map(|s| s.min(30)))).await;
                attempt += 1;
            }
            Err(Attempt::Failed(f)) => {
                let tries = if attempt > 0 {
                    format!(" ({} tries)", attempt + 1)
                } else {
                    String::new()
                };
                return Err(RemoteError::Download {
                    url: format!("{shown}{tries}"),
                    cause: f.cause,
                });
            }
        }
    }
}

enum Attempt {
    Failed(Failed),
    Write(std::io::Error),
}

fn failed(cause: impl Into<String>, transient: bool) -> Attempt {
    Attempt::Failed(Failed {
        cause: cause.into(),
        transient,
        retry_after: None,
    })
}

async fn try_once(
    client: &reqwest::Client,
    url: &Url,
    dest: &Path,
    known: Option<&Validators>,
    timeout: Duration,
) -> Result<Got, Attempt> {
    let mut request = client.get(url.clone());
    if let Some(v) = known {
        if let Some(etag) = &v.etag {
            request = request.header(IF_NONE_MATCH, etag);
        }
        if let Some(date) = &v.last_modified {
            request = request.header(IF_MODIFIED_SINCE, date);
        }
    }
    let mut response = request.send().await.map_err(|e| {
        // A server that did not answer within the timeout is not asked again: it
        // would most likely cost the same wait again.
        let transient = !e.is_timeout();
        failed(request_cause(e, timeout), transient)
    })?;
    let status = response.status();
    if status == StatusCode::NOT_MODIFIED && known.is_some() {
        return Ok(Got::Unchanged);
    }
    if !status.is_success() {
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok());
        let (cause, transient) = status_cause(status);
        return Err(Attempt::Failed(Failed {
            cause,
            transient,
            retry_after,
        }));
    }
    let header = |name| {
        response
            .headers()
            .get(name)
            .and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok())
            .map(str::to_string)
    };
    let (etag, last_modified) = (header(ETAG), header(LAST_MODIFIED));
    let announced = response.content_length();
    let file = tokio::fs::File::create(dest)
        .await
        .map_err(Attempt::Write)?;
    let mut out = tokio::io::BufWriter::with_capacity(1 << 20, file);
    let mut received: u64 = 0;
    loop {
        match response.chunk().await {
            Ok(Some(bytes)) => {
                received += bytes.len() as u64;
                out.write_all(&bytes).await.map_err(Attempt::Write)?;
            }
            Ok(None) => break,
            Err(e) => {
                let of = announced.map(|n| format!(" of {n}")).unwrap_or_default();
                return Err(failed(
                    format!(
                        "the transfer broke off after {received}{of} bytes ({}); nothing was imported",
                        listpipe_base::cause::root(&e.without_url())
                    ),
                    true,
                ));
            }
        }
    }
    out.flush().await.map_err(Attempt::Write)?;
    if let Some(n) = announced
        && n != received
    {
        return Err(failed(
            format!(
                "the server announced {n} bytes and sent {received}; the download is incomplete and nothing was imported"
            ),
            true,
        ));
    }
    Ok(Got::Downloaded {
        etag,
        last_modified,
    })
}

/// A request that got no answer, in words.
fn request_cause(e: reqwest::Error, timeout: Duration) -> String {
    let e = e.without_url();
    if e.is_timeout() {
        format!("no answer within {} s (timed out)", timeout.as_secs())
    } else if e.is_connect() {
        format!("cannot connect ({})", listpipe_base::cause::root(&e))
    } else {
        format!("the request failed ({})", listpipe_base::cause::root(&e))
    }
}

/// A status other than success, in words, and whether trying again may help.
fn status_cause(status: StatusCode) -> (String, bool) {
    let code = status.as_u16();
    match code {
        404 | 410 => (
            format!("not found (HTTP {code}); check the URL in `source`"),
            false,
        ),
        401 | 403 => (
            format!(
                "access denied (HTTP {code}); check the credentials (user:password in the URL) and that they may read this file"
            ),
            false,
        ),
        408 | 429 => (
            format!("the server asked to come back later (HTTP {code})"),
            true,
        ),
        500..=599 => (format!("the server failed (HTTP {code})"), true),
        _ => (format!("the server refused (HTTP {code})"), false),
    }
}
