//! An export's finished file uploaded to an object URL as a multipart upload, so the
//! object appears only when the upload completes: a reader never sees half an export.
//!
//! Decisions: the file is read in parts of [`PART_SIZE`] (S3's smallest part is 5 MiB, and
//! 10,000 parts of 16 MiB allow 160 GB), at most [`PARTS_IN_FLIGHT`] uploading at once, so
//! memory stays bounded whatever the file's size. Any failure aborts the upload, which
//! removes the parts already sent; object_store's `WriteMultipart::finish` does not abort
//! when a part failed, so the parts are driven here instead.

use std::path::Path;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use object_store::{MultipartUpload, ObjectStoreExt, PutPayload};
use tokio::io::AsyncReadExt;

use super::store;
use super::url::ObjectUrl;

/// Bytes per part (the last may be smaller).
pub const PART_SIZE: usize = 16 << 20;

/// Parts uploading at once.
pub const PARTS_IN_FLIGHT: usize = 4;

/// Why an upload did not complete: the cause, and what became of the upload (the caller
/// names the URL).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct UploadError {
    pub message: String,
}

/// Uploads `file` to `url`; returns the bytes uploaded. On failure nothing is left at `url`
/// that was not there before (the multipart upload is aborted).
pub async fn upload(file: &Path, url: &ObjectUrl, timeout: Duration) -> Result<u64, UploadError> {
    let fail = |cause: String| UploadError { message: cause };
    let not_started = |cause: String| UploadError {
        message: format!("{cause}; nothing was uploaded"),
    };
    if url.is_glob() {
        return Err(not_started(
            "an export's object URL names one object, not a pattern".into(),
        ));
    }
    let store =
        store::build(url, timeout).map_err(|e| not_started(store::cause(url, &e, timeout)))?;
    let location = object_store::path::Path::from(url.key.as_str());
    let mut local = tokio::fs::File::open(file).await.map_err(|e| {
        not_started(format!(
            "cannot read the finished export {} ({e})",
            file.display()
        ))
    })?;
    let mut upload = tokio::time::timeout(timeout, store.put_multipart(&location))
        .await
        .map_err(|_| not_started(store::timed_out(timeout)))?
        .map_err(|e| not_started(store::cause(url, &e, timeout)))?;
    match send_parts(&mut local, upload.as_mut()).await {
        Ok(sent) => match upload.complete().await {
            Ok(_) => Ok(sent),
            Err(e) => Err(aborted(upload, fail(store::cause(url, &e, timeout))).await),
        },
        Err(Part::Read(e)) => {
            let cause = format!("cannot read the finished export {} ({e})", file.display());
            Err(aborted(upload, fail(cause)).await)
        }
        Err(Part::Store(e)) => Err(aborted(upload, fail(store::cause(url, &e, timeout))).await),
    }
}

enum Part {
    Read(std::io::Error),
    Store(object_store::Error),
}

/// Sends the file's parts in order, a few at a time; the bytes sent.
async fn send_parts(
    local: &mut tokio::fs::File,
    upload: &mut dyn MultipartUpload,
) -> Result<u64, Part> {
    let mut in_flight = FuturesUnordered::new();
    let mut sent = 0u64;
    let mut first = true;
    loop {
        let mut part = Vec::with_capacity(PART_SIZE);
        while part.len() < PART_SIZE {
            let n = (&mut *local)
                .take((PART_SIZE - part.len()) as u64)
                .read_to_end(&mut part)
                .await
                .map_err(Part::Read)?;
            if n == 0 {
                break;
            }
        }
        // An empty file is one empty part: the object is created, empty.
        if part.is_empty() && !first {
            break;
        }
        first = false;
        let last = part.len() < PART_SIZE;
        sent += part.len() as u64;
        in_flight.push(upload.put_part(PutPayload::from(part)));
        if in_flight.len() >= PARTS_IN_FLIGHT
            && let Some(done) = in_flight.next().await
        {
            done.map_err(Part::Store)?;
        }
        if last {
            break;
        }
    }
    while let Some(done) = in_flight.next().await {
        done.map_err(Part::Store)?;
    }
    Ok(sent)
}

/// Aborts the upload (its parts are removed) and returns `error`, noting when the abort
/// itself failed (the store then removes the parts by its own lifecycle rules, if any).
async fn aborted(mut upload: Box<dyn MultipartUpload>, error: UploadError) -> UploadError {
    match upload.abort().await {
        Ok(()) => UploadError {
            message: format!(
                "{}; the upload was aborted and no object was written",
                error.message
            ),
        },
        Err(e) => {
            tracing::warn!(target: log_target!(), cause = %listpipe_base::cause::root(&e), "aborting a multipart upload failed");
            UploadError {
                message: format!(
                    "{}; no object was written (aborting the upload failed too: its parts may remain until the bucket's lifecycle rules remove them)",
                    error.message
                ),
            }
        }
    }
}
