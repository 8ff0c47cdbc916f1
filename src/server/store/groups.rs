//! Groups (receiver lists) and their statistics.

use super::{AccountId, StoreResult, conflict, invalid, not_found, now};
use crate::api::group::GroupAdvancedStats;
use crate::api::{Group, GroupInput, GroupStats};
use crate::server::store::Cached;
use rusqlite::{Connection, OptionalExtension, Row, params};

const COLUMNS: &str = "id, name, locked, backup, receiver_info, stamp, last_mailing, last_changed";

/// The SQL condition of each receiver state. State is derived from the
/// timestamps alone (spec §3), so these three partition every group.
pub const ACTIVE_SQL: &str = "(r.activated > 0 AND r.deactivated = 0 AND r.bounced = 0)";
pub const BOUNCED_SQL: &str = "(r.bounced > 0)";
pub const INACTIVE_SQL: &str = "(r.bounced = 0 AND (r.activated = 0 OR r.deactivated > 0))";

fn from_row(r: &Row) -> rusqlite::Result<Group> {
    Ok(Group {
        id: r.get::<_, i64>(0)?.into(),
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

pub fn list(conn: &Connection, account: AccountId, order: Option<&str>) -> StoreResult<Vec<Group>> {
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
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map([account.0], from_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub fn get(conn: &Connection, account: AccountId, id: i64) -> StoreResult<Group> {
    let sql = format!("SELECT {COLUMNS} FROM groups WHERE id = ?1 AND account_id = ?2");
    match conn
        .row(&sql, params![id, account.0], from_row)
        .optional()?
    {
        Some(g) => Ok(g),
        None => not_found("Not Found: invalid group"),
    }
}

/// 404 unless the group exists and belongs to the account.
pub fn ensure(conn: &Connection, account: AccountId, id: i64) -> StoreResult<()> {
    let found: bool = conn.row(
        "SELECT EXISTS (SELECT 1 FROM groups WHERE id = ?1 AND account_id = ?2)",
        params![id, account.0],
        |r| r.get(0),
    )?;
    if found {
        Ok(())
    } else {
        not_found("Not Found: invalid group")
    }
}

fn check_name(
    conn: &Connection,
    account: AccountId,
    name: &str,
    except: i64,
) -> StoreResult<String> {
    let name = name.trim();
    super::check_len("name", name, super::MAX_NAME_CHARS)?;
    if name.is_empty() {
        return invalid("Bad Request: name must not be empty");
    }
    let taken: bool = conn.row(
        "SELECT EXISTS (SELECT 1 FROM groups WHERE account_id = ?1 AND name = ?2 AND id <> ?3)",
        params![account.0, name, except],
        |r| r.get(0),
    )?;
    if taken {
        return conflict(format!("Conflict: a group named \"{name}\" exists already"));
    }
    Ok(name.to_string())
}

pub fn create(conn: &Connection, account: AccountId, input: &GroupInput) -> StoreResult<Group> {
    let Some(name) = input.name.as_deref() else {
        return invalid("Bad Request: name is required");
    };
    let name = check_name(conn, account, name, 0)?;
    if let Some(info) = &input.receiver_info {
        super::check_len("receiver_info", info, super::MAX_TEXT_CHARS)?;
    }
    let t = now();
    conn.exec(
        "INSERT INTO groups (account_id, name, receiver_info, locked, backup, stamp, last_changed)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
        params![
            account.0,
            name,
            input.receiver_info.as_deref().unwrap_or(""),
            input.locked.unwrap_or(false),
            input.backup.unwrap_or(false),
            t
        ],
    )?;
    get(conn, account, conn.last_insert_rowid())
}

pub fn update(
    conn: &Connection,
    account: AccountId,
    id: i64,
    input: &GroupInput,
) -> StoreResult<Group> {
    let mut group = get(conn, account, id)?;
    if let Some(name) = &input.name {
        group.name = check_name(conn, account, name, id)?;
    }
    if let Some(info) = &input.receiver_info {
        super::check_len("receiver_info", info, super::MAX_TEXT_CHARS)?;
        group.receiver_info = info.clone();
    }
    group.locked = input.locked.unwrap_or(group.locked);
    group.backup = input.backup.unwrap_or(group.backup);
    group.last_changed = now();
    conn.exec(
        "UPDATE groups SET name = ?1, receiver_info = ?2, locked = ?3, backup = ?4, last_changed = ?5
         WHERE id = ?6",
        params![group.name, group.receiver_info, group.locked, group.backup, group.last_changed, id],
    )?;
    Ok(group)
}

/// Marks the group changed (a receiver was added, changed or removed).
pub fn touch(conn: &Connection, id: i64) -> StoreResult<()> {
    conn.exec(
        "UPDATE groups SET last_changed = ?1 WHERE id = ?2",
        params![now(), id],
    )?;
    Ok(())
}

/// Deletes the group with its receivers, attributes and blocklist; contacts
/// left in no group are deleted with everything they carried.
pub fn delete(conn: &Connection, account: AccountId, id: i64) -> StoreResult<()> {
    ensure(conn, account, id)?;
    clear(conn, account, id)?;
    conn.exec(
        "DELETE FROM attributes WHERE account_id = ?1 AND group_id = ?2",
        params![account.0, id],
    )?;
    conn.exec("DELETE FROM groups WHERE id = ?1", [id])?;
    Ok(())
}

/// Removes every receiver from the group (spec: "removes all email
/// addresses"); the group, its attributes and blocklist stay.
pub fn clear(conn: &Connection, account: AccountId, id: i64) -> StoreResult<u64> {
    ensure(conn, account, id)?;
    conn.exec(
        "DELETE FROM attribute_values WHERE attribute_id IN
           (SELECT id FROM attributes WHERE account_id = ?1 AND group_id = ?2)",
        params![account.0, id],
    )?;
    let removed = conn.exec("DELETE FROM receivers WHERE group_id = ?1", [id])?;
    delete_orphan_contacts(conn, account)?;
    touch(conn, id)?;
    Ok(removed as u64)
}

/// Every contact of the account in no group any more is deleted, with all
/// it carried: one pass over the account, for bulk removals (clearing a
/// group), never per receiver (one receiver's removal deletes its one
/// contact by key, `receivers::delete_orphan_contact`). Decision: here,
/// beside its one caller, so that imports run one way, from `receivers` to
/// `groups`.
fn delete_orphan_contacts(conn: &Connection, account: AccountId) -> StoreResult<()> {
    conn.exec(
        "DELETE FROM contacts WHERE account_id = ?1
         AND NOT EXISTS (SELECT 1 FROM receivers r WHERE r.contact_id = contacts.id)",
        [account.0],
    )?;
    Ok(())
}

pub fn stats(conn: &Connection, account: AccountId, id: i64) -> StoreResult<GroupStats> {
    ensure(conn, account, id)?;
    let sql = format!(
        "SELECT COUNT(*), COALESCE(SUM({ACTIVE_SQL}), 0), COALESCE(SUM({INACTIVE_SQL}), 0),
                COALESCE(SUM({BOUNCED_SQL}), 0), COALESCE(AVG(r.points), 0)
         FROM receivers r WHERE r.group_id = ?1"
    );
    let (total, active, inactive, bounced, avg_points): (i64, i64, i64, i64, f64) =
        conn.row(&sql, [id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?;
    let order_count: i64 = conn.row(
        "SELECT COUNT(*) FROM orders o JOIN receivers r ON r.contact_id = o.contact_id WHERE r.group_id = ?1",
        [id],
        |r| r.get(0),
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

pub fn advanced_stats(
    conn: &Connection,
    account: AccountId,
    id: i64,
) -> StoreResult<GroupAdvancedStats> {
    let stats = stats(conn, account, id)?;
    let count = |sql: &str| -> StoreResult<i64> {
        Ok(conn.row(sql, params![id, account.0], |r| r.get(0))?)
    };
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
        order_revenue: conn.row(
            "SELECT COALESCE(SUM(o.price * MAX(o.quantity, 1)), 0) FROM orders o
             JOIN receivers r ON r.contact_id = o.contact_id WHERE r.group_id = ?1",
            [id],
            |r| r.get(0),
        )?,
        last_changed: get(conn, account, id)?.last_changed,
        stats,
    })
}
