//! The account blacklist and the groups' blocklists (spec §4.3).
//!
//! An entry is an address or a whole domain written `*@example.com`.

use super::{AccountId, StoreError, StoreResult, conflict, groups, invalid, not_found, now};
use crate::api::BlacklistEntry;
use crate::api::blacklist::{BlacklistInput, MAX_BATCH};
use crate::server::store::Cached;
use rusqlite::{Connection, OptionalExtension, params};

/// An address or a `*@domain` entry, trimmed; anything else is a 400.
pub fn check_entry(email: &str) -> StoreResult<String> {
    let email = email.trim();
    if let Some(domain) = email.strip_prefix("*@")
        && !domain.is_empty()
        && super::receivers::check_email(&format!("x@{domain}")).is_ok()
    {
        return Ok(email.to_string());
    }
    super::receivers::check_email(email)
}

fn domain_entry(email: &str) -> String {
    email
        .rsplit_once('@')
        .map(|(_, d)| format!("*@{d}"))
        .unwrap_or_default()
}

pub fn list(conn: &Connection, account: AccountId) -> StoreResult<Vec<BlacklistEntry>> {
    let mut stmt = conn.prepare_cached(
        "SELECT email, comment, stamp FROM blacklist WHERE account_id = ?1 ORDER BY email",
    )?;
    let rows = stmt.query_map([account.0], |r| {
        Ok(BlacklistEntry {
            email: r.get(0)?,
            comment: r.get(1)?,
            stamp: r.get(2)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub fn get(conn: &Connection, account: AccountId, email: &str) -> StoreResult<BlacklistEntry> {
    conn.row(
        "SELECT email, comment, stamp FROM blacklist WHERE account_id = ?1 AND email = ?2",
        params![account.0, email.trim()],
        |r| {
            Ok(BlacklistEntry {
                email: r.get(0)?,
                comment: r.get(1)?,
                stamp: r.get(2)?,
            })
        },
    )
    .optional()?
    .ok_or_else(|| StoreError::NotFound("Not Found: address is not on the blacklist".into()))
}

fn required(input: &BlacklistInput) -> StoreResult<String> {
    match input.email.as_deref() {
        Some(e) => check_entry(e),
        None => invalid("Bad Request: email is required"),
    }
}

/// `POST /v3/blacklist`: a new entry; an address already listed is a 409.
pub fn add(
    conn: &Connection,
    account: AccountId,
    input: &BlacklistInput,
) -> StoreResult<BlacklistEntry> {
    let email = required(input)?;
    if get(conn, account, &email).is_ok() {
        return conflict(format!("Conflict: \"{email}\" is on the blacklist already"));
    }
    upsert(
        conn,
        account,
        &email,
        input.comment.as_deref().unwrap_or(""),
    )?;
    get(conn, account, &email)
}

/// `PUT /v3/blacklist`: changes the comment of a listed address.
pub fn update(
    conn: &Connection,
    account: AccountId,
    input: &BlacklistInput,
) -> StoreResult<BlacklistEntry> {
    let email = required(input)?;
    let current = get(conn, account, &email)?;
    upsert(
        conn,
        account,
        &current.email,
        input.comment.as_deref().unwrap_or(&current.comment),
    )?;
    get(conn, account, &email)
}

fn upsert(conn: &Connection, account: AccountId, email: &str, comment: &str) -> StoreResult<()> {
    super::check_len("comment", comment, super::MAX_TEXT_CHARS)?;
    conn.prepare_cached(
        "INSERT INTO blacklist (account_id, email, comment, stamp) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (account_id, email) DO UPDATE SET comment = excluded.comment",
    )?
    .execute(params![account.0, email, comment, now()])?;
    Ok(())
}

pub fn delete(conn: &Connection, account: AccountId, email: &str) -> StoreResult<()> {
    let n = conn.exec(
        "DELETE FROM blacklist WHERE account_id = ?1 AND email = ?2",
        params![account.0, email.trim()],
    )?;
    if n == 0 {
        not_found("Not Found: address is not on the blacklist")
    } else {
        Ok(())
    }
}

/// `POST /v3/blacklist/batch`: all entries or none. More than 1,000 is a
/// 413; one bad address is a 400 naming it and its position. Entries listed
/// already get the new comment, so a repeated batch changes nothing.
pub fn batch(
    conn: &Connection,
    account: AccountId,
    items: &[BlacklistInput],
) -> StoreResult<Vec<BlacklistEntry>> {
    if items.len() > MAX_BATCH {
        return Err(StoreError::TooLarge(format!(
            "Payload Too Large: {} entries; a batch holds at most {MAX_BATCH}",
            items.len()
        )));
    }
    let mut checked = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let email = required(item).map_err(|e| StoreError::Invalid(format!("{e} (item {i})")))?;
        checked.push((email, item.comment.clone().unwrap_or_default()));
    }
    for (email, comment) in &checked {
        upsert(conn, account, email, comment)?;
    }
    checked
        .iter()
        .map(|(email, _)| get(conn, account, email))
        .collect()
}

/// Is the address (or its domain) listed? Two lookups on the key, each
/// its own `EXISTS`. Decision: neither `email IN (?2, ?3)` nor `(email =
/// ?2 OR email = ?3)`: SQLite makes both an IN list and builds it into a
/// temporary b-tree on every call (`OpenEphemeral`), which was most of a
/// check's cost, and a re-import checks every address of its file (perf of
/// an unchanged re-import, issue 15). A test holds the plans to no
/// temporary table.
pub(crate) const IS_LISTED: &str =
    "SELECT EXISTS (SELECT 1 FROM blacklist WHERE account_id = ?1 AND email = ?2)
         OR EXISTS (SELECT 1 FROM blacklist WHERE account_id = ?1 AND email = ?3)";
/// The same for a group's blocklist.
pub(crate) const IS_BLOCKED_IN: &str =
    "SELECT EXISTS (SELECT 1 FROM group_blocklist WHERE group_id = ?1 AND email = ?2)
         OR EXISTS (SELECT 1 FROM group_blocklist WHERE group_id = ?1 AND email = ?3)";

fn is_listed(conn: &Connection, account: AccountId, email: &str) -> StoreResult<bool> {
    Ok(conn
        .prepare_cached(IS_LISTED)?
        .query_row(params![account.0, email, domain_entry(email)], |r| r.get(0))?)
}

fn is_blocked_in(conn: &Connection, group_id: i64, email: &str) -> StoreResult<bool> {
    Ok(conn
        .prepare_cached(IS_BLOCKED_IN)?
        .query_row(params![group_id, email, domain_entry(email)], |r| r.get(0))?)
}

/// `POST /v3/blacklist/validate`: the given addresses that are NOT blocked
/// (by the blacklist, or with `group_id` also that group's blocklist);
/// with `invert`, the ones that are.
pub fn validate(
    conn: &Connection,
    account: AccountId,
    emails: &[String],
    group_id: Option<i64>,
    invert: bool,
) -> StoreResult<Vec<String>> {
    if let Some(g) = group_id {
        groups::ensure(conn, account, g)?;
    }
    let mut out = Vec::new();
    for email in emails {
        let e = email.trim();
        let blocked = is_listed(conn, account, e)?
            || match group_id {
                Some(g) => is_blocked_in(conn, g, e)?,
                None => false,
            };
        if blocked == invert {
            out.push(email.clone());
        }
    }
    Ok(out)
}

pub fn group_list(
    conn: &Connection,
    account: AccountId,
    group_id: i64,
) -> StoreResult<Vec<BlacklistEntry>> {
    groups::ensure(conn, account, group_id)?;
    let mut stmt = conn.prepare_cached(
        "SELECT email, stamp FROM group_blocklist WHERE group_id = ?1 ORDER BY email",
    )?;
    let rows = stmt.query_map([group_id], |r| {
        Ok(BlacklistEntry {
            email: r.get(0)?,
            comment: String::new(),
            stamp: r.get(1)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub fn group_add(
    conn: &Connection,
    account: AccountId,
    group_id: i64,
    email: Option<&str>,
) -> StoreResult<BlacklistEntry> {
    groups::ensure(conn, account, group_id)?;
    let Some(email) = email else {
        return invalid("Bad Request: email is required");
    };
    let email = check_entry(email)?;
    let t = now();
    conn.exec(
        "INSERT INTO group_blocklist (group_id, email, stamp) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
        params![group_id, email, t],
    )?;
    let stamp = conn.row(
        "SELECT stamp FROM group_blocklist WHERE group_id = ?1 AND email = ?2",
        params![group_id, email],
        |r| r.get(0),
    )?;
    Ok(BlacklistEntry {
        email,
        comment: String::new(),
        stamp,
    })
}

pub fn group_delete(
    conn: &Connection,
    account: AccountId,
    group_id: i64,
    email: &str,
) -> StoreResult<()> {
    groups::ensure(conn, account, group_id)?;
    let n = conn.exec(
        "DELETE FROM group_blocklist WHERE group_id = ?1 AND email = ?2",
        params![group_id, email.trim()],
    )?;
    if n == 0 {
        not_found("Not Found: address is not on the group's blocklist")
    } else {
        Ok(())
    }
}
