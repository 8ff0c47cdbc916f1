//! URL sources: a step whose `source` (or an entry of `paths`) is an `http://` or `https://`
//! URL reads a copy downloaded for the run. [`fetch`] downloads every URL of a step's
//! source into a temporary folder under `.listpipe/downloads/` and hands back the same
//! source with the URLs replaced by the copies, which the source stage then reads as local
//! files (compressed or not, by the URL's file name or `format`). The folder is removed
//! when the step is done with it.
//!
//! When every entry of the source is a URL, the step remembers their `ETag` and
//! `Last-Modified` (see [`validators`]): the next run asks conditionally, and when every URL
//! answers `304 Not Modified` the step is skipped as unchanged. The validators are saved by
//! [`Ready::remember`], which the run calls only once the step finished without failures, so
//! a failed run downloads again next time. A source mixing local files and URLs is always
//! read whole: the local files may have changed.
//!
//! Loading a pipeline stays offline: URL sources are downloaded by `run` only (`check` says
//! so), so the column names a step maps are checked only when the download is read
//! (`PrepareError::MissingColumn`, exit 2).

mod download;
pub mod url;
pub mod validators;

use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::Url;
use tempfile::TempDir;

use crate::source::SourceSpec;
use crate::state_file::WriteError;
use download::Got;
use validators::{Remembered, Validators};

pub use url::is_url;

/// A URL source that could not be had.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("cannot download {url}: {cause}")]
    Download { url: String, cause: String },

    #[error("{url} is not a URL listpipe can download ({message}); check `source`")]
    BadUrl { url: String, message: String },

    #[error("cannot save the download of {url} to {}: {source}", .file.display())]
    Write {
        url: String,
        file: PathBuf,
        source: std::io::Error,
    },

    #[error("cannot start an HTTP client for the downloads: {0}")]
    Client(String),
}

/// Where and for whom a step's URLs are downloaded.
pub struct Context<'a> {
    /// The run's state folder (`.listpipe`): downloads and validators go under it.
    pub state_dir: &'a Path,
    pub pipeline: &'a str,
    pub step: &'a str,
    /// For connecting and for each read of the body (not for the whole download).
    pub timeout: Duration,
}

/// What fetching a step's source came to.
pub enum Fetched {
    /// Every URL answered `304 Not Modified`; `since` is when the content last changed
    /// (its `Last-Modified`, or when it was downloaded).
    Unchanged { since: String },
    /// The source to read, every URL replaced by its downloaded copy.
    Ready(Ready),
}

/// A source ready to read; the downloaded copies live as long as this does.
pub struct Ready {
    pub spec: SourceSpec,
    _copies: Option<TempDir>,
    /// The validators to save once the step succeeded, and where.
    pending: Option<(PathBuf, Remembered)>,
}

impl Ready {
    /// Saves the validators of the downloaded URLs (the step finished without failures).
    pub fn remember(self) -> Result<(), WriteError> {
        match &self.pending {
            Some((path, remembered)) => validators::save(path, remembered),
            None => Ok(()),
        }
    }
}

/// Whether a source names any URL.
pub fn is_remote(spec: &SourceSpec) -> bool {
    spec.paths.iter().any(|p| is_url(p))
}

/// Downloads the URLs of `spec` (see the module); a source without URLs comes back as it is.
pub async fn fetch(spec: &SourceSpec, ctx: &Context<'_>) -> Result<Fetched, RemoteError> {
    if !is_remote(spec) {
        return Ok(Fetched::Ready(Ready {
            spec: spec.clone(),
            _copies: None,
            pending: None,
        }));
    }
    let urls = spec
        .paths
        .iter()
        .enumerate()
        .filter(|(_, p)| is_url(p))
        .map(|(i, p)| {
            Url::parse(p)
                .map(|u| (i, u))
                .map_err(|e| RemoteError::BadUrl {
                    url: url::shown_entry(p),
                    message: e.to_string(),
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    // Conditional requests only when the URLs are the whole source.
    let all_remote = urls.len() == spec.paths.len();
    let state = validators::path(ctx.state_dir, ctx.pipeline, ctx.step);
    let known = if all_remote {
        validators::load(&state)
    } else {
        Remembered::default()
    };
    let client = client(ctx.timeout)?;
    let downloads = ctx.state_dir.join("downloads");
    let copies = std::fs::create_dir_all(&downloads)
        .and_then(|_| {
            tempfile::Builder::new()
                .prefix(&format!("{}.{}.", ctx.pipeline, ctx.step))
                .tempdir_in(&downloads)
        })
        .map_err(|source| RemoteError::Write {
            url: url::shown(&urls[0].1),
            file: downloads.clone(),
            source,
        })?;
    let copies_dir = std::path::absolute(copies.path()).map_err(|source| RemoteError::Write {
        url: url::shown(&urls[0].1),
        file: copies.path().to_path_buf(),
        source,
    })?;
    let several = urls.len() > 1;
    let mut paths = spec.paths.clone();
    let mut fresh = Remembered::default();
    let mut unchanged: Vec<&Validators> = Vec::new();
    let mut asked_again = false;
    let mut pass: Vec<usize> = (0..urls.len()).collect();
    while !pass.is_empty() {
        let mut again = Vec::new();
        for &n in &pass {
            let (i, url) = &urls[n];
            let shown = url::shown(url);
            let name = url::file_name(url);
            let dest = copies_dir.join(if several { format!("{n}-{name}") } else { name });
            let key = validators::key(url.as_str());
            let ask = known.sources.get(&key).filter(|v| v.any() && !asked_again);
            match download::download(&client, url, &shown, &dest, ask, ctx.timeout).await? {
                Got::Unchanged => {
                    if let Some(v) = ask {
                        unchanged.push(v);
                    }
                    again.push(n);
                }
                Got::Downloaded {
                    etag,
                    last_modified,
                } => {
                    tracing::debug!(url = %shown, file = %dest.display(), "downloaded");
                    let v = Validators {
                        url: shown,
                        etag,
                        last_modified,
                        downloaded: chrono::Utc::now().to_rfc3339(),
                    };
                    if v.any() {
                        fresh.sources.insert(key, v);
                    }
                    paths[*i] = dest.to_string_lossy().into_owned();
                }
            }
        }
        if again.len() == urls.len() {
            // Every URL unchanged: the step has nothing new to read.
            let since = unchanged
                .iter()
                .map(|v| v.since().to_string())
                .max()
                .unwrap_or_default();
            return Ok(Fetched::Unchanged { since });
        }
        // Some changed, some did not: the unchanged ones are downloaded again, whole
        // (their remembered content is not kept), and their validators renewed.
        asked_again = true;
        pass = again;
    }
    Ok(Fetched::Ready(Ready {
        spec: SourceSpec {
            paths,
            ..spec.clone()
        },
        _copies: Some(copies),
        pending: all_remote.then_some((state, fresh)),
    }))
}

fn client(timeout: Duration) -> Result<reqwest::Client, RemoteError> {
    crate::client::init_tls();
    reqwest::Client::builder()
        .connect_timeout(timeout)
        .read_timeout(timeout)
        .user_agent(concat!("listpipe/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| RemoteError::Client(crate::cause::root(&e)))
}
