//! URL and object sources: a step whose `source` (or an entry of `paths`) is an `http://` or
//! `https://` URL, or an object in a store (`s3://`, `gs://`, `az://`, see [`object`]), reads
//! a copy downloaded for the run. [`fetch`] downloads every URL and object of a step's
//! source into a temporary folder under `.listpipe/downloads/` and hands back the same
//! source with them replaced by the copies, which the source stage then reads as local
//! files (compressed or not, by the file name or `format`). An object URL with a glob in
//! its key (`s3://b/exports/*.csv.gz`) becomes every object it matches, in key order. The
//! folder is removed when the step is done with it.
//!
//! When every entry of the source is remote, the step remembers their `ETag` and
//! `Last-Modified` (see [`validators`]): the next run asks conditionally, and when every one
//! answers `304 Not Modified` the step is skipped as unchanged (an object gone from a glob's
//! matches is a change). The validators are saved by [`Ready::remember`], which the run
//! calls only once the step finished without failures, so a failed run downloads again
//! next time. A source mixing local files and remote ones is always read whole: the local
//! files may have changed.
//!
//! Loading a pipeline stays offline: remote sources are downloaded by `run` only (`check`
//! says so), so the column names a step maps are checked only when the download is read
//! (`PrepareError::MissingColumn`, exit 2).

mod download;
pub mod object;
pub mod url;
pub mod validators;

use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::Url;
use tempfile::TempDir;

use crate::source::SourceSpec;
use download::Got;
use listpipe_base::state_file::WriteError;
use object::ObjectUrl;
use object::store::Stores;
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

    /// An object URL written wrong (found when the pipeline is loaded, normally).
    #[error("{message}; check `source`")]
    BadObject { message: String },
}

/// Where and for whom a step's URLs are downloaded.
pub struct Context<'a> {
    /// The run's state folder (`.listpipe`): downloads and validators go under it.
    pub state_dir: &'a Path,
    /// Where the pipeline's state lives ([`crate::pipeline::state_name`]:
    /// `a/nightly` for `a/nightly.toml`): keys the validators.
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

/// Whether a `paths` entry is read from elsewhere: a URL or an object URL.
pub fn is_remote_entry(entry: &str) -> bool {
    is_url(entry) || object::is_object_url(entry)
}

/// Whether a source names any URL or object.
pub fn is_remote(spec: &SourceSpec) -> bool {
    spec.paths.iter().any(|p| is_remote_entry(p))
}

/// One thing to download: a URL, or one object (a glob's matches are one each).
enum Remote {
    Http(Url),
    Object(ObjectUrl),
}

impl Remote {
    /// How messages and the validators file show it (never with credentials).
    fn shown(&self) -> String {
        match self {
            Remote::Http(url) => url::shown(url),
            Remote::Object(o) => o.to_string(),
        }
    }

    /// The key its validators are remembered under.
    fn key(&self) -> String {
        match self {
            Remote::Http(url) => validators::key(url.as_str()),
            Remote::Object(o) => validators::key(&o.to_string()),
        }
    }

    fn file_name(&self) -> String {
        match self {
            Remote::Http(url) => url::file_name(url),
            Remote::Object(o) => o.file_name(),
        }
    }
}

/// The remote entries of `spec`, each with the index of the entry it came from; the
/// objects a glob matches are listed here.
async fn resolve(
    spec: &SourceSpec,
    stores: &mut Stores,
    timeout: Duration,
) -> Result<Vec<(usize, Remote)>, RemoteError> {
    let mut remotes = Vec::new();
    for (i, entry) in spec.paths.iter().enumerate() {
        if is_url(entry) {
            let url = Url::parse(entry).map_err(|e| RemoteError::BadUrl {
                url: url::shown_entry(entry),
                message: e.to_string(),
            })?;
            remotes.push((i, Remote::Http(url)));
        } else if object::is_object_url(entry) {
            let o =
                ObjectUrl::parse(entry).map_err(|message| RemoteError::BadObject { message })?;
            if o.is_glob() {
                let store = stores.get(&o).map_err(|e| store_error(&o, &e, timeout))?;
                for one in object::expand(store.as_ref(), &o, timeout).await? {
                    remotes.push((i, Remote::Object(one)));
                }
            } else {
                remotes.push((i, Remote::Object(o)));
            }
        }
    }
    Ok(remotes)
}

fn store_error(o: &ObjectUrl, e: &object_store::Error, timeout: Duration) -> RemoteError {
    RemoteError::Download {
        url: o.to_string(),
        cause: object::store::cause(o, e, timeout),
    }
}

/// Downloads the URLs and objects of `spec` (see the module); a source without any comes
/// back as it is.
pub async fn fetch(spec: &SourceSpec, ctx: &Context<'_>) -> Result<Fetched, RemoteError> {
    if !is_remote(spec) {
        return Ok(Fetched::Ready(Ready {
            spec: spec.clone(),
            _copies: None,
            pending: None,
        }));
    }
    let mut stores = Stores::new(ctx.timeout);
    let remotes = resolve(spec, &mut stores, ctx.timeout).await?;
    // Conditional requests only when the remote entries are the whole source.
    let all_remote = spec.paths.iter().all(|p| is_remote_entry(p));
    let state = validators::path(ctx.state_dir, ctx.pipeline, ctx.step);
    let mut known = if all_remote {
        validators::load(&state)
    } else {
        Remembered::default()
    };
    // An object gone from a glob's matches changes the source even when every one left
    // is unchanged: then nothing is asked conditionally.
    let current: std::collections::HashSet<String> = remotes.iter().map(|(_, r)| r.key()).collect();
    if known.sources.keys().any(|k| !current.contains(k)) {
        known = Remembered::default();
    }
    let first = remotes.first().map(|(_, r)| r.shown()).unwrap_or_default();
    let client = client(ctx.timeout)?;
    let downloads = ctx.state_dir.join("downloads");
    let copies = std::fs::create_dir_all(&downloads)
        .and_then(|_| {
            tempfile::Builder::new()
                .prefix(&format!("{}.{}.", ctx.pipeline.replace('/', "-"), ctx.step))
                .tempdir_in(&downloads)
        })
        .map_err(|source| RemoteError::Write {
            url: first.clone(),
            file: downloads.clone(),
            source,
        })?;
    let copies_dir = std::path::absolute(copies.path()).map_err(|source| RemoteError::Write {
        url: first.clone(),
        file: copies.path().to_path_buf(),
        source,
    })?;
    let several = remotes.len() > 1;
    let mut copied: Vec<Option<String>> = vec![None; remotes.len()];
    let mut fresh = Remembered::default();
    let mut unchanged: Vec<&Validators> = Vec::new();
    let mut asked_again = false;
    let mut pass: Vec<usize> = (0..remotes.len()).collect();
    while !pass.is_empty() {
        let mut again = Vec::new();
        for &n in &pass {
            let remote = &remotes[n].1;
            let shown = remote.shown();
            let name = remote.file_name();
            let dest = copies_dir.join(if several { format!("{n}-{name}") } else { name });
            let key = remote.key();
            let ask = known.sources.get(&key).filter(|v| v.any() && !asked_again);
            let got = match remote {
                Remote::Http(url) => {
                    download::download(&client, url, &shown, &dest, ask, ctx.timeout).await?
                }
                Remote::Object(o) => {
                    let store = stores.get(o).map_err(|e| store_error(o, &e, ctx.timeout))?;
                    object::download(store.as_ref(), o, &dest, ask, ctx.timeout).await?
                }
            };
            match got {
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
                    tracing::debug!(target: log_target!(), source = %shown, file = %dest.display(), "downloaded");
                    let v = Validators {
                        url: shown,
                        etag,
                        last_modified,
                        downloaded: chrono::Utc::now().to_rfc3339(),
                    };
                    if v.any() {
                        fresh.sources.insert(key, v);
                    }
                    copied[n] = Some(dest.to_string_lossy().into_owned());
                }
            }
        }
        if again.len() == remotes.len() {
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
    // Each remote entry becomes its copies (a glob's, in key order); local ones stay.
    let mut paths = Vec::new();
    for (i, entry) in spec.paths.iter().enumerate() {
        if is_remote_entry(entry) {
            paths.extend(
                remotes
                    .iter()
                    .zip(&copied)
                    .filter(|((from, _), _)| *from == i)
                    .filter_map(|(_, copy)| copy.clone()),
            );
        } else {
            paths.push(entry.clone());
        }
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
    listpipe_client::init_tls();
    reqwest::Client::builder()
        .connect_timeout(timeout)
        .read_timeout(timeout)
        .user_agent(concat!("listpipe/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| RemoteError::Client(listpipe_base::cause::root(&e)))
}
