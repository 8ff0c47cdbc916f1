//! What a step remembers of its URL sources between runs: each URL's `ETag` and
//! `Last-Modified`, so the next run asks `If-None-Match` / `If-Modified-Since` and a `304 Not
//! Modified` skips the step (a scheduled job whose export did not change downloads and
//! writes nothing). One JSON file per pipeline and step, `.listpipe/remote/<pipeline>/<step>.json`
//! (`<pipeline>` the file's path from the working directory, [`crate::pipeline::state_name`],
//! so `a/nightly.toml` and `b/nightly.toml` remember their own; before, both were under
//! `nightly/` and one's download skipped the other's step), written through
//! [`listpipe_base::state_file`].
//!
//! Decision: URLs are keyed by a SHA-256 of the whole URL (credentials and query included:
//! another password or signature is another source), and the file shows each URL without
//! its credentials, so no secret lands on disk. A file that cannot be read is taken for no
//! file: the worst case is one download too many.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use listpipe_base::state_file::{self, Access, WriteError};

/// One URL's validators, as its server sent them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Validators {
    /// The URL without credentials or query (for people reading the file).
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// When the run that imported this content downloaded it (RFC 3339).
    pub downloaded: String,
}

impl Validators {
    /// Whether there is anything to ask the server with.
    pub fn any(&self) -> bool {
        self.etag.is_some() || self.last_modified.is_some()
    }

    /// Since when the content is known unchanged: its `Last-Modified`, else the download.
    pub fn since(&self) -> &str {
        self.last_modified.as_deref().unwrap_or(&self.downloaded)
    }
}

/// Every URL source of one step, by [`key`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Remembered {
    pub sources: BTreeMap<String, Validators>,
}

/// Where a step's validators live.
pub fn path(state_dir: &Path, pipeline: &str, step: &str) -> PathBuf {
    state_dir
        .join("remote")
        .join(pipeline)
        .join(format!("{step}.json"))
}

/// The key of a URL: the hex SHA-256 of the URL as written.
pub fn key(url: &str) -> String {
    hex::encode(Sha256::digest(url.as_bytes()))
}

/// The validators saved at `path`; none when the file is missing or unreadable.
/// Deliberately forgiving: validators only save a download, and without
/// them every URL is fetched again in full (nothing is skipped wrongly).
pub fn load(path: &Path) -> Remembered {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Saves the validators atomically; with none left, removes the file.
pub fn save(path: &Path, remembered: &Remembered) -> Result<(), WriteError> {
    if remembered.sources.is_empty() {
        return match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(WriteError {
                path: path.to_path_buf(),
                source: e,
            }),
            _ => Ok(()),
        };
    }
    // Written empty before when it could not be made; an error now.
    let json = serde_json::to_vec_pretty(remembered).map_err(|e| WriteError {
        path: path.to_path_buf(),
        source: std::io::Error::other(e),
    })?;
    state_file::write(path, &json, Access::Shared)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validators_round_trip_and_an_empty_set_removes_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = path(dir.path(), "daily", "import");
        assert_eq!(load(&path), Remembered::default());
        let mut r = Remembered::default();
        r.sources.insert(
            key("https://a:b@h/x.csv"),
            Validators {
                url: "https://h/x.csv".into(),
                etag: Some("\"v1\"".into()),
                last_modified: None,
                downloaded: "2026-01-01T00:00:00+00:00".into(),
            },
        );
        save(&path, &r).unwrap();
        assert_eq!(load(&path), r);
        assert!(!std::fs::read_to_string(&path).unwrap().contains(":b@"));
        save(&path, &Remembered::default()).unwrap();
        assert!(!path.exists());
        std::fs::write(&path, "not json").unwrap();
        assert_eq!(load(&path), Remembered::default());
    }
}
