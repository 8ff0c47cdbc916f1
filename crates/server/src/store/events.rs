//! Mailing events (send, open, click, bounce). Mailings are not part of the
//! spec, so events get into the server from a fixtures file given to
//! `listpipe serve --events FILE`: JSON lines such as
//! `{"email": "a@example.com", "mailing_id": "m1", "type": "open", "stamp": 1700000000}`
//! (`account` names the account, default `default`; `value` is optional).
//! The `svcevent_mail_*` filter fields match them.

use super::db::{Db, params};
use super::{AccountId, StoreResult, accounts, now};
use serde::Deserialize;

pub const KINDS: &[&str] = &["send", "open", "click", "bounce"];

#[derive(Debug, Deserialize)]
struct Line {
    #[serde(default)]
    account: Option<String>,
    email: String,
    mailing_id: String,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    stamp: Option<i64>,
    #[serde(default)]
    value: Option<String>,
}

/// What loading a fixtures file did.
#[derive(Debug, Default, PartialEq)]
pub struct Loaded {
    pub events: u64,
    /// Lines whose address is no receiver of the account, or that are malformed: `line: why`.
    pub skipped: Vec<String>,
}

/// Records one event for the contact with that address (no-op if the same
/// event is recorded already, so a fixtures file can be loaded again).
pub fn record(
    db: &Db,
    account: AccountId,
    email: &str,
    kind: &str,
    mailing_id: &str,
    stamp: i64,
    value: &str,
) -> StoreResult<bool> {
    let contact: Option<i64> = db.opt_row(
        "SELECT id FROM contacts WHERE account_id = ?1 AND email = ?2",
        params![account.0, email.trim()],
        |r| r.get(0),
    )?;
    let Some(contact) = contact else {
        return Ok(false);
    };
    let exists: bool = db.value(
        "SELECT EXISTS (SELECT 1 FROM events WHERE contact_id = ?1 AND type = ?2 AND mailing_id = ?3 AND stamp = ?4)",
        params![contact, kind, mailing_id, stamp],
    )?;
    if !exists {
        db.exec(
            "INSERT INTO events (contact_id, stamp, type, value, mailing_id) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![contact, stamp, kind, value, mailing_id],
        )?;
    }
    Ok(true)
}

/// Loads a JSON-lines fixtures file.
pub fn load(db: &Db, text: &str) -> StoreResult<Loaded> {
    let mut out = Loaded::default();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let n = n + 1;
        let parsed: Line = match serde_json::from_str(line) {
            Ok(l) => l,
            Err(e) => {
                out.skipped.push(format!("line {n}: {e}"));
                continue;
            }
        };
        let kind = parsed.kind.trim().to_ascii_lowercase();
        if !KINDS.contains(&kind.as_str()) {
            out.skipped.push(format!(
                "line {n}: type \"{}\" must be one of {}",
                parsed.kind,
                KINDS.join(", ")
            ));
            continue;
        }
        let name = parsed
            .account
            .as_deref()
            .unwrap_or(accounts::DEFAULT_ACCOUNT);
        let account = match accounts::app_of(db, name) {
            Ok(app) => app.account,
            Err(_) => {
                out.skipped
                    .push(format!("line {n}: no account named \"{name}\""));
                continue;
            }
        };
        let stamp = parsed.stamp.unwrap_or_else(now);
        if record(
            db,
            account,
            &parsed.email,
            &kind,
            &parsed.mailing_id,
            stamp,
            parsed.value.as_deref().unwrap_or(""),
        )? {
            out.events += 1;
        } else {
            out.skipped.push(format!(
                "line {n}: {} is no receiver of account \"{name}\"",
                parsed.email
            ));
        }
    }
    Ok(out)
}
