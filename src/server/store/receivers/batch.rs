//! Receiver batches of the live service's extensions (wire.md): `upsert`,
//! `insert` and `upsertplus`, up to 1,000 items in ONE transaction.
//!
//! Each item runs the same write as a single create or update (the
//! [`insert`](super::insert) and [`change`](super::change) halves of them),
//! inside its own SAVEPOINT: an item that breaks a rule (bad address,
//! unknown attribute, an email change) is rolled back to its savepoint and
//! answered with its error message, and the other items still commit. A
//! database failure is not an item's fault: it fails the whole call and the
//! caller's transaction rolls everything back.
//!
//! Per call, not per item: the group check, the group's `last_changed`, and
//! (unless full answers are asked for) no reload of the written receiver.

use super::super::{AccountId, StoreError, StoreResult, groups, invalid};
use super::{ReceiverKey, change, check_email, insert, load, locate};
use crate::api::Receiver;
use crate::api::ReceiverInput;
use crate::api::batch::{DUPLICATE_ADDRESS, MAX_BATCH};
use crate::api::receiver::detail;
use rusqlite::Connection;

/// One item as the wire delivered it: a receiver input, or why the item
/// could not be read (it is answered with that message, in its place).
pub type BatchItem = Result<ReceiverInput, String>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchMode {
    /// Create the address in the group, or update it when it is there.
    Upsert,
    /// Create only; an address already in the group is `"duplicate address"`.
    Insert,
}

/// What one item did. The receivers are present when full answers were
/// asked for (`upsertplus`, a single object).
#[derive(Debug)]
pub enum ItemOutcome {
    Inserted(Option<Receiver>),
    Updated(Option<Receiver>),
    Failed(StoreError),
}

/// Writes a batch into `group_id`; answers one outcome per item, in order.
/// More than [`MAX_BATCH`] items is a `TooLarge` error before anything is
/// written. Call it inside a transaction (`Store::write`).
pub fn write_batch(
    conn: &Connection,
    account: AccountId,
    group_id: i64,
    items: Vec<BatchItem>,
    mode: BatchMode,
    full: bool,
) -> StoreResult<Vec<ItemOutcome>> {
    if items.len() > MAX_BATCH {
        return Err(StoreError::TooLarge(format!(
            "Payload Too Large: {} receivers; a batch holds at most {MAX_BATCH}",
            items.len()
        )));
    }
    groups::ensure(conn, account, group_id)?;
    let _memo = super::super::attributes::BatchMemo::start();
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let input = match item {
            Ok(input) => input,
            Err(message) => {
                out.push(ItemOutcome::Failed(StoreError::Invalid(message)));
                continue;
            }
        };
        exec(conn, "SAVEPOINT batch_item")?;
        match write_one(conn, account, group_id, &input, mode, full) {
            Ok(done) => {
                exec(conn, "RELEASE batch_item")?;
                out.push(done);
            }
            Err(
                e @ (StoreError::Sqlite(_)
                | StoreError::Io { .. }
                | StoreError::Task(_)
                | StoreError::Internal(_)),
            ) => return Err(e),
            Err(e) => {
                exec(conn, "ROLLBACK TO batch_item")?;
                exec(conn, "RELEASE batch_item")?;
                out.push(ItemOutcome::Failed(e));
            }
        }
    }
    if out.iter().any(|o| !matches!(o, ItemOutcome::Failed(_))) {
        groups::touch(conn, group_id)?;
    }
    Ok(out)
}

fn exec(conn: &Connection, sql: &str) -> StoreResult<()> {
    conn.prepare_cached(sql)?.execute([])?;
    Ok(())
}

fn write_one(
    conn: &Connection,
    account: AccountId,
    group_id: i64,
    input: &ReceiverInput,
    mode: BatchMode,
    full: bool,
) -> StoreResult<ItemOutcome> {
    let Some(email) = input.email.as_deref() else {
        return invalid("Bad Request: email is required");
    };
    let email = check_email(email)?;
    let existing = match locate(conn, account, Some(group_id), &ReceiverKey::Email(email)) {
        Ok(found) => Some(found),
        Err(StoreError::NotFound(_)) => None,
        Err(e) => return Err(e),
    };
    let answer = |id| {
        full.then(|| load(conn, account, id, true, detail::ALL))
            .transpose()
    };
    match (existing, mode) {
        (Some(_), BatchMode::Insert) => Err(StoreError::Conflict(DUPLICATE_ADDRESS.into())),
        (Some((id, _, contact_id)), BatchMode::Upsert) => {
            change(conn, account, group_id, id, contact_id, input)?;
            Ok(ItemOutcome::Updated(answer(id)?))
        }
        (None, _) => {
            let id = insert(conn, account, group_id, input)?;
            Ok(ItemOutcome::Inserted(answer(id)?))
        }
    }
}
