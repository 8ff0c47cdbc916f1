//! Forms, spec §2.10 and §4.5 (deprecated, still served): sign-up forms of
//! a group, made from a template, and what follows from them: the public
//! sign-up ([`doi::submit`]), double-opt-in mails to the [`outbox`]
//! ([`doi::send`]) and their one-time confirmation links ([`doi::confirm`]).

pub mod doi;
pub mod outbox;

use super::{AccountId, StoreError, StoreResult, attributes, groups, invalid, not_found, now};
use crate::store::db::{Db, Row, params};
use listpipe_api::Attribute;
use listpipe_api::form::{Form, FormTemplateInput};

/// Forms per account (`GET /v3/clients/{id}/limits` reports it).
pub const MAX_FORMS: i64 = 100;
pub const MAX_NAME_CHARS: usize = 255;
/// The templates forms are made from; the spec names only this one.
pub const TEMPLATES: &str = "default";

const COLUMNS: &str = "id, name, group_id, title, template, created";

fn from_row(r: &Row) -> StoreResult<Form> {
    Ok(Form {
        id: r.get::<i64>(0)?.into(),
        name: r.get(1)?,
        customer_tables_id: r.get::<i64>(2)?.into(),
        title: r.get(3)?,
        template: r.get(4)?,
        stamp: r.get(5)?,
    })
}

/// Every form of the account, oldest first.
pub fn list(db: &Db, account: AccountId) -> StoreResult<Vec<Form>> {
    let sql = format!("SELECT {COLUMNS} FROM forms WHERE account_id = ?1 ORDER BY id");
    db.rows(&sql, params![account.0], from_row)
}

/// The forms of one group (`GET /v3/groups/{id}/forms`).
pub fn list_of_group(db: &Db, account: AccountId, group_id: i64) -> StoreResult<Vec<Form>> {
    groups::ensure(db, account, group_id)?;
    let sql =
        format!("SELECT {COLUMNS} FROM forms WHERE account_id = ?1 AND group_id = ?2 ORDER BY id");
    db.rows(&sql, params![account.0, group_id], from_row)
}

pub fn get(db: &Db, account: AccountId, id: i64) -> StoreResult<Form> {
    let sql = format!("SELECT {COLUMNS} FROM forms WHERE id = ?1 AND account_id = ?2");
    db.opt_row(&sql, params![id, account.0], from_row)?
        .ok_or_else(|| StoreError::NotFound("Not Found: invalid form".into()))
}

/// A form by id alone, with its account: for the public sign-up, which
/// carries no token.
pub fn find(db: &Db, id: i64) -> StoreResult<(AccountId, Form)> {
    let sql = format!("SELECT {COLUMNS}, account_id FROM forms WHERE id = ?1");
    db.opt_row(&sql, params![id], |r| {
        Ok((AccountId(r.get(6)?), from_row(r)?))
    })?
    .ok_or_else(|| StoreError::NotFound("Not Found: invalid form".into()))
}

pub fn delete(db: &Db, account: AccountId, id: i64) -> StoreResult<()> {
    let n = db.exec(
        "DELETE FROM forms WHERE id = ?1 AND account_id = ?2",
        params![id, account.0],
    )?;
    if n == 0 {
        return not_found("Not Found: invalid form");
    }
    Ok(())
}

/// `POST /v3/forms/{group_id}/createfromtemplate/{type}`: the name is
/// `extradata.name`, or the title when there is no name; neither is a 400
/// (spec §2.10).
pub fn create_from_template(
    db: &Db,
    account: AccountId,
    group_id: i64,
    template: &str,
    input: &FormTemplateInput,
) -> StoreResult<Form> {
    let template = template.trim().to_ascii_lowercase();
    if template != TEMPLATES {
        return invalid(format!(
            "Bad Request: unknown form template \"{template}\"; the only template is: {TEMPLATES}"
        ));
    }
    groups::ensure(db, account, group_id)?;
    let extra = input.extradata.clone().unwrap_or_default();
    let clean = |s: Option<String>| s.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    let (name, title) = (clean(extra.name), clean(extra.title));
    let Some(name) = name.clone().or_else(|| title.clone()) else {
        return invalid(
            "Bad Request: extradata needs a name or a title (the title names the form when there is no name)",
        );
    };
    for (field, value) in [("name", &name), ("title", title.as_ref().unwrap_or(&name))] {
        if value.chars().count() > MAX_NAME_CHARS {
            return invalid(format!(
                "Bad Request: the form's {field} is longer than {MAX_NAME_CHARS} characters"
            ));
        }
    }
    let count: i64 = db.value(
        "SELECT COUNT(*) FROM forms WHERE account_id = ?1",
        params![account.0],
    )?;
    if count >= MAX_FORMS {
        return Err(StoreError::Forbidden(format!(
            "Forbidden: limit reached: an account has at most {MAX_FORMS} forms; delete one first"
        )));
    }
    let id: i64 = db.value(
        "INSERT INTO forms (account_id, group_id, name, title, template, created)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
        params![
            account.0,
            group_id,
            name,
            title.unwrap_or_else(|| name.clone()),
            template,
            now()
        ],
    )?;
    get(db, account, id)
}

/// The attributes a form asks for besides the email: the global ones, then
/// the group's own (a group attribute replaces a global one of its name, as
/// everywhere, spec §2.6). One named `email` would clash with the address
/// field and is left out.
pub fn fields(db: &Db, account: AccountId, form: &Form) -> StoreResult<Vec<Attribute>> {
    let group = attributes::list(db, account, form.customer_tables_id.0)?;
    let mut out: Vec<Attribute> = attributes::list(db, account, 0)?
        .into_iter()
        .filter(|g| !group.iter().any(|a| a.name.eq_ignore_ascii_case(&g.name)))
        .collect();
    out.extend(group);
    out.retain(|a| !a.name.eq_ignore_ascii_case("email"));
    Ok(out)
}
