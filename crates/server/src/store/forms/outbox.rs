//! The outbox: the double-opt-in mails the server writes instead of
//! sending them (see [`super::doi`]), read by `GET /v3/outbox` (a listpipe
//! extension) and `listpipe outbox`.

use super::super::{AccountId, StoreResult, invalid};
use crate::store::db::{Db, Row, params};
use listpipe_api::form::{DoiData, OutboxMail, OutboxQuery};

pub const DEFAULT_PAGESIZE: i64 = 50;
pub const MAX_PAGESIZE: i64 = 5000;

fn from_row(r: &Row) -> StoreResult<OutboxMail> {
    Ok(OutboxMail {
        id: r.get::<i64>(0)?.into(),
        kind: r.get(1)?,
        to: r.get(2)?,
        subject: r.get(3)?,
        text: r.get(4)?,
        link: r.get(5)?,
        form_id: r.get::<i64>(6)?.into(),
        group_id: r.get::<i64>(7)?.into(),
        receiver_id: r.get::<i64>(8)?.into(),
        doidata: DoiData {
            user_ip: r.get(9)?,
            referer: r.get(10)?,
            user_agent: r.get(11)?,
        },
        created: r.get(12)?,
    })
}

/// The account's mails, newest first; `limit` -1 for all of them.
pub fn page(
    db: &Db,
    account: AccountId,
    email: Option<&str>,
    limit: i64,
    offset: i64,
) -> StoreResult<Vec<OutboxMail>> {
    // "All" is the largest limit: PostgreSQL refuses SQLite's negative one.
    let limit = if limit < 0 { i64::MAX } else { limit };
    // `COLLATE NOCASE` names SQLite's collation there and the schema's
    // `nocase` (case-insensitive ICU) on PostgreSQL.
    db.rows(
        "SELECT id, kind, recipient, subject, body, link, form_id, group_id, receiver_id,
                user_ip, referer, user_agent, created
         FROM outbox WHERE account_id = ?1 AND (?2 IS NULL OR recipient = ?2 COLLATE NOCASE)
         ORDER BY id DESC LIMIT ?3 OFFSET ?4",
        params![account.0, email.map(str::trim), limit, offset],
        from_row,
    )
}

/// `GET /v3/outbox`: one page (zero-based) of the account's mails, newest first.
pub fn list(db: &Db, account: AccountId, q: &OutboxQuery) -> StoreResult<Vec<OutboxMail>> {
    let pagesize = q.pagesize.unwrap_or(DEFAULT_PAGESIZE);
    if !(1..=MAX_PAGESIZE).contains(&pagesize) {
        return invalid(format!(
            "Bad Request: pagesize must be from 1 to {MAX_PAGESIZE}"
        ));
    }
    let number = q.page.unwrap_or(0);
    if number < 0 {
        return invalid("Bad Request: page must be 0 or more (pages count from 0)");
    }
    let email = q.email.as_deref().filter(|e| !e.trim().is_empty());
    page(
        db,
        account,
        email,
        pagesize,
        number.saturating_mul(pagesize),
    )
}
