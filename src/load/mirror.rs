//! Mirror mode: a group kept equal to its source. Receivers that listpipe
//! imported into the group in earlier runs and that the source no longer
//! holds are deactivated (or deleted). Receivers listpipe did not import
//! (added by hand, by a form, by another tool) are never touched.
//!
//! What listpipe imported is kept in a ledger per step, target and group
//! (`.listpipe/ledger/<pipeline>/<step>-<hash>.txt`, one address a line):
//! every import run adds the receivers it created or updated, mirror mode or
//! not, so turning mirror mode on later knows them. A lost ledger means
//! nothing is removed: the safe direction.
//!
//! A guard refuses the whole step, before it writes any receiver, when the
//! planned removals exceed a share of the group (default 10%): a truncated
//! or wrong source file must not empty a list. `--allow-mass-removal`
//! overrides it.

use super::diff::Held;
use super::target::Connected;
use super::{LoadError, retry};
use crate::api::{Id, ReceiverInput};
use crate::pipeline::STATE_DIR;
// The settings are the pipeline's plain data; what they do is here.
pub use crate::pipeline::{MirrorSpec, Removal};
use futures::StreamExt;
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The first line of every ledger: a file without it is not one.
const LEDGER_HEADER: &str =
    "# Receivers listpipe imported into this group (mirror mode removes only these).\n";

/// The addresses listpipe imported into one group of one target.
pub struct Ledger {
    path: PathBuf,
    pub emails: BTreeSet<String>,
}

impl Ledger {
    /// The ledger of `step` of `pipeline` for group `group` of `target`.
    /// None yet is an empty ledger; one that cannot be read or is not a
    /// ledger is refused, and left as it is: emptied, it would make mirror
    /// mode forget what it imported.
    pub fn open(pipeline: &str, step: &str, target: &str, group: Id) -> Result<Ledger, LoadError> {
        let digest = Sha256::digest(format!("{target}\n{group}").as_bytes());
        let path = Path::new(STATE_DIR)
            .join("ledger")
            .join(pipeline)
            .join(format!("{step}-{}.txt", &hex::encode(digest)[..16]));
        let refuse = |why: String| LoadError::State {
            path: path.clone(),
            message: format!(
                "the mirror ledger cannot be used: {why}. It was left as it is; \
                 restore it from a backup, or move it away to start a new ledger \
                 (mirror mode then removes nothing until receivers are imported again)"
            ),
        };
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Ledger {
                    path,
                    emails: BTreeSet::new(),
                });
            }
            Err(e) => return Err(refuse(format!("cannot read it: {e}"))),
        };
        let text = String::from_utf8(bytes).map_err(|_| refuse("it is not text".into()))?;
        if !text.starts_with(LEDGER_HEADER) {
            return Err(refuse(format!(
                "it does not start with the ledger's first line \"{}\"",
                LEDGER_HEADER.trim_end()
            )));
        }
        let mut emails = BTreeSet::new();
        for (i, line) in text.lines().enumerate() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if !line.contains('@') || line.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(refuse(format!("line {} is not an address", i + 1)));
            }
            emails.insert(line.to_string());
        }
        Ok(Ledger { path, emails })
    }

    /// Writes the ledger (whole, through a temporary file, so a crash
    /// leaves the old one or the new one).
    pub fn save(&self) -> Result<(), LoadError> {
        let mut text = String::from(LEDGER_HEADER);
        for e in &self.emails {
            text.push_str(e);
            text.push('\n');
        }
        crate::state_file::write(
            &self.path,
            text.as_bytes(),
            crate::state_file::Access::Shared,
        )
        .map_err(|e| LoadError::Output {
            path: self.path.clone(),
            message: e.source.to_string(),
        })
    }
}

/// The receivers to remove: imported by listpipe earlier, in the group
/// now, absent from the source; sorted.
pub fn planned(
    ledger: &Ledger,
    source: &HashSet<String>,
    existing: &crate::hash::FastMap<String, Held>,
    removal: Removal,
) -> Vec<String> {
    ledger
        .emails
        .iter()
        .filter(|e| !source.contains(*e))
        .filter(|e| match existing.get(*e) {
            None => false,
            // Already deactivated: nothing left to do.
            Some(h) => removal == Removal::Delete || h.deactivated() == 0,
        })
        .cloned()
        .collect()
}

/// The guard: `Err` with the reason when `removals` of a group of `total`
/// exceed the spec's share.
pub fn guard(
    spec: &MirrorSpec,
    removals: usize,
    total: usize,
    allowed: bool,
) -> Result<(), String> {
    let limit = (spec.max_share * total as f64).floor() as usize;
    if removals <= limit || allowed {
        return Ok(());
    }
    Err(format!(
        "mirror mode would {} {removals} of the group's {total} receivers ({:.1}%), more than the limit of {:.0}% ({limit}); \
         no receiver was written. Check the source; if the removals are meant, run again with --allow-mass-removal \
         (a --dry-run lists them in its plan)",
        spec.removal.as_str(),
        100.0 * removals as f64 / total.max(1) as f64,
        100.0 * spec.max_share,
    ))
}

/// What the removals did.
#[derive(Debug, Default)]
pub struct Removed {
    pub done: Vec<String>,
    /// Address and the target's reason.
    pub failed: Vec<(String, String)>,
    pub retries: u64,
}

/// Deactivates or deletes `emails` in group `g`, with bounded concurrency.
pub async fn remove(
    conn: &Connected,
    g: Id,
    emails: Vec<String>,
    removal: Removal,
    concurrency: usize,
    retries: u32,
) -> Removed {
    let retried = AtomicU64::new(0);
    let now = chrono::Utc::now().timestamp();
    let retried_ref = &retried;
    let results: Vec<(String, Result<(), String>)> = futures::stream::iter(emails)
        .map(|email| async move {
            let c = &conn.client;
            let result = match removal {
                Removal::Deactivate => {
                    let body = ReceiverInput {
                        deactivated: Some(now),
                        ..Default::default()
                    };
                    retry::retrying(conn, retries, retried_ref, || {
                        c.update_receiver(g, &email, &body)
                    })
                    .await
                    .map(|_| ())
                }
                Removal::Delete => retry::retrying(conn, retries, retried_ref, || {
                    c.delete_receiver(&email, Some(g))
                })
                .await
                .map(|_| ()),
            };
            (email, result.map_err(|e| e.server_message()))
        })
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    let mut out = Removed {
        retries: retried.load(Ordering::Relaxed),
        ..Default::default()
    };
    for (email, r) in results {
        match r {
            Ok(()) => out.done.push(email),
            Err(reason) => out.failed.push((email, reason)),
        }
    }
    out.done.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_allows_up_to_the_share_and_names_the_override() {
        let spec = MirrorSpec::default();
        assert!(guard(&spec, 10, 100, false).is_ok());
        let err = guard(&spec, 11, 100, false).unwrap_err();
        assert!(
            err.contains("11 of the group's 100 receivers (11.0%)"),
            "{err}"
        );
        assert!(err.contains("--allow-mass-removal"), "{err}");
        assert!(guard(&spec, 100, 100, true).is_ok());
        // An empty group has nothing to remove; a tiny one none at 10%.
        assert!(guard(&spec, 0, 0, false).is_ok());
        assert!(guard(&spec, 1, 5, false).is_err());
    }
}
