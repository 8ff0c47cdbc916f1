//! The rule engine: a filter's rules compiled to one SQL condition over
//! receivers (`r`) and contacts (`c`), every value bound as a parameter.
//!
//! Fields: the receiver fields of spec §2.9, every attribute name (the
//! group's own attribute favoured over a global one of the same name),
//! `tags`, and the four `svcevent_mail_*` fields matched against recorded
//! mailing events. Numbers and timestamps compare as numbers, dates as
//! dates, text without regard to case; `ismale`/`isfemale` know the usual
//! spellings (m/f, male/female, Herr/Frau, Mr/Mrs...).
//!
//! On PostgreSQL the conditions mean what SQLite's do: text compares with
//! ASCII letters folded and otherwise byte by byte (SQLite's NOCASE, LIKE
//! and LOWER; PostgreSQL's `LOWER` and `ILIKE` under `COLLATE "C"`), and an
//! attribute's text becomes a number as SQLite's CAST makes it, from its
//! leading number or 0 (PostgreSQL's CAST refuses anything but a number).

use super::super::receivers::Selection;
use super::super::{
    AccountId, MAX_FILTER_RULES, MAX_TEXT_CHARS, StoreResult, check_count, check_len, invalid,
};
use crate::store::db::{Backend, Db, params};
use listpipe_api::filter::Rule;
use rusqlite::types::Value;

pub const LOGICS: &[&str] = &[
    "eq",
    "neq",
    "sm",
    "bg",
    "isnull",
    "notisnull",
    "contains",
    "begins",
    "ends",
    "ismale",
    "isfemale",
];
const TEXT_FIELDS: &[&str] = &["email", "source", "last_location", "last_client", "last_ip"];
const NUMBER_FIELDS: &[&str] = &[
    "imported",
    "registered",
    "activated",
    "deactivated",
    "bounced",
    "points",
];
const EVENT_FIELDS: &[(&str, &str)] = &[
    ("svcevent_mail_send", "send"),
    ("svcevent_mail_open", "open"),
    ("svcevent_mail_click", "click"),
    ("svcevent_mail_bounce", "bounce"),
];
pub const MALE: &[&str] = &[
    "m",
    "male",
    "man",
    "mann",
    "herr",
    "mr",
    "mr.",
    "männlich",
    "maennlich",
];
pub const FEMALE: &[&str] = &[
    "f", "w", "female", "woman", "frau", "mrs", "mrs.", "ms", "ms.", "miss", "weiblich",
];

/// How a field's values compare.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Text,
    Number,
    /// Unix seconds; a condition may also be a date.
    Timestamp,
    /// `YYYY-MM-DD` text.
    Date,
}

/// A compiled field: an SQL expression with its values, and how it compares.
struct Operand {
    expr: String,
    params: Vec<Value>,
    kind: Kind,
    /// The contact's address: on PostgreSQL an equality also asks for it in
    /// the column's own collation, which the contacts' unique key is in.
    email: bool,
}

/// Compiles `rules` joined by `operator` (AND or OR) into a condition.
/// `groups` are the groups whose attributes a name may mean.
pub fn compile(
    db: &Db,
    account: AccountId,
    groups: &[i64],
    rules: &[Rule],
    operator: &str,
) -> StoreResult<Selection> {
    let joiner = match operator.trim().to_ascii_uppercase().as_str() {
        "" | "AND" => " AND ",
        "OR" => " OR ",
        other => {
            return invalid(format!(
                "Bad Request: operator \"{other}\" must be AND or OR"
            ));
        }
    };
    check_count("rules", rules.len(), MAX_FILTER_RULES)?;
    for rule in rules {
        for (what, text) in [
            ("field", &rule.field),
            ("logic", &rule.logic),
            ("condition", &rule.condition),
        ] {
            check_len(&format!("rule {what}"), text, MAX_TEXT_CHARS)?;
        }
    }
    if rules.is_empty() {
        return invalid(
            "Bad Request: rules is required: at least one {\"field\", \"logic\", \"condition\"}",
        );
    }
    let mut parts = Vec::with_capacity(rules.len());
    let mut params = Vec::new();
    for (i, rule) in rules.iter().enumerate() {
        let (sql, values) = compile_rule(db, account, groups, rule).map_err(|e| match e {
            super::super::StoreError::Invalid(m) => {
                super::super::StoreError::Invalid(format!("{m} (rule {i})"))
            }
            other => other,
        })?;
        parts.push(format!("({sql})"));
        params.extend(values);
    }
    Ok(Selection {
        sql: parts.join(joiner),
        params,
        whole_group: None,
    })
}

fn compile_rule(
    db: &Db,
    account: AccountId,
    groups: &[i64],
    rule: &Rule,
) -> StoreResult<(String, Vec<Value>)> {
    let logic = rule.logic.trim().to_ascii_lowercase();
    if !LOGICS.contains(&logic.as_str()) {
        return invalid(format!(
            "Bad Request: logic \"{}\" must be one of {}",
            rule.logic,
            LOGICS.join(", ")
        ));
    }
    let field = rule.field.trim();
    let lower = field.to_ascii_lowercase();
    let cond = rule.condition.trim();

    if let Some((_, kind)) = EVENT_FIELDS.iter().find(|(f, _)| *f == lower) {
        if logic != "eq" {
            return invalid(format!(
                "Bad Request: {lower} takes logic eq and a mailing id"
            ));
        }
        return Ok((
            "EXISTS (SELECT 1 FROM events e WHERE e.contact_id = r.contact_id AND e.type = ? AND e.mailing_id = ?)".into(),
            vec![Value::Text((*kind).into()), Value::Text(cond.into())],
        ));
    }
    if lower == "tags" || lower == "tag" {
        return Ok(tags(db.backend(), &logic, cond));
    }
    let operand = if TEXT_FIELDS.contains(&lower.as_str()) {
        let column = if lower == "email" {
            "c.email".to_string()
        } else {
            format!("r.{lower}")
        };
        Operand {
            expr: column,
            params: vec![],
            kind: Kind::Text,
            email: lower == "email",
        }
    } else if NUMBER_FIELDS.contains(&lower.as_str()) {
        let kind = if lower == "points" {
            Kind::Number
        } else {
            Kind::Timestamp
        };
        Operand {
            expr: format!("r.{lower}"),
            params: vec![],
            kind,
            email: false,
        }
    } else {
        attribute(db, account, groups, field)?
    };
    let (sql, params) = compare(db.backend(), operand, &logic, cond)?;
    if lower == "email" && logic == "eq" {
        // One address: found on the contacts' unique index (account,
        // email), which needs the account named on the contact (always the
        // receiver's). Without it a filter for one address walked the
        // whole group: 3 s at 10M receivers, 1 ms with it. Only here: the
        // same constraint on every page made a group's page start from
        // its contacts and sort them all.
        let mut with_account = vec![Value::Integer(account.0)];
        with_account.extend(params);
        return Ok((format!("c.account_id = ? AND {sql}"), with_account));
    }
    Ok((sql, params))
}

/// An attribute named `name`, as its value for each receiver: the value of
/// the receiver's group's attribute of that name, else the global one.
fn attribute(db: &Db, account: AccountId, groups: &[i64], name: &str) -> StoreResult<Operand> {
    let scope = serde_json::to_string(groups).unwrap_or_else(|_| "[]".into());
    let (kind_sql, names_sql) = match db.backend() {
        Backend::Sqlite => (
            "SELECT type FROM attributes WHERE account_id = ?1 AND name = ?2
               AND (group_id = 0 OR group_id IN (SELECT value FROM json_each(?3)))
             ORDER BY group_id DESC LIMIT 1",
            "SELECT DISTINCT name FROM attributes WHERE account_id = ?1
               AND (group_id = 0 OR group_id IN (SELECT value FROM json_each(?2))) ORDER BY name",
        ),
        Backend::Postgres => (
            "SELECT type FROM attributes WHERE account_id = ?1 AND name = ?2
               AND (group_id = 0 OR group_id IN
                    (SELECT CAST(value AS BIGINT) FROM jsonb_array_elements_text(CAST(?3 AS jsonb))))
             ORDER BY group_id DESC LIMIT 1",
            "SELECT DISTINCT name FROM attributes WHERE account_id = ?1
               AND (group_id = 0 OR group_id IN
                    (SELECT CAST(value AS BIGINT) FROM jsonb_array_elements_text(CAST(?2 AS jsonb))))
             ORDER BY name",
        ),
    };
    let kind: Option<String> =
        db.opt_row(kind_sql, params![account.0, name, scope], |r| r.get(0))?;
    let Some(kind) = kind else {
        let mut known: Vec<String> = TEXT_FIELDS
            .iter()
            .chain(NUMBER_FIELDS)
            .map(|s| s.to_string())
            .collect();
        known.extend(["tags".into()]);
        known.extend(EVENT_FIELDS.iter().map(|(f, _)| f.to_string()));
        let names: Vec<String> = db.rows(names_sql, params![account.0, scope], |r| r.get(0))?;
        known.extend(names);
        return invalid(format!(
            "Bad Request: unknown field \"{name}\"; valid fields: {}",
            known.join(", ")
        ));
    };
    let kind = match kind.as_str() {
        "number" => Kind::Number,
        "date" => Kind::Date,
        _ => Kind::Text,
    };
    Ok(Operand {
        expr: "(SELECT v.value FROM attribute_values v JOIN attributes a ON a.id = v.attribute_id
                 WHERE v.contact_id = r.contact_id AND a.account_id = ? AND a.name = ?
                   AND a.group_id IN (0, r.group_id) ORDER BY a.group_id DESC LIMIT 1)"
            .into(),
        params: vec![Value::Integer(account.0), Value::Text(name.into())],
        kind,
        email: false,
    })
}

fn like_pattern(cond: &str, prefix: bool, suffix: bool) -> String {
    let escaped = cond
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    format!(
        "{}{escaped}{}",
        if prefix { "%" } else { "" },
        if suffix { "%" } else { "" }
    )
}

fn gender_list(values: &[&str]) -> String {
    values
        .iter()
        .map(|v| format!("'{}'", v.replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The condition as a number for `kind`; timestamps also take a date.
fn number(cond: &str, kind: Kind) -> StoreResult<Value> {
    if let Ok(n) = cond.replace(',', ".").parse::<f64>()
        && n.is_finite()
    {
        return Ok(Value::Real(n));
    }
    if kind == Kind::Timestamp
        && let Ok(t) = listpipe_api::time::parse_timestamp(cond, None)
    {
        return Ok(Value::Real(t as f64));
    }
    invalid(format!("Bad Request: condition \"{cond}\" is not a number"))
}

fn date(cond: &str) -> StoreResult<Value> {
    listpipe_api::time::parse_date(cond, None)
        .map(Value::Text)
        .or_else(|_| {
            invalid(format!(
                "Bad Request: condition \"{cond}\" is not a date (YYYY-MM-DD)"
            ))
        })
}

/// What of an attribute's text PostgreSQL reads as its number: SQLite's
/// CAST reads the leading number and makes anything else 0, where
/// PostgreSQL's refuses to. `regexp_replace(v, NUMBER_PREFIX, '\10\2')`
/// keeps the sign and the number, a 0 between them ("-3x" is "-03", "abc"
/// is "0"), which every PostgreSQL CAST takes. Written without `?`, which
/// would read as a parameter once the text is joined into a page's query.
const NUMBER_PREFIX: &str =
    r"^\s*([-+]{0,1})(([0-9]+\.{0,1}[0-9]*|\.[0-9]+)([eE][-+]{0,1}[0-9]+){0,1}){0,1}.*$";

fn compare(
    backend: Backend,
    op: Operand,
    logic: &str,
    cond: &str,
) -> StoreResult<(String, Vec<Value>)> {
    let e = &op.expr;
    // The expression's own values, once per place it appears in the SQL.
    let uses =
        |n: usize| -> Vec<Value> { (0..n).flat_map(|_| op.params.iter().cloned()).collect() };
    let numeric = matches!(op.kind, Kind::Number | Kind::Timestamp);
    // Receiver timestamps and points are never NULL: 0 is "empty".
    let empty = if numeric && op.params.is_empty() {
        format!("COALESCE({e}, 0) = 0")
    } else {
        format!("COALESCE({e}, '') = ''")
    };
    Ok(match logic {
        "isnull" => (empty, uses(1)),
        "notisnull" => (format!("NOT ({empty})"), uses(1)),
        "ismale" | "isfemale" => {
            let list = gender_list(if logic == "ismale" { MALE } else { FEMALE });
            let folded = match backend {
                Backend::Sqlite => format!("LOWER(TRIM(COALESCE({e}, '')))"),
                // A number column has no '' to fall back on: its text does.
                Backend::Postgres => {
                    format!("LOWER(TRIM(COALESCE(CAST({e} AS TEXT), '')) COLLATE \"C\")")
                }
            };
            (format!("{folded} IN ({list})"), uses(1))
        }
        "contains" | "begins" | "ends" => {
            let mut params = uses(1);
            params.push(Value::Text(like_pattern(
                cond,
                logic != "begins",
                logic != "ends",
            )));
            let like = match backend {
                Backend::Sqlite => format!("CAST({e} AS TEXT) LIKE ? ESCAPE '\\'"),
                Backend::Postgres => {
                    format!("CAST({e} AS TEXT) COLLATE \"C\" ILIKE ? ESCAPE '\\'")
                }
            };
            (like, params)
        }
        _ => {
            let (lhs, value) = match (backend, op.kind) {
                (Backend::Sqlite, Kind::Number | Kind::Timestamp) => {
                    (format!("CAST({e} AS REAL)"), number(cond, op.kind)?)
                }
                (Backend::Sqlite, Kind::Date) => (e.clone(), date(cond)?),
                (Backend::Sqlite, Kind::Text) => {
                    (format!("{e} COLLATE NOCASE"), Value::Text(cond.to_string()))
                }
                // A receiver's column is a number already, an attribute's
                // value text (see NUMBER_PREFIX).
                (Backend::Postgres, Kind::Number | Kind::Timestamp) if op.params.is_empty() => (
                    format!("CAST({e} AS DOUBLE PRECISION)"),
                    number(cond, op.kind)?,
                ),
                (Backend::Postgres, Kind::Number | Kind::Timestamp) => (
                    format!(
                        "CAST(regexp_replace({e}, '{NUMBER_PREFIX}', '\\10\\2') AS DOUBLE PRECISION)"
                    ),
                    number(cond, op.kind)?,
                ),
                (Backend::Postgres, Kind::Date) => (format!("{e} COLLATE \"C\""), date(cond)?),
                (Backend::Postgres, Kind::Text) => (
                    format!("LOWER({e} COLLATE \"C\")"),
                    Value::Text(cond.to_ascii_lowercase()),
                ),
            };
            let (sql, mut params) = match logic {
                // The address in its column's collation first: what finds
                // it on the contacts' unique key (see compile_rule).
                "eq" if op.email && backend == Backend::Postgres => (
                    format!("{e} = ? AND {lhs} = ?"),
                    vec![Value::Text(cond.to_string())],
                ),
                "eq" => (format!("{lhs} = ?"), uses(1)),
                // An empty value equals nothing, so it is "not equal".
                "neq" => (format!("({e} IS NULL OR {lhs} <> ?)"), uses(2)),
                "sm" => (format!("{lhs} < ?"), uses(1)),
                _ => (format!("{lhs} > ?"), uses(1)),
            };
            params.push(value);
            (sql, params)
        }
    })
}

fn tags(backend: Backend, logic: &str, cond: &str) -> (String, Vec<Value>) {
    let any = "EXISTS (SELECT 1 FROM tags t WHERE t.contact_id = r.contact_id";
    // A tag equal to the condition, ASCII letters folded.
    let (equal, value) = match backend {
        Backend::Sqlite => ("t.tag = ? COLLATE NOCASE", cond.to_string()),
        Backend::Postgres => ("LOWER(t.tag COLLATE \"C\") = ?", cond.to_ascii_lowercase()),
    };
    match logic {
        "isnull" => (format!("NOT {any})"), vec![]),
        "notisnull" => (format!("{any})"), vec![]),
        "neq" => (format!("NOT {any} AND {equal})"), vec![Value::Text(value)]),
        "contains" | "begins" | "ends" => (
            match backend {
                Backend::Sqlite => format!("{any} AND t.tag LIKE ? ESCAPE '\\')"),
                Backend::Postgres => format!("{any} AND t.tag COLLATE \"C\" ILIKE ? ESCAPE '\\')"),
            },
            vec![Value::Text(like_pattern(
                cond,
                logic != "begins",
                logic != "ends",
            ))],
        ),
        _ => (format!("{any} AND {equal})"), vec![Value::Text(value)]),
    }
}
