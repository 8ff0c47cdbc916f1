//! Saved filters (segments) of a group, spec §2.9 and §4.7, and runtime
//! filters. Rules are stored as given (after a check) and compiled by
//! [`rules`] on every use, so they always see the current attributes.

pub mod rules;

use super::receivers::{self, ReceiversJson, Selection};
use super::{AccountId, StoreResult, groups, invalid, not_found, now};
use crate::store::db::{Backend, Db, Row, params};
use listpipe_api::filter::{Filter, FilterInput, FilterStats, Rule, RuntimeFilter};
use listpipe_api::{Receiver, ReceiverQuery};
use rusqlite::types::Value;

fn operator(op: Option<&str>) -> StoreResult<String> {
    match op.map(|o| o.trim().to_ascii_uppercase()).as_deref() {
        None | Some("") | Some("AND") => Ok("AND".into()),
        Some("OR") => Ok("OR".into()),
        Some(other) => invalid(format!(
            "Bad Request: operator \"{other}\" must be AND or OR"
        )),
    }
}

fn from_row(r: &Row) -> StoreResult<Filter> {
    let rules: String = r.get(3)?;
    Ok(Filter {
        id: r.get::<i64>(0)?.into(),
        name: r.get(1)?,
        operator: r.get(2)?,
        rules: Some(serde_json::from_str(&rules).unwrap_or_default()),
    })
}

pub fn list(db: &Db, account: AccountId, group_id: i64) -> StoreResult<Vec<Filter>> {
    groups::ensure(db, account, group_id)?;
    db.rows(
        "SELECT id, name, operator, rules FROM filters WHERE group_id = ?1 AND account_id = ?2 ORDER BY id",
        params![group_id, account.0],
        from_row,
    )
}

pub fn get(db: &Db, account: AccountId, group_id: i64, id: i64) -> StoreResult<Filter> {
    groups::ensure(db, account, group_id)?;
    db.opt_row(
        "SELECT id, name, operator, rules FROM filters WHERE id = ?1 AND group_id = ?2 AND account_id = ?3",
        params![id, group_id, account.0],
        from_row,
    )?
    .map_or_else(|| not_found("Not Found: invalid filter"), Ok)
}

pub fn create(
    db: &Db,
    account: AccountId,
    group_id: i64,
    input: &FilterInput,
) -> StoreResult<Filter> {
    groups::ensure(db, account, group_id)?;
    let name = match input.name.as_deref().map(str::trim) {
        Some(n) if !n.is_empty() => {
            super::check_len("name", n, super::MAX_NAME_CHARS)?;
            n.to_string()
        }
        _ => return invalid("Bad Request: name is required"),
    };
    let Some(rules) = &input.rules else {
        return invalid("Bad Request: rules is required");
    };
    let op = operator(input.operator.as_deref())?;
    rules::compile(db, account, &[group_id], rules, &op)?;
    let t = now();
    let id: i64 = db.value(
        "INSERT INTO filters (account_id, group_id, name, operator, rules, created, changed)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6) RETURNING id",
        params![
            account.0,
            group_id,
            name,
            op,
            serde_json::to_string(rules).unwrap_or_default(),
            t
        ],
    )?;
    get(db, account, group_id, id)
}

pub fn update(
    db: &Db,
    account: AccountId,
    group_id: i64,
    id: i64,
    input: &FilterInput,
) -> StoreResult<Filter> {
    let mut f = get(db, account, group_id, id)?;
    if let Some(name) = input.name.as_deref().map(str::trim) {
        if name.is_empty() {
            return invalid("Bad Request: name must not be empty");
        }
        super::check_len("name", name, super::MAX_NAME_CHARS)?;
        f.name = name.to_string();
    }
    if input.operator.is_some() {
        f.operator = operator(input.operator.as_deref())?;
    }
    if let Some(rules) = &input.rules {
        f.rules = Some(rules.clone());
    }
    let rules = f.rules.clone().unwrap_or_default();
    rules::compile(db, account, &[group_id], &rules, &f.operator)?;
    db.exec(
        "UPDATE filters SET name = ?1, operator = ?2, rules = ?3, changed = ?4 WHERE id = ?5",
        params![
            f.name,
            f.operator,
            serde_json::to_string(&rules).unwrap_or_default(),
            now(),
            id
        ],
    )?;
    Ok(f)
}

pub fn delete(db: &Db, account: AccountId, group_id: i64, id: i64) -> StoreResult<()> {
    get(db, account, group_id, id)?;
    db.exec("DELETE FROM filters WHERE id = ?1", params![id])?;
    Ok(())
}

/// The receivers a saved filter selects: its group's, matching its rules.
fn selection(db: &Db, account: AccountId, group_id: i64, id: i64) -> StoreResult<Selection> {
    let f = get(db, account, group_id, id)?;
    let compiled = rules::compile(
        db,
        account,
        &[group_id],
        f.rules.as_deref().unwrap_or_default(),
        &f.operator,
    )?;
    Ok(Selection::group(group_id).and(compiled))
}

pub fn stats(db: &Db, account: AccountId, group_id: i64, id: i64) -> StoreResult<FilterStats> {
    let sel = selection(db, account, group_id, id)?;
    let (total, active, inactive, bounced) = receivers::count_matching(db, account, &sel)?;
    Ok(FilterStats {
        total_count: total,
        active_count: active,
        inactive_count: inactive,
        bounce_count: bounced,
        time: now(),
    })
}

pub fn count(db: &Db, account: AccountId, group_id: i64, id: i64) -> StoreResult<i64> {
    Ok(stats(db, account, group_id, id)?.total_count)
}

pub fn receivers(
    db: &Db,
    account: AccountId,
    group_id: i64,
    id: i64,
    q: &ReceiverQuery,
) -> StoreResult<ReceiversJson> {
    let sel = selection(db, account, group_id, id)?;
    receivers::list_matching(db, account, &sel, q, true)
}

/// [`runtime_json`]'s receivers, as values.
pub fn runtime(db: &Db, account: AccountId, f: &RuntimeFilter) -> StoreResult<Vec<Receiver>> {
    runtime_json(db, account, f)?.receivers()
}

/// `POST /v3/receivers/filter`. The options the spec leaves open
/// (`last_poolid`, `inactive_events`, `super_tags`, `fast_mode`, `debug`)
/// are accepted and change nothing.
pub fn runtime_json(db: &Db, account: AccountId, f: &RuntimeFilter) -> StoreResult<ReceiversJson> {
    let mut group_ids = Vec::new();
    for g in f
        .groups
        .iter()
        .flatten()
        .flat_map(|g| g.split(','))
        .map(str::trim)
        .filter(|g| !g.is_empty())
    {
        let Some(id) = listpipe_api::Id::parse(g) else {
            return not_found(format!("Not Found: invalid group \"{g}\""));
        };
        groups::ensure(db, account, id.0)?;
        group_ids.push(id.0);
    }
    let whole_account = group_ids.is_empty();
    if whole_account {
        group_ids = groups::list(db, account, None)?
            .into_iter()
            .map(|g| g.id.0)
            .collect();
    }
    let rules: &[Rule] = f.rules.as_deref().unwrap_or_default();
    let compiled = rules::compile(
        db,
        account,
        &group_ids,
        rules,
        f.operator.as_deref().unwrap_or("AND"),
    )?;
    let scope = runtime_scope(db.backend(), &group_ids, whole_account);
    let q = ReceiverQuery {
        pagesize: f.pagesize,
        page: f.page,
        kind: f.activeonly.filter(|a| *a).map(|_| "active".into()),
        detail: f.detail,
        order_by: f.orderby.clone(),
        ..Default::default()
    };
    receivers::list_matching(db, account, &scope.and(compiled), &q, true)
}

/// The receivers a runtime filter looks in: those of `group_ids`, or of the
/// whole account (every group) when it named none.
///
/// The shape decides the page's plan, at 10M receivers a matter of
/// seconds: one group is `r.group_id = ?`, walked on the group's index in
/// id order, so a page stops at its last match (36 s to 1 ms for an
/// attribute rule's first page); the whole account is no condition past the
/// account's own, walked in id order likewise. Only a list of some groups
/// is a list, whose receivers the page gathers from each group's index and
/// sorts.
///
/// On PostgreSQL "no condition" is `TRUE` (its AND takes no integer) and
/// the list an array (no `json_each`).
pub(crate) fn runtime_scope(backend: Backend, group_ids: &[i64], whole_account: bool) -> Selection {
    match group_ids {
        [one] => Selection {
            sql: "r.group_id = ?".into(),
            params: vec![Value::Integer(*one)],
            whole_group: None,
        },
        _ if whole_account => Selection {
            sql: match backend {
                Backend::Sqlite => "1",
                Backend::Postgres => "TRUE",
            }
            .into(),
            params: vec![],
            whole_group: None,
        },
        _ => match backend {
            Backend::Sqlite => Selection {
                sql: "r.group_id IN (SELECT value FROM json_each(?))".into(),
                params: vec![Value::Text(
                    serde_json::to_string(group_ids).unwrap_or_else(|_| "[]".into()),
                )],
                whole_group: None,
            },
            Backend::Postgres => Selection {
                sql: "r.group_id = ANY(CAST(? AS BIGINT[]))".into(),
                params: vec![Value::Text(format!(
                    "{{{}}}",
                    group_ids
                        .iter()
                        .map(i64::to_string)
                        .collect::<Vec<_>>()
                        .join(",")
                ))],
                whole_group: None,
            },
        },
    }
}
