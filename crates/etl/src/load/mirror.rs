//! Mirror mode: a group kept equal to its source. Receivers that listpipe
//! imported into the group in earlier runs and that the source no longer
//! holds are deactivated (or deleted). Receivers listpipe did not import
//! (added by hand, by a form, by another tool) are never touched.
//!
//! What listpipe imported is kept in a [`Ledger`] per step, target and
//! group. Mirror mode plans its removals by reading the ledger a line at a
//! time against the source's addresses ([`KeyStore`], from the source's
//! first read) and the group ([`TargetIndex`]): memory holds neither the
//! ledger nor the source.
//!
//! A guard refuses the whole step, before it writes any receiver, when the
//! planned removals exceed a share of the group (default 10%): a truncated
//! or wrong source file must not empty a list. `--allow-mass-removal`
//! overrides it.

use super::held::TargetIndex;
use super::ledger::spill_failed;
pub use super::ledger::{Ledger, LedgerKey};
use super::{LoadError, retry};
use crate::key_store::KeyStore;
use crate::transport::target::Connected;
use listpipe_api::{Id, ReceiverInput};
// The settings are the pipeline's plain data; what they do is here.
pub use crate::pipeline::{MirrorSpec, Removal};
use futures::StreamExt;
use std::sync::atomic::{AtomicU64, Ordering};

/// The receivers to remove: imported by listpipe earlier (the ledger, read
/// a line at a time), in the group now, absent from the source; sorted,
/// each once.
pub fn planned(
    ledger: &Ledger,
    source: &KeyStore,
    existing: &TargetIndex,
    removal: Removal,
) -> Result<Vec<String>, LoadError> {
    let mut out = Vec::new();
    ledger.each_address(&mut |e| {
        if source.contains(e).map_err(spill_failed)? {
            return Ok(());
        }
        let remove = match existing.get(e)? {
            None => false,
            // Already deactivated: nothing left to do.
            Some(h) => removal == Removal::Delete || h.deactivated() == 0,
        };
        if remove {
            out.push(e.to_string());
        }
        Ok(())
    })?;
    out.sort_unstable();
    out.dedup();
    Ok(out)
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
                        c.update_receiver_unread(g, &email, &body)
                    })
                    .await
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
