//! Objects read for a run: a glob's key matched against a listing of its folder, and one
//! object downloaded to one file, streamed chunk by chunk (never whole in memory), asked
//! with its remembered ETag (`If-None-Match`) so an unchanged object is not read again,
//! and checked complete (as many bytes as the store said it holds) before anyone reads it.
//!
//! Decision: every wait (for the store's answer, for the next bytes, for the next page of a
//! listing) is bounded by the pipeline's `timeout_secs`, as for URLs; object_store's own
//! retries run within it, and a broken transfer is resumed by object_store from where it
//! stopped (a range request on the same ETag).

use std::path::Path;
use std::time::Duration;

use futures::StreamExt;
use object_store::{GetOptions, ObjectStore};
use tokio::io::AsyncWriteExt;

use super::store;
use super::url::ObjectUrl;
use crate::remote::RemoteError;
use crate::remote::download::Got;
use crate::remote::validators::Validators;

/// The objects a glob URL matches, in key order; an error when none does.
pub async fn expand(
    store: &dyn ObjectStore,
    url: &ObjectUrl,
    timeout: Duration,
) -> Result<Vec<ObjectUrl>, RemoteError> {
    let failed = |cause: String| RemoteError::Download {
        url: url.to_string(),
        cause,
    };
    let pattern = glob::Pattern::new(&url.key)
        .map_err(|e| failed(format!("the key is not a valid pattern ({e})")))?;
    let options = glob::MatchOptions {
        case_sensitive: true,
        // `*` stays within one folder, as a local glob does.
        require_literal_separator: true,
        require_literal_leading_dot: false,
    };
    let prefix = url.list_prefix();
    let prefix = (!prefix.is_empty()).then(|| object_store::path::Path::from(prefix));
    let mut listing = store.list(prefix.as_ref());
    let mut keys = Vec::new();
    loop {
        let next = tokio::time::timeout(timeout, listing.next())
            .await
            .map_err(|_| failed(store::timed_out(timeout)))?;
        match next {
            None => break,
            Some(Ok(meta)) => {
                let key = meta.location.to_string();
                if pattern.matches_with(&key, options) {
                    keys.push(key);
                }
            }
            Some(Err(e)) => return Err(failed(store::cause(url, &e, timeout))),
        }
    }
    if keys.is_empty() {
        return Err(failed(format!(
            "no object matches; check the pattern and the {} in `source`",
            url.cloud.bucket_word()
        )));
    }
    keys.sort();
    Ok(keys.iter().map(|k| url.with_key(k)).collect())
}

/// Downloads the object into `dest` (created or truncated), asking with `known`'s ETag.
pub async fn download(
    store: &dyn ObjectStore,
    url: &ObjectUrl,
    dest: &Path,
    known: Option<&Validators>,
    timeout: Duration,
) -> Result<Got, RemoteError> {
    let failed = |cause: String| RemoteError::Download {
        url: url.to_string(),
        cause,
    };
    let mut options = GetOptions::new().with_if_none_match(known.and_then(|v| v.etag.clone()));
    if options.if_none_match.is_none() {
        options.if_modified_since = known
            .and_then(|v| v.last_modified.as_deref())
            .and_then(|d| chrono::DateTime::parse_from_rfc2822(d).ok())
            .map(|d| d.to_utc());
    }
    let location = object_store::path::Path::from(url.key.as_str());
    let answer = tokio::time::timeout(timeout, store.get_opts(&location, options))
        .await
        .map_err(|_| failed(store::timed_out(timeout)))?;
    let got = match answer {
        Err(object_store::Error::NotModified { .. }) if known.is_some() => {
            return Ok(Got::Unchanged);
        }
        Err(e) => return Err(failed(store::cause(url, &e, timeout))),
        Ok(got) => got,
    };
    let size = got.range.end - got.range.start;
    let etag = got.meta.e_tag.clone();
    let last_modified = Some(
        got.meta
            .last_modified
            .format("%a, %d %b %Y %H:%M:%S GMT")
            .to_string(),
    );
    let write = |source| RemoteError::Write {
        url: url.to_string(),
        file: dest.to_path_buf(),
        source,
    };
    let file = tokio::fs::File::create(dest).await.map_err(write)?;
    let mut out = tokio::io::BufWriter::with_capacity(1 << 20, file);
    let mut body = got.into_stream();
    let mut received: u64 = 0;
    let broke_off = |received: u64, why: String| {
        failed(format!(
            "the transfer broke off after {received} of {size} bytes ({why}); nothing was imported"
        ))
    };
    loop {
        let next = tokio::time::timeout(timeout, body.next())
            .await
            .map_err(|_| broke_off(received, store::timed_out(timeout)))?;
        match next {
            None => break,
            Some(Ok(bytes)) => {
                received += bytes.len() as u64;
                out.write_all(&bytes).await.map_err(write)?;
            }
            Some(Err(e)) => return Err(broke_off(received, store::cause(url, &e, timeout))),
        }
    }
    out.flush().await.map_err(write)?;
    if received != size {
        return Err(failed(format!(
            "the store announced {size} bytes and sent {received}; the download is incomplete and nothing was imported"
        )));
    }
    Ok(Got::Downloaded {
        etag,
        last_modified,
    })
}
