//! Receiver batches of the live service's extensions (wire.md): `upsert`,
//! `insert` and `upsertplus`, up to 1,000 items in ONE transaction.
//!
//! A batch is checked in memory first, item by item, with the rules and in
//! the order of a single create or update (address, size limits, attribute
//! names and values, orders): an item that breaks one is answered with its
//! message and writes nothing. The items that pass are then written
//! together by the set-based operations of [`super::backend`] (SQLite's
//! statements in [`super::bulk`]): one lookup of
//! the addresses already in the group, one insert of the contacts, one of
//! the receivers, one update, and one statement each for attribute values,
//! defaults, tags and orders; about ten statements per batch instead of
//! ~25 per receiver. A database failure is not an item's fault: it fails
//! the whole call and the caller's transaction rolls everything back.
//!
//! An address given twice in one batch: the later item sees what the
//! earlier one wrote (an update, or in `insert` mode a duplicate), as when
//! the items were written one by one. Such items go to a next round, so
//! each round holds every address once.
//!
//! Answers are built from what was written; receivers are reloaded only
//! when full answers are asked for (`upsertplus`, a single object).

use super::super::attributes::{self, AttrMemo};
use super::super::{AccountId, StoreError, StoreResult, groups, invalid, now};
use super::backend::ReceiverBulk;
use super::bulk::{ChangeRow, NewRow, email_key};
use super::{check_email, check_sizes, create, initial_state, load};
use crate::store::Db;
use listpipe_api::ReceiverInput;
use listpipe_api::attribute::AttributeType;
use listpipe_api::batch::{DUPLICATE_ADDRESS, MAX_BATCH};
use listpipe_api::receiver::detail;
use listpipe_api::tag::tag_origin;
use listpipe_api::{Order, Receiver, normalize_tag};
use std::collections::{BTreeMap, HashMap, HashSet};

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

/// An item whose address is valid, waiting for its round.
struct Pending<'a> {
    index: usize,
    input: &'a ReceiverInput,
    email: String,
}

/// An item checked and ready to write: what it sets, in stored form.
struct Checked<'a> {
    index: usize,
    input: &'a ReceiverInput,
    email: String,
    /// The receiver's id and contact when the address is in the group.
    existing: Option<(i64, i64)>,
    /// Attribute values by attribute id (the last given wins); empty clears.
    values: BTreeMap<i64, String>,
    /// Tags by name: `true` adds, `false` removes (the last given wins).
    tags: Vec<(String, bool)>,
    /// Orders, one per key (the last given wins, in the place of the first).
    orders: Vec<(Order, i64)>,
}

/// Writes a batch into `group_id`; answers one outcome per item, in order.
/// More than [`MAX_BATCH`] items is a `TooLarge` error before anything is
/// written. Call it inside a transaction (`Store::write`).
pub fn write_batch(
    conn: &Db,
    account: AccountId,
    group_id: i64,
    items: &[BatchItem],
    mode: BatchMode,
    full: bool,
) -> StoreResult<Vec<ItemOutcome>> {
    if items.len() > MAX_BATCH {
        return Err(StoreError::TooLarge(format!(
            "Payload Too Large: {} receivers; a batch holds at most {MAX_BATCH}",
            items.len()
        )));
    }
    groups::hold(conn, account, group_id)?;
    let mut memo = AttrMemo::default();
    let mut out: Vec<Option<ItemOutcome>> = items.iter().map(|_| None).collect();
    let mut pending = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let checked = item
            .as_ref()
            .map_err(|why| StoreError::Invalid(why.clone()));
        let checked = checked.and_then(|input| {
            let Some(email) = input.email.as_deref() else {
                return invalid("Bad Request: email is required");
            };
            let email = check_email(email)?;
            Ok(Pending {
                index,
                input,
                email,
            })
        });
        match checked {
            Ok(p) => pending.push(p),
            Err(e) => out[index] = Some(ItemOutcome::Failed(e)),
        }
    }
    while !pending.is_empty() {
        let mut seen = HashSet::new();
        let (round, later): (Vec<_>, Vec<_>) = pending
            .into_iter()
            .partition(|p| seen.insert(email_key(&p.email)));
        write_round(
            conn, account, group_id, round, mode, full, &mut memo, &mut out,
        )?;
        pending = later;
    }
    let out: Vec<ItemOutcome> = out
        .into_iter()
        .map(|o| {
            o.unwrap_or_else(|| ItemOutcome::Failed(StoreError::Internal("unanswered".into())))
        })
        .collect();
    if out.iter().any(|o| !matches!(o, ItemOutcome::Failed(_))) {
        groups::touch(conn, group_id)?;
    }
    Ok(out)
}

/// A single create waiting to be written with others
/// ([`create_many`]).
pub struct NewReceiver {
    pub account: AccountId,
    pub group: i64,
    pub input: ReceiverInput,
}

/// Single creates (`POST /groups/{g}/receivers`) that waited for the
/// writer together: each run of creates into one group, in the order they
/// came, is written as one batch of [`write_batch`] (insert mode, full
/// answers), about ten statements for them all. (Runs, not all of a
/// group's: what two groups' receivers share, their contact's global
/// attributes, tags and orders, is then written in the order it came.) An
/// item the batch refuses, and every item of a batch that failed whole (no
/// such group, a database error, rolled back), is then written alone by
/// [`create`], so each answers exactly what it would have alone: the same
/// checks in the same order, the same message. A refused item wrote
/// nothing, and nothing a later item writes can make it pass, so writing
/// it last changes no answer.
pub fn create_many(conn: &Db, items: Vec<NewReceiver>) -> Vec<StoreResult<Receiver>> {
    /// Creates into one group that came one after the other: where each
    /// was in the call, and its input.
    struct Run {
        account: AccountId,
        group: i64,
        at: Vec<usize>,
        items: Vec<BatchItem>,
    }
    let n = items.len();
    let mut runs: Vec<Run> = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        let same = |r: &Run| {
            (r.account, r.group) == (item.account, item.group) && r.items.len() < MAX_BATCH
        };
        if !runs.last().is_some_and(same) {
            runs.push(Run {
                account: item.account,
                group: item.group,
                at: Vec::new(),
                items: Vec::new(),
            });
        }
        if let Some(run) = runs.last_mut() {
            run.at.push(i);
            run.items.push(Ok(item.input));
        }
    }
    let mut out: Vec<Option<StoreResult<Receiver>>> = (0..n).map(|_| None).collect();
    for Run {
        account,
        group,
        at,
        items,
    } in &runs
    {
        let alone = |item: &BatchItem| match item {
            Ok(input) => in_savepoint(conn, || create(conn, *account, *group, input)),
            Err(why) => Err(StoreError::Invalid(why.clone())),
        };
        let written = in_savepoint(conn, || {
            write_batch(conn, *account, *group, items, BatchMode::Insert, true)
        });
        let answers: Vec<StoreResult<Receiver>> = match written {
            Ok(outcomes) => outcomes
                .into_iter()
                .zip(items)
                .map(|(outcome, item)| match outcome {
                    ItemOutcome::Inserted(Some(r)) => Ok(r),
                    ItemOutcome::Failed(_) => alone(item),
                    other => Err(StoreError::Internal(format!(
                        "a create in a batch answered {other:?}"
                    ))),
                })
                .collect(),
            Err(_) => items.iter().map(alone).collect(),
        };
        for (&i, answer) in at.iter().zip(answers) {
            out[i] = Some(answer);
        }
    }
    out.into_iter()
        .map(|o| o.unwrap_or_else(|| Err(StoreError::Internal("unanswered".into()))))
        .collect()
}

/// Runs `f` in a savepoint of the writer's transaction: what it wrote is
/// kept if it succeeds, rolled back if it fails.
fn in_savepoint<T>(conn: &Db, f: impl FnOnce() -> StoreResult<T>) -> StoreResult<T> {
    conn.batch("SAVEPOINT merged")?;
    let out = f();
    match &out {
        Ok(_) => conn.batch("RELEASE merged")?,
        Err(_) => conn.batch("ROLLBACK TO merged; RELEASE merged")?,
    }
    out
}

/// Checks and writes items with distinct addresses.
#[allow(clippy::too_many_arguments)] // the batch's settings, its attribute memo and its answers
fn write_round(
    conn: &Db,
    account: AccountId,
    group_id: i64,
    round: Vec<Pending>,
    mode: BatchMode,
    full: bool,
    memo: &mut AttrMemo,
    out: &mut [Option<ItemOutcome>],
) -> StoreResult<()> {
    let emails: Vec<&str> = round.iter().map(|p| p.email.as_str()).collect();
    let existing = conn.existing_in_group(account, group_id, &emails)?;
    let mut ready = Vec::with_capacity(round.len());
    for p in round {
        let found = existing.get(&email_key(&p.email)).copied();
        match check(conn, account, group_id, p, found, mode, memo) {
            Ok(c) => ready.push(c),
            Err((index, e)) => out[index] = Some(ItemOutcome::Failed(e)),
        }
    }
    if ready.is_empty() {
        return Ok(());
    }
    let t = now();
    // Contacts and receivers of the new addresses.
    let new_emails: Vec<&str> = ready
        .iter()
        .filter(|c| c.existing.is_none())
        .map(|c| c.email.as_str())
        .collect();
    let contacts = if new_emails.is_empty() {
        HashMap::new()
    } else {
        conn.contacts_for(account, &new_emails)?
    };
    let mut new_rows = Vec::new();
    let mut contact_of = Vec::with_capacity(ready.len());
    for c in &ready {
        let contact = match c.existing {
            Some((_, contact)) => contact,
            None => {
                let Some(&contact) = contacts.get(&email_key(&c.email)) else {
                    return Err(StoreError::Internal(format!(
                        "no contact for \"{}\" after writing it",
                        c.email
                    )));
                };
                let (registered, activated, deactivated) = initial_state(c.input, t);
                let i = &c.input;
                new_rows.push(NewRow(
                    contact,
                    registered,
                    activated,
                    deactivated,
                    i.imported.unwrap_or(0),
                    i.bounced.unwrap_or(0),
                    i.source.as_deref().unwrap_or(""),
                    i.points.unwrap_or(0),
                    i.last_ip.as_deref().unwrap_or(""),
                    i.last_location.as_deref().unwrap_or(""),
                    i.last_client.as_deref().unwrap_or(""),
                ));
                contact
            }
        };
        contact_of.push(contact);
    }
    let new_ids = conn.insert_receivers(account, group_id, &new_rows, t)?;
    let pick = |v: Option<i64>| v.map(|v| v.max(0));
    let changes: Vec<ChangeRow> = ready
        .iter()
        .filter_map(|c| {
            let (id, _) = c.existing?;
            let i = &c.input;
            Some(ChangeRow(
                id,
                pick(i.registered),
                pick(i.activated),
                pick(i.deactivated),
                pick(i.imported),
                pick(i.bounced),
                i.source.as_deref(),
                i.points,
                i.last_ip.as_deref(),
                i.last_location.as_deref(),
                i.last_client.as_deref(),
            ))
        })
        .collect();
    conn.update_receivers(&changes, t)?;

    // What the contacts carry: values, then defaults (new receivers only,
    // after the values, so a value given wins), tags, orders.
    let mut sets = Vec::new();
    let mut clears = Vec::new();
    let mut adds = Vec::new();
    let mut removes = Vec::new();
    let mut orders = Vec::new();
    for (c, &contact) in ready.iter().zip(&contact_of) {
        for (attr, value) in &c.values {
            if value.is_empty() {
                clears.push((contact, *attr));
            } else {
                sets.push((contact, *attr, value.as_str()));
            }
        }
        for (tag, add) in &c.tags {
            if *add {
                adds.push((contact, tag.as_str(), tag_origin(tag)));
            } else {
                removes.push((contact, tag.as_str()));
            }
        }
        orders.extend(c.orders.iter().map(|(o, stamp)| (contact, o, *stamp)));
    }
    conn.set_values(&sets)?;
    conn.clear_values(&clears)?;
    let fresh: Vec<i64> = ready
        .iter()
        .zip(&contact_of)
        .filter(|(c, _)| c.existing.is_none())
        .map(|(_, contact)| *contact)
        .collect();
    conn.apply_defaults(account, group_id, &fresh)?;
    conn.add_tags(&adds)?;
    conn.remove_tags(&removes)?;
    conn.upsert_orders(&orders)?;

    for (c, contact) in ready.iter().zip(contact_of) {
        let id = match c.existing {
            Some((id, _)) => id,
            None => *new_ids.get(&contact).ok_or_else(|| {
                StoreError::Internal(format!("no receiver for \"{}\" after writing it", c.email))
            })?,
        };
        let answer = full
            .then(|| load(conn, account, id, true, detail::ALL))
            .transpose()?;
        out[c.index] = Some(match c.existing {
            Some(_) => ItemOutcome::Updated(answer),
            None => ItemOutcome::Inserted(answer),
        });
    }
    Ok(())
}

/// The checks of one item, in the order a single write makes them; on
/// failure the item's index and its error.
fn check<'a>(
    conn: &Db,
    account: AccountId,
    group_id: i64,
    p: Pending<'a>,
    existing: Option<(i64, i64)>,
    mode: BatchMode,
    memo: &mut AttrMemo,
) -> Result<Checked<'a>, (usize, StoreError)> {
    let index = p.index;
    let fail = |e| (index, e);
    if existing.is_some() && mode == BatchMode::Insert {
        return Err(fail(StoreError::Conflict(DUPLICATE_ADDRESS.into())));
    }
    check_sizes(p.input).map_err(fail)?;
    // The address of an existing receiver was found by this very address
    // (case-insensitively), so "the email cannot change" cannot fail here.
    let mut values = BTreeMap::new();
    for (global_only, given) in [
        (false, &p.input.attributes),
        (true, &p.input.global_attributes),
    ] {
        for (name, value) in given.iter().flatten() {
            let attr = memo
                .resolve(conn, account, group_id, name, global_only)
                .map_err(fail)?;
            let Some(attr) = attr else {
                let scope = if global_only {
                    "global attribute".to_string()
                } else {
                    format!("attribute of group {group_id}")
                };
                return Err(fail(StoreError::Invalid(format!(
                    "Bad Request: unknown {scope} \"{name}\"; create it first"
                ))));
            };
            let kind = AttributeType::parse(&attr.kind).unwrap_or(AttributeType::Text);
            let stored = attributes::check_value(kind, &attr.name, value).map_err(fail)?;
            values.insert(attr.id, stored);
        }
    }
    let mut tag_ops: Vec<(String, bool)> = Vec::new();
    for raw in p.input.tags.iter().flatten() {
        let raw = raw.trim();
        let op = match raw.strip_prefix('-') {
            Some(stripped) => normalize_tag(stripped).map(|t| (t, false)),
            None => normalize_tag(raw).map(|t| (t, true)),
        };
        if let Some((tag, add)) = op {
            match tag_ops.iter_mut().find(|(t, _)| *t == tag) {
                Some(slot) => slot.1 = add,
                None => tag_ops.push((tag, add)),
            }
        }
    }
    let mut orders: Vec<(Order, i64)> = Vec::new();
    let mut order_at: HashMap<(String, String), usize> = HashMap::new();
    for o in p.input.orders.iter().flatten() {
        if o.order_id.trim().is_empty() {
            return Err(fail(StoreError::Invalid(
                "Bad Request: every order needs an order_id".into(),
            )));
        }
        let stamp = if o.stamp > 0 { o.stamp } else { now() };
        match order_at.get(&(o.order_id.clone(), o.product_id.clone())) {
            Some(&at) => orders[at] = (o.clone(), stamp),
            None => {
                order_at.insert((o.order_id.clone(), o.product_id.clone()), orders.len());
                orders.push((o.clone(), stamp));
            }
        }
    }
    Ok(Checked {
        index,
        input: p.input,
        email: p.email,
        existing,
        values,
        tags: tag_ops,
        orders,
    })
}
