//! Client records, spec §2.2 and §4.2. This server has one client per
//! account, the account itself, so every read first checks that the id (or
//! login domain) in the path is the caller's own; anything else is a 404,
//! like another account's group.

use super::db::{Db, params};
use super::groups::ACTIVE_SQL;
use super::{
    AccountId, StoreError, StoreResult, accounts, attributes, forms, not_found, receivers,
};
use chrono::{Datelike, TimeZone, Utc};
use listpipe_api::blacklist::MAX_BATCH;
use listpipe_api::client_info::{ClientInfo, ClientLimit, ClientUser, InvoiceAddress, Plan};

pub const DEFAULT_PAGESIZE: i64 = 50;
pub const MAX_PAGESIZE: i64 = 5000;

/// The caller's own client, if `id` names it.
pub fn get(db: &Db, account: AccountId, id: i64) -> StoreResult<ClientInfo> {
    if id != account.0 {
        return not_found("Not Found: invalid client");
    }
    accounts::client_info(db, account)
}

/// The caller's own client, if `domain` is its login domain (any case).
pub fn by_domain(db: &Db, account: AccountId, domain: &str) -> StoreResult<ClientInfo> {
    let info = accounts::client_info(db, account)?;
    if info.login_domain.eq_ignore_ascii_case(domain.trim()) {
        Ok(info)
    } else {
        not_found("Not Found: no client with that domain")
    }
}

/// `GET /v3/clients`: the page of the account's clients. There is one, so
/// page 0 holds it and every later page is empty.
pub fn list(
    db: &Db,
    account: AccountId,
    pagesize: Option<i64>,
    page: Option<i64>,
) -> StoreResult<Vec<ClientInfo>> {
    let pagesize = pagesize.unwrap_or(DEFAULT_PAGESIZE);
    if !(1..=MAX_PAGESIZE).contains(&pagesize) {
        return super::invalid(format!(
            "Bad Request: pagesize must be from 1 to {MAX_PAGESIZE}"
        ));
    }
    let page = page.unwrap_or(0);
    if page < 0 {
        return super::invalid("Bad Request: page must be 0 or more (pages count from 0)");
    }
    let all = [accounts::client_info(db, account)?];
    let start = page.saturating_mul(pagesize);
    Ok(all
        .into_iter()
        .skip(usize::try_from(start).unwrap_or(usize::MAX))
        .take(pagesize as usize)
        .collect())
}

pub fn plan(db: &Db, account: AccountId, id: i64) -> StoreResult<Plan> {
    get(db, account, id)?;
    db.opt_row(
        "SELECT p.id, p.name, p.flatrate, p.emails, p.receiver_cap, p.runtime, p.price, p.currency
         FROM accounts a JOIN plans p ON p.id = a.plan_id WHERE a.id = ?1",
        params![account.0],
        |r| {
            Ok(Plan {
                id: r.get::<i64>(0)?.into(),
                name: r.get(1)?,
                // An integer on both backends (0 or 1), as SQLite keeps it.
                flatrate: r.get::<i64>(2)? != 0,
                emails: r.get(3)?,
                receiver_cap: r.get(4)?,
                runtime: r.get(5)?,
                price: r.get(6)?,
                currency: r.get(7)?,
            })
        },
    )?
    .ok_or_else(|| StoreError::NotFound("Not Found: the client has no plan".into()))
}

/// Mails the account may still send: always 0 on a flat rate (spec §8),
/// else the prepaid balance.
pub fn contingent(db: &Db, account: AccountId, id: i64) -> StoreResult<i64> {
    if plan(db, account, id)?.flatrate {
        return Ok(0);
    }
    db.value(
        "SELECT contingent FROM accounts WHERE id = ?1",
        params![account.0],
    )
}

pub fn invoice_address(db: &Db, account: AccountId, id: i64) -> StoreResult<InvoiceAddress> {
    get(db, account, id)?;
    // The account's company stands in when no address row exists.
    db.row(
        "SELECT COALESCE(i.company, a.company), COALESCE(i.street, ''), COALESCE(i.zip, ''),
                COALESCE(i.city, ''), COALESCE(i.country, '')
         FROM accounts a LEFT JOIN invoice_addresses i ON i.account_id = a.id WHERE a.id = ?1",
        params![account.0],
        |r| {
            Ok(InvoiceAddress {
                company: r.get(0)?,
                street: r.get(1)?,
                zip: r.get(2)?,
                city: r.get(3)?,
                country: r.get(4)?,
            })
        },
    )
}

/// The first day of the month after `now`, 00:00 UTC, in Unix seconds.
pub fn first_of_next_month(now: i64) -> i64 {
    let today = Utc
        .timestamp_opt(now, 0)
        .single()
        .unwrap_or_else(Utc::now)
        .date_naive();
    let (year, month) = if today.month() == 12 {
        (today.year() + 1, 1)
    } else {
        (today.year(), today.month() + 1)
    };
    chrono::NaiveDate::from_ymd_opt(year, month, 1)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map_or(now, |d| d.and_utc().timestamp())
}

pub fn next_invoice_date(db: &Db, account: AccountId, id: i64) -> StoreResult<i64> {
    get(db, account, id)?;
    Ok(first_of_next_month(super::now()))
}

/// Receivers of all groups of the account. A receiver is an address's
/// membership of one group, so an address in two groups counts twice: the
/// count is the sum of the groups' `total_count`.
pub fn receiver_count(db: &Db, account: AccountId, id: i64) -> StoreResult<i64> {
    get(db, account, id)?;
    count_receivers(db, account, "TRUE")
}

/// The active ones among them (spec §3, the same rule as group stats).
pub fn active_receiver_count(db: &Db, account: AccountId, id: i64) -> StoreResult<i64> {
    get(db, account, id)?;
    count_receivers(db, account, ACTIVE_SQL)
}

/// `condition` is a boolean SQL expression (`TRUE`, not SQLite's `1`).
fn count_receivers(db: &Db, account: AccountId, condition: &str) -> StoreResult<i64> {
    let sql = format!("SELECT COUNT(*) FROM receivers r WHERE r.account_id = ?1 AND {condition}");
    db.value(&sql, params![account.0])
}

/// The limits the server applies to the account, with current use. Limits
/// the server does not have are `null`, so the list says what is enforced.
/// `max_body_bytes` is the largest request body the server reads;
/// `requests_per_second` is its rate limit per token, if any.
pub fn limits(
    db: &Db,
    account: AccountId,
    id: i64,
    max_body_bytes: usize,
    requests_per_second: Option<i64>,
) -> StoreResult<Vec<ClientLimit>> {
    let plan = plan(db, account, id)?;
    let count = |sql: &str| -> StoreResult<i64> { db.value(sql, params![account.0]) };
    let limit = |name: &str, value: Option<i64>, used: Option<i64>| ClientLimit {
        name: name.into(),
        value,
        used,
    };
    let attr = attributes::limits(db, account)?;
    Ok(vec![
        limit(
            "receivers",
            Some(plan.receiver_cap).filter(|c| *c > 0),
            Some(count_receivers(db, account, "TRUE")?),
        ),
        limit(
            "groups",
            None,
            Some(count("SELECT COUNT(*) FROM groups WHERE account_id = ?1")?),
        ),
        limit("attributes", Some(attr.max_global), Some(attr.used_global)),
        limit(
            "group_attributes",
            Some(attr.max_per_group),
            // The subquery is named: PostgreSQL before 16 needs it.
            Some(count(
                "SELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(*) AS n FROM attributes
                 WHERE account_id = ?1 AND group_id <> 0 GROUP BY group_id) AS per_group",
            )?),
        ),
        limit(
            "forms",
            Some(forms::MAX_FORMS),
            Some(count("SELECT COUNT(*) FROM forms WHERE account_id = ?1")?),
        ),
        limit(
            "blacklist",
            None,
            Some(count(
                "SELECT COUNT(*) FROM blacklist WHERE account_id = ?1",
            )?),
        ),
        limit("blacklist_batch", Some(MAX_BATCH as i64), None),
        limit("receivers_pagesize", Some(receivers::MAX_PAGESIZE), None),
        limit("request_body_bytes", Some(max_body_bytes as i64), None),
        limit("requests_per_second", requests_per_second, None),
    ])
}

/// The people who can log in to the account (`store::users`), never with
/// their password.
pub fn users(db: &Db, account: AccountId, id: i64) -> StoreResult<Vec<ClientUser>> {
    get(db, account, id)?;
    Ok(super::users::list(db, account)?
        .into_iter()
        .map(|u| ClientUser {
            id: u.id.into(),
            email: u.email,
            name: u.name,
            role: u.role,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::first_of_next_month;

    #[test]
    fn next_invoice_date_is_the_first_of_next_month_utc() {
        // 2024-02-29 12:00 UTC -> 2024-03-01 00:00 UTC.
        assert_eq!(first_of_next_month(1_709_208_000), 1_709_251_200);
        // 2024-12-31 23:59:59 UTC -> 2025-01-01 00:00 UTC.
        assert_eq!(first_of_next_month(1_735_689_599), 1_735_689_600);
    }
}
