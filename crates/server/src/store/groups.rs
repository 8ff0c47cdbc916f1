//! Groups (receiver lists) and their statistics.

use super::{AccountId, Backend, StoreResult, conflict, invalid, not_found, now};
use crate::store::db::{Db, Lock, Row, params};
use listpipe_api::group::GroupAdvancedStats;
use listpipe_api::{Group, GroupInput, GroupStats};

const COLUMNS: &str = "id, name, locked, backup, receiver_info, stamp, last_mailing, last_changed";

/// The SQL condition of each receiver state. State is derived from the
/// timestamps alone (spec §3), so these three partition every group.
pub const ACTIVE_SQL: &str = "(r.activated > 0 AND r.deactivated = 0 AND r.bounced = 0)";
pub const BOUNCED_SQL: &str = "(r.bounced > 0)";
pub const INACTIVE_SQL: &str = "(r.bounced = 0 AND (r.activated = 0 OR r.deactivated > 0))";

fn from_row(r: &Row) -> StoreResult<Group> {
    Ok(Group {
        id: r.get::<i64>(0)?.into(),
        name: r.get(1)?,
        locked: r.get(2)?,
        backup: r.get(3)?,
        receiver_info: r.get(4)?,
        stamp: r.get(5)?,
        last_mailing: r.get(6)?,
        last_changed: r.get(7)?,
    })
}

/// The allowed values of the list's `order` query.
pub const ORDER_CHOICES: &str = "created ASC, created DESC, changed ASC, changed DESC";

pub fn list(db: &Db, account: AccountId, order: Option<&str>) -> StoreResult<Vec<Group>> {
    let order_sql = match order.map(|o| {
        o.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_ascii_lowercase()
    }) {
        None => "id ASC",
        Some(o) => match o.as_str() {
            "" | "created asc" => "stamp ASC, id ASC",
            "created desc" => "stamp DESC, id DESC",
            "changed asc" => "last_changed ASC, id ASC",
            "changed desc" => "last_changed DESC, id DESC",
            _ => return invalid(format!("order must be one of: {ORDER_CHOICES}")),
        },
    };
    let sql = format!("SELECT {COLUMNS} FROM groups WHERE account_id = ?1 ORDER BY {order_sql}");
    db.rows(&sql, params![account.0], from_row)
}

pub fn get(db: &Db, account: AccountId, id: i64) -> StoreResult<Group> {
    let sql = format!("SELECT {COLUMNS} FROM groups WHERE id = ?1 AND account_id = ?2");
    match db.opt_row(&sql, params![id, account.0], from_row)? {
        Some(g) => Ok(g),
        None => not_found("Not Found: invalid group"),
    }
}

/// [`ensure`] for a write that adds to the group's receivers or their
/// values. On PostgreSQL it also holds the group and its attributes (and the
/// global ones) until the write commits, `FOR KEY SHARE` once per request:
/// the receivers' tables have no foreign keys there (migration 003), so a
/// group or attribute deleted meanwhile ([`clear`], `attributes::delete`)
/// waits for this write and then deletes what it wrote, rather than leaving
/// it behind. Writes that hold the same group do not wait for each other.
pub fn hold(db: &Db, account: AccountId, id: i64) -> StoreResult<()> {
    if db.backend() == Backend::Sqlite {
        return ensure(db, account, id);
    }
    let held = db.lock(
        "SELECT id FROM groups WHERE id = ?1 AND account_id = ?2",
        params![id, account.0],
        Lock::KeyShare,
    )?;
    if held == 0 {
        return not_found("Not Found: invalid group");
    }
    db.lock(
        "SELECT id FROM attributes WHERE account_id = ?1 AND group_id IN (0, ?2)",
        params![account.0, id],
        Lock::KeyShare,
    )?;
    Ok(())
}

/// 404 unless the group exists and belongs to the account.
pub fn ensure(db: &Db, account: AccountId, id: i64) -> StoreResult<()> {
    let found: bool = db.value(
        "SELECT EXISTS (SELECT 1 FROM groups WHERE id = ?1 AND account_id = ?2)",
        params![id, account.0],
    )?;
    if found {
        Ok(())
    } else {
        not_found("Not Found: invalid group")
    }
}

fn check_name(db: &Db, account: AccountId, name: &str, except: i64) -> StoreResult<String> {
    let name = name.trim();
    super::check_len("name", name, super::MAX_NAME_CHARS)?;
    if name.is_empty() {
        return invalid("Bad Request: name must not be empty");
    }
    let taken: bool = db.value(
        "SELECT EXISTS (SELECT 1 FROM groups WHERE account_id = ?1 AND name = ?2 AND id <> ?3)",
        params![account.0, name, except],
    )?;
    if taken {
        return conflict(format!("Conflict: a group named \"{name}\" exists already"));
    }
    Ok(name.to_string())
}

pub fn create(db: &Db, account: AccountId, input: &GroupInput) -> StoreResult<Group> {
    let Some(name) = input.name.as_deref() else {
        return invalid("Bad Request: name is required");
    };
    let name = check_name(db, account, name, 0)?;
    if let Some(info) = &input.receiver_info {
        super::check_len("receiver_info", info, super::MAX_TEXT_CHARS)?;
    }
    let t = now();
    let id: i64 = db.value(
        "INSERT INTO groups (account_id, name, receiver_info, locked, backup, stamp, last_changed)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6) RETURNING id",
        params![
            account.0,
            name,
            input.receiver_info.as_deref().unwrap_or(""),
            input.locked.unwrap_or(false),
            input.backup.unwrap_or(false),
            t
        ],
    )?;
    get(db, account, id)
}

pub fn update(db: &Db, account: AccountId, id: i64, input: &GroupInput) -> StoreResult<Group> {
    let mut group = get(db, account, id)?;
    if let Some(name) = &input.name {
        group.name = check_name(db, account, name, id)?;
    }
    if let Some(info) = &input.receiver_info {
        super::check_len("receiver_info", info, super::MAX_TEXT_CHARS)?;
        group.receiver_info = info.clone();
    }
    group.locked = input.locked.unwrap_or(group.locked);
    group.backup = input.backup.unwrap_or(group.backup);
    group.last_changed = now();
    db.exec(
        "UPDATE groups SET name = ?1, receiver_info = ?2, locked = ?3, backup = ?4, last_changed = ?5
         WHERE id = ?6",
        params![group.name, group.receiver_info, group.locked, group.backup, group.last_changed, id],
    )?;
    Ok(group)
}

/// Marks the group changed (a receiver was added, changed or removed).
pub fn touch(db: &Db, id: i64) -> StoreResult<()> {
    db.exec(
        "UPDATE groups SET last_changed = ?1 WHERE id = ?2",
        params![now(), id],
    )?;
    Ok(())
}

/// Deletes the group with its receivers, attributes and blocklist; contacts
/// left in no group are deleted with everything they carried.
pub fn delete(db: &Db, account: AccountId, id: i64) -> StoreResult<()> {
    ensure(db, account, id)?;
    clear(db, account, id)?;
    db.exec(
        "DELETE FROM attributes WHERE account_id = ?1 AND group_id = ?2",
        params![account.0, id],
    )?;
    db.exec("DELETE FROM groups WHERE id = ?1", params![id])?;
    Ok(())
}

/// Removes every receiver from the group (spec: "removes all email
/// addresses"); the group, its attributes and blocklist stay.
pub fn clear(db: &Db, account: AccountId, id: i64) -> StoreResult<u64> {
    ensure(db, account, id)?;
    // Waits for the writes that [`hold`] the group; the deletes below then
    // see what they wrote.
    db.lock(
        "SELECT id FROM groups WHERE id = ?1",
        params![id],
        Lock::Update,
    )?;
    db.exec(
        "DELETE FROM attribute_values WHERE attribute_id IN
           (SELECT id FROM attributes WHERE account_id = ?1 AND group_id = ?2)",
        params![account.0, id],
    )?;
    let removed = db.exec("DELETE FROM receivers WHERE group_id = ?1", params![id])?;
    delete_orphan_contacts(db, account)?;
    touch(db, id)?;
    Ok(removed)
}

/// Every contact of the account in no group any more is deleted, with all
/// it carried: one pass over the account, for bulk removals (clearing a
/// group), never per receiver (one receiver's removal deletes its one
/// contact by key, `receivers::delete_orphan_contact`). Decision: here,
/// beside its one caller, so that imports run one way, from `receivers` to
/// `groups`.
fn delete_orphan_contacts(db: &Db, account: AccountId) -> StoreResult<()> {
    const ORPHANS: &str = "SELECT c.id FROM contacts c WHERE c.account_id = ?1
         AND NOT EXISTS (SELECT 1 FROM receivers r WHERE r.contact_id = c.id)";
    // Locked first, so a write adding one of them to a group commits
    // before (and the deletes below see its receiver) or fails after.
    db.lock(ORPHANS, params![account.0], Lock::Update)?;
    for table in super::CONTACT_PARTS {
        db.exec(
            &format!("DELETE FROM {table} WHERE contact_id IN ({ORPHANS})"),
            params![account.0],
        )?;
    }
    db.exec(
        &format!("DELETE FROM contacts WHERE id IN ({ORPHANS})"),
        params![account.0],
    )?;
    Ok(())
}

pub fn stats(db: &Db, account: AccountId, id: i64) -> StoreResult<GroupStats> {
    ensure(db, account, id)?;
    // `COUNT(*) FILTER`, not `SUM` of a condition: PostgreSQL sums no
    // booleans. AVG is cast: PostgreSQL's AVG of a BIGINT is NUMERIC.
    let sql = format!(
        "SELECT COUNT(*), COUNT(*) FILTER (WHERE {ACTIVE_SQL}), COUNT(*) FILTER (WHERE {INACTIVE_SQL}),
                COUNT(*) FILTER (WHERE {BOUNCED_SQL}),
                COALESCE(CAST(AVG(r.points) AS DOUBLE PRECISION), 0)
         FROM receivers r WHERE r.group_id = ?1"
    );
    let (total, active, inactive, bounced, avg_points): (i64, i64, i64, i64, f64) =
        db.row(&sql, params![id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?;
    let order_count: i64 = db.value(
        "SELECT COUNT(*) FROM orders o JOIN receivers r ON r.contact_id = o.contact_id WHERE r.group_id = ?1",
        params![id],
    )?;
    // Quality 0..5: the share of active receivers, in fifths (0 when empty).
    let quality = if total == 0 {
        0
    } else {
        ((active * 5 + total - 1) / total).clamp(0, 5)
    };
    Ok(GroupStats {
        total_count: total,
        inactive_count: inactive,
        active_count: active,
        bounce_count: bounced,
        avg_points: (avg_points * 10.0).round() / 10.0,
        quality,
        time: now(),
        order_count,
    })
}

pub fn advanced_stats(db: &Db, account: AccountId, id: i64) -> StoreResult<GroupAdvancedStats> {
    let stats = stats(db, account, id)?;
    let count = |sql: &str| -> StoreResult<i64> { db.value(sql, params![id, account.0]) };
    Ok(GroupAdvancedStats {
        awaiting_activation_count: count(
            "SELECT COUNT(*) FROM receivers r WHERE r.group_id = ?1 AND ?2 = ?2
             AND r.activated = 0 AND r.deactivated = 0 AND r.bounced = 0 AND r.registered > 0",
        )?,
        attribute_count: count("SELECT COUNT(*) FROM attributes WHERE group_id = ?1 AND account_id = ?2")?,
        filter_count: 0,
        form_count: 0,
        blocklist_count: count("SELECT COUNT(*) FROM group_blocklist WHERE group_id = ?1 AND ?2 = ?2")?,
        tagged_count: count(
            "SELECT COUNT(DISTINCT r.contact_id) FROM receivers r JOIN tags t ON t.contact_id = r.contact_id
             WHERE r.group_id = ?1 AND ?2 = ?2",
        )?,
        // A quantity under 1 counts as 1 (`CASE`: PostgreSQL's MAX takes no two arguments).
        order_revenue: db.value(
            "SELECT COALESCE(SUM(o.price * CASE WHEN o.quantity > 1 THEN o.quantity ELSE 1 END), 0)
             FROM orders o JOIN receivers r ON r.contact_id = o.contact_id WHERE r.group_id = ?1",
            params![id],
        )?,
        last_changed: get(db, account, id)?.last_changed,
        stats,
    })
}
