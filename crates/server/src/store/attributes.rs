//! Attribute definitions (global and group-local) and per-receiver values.
//!
//! Names are unique per scope, compared case-insensitively, and never
//! change after creation. Where a global and a group attribute share a
//! name, the group attribute is favoured (spec §2.6).

use super::{AccountId, StoreResult, conflict, groups, invalid, not_found};
use crate::store::db::{Db, Row, params};
use listpipe_api::attribute::{AttributeLimits, AttributeType, AttributeValue};
use listpipe_api::{Attribute, AttributeInput};
use std::collections::HashMap;

pub const MAX_GLOBAL: i64 = 200;
pub const MAX_PER_GROUP: i64 = 200;
pub const MAX_NAME_CHARS: usize = 64;
pub const MAX_VALUE_CHARS: usize = 10_000;

const COLUMNS: &str = "id, name, group_id, description, preview_value, default_value, type";

fn from_row(r: &Row) -> StoreResult<Attribute> {
    let name: String = r.get(1)?;
    Ok(Attribute {
        id: r.get(0)?,
        tag: format!("{{{}}}", name.to_uppercase()),
        name,
        group_id: r.get(2)?,
        description: r.get(3)?,
        preview_value: r.get(4)?,
        default_value: r.get(5)?,
        kind: r.get(6)?,
    })
}

pub fn limits(db: &Db, account: AccountId) -> StoreResult<AttributeLimits> {
    Ok(AttributeLimits {
        max_global: MAX_GLOBAL,
        used_global: db.value(
            "SELECT COUNT(*) FROM attributes WHERE account_id = ?1 AND group_id = 0",
            params![account.0],
        )?,
        max_per_group: MAX_PER_GROUP,
        max_name_length: MAX_NAME_CHARS as i64,
        max_value_length: MAX_VALUE_CHARS as i64,
    })
}

/// The attributes of one scope: `group_id` 0 lists the global ones.
pub fn list(db: &Db, account: AccountId, group_id: i64) -> StoreResult<Vec<Attribute>> {
    if group_id != 0 {
        groups::ensure(db, account, group_id)?;
    }
    let sql = format!(
        "SELECT {COLUMNS} FROM attributes WHERE account_id = ?1 AND group_id = ?2 ORDER BY id"
    );
    db.rows(&sql, params![account.0, group_id], from_row)
}

/// One attribute; with `group_id` given it must belong to that group.
pub fn get(db: &Db, account: AccountId, id: i64, group_id: Option<i64>) -> StoreResult<Attribute> {
    let sql = format!("SELECT {COLUMNS} FROM attributes WHERE id = ?1 AND account_id = ?2");
    match db.opt_row(&sql, params![id, account.0], from_row)? {
        Some(a) if group_id.is_none_or(|g| g == a.group_id) => Ok(a),
        _ => not_found("Not Found: invalid attribute"),
    }
}

fn check_name(name: &str) -> StoreResult<String> {
    let name = name.trim();
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= MAX_NAME_CHARS;
    if !ok {
        return invalid(format!(
            "Bad Request: attribute name \"{name}\" must start with a letter and hold only letters, digits and _ (at most {MAX_NAME_CHARS})"
        ));
    }
    Ok(name.to_string())
}

fn check_type(kind: &str) -> StoreResult<AttributeType> {
    AttributeType::parse(kind).map_or_else(
        || {
            invalid(format!(
                "Bad Request: unknown attribute type \"{kind}\"; valid types: {}",
                AttributeType::CHOICES
            ))
        },
        Ok,
    )
}

/// The size limits of an attribute's free-text fields.
fn check_texts(input: &AttributeInput) -> StoreResult<()> {
    for (field, value) in [
        ("description", &input.description),
        ("preview_value", &input.preview_value),
        ("default_value", &input.default_value),
    ] {
        if let Some(v) = value {
            super::check_len(field, v, super::MAX_TEXT_CHARS)?;
        }
    }
    Ok(())
}

pub fn create(
    db: &Db,
    account: AccountId,
    group_id: i64,
    input: &AttributeInput,
) -> StoreResult<Attribute> {
    let (Some(name), Some(kind)) = (&input.name, &input.kind) else {
        return invalid("Bad Request: name and type are required");
    };
    let name = check_name(name)?;
    let kind = check_type(kind)?;
    check_texts(input)?;
    if group_id != 0 {
        groups::ensure(db, account, group_id)?;
    }
    let (used, max): (i64, i64) = (
        db.value(
            "SELECT COUNT(*) FROM attributes WHERE account_id = ?1 AND group_id = ?2",
            params![account.0, group_id],
        )?,
        if group_id == 0 {
            MAX_GLOBAL
        } else {
            MAX_PER_GROUP
        },
    );
    if used >= max {
        return Err(super::StoreError::Forbidden(format!(
            "Forbidden: attribute limit of {max} reached"
        )));
    }
    let taken: bool = db.value(
        "SELECT EXISTS (SELECT 1 FROM attributes WHERE account_id = ?1 AND group_id = ?2 AND name = ?3)",
        params![account.0, group_id, name],
    )?;
    if taken {
        return conflict(format!("Conflict: attribute \"{name}\" exists already"));
    }
    // The spec puts no rule on a default value: it is kept as given.
    let default_value = input.default_value.clone().unwrap_or_default();
    let id: i64 = db.value(
        "INSERT INTO attributes (account_id, group_id, name, type, description, preview_value, default_value)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
        params![
            account.0,
            group_id,
            name,
            kind.as_str(),
            input.description.as_deref().unwrap_or(""),
            input.preview_value.as_deref().unwrap_or(""),
            default_value
        ],
    )?;
    get(db, account, id, None)
}

/// Updates type, description and preview value. The name is fixed and the
/// default value is not accepted on update (spec §2.6); moving an attribute
/// to another scope is allowed through the global endpoint only.
pub fn update(
    db: &Db,
    account: AccountId,
    id: i64,
    scope: Option<i64>,
    input: &AttributeInput,
) -> StoreResult<Attribute> {
    let mut attr = get(db, account, id, scope)?;
    if input
        .name
        .as_deref()
        .is_some_and(|n| !n.trim().eq_ignore_ascii_case(&attr.name))
    {
        return invalid("Bad Request: the name of an attribute cannot be changed");
    }
    check_texts(input)?;
    if input.default_value.is_some() {
        return invalid("Bad Request: default_value is not accepted on update");
    }
    if let Some(kind) = &input.kind {
        attr.kind = check_type(kind)?.as_str().to_string();
    }
    if let Some(d) = &input.description {
        attr.description = d.clone();
    }
    if let Some(p) = &input.preview_value {
        attr.preview_value = p.clone();
    }
    if let (None, Some(g)) = (scope, input.group_id)
        && g != attr.group_id
    {
        if g != 0 {
            groups::ensure(db, account, g)?;
        }
        let taken: bool = db.value(
            "SELECT EXISTS (SELECT 1 FROM attributes WHERE account_id = ?1 AND group_id = ?2 AND name = ?3)",
            params![account.0, g, attr.name],
        )?;
        if taken {
            return conflict(format!(
                "Conflict: attribute \"{}\" exists already there",
                attr.name
            ));
        }
        attr.group_id = g;
    }
    db.exec(
        "UPDATE attributes SET type = ?1, description = ?2, preview_value = ?3, group_id = ?4 WHERE id = ?5",
        params![attr.kind, attr.description, attr.preview_value, attr.group_id, id],
    )?;
    Ok(attr)
}

pub fn delete(db: &Db, account: AccountId, id: i64, scope: Option<i64>) -> StoreResult<()> {
    get(db, account, id, scope)?;
    // The attribute first: on PostgreSQL its row lock waits for the writes
    // that hold it (`groups::hold`), and the values are deleted after them.
    // Its values by hand: no foreign key cascades there (migration 003).
    db.exec("DELETE FROM attributes WHERE id = ?1", params![id])?;
    db.exec(
        "DELETE FROM attribute_values WHERE attribute_id = ?1",
        params![id],
    )?;
    Ok(())
}

/// Checks a value against the attribute's type and returns it as stored:
/// numbers and dates in one canonical spelling, an empty value as `""`.
pub fn check_value(kind: AttributeType, name: &str, value: &str) -> StoreResult<String> {
    if value.chars().count() > MAX_VALUE_CHARS {
        return invalid(format!(
            "Bad Request: value of \"{name}\" is longer than {MAX_VALUE_CHARS} characters"
        ));
    }
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return Ok(String::new());
    }
    match kind {
        AttributeType::Text | AttributeType::Gender => Ok(value.to_string()),
        AttributeType::Number => match trimmed.replace(',', ".").parse::<f64>() {
            Ok(n) if n.is_finite() => Ok(trimmed.replace(',', ".")),
            _ => invalid(format!(
                "Bad Request: \"{name}\" is a number attribute; \"{value}\" is not a number"
            )),
        },
        AttributeType::Date => match chrono::NaiveDate::parse_from_str(trimmed, "%Y-%m-%d") {
            Ok(d) => Ok(d.format("%Y-%m-%d").to_string()),
            Err(_) => invalid(format!(
                "Bad Request: \"{name}\" is a date attribute; \"{value}\" is not YYYY-MM-DD"
            )),
        },
    }
}

/// An attribute by scope (0: global) and name: [`resolve`]'s lookup.
pub(crate) const RESOLVE: &str =
    "SELECT id, name, group_id, description, preview_value, default_value, type
     FROM attributes WHERE account_id = ?1 AND group_id = ?2 AND name = ?3";

/// Finds an attribute by name for a receiver of `group_id`: the group's own
/// attribute first, then a global one (or only global ones with `global_only`).
pub fn resolve(
    db: &Db,
    account: AccountId,
    group_id: i64,
    name: &str,
    global_only: bool,
) -> StoreResult<Option<Attribute>> {
    // One lookup on the unique key per scope, the group's first. Decision:
    // not `(group_id = 0 OR group_id = ?) ORDER BY group_id DESC LIMIT 1`,
    // which SQLite answers by building the two ids into a temporary b-tree
    // on every call (a single create resolves each of its attributes).
    let scopes: &[i64] = if global_only || group_id == 0 {
        &[0]
    } else {
        &[group_id, 0]
    };
    for &scope in scopes {
        let found = db.opt_row(RESOLVE, params![account.0, scope, name.trim()], from_row)?;
        if found.is_some() {
            return Ok(found);
        }
    }
    Ok(None)
}

/// Attributes resolved during one batch write, passed down by it: the five
/// attributes of a 500-receiver batch are looked up 5 times, not 2,500.
/// A batch write makes one and drops it when it ends; no attribute is
/// created, changed or deleted inside it, so what it remembers stays true.
#[derive(Default)]
pub struct AttrMemo(HashMap<(i64, i64, String), Option<Attribute>>);

impl AttrMemo {
    /// [`resolve`], asked once per account, scope and name.
    pub fn resolve(
        &mut self,
        db: &Db,
        account: AccountId,
        group_id: i64,
        name: &str,
        global_only: bool,
    ) -> StoreResult<Option<Attribute>> {
        let scope = if global_only { 0 } else { group_id };
        let key = (account.0, scope, name.trim().to_string());
        if let Some(hit) = self.0.get(&key) {
            return Ok(hit.clone());
        }
        let found = resolve(db, account, group_id, name, global_only)?;
        self.0.insert(key, found.clone());
        Ok(found)
    }
}

/// Sets (or with an empty value, clears) a contact's value of an attribute.
pub fn set_value(db: &Db, contact_id: i64, attr: &Attribute, value: &str) -> StoreResult<()> {
    let kind = AttributeType::parse(&attr.kind).unwrap_or(AttributeType::Text);
    let value = check_value(kind, &attr.name, value)?;
    if value.is_empty() {
        db.exec(
            "DELETE FROM attribute_values WHERE contact_id = ?1 AND attribute_id = ?2",
            params![contact_id, attr.id],
        )?;
    } else {
        db.exec(
            "INSERT INTO attribute_values (contact_id, attribute_id, value) VALUES (?1, ?2, ?3)
             ON CONFLICT (contact_id, attribute_id) DO UPDATE SET value = excluded.value",
            params![contact_id, attr.id, value],
        )?;
    }
    Ok(())
}

/// [`apply_defaults`]' statement: the global attributes, then the group's,
/// two walks of the key, not an `OR` that SQLite would build into a
/// temporary b-tree on every call.
pub(crate) const APPLY_DEFAULTS: &str =
    "INSERT INTO attribute_values (contact_id, attribute_id, value)
     SELECT ?1, id, default_value FROM attributes
     WHERE account_id = ?2 AND group_id = 0 AND default_value <> ''
     UNION ALL
     SELECT ?1, id, default_value FROM attributes
     WHERE account_id = ?2 AND group_id = ?3 AND ?3 <> 0 AND default_value <> ''
     ON CONFLICT DO NOTHING";

/// Fills the default values of the global attributes and the group's
/// attributes that the contact has no value for.
pub fn apply_defaults(
    db: &Db,
    account: AccountId,
    group_id: i64,
    contact_id: i64,
) -> StoreResult<()> {
    db.exec(APPLY_DEFAULTS, params![contact_id, account.0, group_id])?;
    Ok(())
}

/// The values a contact holds, global ones and (with a group) that group's.
pub fn values_of(
    db: &Db,
    account: AccountId,
    contact_id: i64,
    group_id: Option<i64>,
) -> StoreResult<Vec<AttributeValue>> {
    db.rows(
        "SELECT a.id, a.name, a.group_id, a.type, v.value FROM attribute_values v
         JOIN attributes a ON a.id = v.attribute_id
         WHERE v.contact_id = ?1 AND a.account_id = ?2 AND (a.group_id = 0 OR a.group_id = ?3)
         ORDER BY a.group_id, a.id",
        params![contact_id, account.0, group_id.unwrap_or(0)],
        |r| {
            Ok(AttributeValue {
                id: r.get(0)?,
                name: r.get(1)?,
                group_id: r.get(2)?,
                kind: r.get(3)?,
                value: r.get(4)?,
            })
        },
    )
}

#[cfg(test)]
mod tests {
    use super::super::Store;
    use super::*;

    #[test]
    fn a_batch_memo_asks_the_database_once_per_name_and_lives_one_batch() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("a.db")).unwrap();
        let conn = store.lite_conn();
        let db = Db::Lite(&conn);
        db.batch(
            "INSERT INTO accounts (id, name, created) VALUES (1, 'a', 0) ON CONFLICT DO NOTHING;
             INSERT INTO attributes (account_id, name, type) VALUES (1, 'city', 'text');",
        )
        .unwrap();
        let account = AccountId(1);
        let mut memo = AttrMemo::default();
        let found = memo.resolve(&db, account, 7, " city ", false).unwrap();
        assert_eq!(found.map(|a| a.name).as_deref(), Some("city"));
        // Gone from the database, the attribute is still what this memo
        // found; a lookup without it, or a next batch's memo, asks afresh.
        db.batch("DELETE FROM attributes").unwrap();
        let again = memo.resolve(&db, account, 7, "city", false).unwrap();
        assert!(again.is_some());
        assert!(resolve(&db, account, 7, "city", false).unwrap().is_none());
        let next = AttrMemo::default().resolve(&db, account, 7, "city", false);
        assert!(next.unwrap().is_none());
    }
}
