//! The paged receiver lists (a group's, a filter's, the bounced ones):
//! ordering, state and list filters, pages that start after the previous
//! page's last id, and the counts per state.

use super::super::groups::{ACTIVE_SQL, BOUNCED_SQL, INACTIVE_SQL};
use super::super::{AccountId, Db, StoreResult, groups, invalid};
use super::page::{Page, ReceiversJson};
use super::read::SELECT;
use super::{DEFAULT_PAGESIZE, MAX_PAGESIZE};
use crate::store::db::{Dynamic, Param, Row, params};
use listpipe_api::{ReceiverQuery, ReceiverType};
use rusqlite::types::Value;

/// The fields `order_by` accepts, with their columns.
const ORDER_FIELDS: &[(&str, &str)] = &[
    ("id", "r.id"),
    ("email", "c.email"),
    ("registered", "r.registered"),
    ("activated", "r.activated"),
    ("deactivated", "r.deactivated"),
    ("imported", "r.imported"),
    ("bounced", "r.bounced"),
    ("points", "r.points"),
    ("source", "r.source"),
    ("stamp", "r.created"),
    ("changed", "r.changed"),
];

fn order_clause(order_by: Option<&str>) -> StoreResult<String> {
    let Some(spec) = order_by.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok("r.id ASC".into());
    };
    let mut words = spec.split_whitespace();
    let field = words.next().unwrap_or("").to_ascii_lowercase();
    let dir = match words.next().map(|d| d.to_ascii_lowercase()).as_deref() {
        None | Some("asc") => "ASC",
        Some("desc") => "DESC",
        Some(other) => {
            return invalid(format!(
                "Bad Request: order_by direction \"{other}\" must be asc or desc"
            ));
        }
    };
    let Some((_, column)) = ORDER_FIELDS.iter().find(|(f, _)| *f == field) else {
        let names: Vec<_> = ORDER_FIELDS.iter().map(|(f, _)| *f).collect();
        return invalid(format!(
            "Bad Request: cannot order by \"{field}\"; valid fields: {}",
            names.join(", ")
        ));
    };
    // `order_by=id asc` (what listpipe's exports send) is the default order
    // spelt out: the same clause, so it gets the same keyset paging.
    if *column == "r.id" {
        return Ok(format!("r.id {dir}"));
    }
    Ok(format!("{column} {dir}, r.id {dir}"))
}

fn split_list(list: &Option<Vec<String>>) -> Option<Vec<String>> {
    list.as_ref().map(|items| {
        items
            .iter()
            .flat_map(|s| s.split(','))
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    })
}

/// The receiver list of a group (spec §4.8): paged, filtered by type and by
/// email or id lists, ordered, with the requested detail.
pub fn list(
    conn: &Db,
    account: AccountId,
    group_id: i64,
    q: &ReceiverQuery,
) -> StoreResult<ReceiversJson> {
    groups::ensure(conn, account, group_id)?;
    list_matching(conn, account, &Selection::group(group_id), q, true)
}

/// A condition on receivers (`r`) and their contacts (`c`) with its bound
/// values in order; built by the callers (a group, a filter's rules).
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub sql: String,
    pub params: Vec<Value>,
    /// Set when the selection is exactly "the receivers of this group" (a
    /// group checked to be the account's): deep pages then skip on the
    /// group's index alone ([`page_start`]).
    pub whole_group: Option<i64>,
}

impl Selection {
    pub fn group(group_id: i64) -> Self {
        Selection {
            sql: "r.group_id = ?".into(),
            params: vec![Value::Integer(group_id)],
            whole_group: Some(group_id),
        }
    }

    /// Both conditions.
    pub fn and(mut self, other: Selection) -> Self {
        self.sql = format!("({}) AND ({})", self.sql, other.sql);
        self.params.extend(other.params);
        self.whole_group = None;
        self
    }
}

fn state_sql(kind: Option<&str>) -> StoreResult<&'static str> {
    let kind = match kind {
        None => ReceiverType::All,
        Some(k) => ReceiverType::parse(k).map_or_else(
            || {
                invalid(format!(
                    "Bad Request: type \"{k}\" must be one of {}",
                    ReceiverType::CHOICES
                ))
            },
            Ok,
        )?,
    };
    Ok(match kind {
        ReceiverType::All => "1",
        ReceiverType::Active => ACTIVE_SQL,
        ReceiverType::Inactive => INACTIVE_SQL,
        ReceiverType::Bounce => BOUNCED_SQL,
    })
}

/// The receiver list over any selection: paged, filtered by type and by
/// email or id lists, ordered, with the requested detail. Group attributes
/// are shown when `with_group_parts`.
pub fn list_matching(
    conn: &Db,
    account: AccountId,
    sel: &Selection,
    q: &ReceiverQuery,
    with_group_parts: bool,
) -> StoreResult<ReceiversJson> {
    let pagesize = q.pagesize.unwrap_or(DEFAULT_PAGESIZE);
    if !(1..=MAX_PAGESIZE).contains(&pagesize) {
        return invalid(format!(
            "Bad Request: pagesize must be from 1 to {MAX_PAGESIZE}"
        ));
    }
    let page = q.page.unwrap_or(0);
    if page < 0 {
        return invalid("Bad Request: page is zero-based and cannot be negative");
    }
    let state = state_sql(q.kind.as_deref())?;
    let to_json = |v: Option<Vec<String>>| {
        v.map(|v| serde_json::to_string(&v).unwrap_or_else(|_| "[]".into()))
    };
    let emails = to_json(split_list(&q.email_list));
    let ids = to_json(split_list(&q.id_list));
    let order = order_clause(q.order_by.as_deref())?;
    let found = match conn {
        Db::Lite(lite) => sqlite_page(
            lite,
            account,
            sel,
            state,
            &order,
            [&emails, &ids],
            pagesize,
            page,
        )?,
        Db::Pg(_) => {
            // No remembered page ends: other server processes write to the
            // same database, so this process cannot know they still hold.
            let mut after = (-1, -1);
            if let (true, Some(g), "1", None, None) = (
                order == "r.id ASC" && page > 0,
                sel.whole_group,
                state,
                &emails,
                &ids,
            ) {
                match page_start(conn, g, -1, page.saturating_mul(pagesize))? {
                    Some(before_first) => after = (before_first, page - 1),
                    None => return Ok(ReceiversJson(b"[]".to_vec())),
                }
            }
            let sql = pg_page_sql(&sel.sql, state, &order, sel.params.len());
            let skip = (page - after.1 - 1).saturating_mul(pagesize);
            let dynamic: Vec<Dynamic> = sel.params.iter().map(Dynamic).collect();
            let mut values: Vec<&dyn Param> = vec![&account.0];
            values.extend(dynamic.iter().map(|d| d as &dyn Param));
            values.extend([&emails as &dyn Param, &ids, &pagesize, &skip, &after.0]);
            let mut found = Page::default();
            conn.each(&sql, &values, |r| found.push(r))?;
            found
        }
    };
    found.finish(conn, account, with_group_parts, q.detail.unwrap_or(0))
}

/// A page on SQLite: bound by position (its statement's text is fixed per
/// selection, so it is prepared once), starting after the last id of an
/// earlier page of the same query when one was served in this process.
#[allow(clippy::too_many_arguments)]
fn sqlite_page(
    conn: &rusqlite::Connection,
    account: AccountId,
    sel: &Selection,
    state: &str,
    order: &str,
    [emails, ids]: [&Option<String>; 2],
    pagesize: i64,
    page: i64,
) -> StoreResult<Page> {
    // In id order, a page starts after the last id of an earlier page of
    // the same query when one was served: page 999 of a million receivers
    // then skips a few pages, not 999,000 rows.
    let by_id = order == "r.id ASC";
    let sql = page_sql(&sel.sql, state, order);
    let mut values: Vec<Value> = Vec::with_capacity(sel.params.len() + 1);
    values.push(Value::Integer(account.0));
    values.extend(sel.params.iter().cloned());
    let cursor_key = by_id.then(|| {
        super::cursor::key(
            conn.path().unwrap_or(""),
            &sql,
            &values,
            [emails, ids],
            pagesize,
        )
    });
    let (mut after_id, mut after_page) = cursor_key
        .map(|k| super::cursor::before(k, page))
        .unwrap_or((-1, -1));
    // Keyset: a page of a whole group in id order starts after an id found
    // on the group's index alone, so page 9,000 reads one page of rows, as
    // page 0 does, instead of 450,000 rows joined and thrown away.
    if let (true, Some(g), "1", None, None) = (by_id, sel.whole_group, state, emails, ids) {
        let skip = (page - after_page - 1).saturating_mul(pagesize);
        if skip > 0 {
            match page_start(&Db::Lite(conn), g, after_id, skip)? {
                Some(before_first) => (after_id, after_page) = (before_first, page - 1),
                None => return Ok(Page::default()),
            }
        }
    }
    let mut stmt = conn.prepare_cached(&sql)?;
    for (i, v) in values.iter().enumerate() {
        stmt.raw_bind_parameter(i + 1, v)?;
    }
    stmt.raw_bind_parameter(1000, emails)?;
    stmt.raw_bind_parameter(1001, ids)?;
    stmt.raw_bind_parameter(1002, pagesize)?;
    let skip = (page - after_page - 1).saturating_mul(pagesize);
    stmt.raw_bind_parameter(1003, skip)?;
    stmt.raw_bind_parameter(1004, after_id)?;
    let mut rows = stmt.raw_query();
    let mut found = Page::default();
    while let Some(row) = rows.next()? {
        found.push(&Row::Lite(row))?;
    }
    if let Some(k) = cursor_key
        && found.len() as i64 == pagesize
    {
        super::cursor::remember(k, page, found.last_id);
    }
    Ok(found)
}

/// [`page_sql`] on PostgreSQL: the selection's values and the account
/// numbered from ?1, the lists, size, offset and start after them; the
/// lists expanded by `jsonb_array_elements_text` (an id that is not a
/// number matches nothing, as SQLite's CAST makes it 0).
fn pg_page_sql(sel_sql: &str, state: &str, order: &str, sel_values: usize) -> String {
    let n = sel_values + 1;
    let (emails, ids, size, skip, after) = (n + 1, n + 2, n + 3, n + 4, n + 5);
    let state = if state == "1" { "TRUE" } else { state };
    format!(
        "{SELECT} WHERE r.account_id = ? AND ({sel_sql}) AND {state}
           AND (?{emails} IS NULL OR c.email IN
                (SELECT value FROM jsonb_array_elements_text(CAST(?{emails} AS jsonb))))
           AND (?{ids} IS NULL OR r.id IN (SELECT CAST(value AS BIGINT)
                FROM jsonb_array_elements_text(CAST(?{ids} AS jsonb)) WHERE value ~ '^-?[0-9]{{1,18}}$'))
           AND r.id > ?{after}
         ORDER BY {order} LIMIT ?{size} OFFSET ?{skip}"
    )
}

/// The query of one page of receivers: the selection `sel_sql` (its values
/// bound from ?2 on, the account as ?1), the state condition, optional
/// email and id lists (?1000, ?1001), the order, the page's size and
/// offset (?1002, ?1003) and the id it starts after (?1004).
pub(crate) fn page_sql(sel_sql: &str, state: &str, order: &str) -> String {
    format!(
        "{SELECT} WHERE r.account_id = ? AND ({sel_sql}) AND {state}
           AND (?1000 IS NULL OR c.email IN (SELECT value FROM json_each(?1000)))
           AND (?1001 IS NULL OR r.id IN (SELECT CAST(value AS INTEGER) FROM json_each(?1001)))
           AND r.id > ?1004
         ORDER BY {order} LIMIT ?1002 OFFSET ?1003"
    )
}

/// The id just before the first receiver of a page of group `group_id` in
/// id order: `skip` receivers after `after_id`. `None` when the group has
/// no receiver there. One pass over the covering index
/// `receivers_group_order (group_id, id)`, reading no receiver row.
fn page_start(conn: &Db, group_id: i64, after_id: i64, skip: i64) -> StoreResult<Option<i64>> {
    conn.opt_row(PAGE_START_SQL, params![group_id, after_id, skip - 1], |r| {
        r.get(0)
    })
}

pub(crate) const PAGE_START_SQL: &str =
    "SELECT id FROM receivers WHERE group_id = ?1 AND id > ?2 ORDER BY id LIMIT 1 OFFSET ?3";

/// How many receivers of the selection are in each state.
pub fn count_matching(
    conn: &Db,
    account: AccountId,
    sel: &Selection,
) -> StoreResult<(i64, i64, i64, i64)> {
    // A state counted as a sum of 1s: PostgreSQL cannot sum a condition.
    let count = |state: &str| {
        format!("CAST(COALESCE(SUM(CASE WHEN {state} THEN 1 ELSE 0 END), 0) AS BIGINT)")
    };
    let sql = format!(
        "SELECT COUNT(*), {}, {}, {}
         FROM receivers r JOIN contacts c ON c.id = r.contact_id WHERE r.account_id = ? AND ({})",
        count(ACTIVE_SQL),
        count(INACTIVE_SQL),
        count(BOUNCED_SQL),
        sel.sql
    );
    let dynamic: Vec<Dynamic> = sel.params.iter().map(Dynamic).collect();
    let mut values: Vec<&dyn Param> = vec![&account.0];
    values.extend(dynamic.iter().map(|d| d as &dyn Param));
    conn.row(&sql, &values, |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
    })
}
