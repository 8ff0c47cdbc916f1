//! Double opt-in: the public sign-up of a form, the mails it and
//! `POST /v3/forms/{id}/send/{type}` write to the outbox, and the one-time
//! links in them. This makes spec §3's "awaiting activation" path work end
//! to end: registered → mail → link followed → active.
//!
//! A link is `{base_url}/forms/confirm/{selector}{verifier}`, stored like
//! the OAuth tokens (`store::accounts`): the selector finds the row, the
//! SHA-256 of the verifier is compared in constant time. The outbox keeps
//! the mail as delivered, link included: it stands for the recipient's inbox.
//!
//! Links follow spec §3: an activation confirms only a receiver that is
//! neither active nor opted out ("a double-opt-in mail no longer works" once
//! `activated` is set, and an opt-out is undone only by `deactivated: 0`).

use super::super::accounts::{hash, random_hex};
use super::super::{
    AccountId, StoreError, StoreResult, blacklist, groups, invalid, not_found, now, receivers,
};
use super::{fields, find};
use crate::store::db::{Db, params};
use listpipe_api::ReceiverInput;
use listpipe_api::form::{DoiData, Form, FormSendInput};
use std::collections::BTreeMap;

/// How long a confirmation link works.
pub const LINK_TTL_SECS: i64 = 30 * 24 * 3600;
const SELECTOR_BYTES: usize = 8;
const VERIFIER_BYTES: usize = 16;

/// What a double-opt-in mail asks the recipient to confirm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MailKind {
    Activate,
    Deactivate,
}

impl MailKind {
    pub const CHOICES: &'static str = "activate, deactivate";

    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "activate" => Some(Self::Activate),
            "deactivate" => Some(Self::Deactivate),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Activate => "activate",
            Self::Deactivate => "deactivate",
        }
    }
}

/// What following a link did (the confirmation page says it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confirmation {
    /// The link was live: what it did to the receiver of `email` in `group`.
    Followed {
        email: String,
        group: String,
        outcome: Outcome,
    },
    /// The link was followed before, at this time; nothing changed.
    Used(i64),
    /// Nothing changed.
    Expired,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Activated,
    /// Nothing changed.
    AlreadyActive,
    /// An activation link of a receiver that opted out: it stays out.
    OptedOut,
    Deactivated,
    /// Nothing changed.
    AlreadyDeactivated,
}

/// The receiver of `email` in `group_id`: (id, activated, deactivated).
fn receiver_in(db: &Db, group_id: i64, email: &str) -> StoreResult<Option<(i64, i64, i64)>> {
    db.opt_row(
        "SELECT r.id, r.activated, r.deactivated FROM receivers r JOIN contacts c ON c.id = r.contact_id
         WHERE r.group_id = ?1 AND c.email = ?2",
        params![group_id, email.trim()],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
}

/// A double-opt-in mail to write: to whom, about what.
struct Mail<'a> {
    account: AccountId,
    form: &'a Form,
    receiver_id: i64,
    email: &'a str,
    kind: MailKind,
    doi: &'a DoiData,
}

/// Writes a double-opt-in mail with a fresh link to the outbox.
fn write_mail(db: &Db, mail: &Mail, base_url: &str) -> StoreResult<()> {
    let Mail {
        account,
        form,
        receiver_id,
        email,
        kind,
        doi,
    } = *mail;
    let selector = random_hex(SELECTOR_BYTES)?;
    let verifier = random_hex(VERIFIER_BYTES)?;
    let t = now();
    db.exec(
        "INSERT INTO doi_links (selector, verifier_hash, account_id, receiver_id, kind, created, expires)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![selector, hash(&verifier), account.0, receiver_id, kind.as_str(), t, t + LINK_TTL_SECS],
    )?;
    let link = format!(
        "{}/forms/confirm/{selector}{verifier}",
        base_url.trim_end_matches('/')
    );
    let list = groups::get(db, account, form.customer_tables_id.0)?.name;
    let (subject, ask) = match kind {
        MailKind::Activate => (
            format!("Please confirm your subscription to \"{list}\""),
            format!("please confirm that {email} should receive mail from \"{list}\""),
        ),
        MailKind::Deactivate => (
            format!("Please confirm your unsubscription from \"{list}\""),
            format!("please confirm that {email} should no longer receive mail from \"{list}\""),
        ),
    };
    let body = format!(
        "Hello,\n\n{ask} by opening this link:\n\n{link}\n\n\
         If you did not ask for this, ignore this mail: nothing changes without the confirmation.\n\
         The link works once, for {} days.\n",
        LINK_TTL_SECS / 86_400
    );
    db.exec(
        "INSERT INTO outbox (account_id, kind, recipient, subject, body, link, form_id, group_id, receiver_id,
            user_ip, referer, user_agent, created)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        params![
            account.0,
            kind.as_str(),
            email,
            subject,
            body,
            link,
            form.id.0,
            form.customer_tables_id.0,
            receiver_id,
            doi.user_ip,
            doi.referer,
            doi.user_agent,
            t
        ],
    )?;
    Ok(())
}

/// `POST /v3/forms/{form_id}/send/{type}`: a mail to a receiver of the
/// form's group asking to confirm its activation or deactivation.
pub fn send(
    db: &Db,
    account: AccountId,
    form_id: i64,
    kind: &str,
    input: &FormSendInput,
    base_url: &str,
) -> StoreResult<()> {
    let Some(kind) = MailKind::parse(kind) else {
        return invalid(format!(
            "Bad Request: unknown mail type \"{kind}\"; use one of: {}",
            MailKind::CHOICES
        ));
    };
    let form = super::get(db, account, form_id)?;
    let Some(email) = input
        .email
        .as_deref()
        .map(str::trim)
        .filter(|e| !e.is_empty())
    else {
        return invalid("Bad Request: email is required");
    };
    let Some(doi) = &input.doidata else {
        return invalid(
            "Bad Request: doidata is required: an object with user_ip, referer and user_agent",
        );
    };
    let group = form.customer_tables_id.0;
    if let Some(g) = input.groups_id.filter(|g| *g != 0 && *g != group) {
        return invalid(format!(
            "Bad Request: groups_id {g} is not the form's group ({group})"
        ));
    }
    let Some((receiver_id, _, _)) = receiver_in(db, group, email)? else {
        return not_found("Not Found: invalid receiver (not in this group)");
    };
    let mail = Mail {
        account,
        form: &form,
        receiver_id,
        email,
        kind,
        doi,
    };
    write_mail(db, &mail, base_url)
}

/// The public sign-up: registers the address in the form's group awaiting
/// activation (spec §3) with the attribute values the form asks for, and
/// mails it a confirmation link. Fields the form does not ask for are
/// ignored. An address already in the group gets a new link while it awaits
/// activation, and nothing otherwise (active, or opted out), so the answer
/// tells a visitor nothing about someone else's subscription.
pub fn submit(
    db: &Db,
    form_id: i64,
    values: &BTreeMap<String, String>,
    doi: &DoiData,
    base_url: &str,
) -> StoreResult<String> {
    let (account, form) = find(db, form_id)?;
    let group = form.customer_tables_id.0;
    let email = receivers::check_email(values.get("email").map_or("", String::as_str))?;
    if blacklist::validate(
        db,
        account,
        std::slice::from_ref(&email),
        Some(group),
        false,
    )?
    .is_empty()
    {
        return Err(StoreError::Forbidden(
            "Forbidden: this address cannot subscribe to this list".into(),
        ));
    }
    let receiver_id = match receiver_in(db, group, &email)? {
        Some((id, 0, 0)) => id,
        Some(_) => return Ok(email),
        None => {
            let asked = fields(db, account, &form)?;
            let attributes = values
                .iter()
                .filter(|(k, v)| {
                    !v.trim().is_empty() && asked.iter().any(|a| a.name.eq_ignore_ascii_case(k))
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let input = ReceiverInput {
                registered: Some(now()),
                source: Some(format!("form {form_id}")),
                attributes: Some(attributes),
                ..ReceiverInput::email(email.clone())
            };
            receivers::create(db, account, group, &input)?.id.0
        }
    };
    let mail = Mail {
        account,
        form: &form,
        receiver_id,
        email: &email,
        kind: MailKind::Activate,
        doi,
    };
    write_mail(db, &mail, base_url)?;
    Ok(email)
}

/// Follows a confirmation link once; an unknown or forged one is a 404.
pub fn confirm(db: &Db, token: &str) -> StoreResult<Confirmation> {
    let gone = || StoreError::NotFound("Not Found: unknown confirmation link".into());
    let token = token.trim();
    let n = SELECTOR_BYTES * 2;
    if token.len() != n + VERIFIER_BYTES * 2 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(gone());
    }
    let (selector, verifier) = token.split_at(n);
    let (stored, receiver_id, kind, expires, used): (Vec<u8>, i64, String, i64, i64) = db
        .opt_row(
            "SELECT verifier_hash, receiver_id, kind, expires, used FROM doi_links WHERE selector = ?1",
            params![selector],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )?
        .ok_or_else(gone)?;
    if !constant_time_eq::constant_time_eq(&stored, &hash(verifier)) {
        return Err(gone());
    }
    if used > 0 {
        return Ok(Confirmation::Used(used));
    }
    let t = now();
    if expires <= t {
        return Ok(Confirmation::Expired);
    }
    db.exec(
        "UPDATE doi_links SET used = ?1 WHERE selector = ?2",
        params![t, selector],
    )?;
    let (email, group, group_id, activated, deactivated): (String, String, i64, i64, i64) = db
        .row(
            "SELECT c.email, g.name, g.id, r.activated, r.deactivated FROM receivers r
         JOIN contacts c ON c.id = r.contact_id JOIN groups g ON g.id = r.group_id WHERE r.id = ?1",
            params![receiver_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )?;
    let set = |column: &str| -> StoreResult<()> {
        let sql = format!("UPDATE receivers SET {column} = ?1, changed = ?1 WHERE id = ?2");
        db.exec(&sql, params![t, receiver_id])?;
        groups::touch(db, group_id)
    };
    let outcome = match MailKind::parse(&kind) {
        Some(MailKind::Activate) if deactivated > 0 => Outcome::OptedOut,
        Some(MailKind::Activate) if activated > 0 => Outcome::AlreadyActive,
        Some(MailKind::Activate) => {
            set("activated")?;
            Outcome::Activated
        }
        _ if deactivated > 0 => Outcome::AlreadyDeactivated,
        _ => {
            set("deactivated")?;
            Outcome::Deactivated
        }
    };
    Ok(Confirmation::Followed {
        email,
        group,
        outcome,
    })
}
