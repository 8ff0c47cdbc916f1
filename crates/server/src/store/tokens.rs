//! Access tokens, refresh tokens and authorization codes, and the families
//! they form (issue 43).
//!
//! A token is `selector || verifier` in hex: the selector finds the row, the
//! SHA-256 of the verifier is compared in constant time. Only hashes are
//! stored, so a copy of the database grants nothing.
//!
//! Every token belongs to a family: the grant it descends from (an
//! authorization code, or a client-credentials grant), kept through every
//! refresh. A refresh token or code is single use: spending it marks it
//! spent rather than deleting it, so that when it comes again (a replay:
//! it leaked) the whole family is revoked at once, access tokens included
//! (RFC 9700 §4.14.2, RFC 6749 §4.1.2).

use super::accounts::{App, REFRESH_TTL_SECS, SCOPE, SELECTOR_BYTES, VERIFIER_BYTES};
use super::accounts::{hash, random_hex};
use super::db::{Db, params};
use super::{AccountId, StoreResult, now};
use listpipe_api::TokenResponse;

/// An authenticated caller.
#[derive(Debug, Clone)]
pub struct Caller {
    pub account: AccountId,
    pub app_id: i64,
    pub selector: String,
    pub expires: i64,
    /// The grant the token descends from.
    pub family: String,
    /// The pair it was issued in (its refresh token's `pair`).
    pub pair: String,
}

impl Caller {
    /// Whether the token is live at second `now`: see [`live_at`].
    pub fn is_live_at(&self, now: i64) -> bool {
        live_at(self.expires, now)
    }
}

/// What presenting a refresh token or a code came to.
#[derive(Debug)]
pub enum Grant {
    /// A new pair.
    Issued(TokenResponse),
    /// Unknown, expired, another client's, or not for this redirect URI.
    Invalid,
    /// Spent already: its family is revoked, `revoked` live tokens with it.
    Replayed { family: String, revoked: usize },
}

/// Whether a token stamped to expire at `expires` (whole seconds) is live at
/// second `now`: through the whole second it expires in, so it lives at
/// least the `expires_in` it was issued with. Decision: `expires > now`
/// killed a one-second token issued late in a second within milliseconds.
fn live_at(expires: i64, now: i64) -> bool {
    expires >= now
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Access,
    Refresh,
    Code,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Access => "access",
            Kind::Refresh => "refresh",
            Kind::Code => "code",
        }
    }
}

/// Splits a presented token into selector and verifier; `None` if malformed.
fn split(token: &str) -> Option<(&str, &str)> {
    let token = token.trim();
    let n = SELECTOR_BYTES * 2;
    if token.len() != n + VERIFIER_BYTES * 2 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some(token.split_at(n))
}

/// Where a new token belongs.
struct Lineage<'a> {
    family: &'a str,
    pair: &'a str,
}

fn mint(
    db: &Db,
    kind: Kind,
    app: (AccountId, i64),
    ttl: i64,
    redirect_uri: &str,
    lineage: &Lineage<'_>,
) -> StoreResult<String> {
    let selector = random_hex(SELECTOR_BYTES)?;
    let verifier = random_hex(VERIFIER_BYTES)?;
    let t = now();
    db.exec(
        "INSERT INTO tokens (selector, verifier_hash, kind, account_id, app_id, redirect_uri, created, expires, family, pair)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![selector, hash(&verifier), kind.as_str(), app.0.0, app.1, redirect_uri, t, t + ttl, lineage.family, lineage.pair],
    )?;
    Ok(format!("{selector}{verifier}"))
}

/// A token found by its selector whose verifier matched.
struct Found {
    caller: Caller,
    redirect_uri: String,
    created: i64,
    /// When it was spent (0: not yet).
    spent: i64,
}

/// Finds a token of `kind` whose verifier matches, spent or not; forged
/// ones are `None`, and so are expired ones not spent.
fn lookup(db: &Db, kind: Kind, token: &str) -> StoreResult<Option<Found>> {
    let Some((selector, verifier)) = split(token) else {
        return Ok(None);
    };
    let row = db.opt_row(
        "SELECT verifier_hash, account_id, app_id, expires, redirect_uri, created, family, pair, spent
         FROM tokens WHERE selector = ?1 AND kind = ?2",
        params![selector, kind.as_str()],
        |r| {
            Ok((
                r.get::<Vec<u8>>(0)?,
                Found {
                    caller: Caller {
                        account: AccountId(r.get::<i64>(1)?),
                        app_id: r.get(2)?,
                        selector: selector.to_string(),
                        expires: r.get(3)?,
                        family: r.get(6)?,
                        pair: r.get(7)?,
                    },
                    redirect_uri: r.get(4)?,
                    created: r.get(5)?,
                    spent: r.get(8)?,
                },
            ))
        },
    )?;
    let Some((stored, found)) = row else {
        return Ok(None);
    };
    if !constant_time_eq::constant_time_eq(&stored, &hash(verifier)) {
        return Ok(None);
    }
    if found.spent == 0 && !live_at(found.caller.expires, now()) {
        return Ok(None);
    }
    Ok(Some(found))
}

/// The account behind an access token, if the token is live.
pub fn authenticate(db: &Db, token: &str) -> StoreResult<Option<Caller>> {
    Ok(lookup(db, Kind::Access, token)?
        .filter(|f| f.spent == 0)
        .map(|f| f.caller))
}

/// Revokes an access token and the refresh token issued with it (a debug
/// exchange replaces the pair); whether this call revoked the access token
/// (another may have just now).
pub fn revoke_pair(db: &Db, caller: &Caller) -> StoreResult<bool> {
    let n = db.exec(
        "DELETE FROM tokens WHERE selector = ?1 AND kind = 'access'",
        params![caller.selector],
    )?;
    if n == 0 {
        return Ok(false);
    }
    db.exec(
        "DELETE FROM tokens WHERE pair = ?1 AND kind = 'refresh' AND spent = 0",
        params![caller.pair],
    )?;
    Ok(true)
}

/// Marks a single-use token spent; whether this call spent it. On
/// PostgreSQL two exchanges of one token at once both find it unspent, and
/// the second update waits for the first to commit and then finds it spent.
/// The mark is kept as long as a family it started may live, to recognise
/// a replay.
fn spend(db: &Db, selector: &str) -> StoreResult<bool> {
    let t = now();
    Ok(db.exec(
        "UPDATE tokens SET spent = ?2, expires = ?3 WHERE selector = ?1 AND spent = 0",
        params![selector, t, t + REFRESH_TTL_SECS],
    )? > 0)
}

/// Revokes every live token of a family; how many.
fn revoke_family(db: &Db, family: &str) -> StoreResult<usize> {
    let n = db.exec(
        "DELETE FROM tokens WHERE family = ?1 AND spent = 0",
        params![family],
    )?;
    Ok(n as usize)
}

/// Issues a fresh access + refresh token pair for an application: the
/// first of a new family (a client-credentials grant).
pub fn issue_pair(
    db: &Db,
    account: AccountId,
    app_id: i64,
    ttl: i64,
) -> StoreResult<TokenResponse> {
    let family = random_hex(SELECTOR_BYTES)?;
    issue_pair_in(db, account, app_id, ttl, &family)
}

/// Issues a pair in `family`.
pub(crate) fn issue_pair_in(
    db: &Db,
    account: AccountId,
    app_id: i64,
    ttl: i64,
    family: &str,
) -> StoreResult<TokenResponse> {
    // Expired rows are of no use to anyone: sweep them while we are here
    // (those no longer `live_at` now: past the second they expire in).
    db.exec("DELETE FROM tokens WHERE expires < ?1", params![now()])?;
    let pair = random_hex(SELECTOR_BYTES)?;
    let lineage = Lineage {
        family,
        pair: &pair,
    };
    let app = (account, app_id);
    Ok(TokenResponse {
        access_token: mint(db, Kind::Access, app, ttl, "", &lineage)?,
        token_type: "bearer".into(),
        expires_in: ttl,
        refresh_token: mint(db, Kind::Refresh, app, REFRESH_TTL_SECS, "", &lineage)?,
        scope: SCOPE.into(),
    })
}

/// Exchanges a refresh token (single use: it is spent by the exchange; a
/// spent one revokes its family).
pub fn refresh(db: &Db, app: &App, token: &str, ttl: i64) -> StoreResult<Grant> {
    let Some(found) = lookup(db, Kind::Refresh, token)?.filter(|f| f.caller.app_id == app.id)
    else {
        return Ok(Grant::Invalid);
    };
    let caller = &found.caller;
    if found.spent != 0 || !spend(db, &caller.selector)? {
        return replayed(db, &caller.family);
    }
    issue_pair_in(db, caller.account, app.id, ttl, &caller.family).map(Grant::Issued)
}

fn replayed(db: &Db, family: &str) -> StoreResult<Grant> {
    let revoked = revoke_family(db, family)?;
    Ok(Grant::Replayed {
        family: family.to_string(),
        revoked,
    })
}

/// Exchanges an authorization code (single use) minted for this application
/// no more than `code_ttl` seconds ago (the server's `--code-ttl`, which
/// also shortens codes minted with a longer life). A code bound to a
/// redirect URI needs that same URI (RFC 6749 §4.1.3). A code presented
/// again revokes the tokens of its first exchange.
pub fn redeem_code(
    db: &Db,
    app: &App,
    code: &str,
    redirect_uri: Option<&str>,
    ttl: i64,
    code_ttl: i64,
) -> StoreResult<Grant> {
    let Some(found) = lookup(db, Kind::Code, code)?.filter(|f| f.caller.app_id == app.id) else {
        return Ok(Grant::Invalid);
    };
    let caller = &found.caller;
    if found.spent != 0 || !spend(db, &caller.selector)? {
        return replayed(db, &caller.family);
    }
    if !found.redirect_uri.is_empty() && redirect_uri != Some(found.redirect_uri.as_str()) {
        return Ok(Grant::Invalid);
    }
    if !live_at(found.created + code_ttl, now()) {
        return Ok(Grant::Invalid);
    }
    issue_pair_in(db, caller.account, app.id, ttl, &caller.family).map(Grant::Issued)
}

/// Mints an authorization code for the account's application, valid
/// [`super::accounts::CODE_TTL_SECS`].
pub fn mint_code(db: &Db, app: &App, redirect_uri: &str) -> StoreResult<String> {
    mint_code_for(db, app, redirect_uri, super::accounts::CODE_TTL_SECS)
}

/// Mints an authorization code valid `code_ttl` seconds: the first of a
/// new family.
pub fn mint_code_for(db: &Db, app: &App, redirect_uri: &str, code_ttl: i64) -> StoreResult<String> {
    let family = random_hex(SELECTOR_BYTES)?;
    let lineage = Lineage {
        family: &family,
        pair: "",
    };
    let app_of = (app.account, app.id);
    mint(db, Kind::Code, app_of, code_ttl, redirect_uri, &lineage)
}
