//! The OAuth token service, `POST /oauth/token.php` (spec §5, wire.md):
//! grants `authorization_code`, `refresh_token` and `client_credentials`;
//! client id and secret as HTTP Basic or body fields; the body as form,
//! JSON, multipart or a raw `&grant_type=...` string (read by the wire layer).

use crate::auth_failures::{self, Attempt, Peer, Spent};
use crate::state::AppState;
use crate::store::accounts::{self, App, Grant};
use crate::store::{Db, StoreResult};
use crate::wire::RawInput;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use base64::Engine;
use listpipe_api::TokenResponse;
use listpipe_api::oauth::{OAuthError, TokenRequest};
use listpipe_api::paths;

pub fn router() -> Router<AppState> {
    Router::new()
        .route(paths::TOKEN, post(token))
        .route("/oauth/token", post(token))
}

/// The token endpoint as documented operations, for the OpenAPI document.
pub fn operations() -> Vec<crate::openapi::Operation> {
    [paths::TOKEN, "/oauth/token"]
        .into_iter()
        .map(|path| crate::openapi::Operation {
            method: "post",
            path,
            summary: "Get tokens: authorization_code, refresh_token or client_credentials grant",
            tag: "oauth",
        })
        .collect()
}

fn oauth_error(status: StatusCode, error: &str, description: impl Into<String>) -> Response {
    let body = OAuthError {
        error: error.into(),
        error_description: description.into(),
    };
    let mut res = (status, Json(body)).into_response();
    res.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    res
}

/// Client id and secret from `Authorization: Basic` (any number of spaces
/// after the scheme; each part may be form-encoded, RFC 6749 §2.3.1).
fn basic_credentials(headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, rest) = value.split_once(char::is_whitespace)?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(rest.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (id, secret) = text.split_once(':')?;
    let unescape = |s: &str| {
        form_urlencoded::parse(format!("x={s}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
    };
    Some((unescape(id)?, unescape(secret)?))
}

/// Why no tokens were issued, past the client's authentication.
enum Refused {
    /// An OAuth error answer, as is.
    Answer(Box<Response>),
    /// The client id or secret was wrong.
    WrongClient,
    /// A spent refresh token or code came again; its family is revoked.
    Replayed {
        grant: &'static str,
        family: String,
        revoked: usize,
    },
}

fn granted(grant: Grant, kind: &'static str) -> Result<listpipe_api::TokenResponse, Refused> {
    match grant {
        Grant::Issued(tokens) => Ok(tokens),
        Grant::Invalid => Err(Refused::Answer(Box::new(invalid_grant()))),
        Grant::Replayed { family, revoked } => Err(Refused::Replayed {
            grant: kind,
            family,
            revoked,
        }),
    }
}

fn invalid_grant() -> Response {
    oauth_error(
        StatusCode::BAD_REQUEST,
        "invalid_grant",
        "the code or refresh token is invalid, expired or used",
    )
}

async fn token(
    State(s): State<AppState>,
    Peer(peer): Peer,
    headers: HeaderMap,
    RawInput(body): RawInput,
) -> Response {
    let req = match token_request(body) {
        Ok(req) => req,
        Err(res) => return *res,
    };
    let Some((client_id, secret)) = basic_credentials(&headers)
        .or_else(|| Some((req.client_id.clone()?, req.client_secret.clone()?)))
    else {
        return oauth_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            "client_id and client_secret are required",
        );
    };
    let grant = req.grant_type.clone().unwrap_or_default();
    if !matches!(
        grant.as_str(),
        "authorization_code" | "refresh_token" | "client_credentials"
    ) {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            format!(
                "grant_type \"{grant}\" is not supported; use authorization_code, refresh_token or client_credentials"
            ),
        );
    }
    // Failed client authentications, per client id from this address and
    // per address: while either waits, the secret is not even checked (see
    // `auth_failures`). Let through, the attempt counts as a failure until
    // it is told otherwise below.
    let limit = s.auth_failures.clients();
    let attempt = Attempt::new(&client_id, peer);
    if let Err((spent, secs)) = limit.admit(&attempt, auth_failures::now(s.store.clock())) {
        return slow_down(spent, secs);
    }
    let ttls = (s.token_ttl, s.code_ttl);
    let id = client_id.clone();
    let result = s
        .store
        .write(move |c| {
            let Some(app): Option<App> = accounts::authenticate_app(c, &id, &secret)? else {
                return Ok(Err(Refused::WrongClient));
            };
            issue(c, &app, &grant, &req, ttls)
        })
        .await;
    // Admitted, the attempt counts as a failure (see `auth_failures`): the
    // client authenticated, whatever became of the grant, and its failures
    // from this address start over; a server error counts for nothing.
    match &result {
        Ok(Err(Refused::WrongClient)) => {}
        Ok(_) => limit.succeeded(&attempt),
        Err(_) => limit.undecided(&attempt),
    }
    answer(&s, &client_id, peer, result)
}

/// The token request from the body the wire layer read; an OAuth error
/// answer when it is not one.
fn token_request(body: serde_json::Value) -> Result<TokenRequest, Box<Response>> {
    match body {
        serde_json::Value::Null => Ok(TokenRequest::default()),
        // serde would fill the request from an array by position.
        serde_json::Value::Array(_) => Err(Box::new(oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "unreadable request: expected an object, got an array",
        ))),
        v => serde_json::from_value(v).map_err(|e| {
            Box::new(oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                format!("unreadable request: {e}"),
            ))
        }),
    }
}

/// The answer while failed client authentications (`spent`) wait `secs`.
fn slow_down(spent: Spent, secs: u64) -> Response {
    let mut res = oauth_error(
        StatusCode::TOO_MANY_REQUESTS,
        "slow_down",
        format!(
            "too many failed client authentications {}; retry after {secs} s",
            match spent {
                Spent::NameFromAddress => "for this client from this address",
                Spent::Address => "from this address",
            }
        ),
    );
    res.headers_mut()
        .insert(header::RETRY_AFTER, header::HeaderValue::from(secs));
    res
}

/// Issues the tokens of `grant` to the authenticated `app`; `ttls` are the
/// tokens' and the codes' lifetimes.
fn issue(
    c: &Db,
    app: &App,
    grant: &str,
    req: &TokenRequest,
    (ttl, code_ttl): (i64, i64),
) -> StoreResult<Result<TokenResponse, Refused>> {
    let issued = match grant {
        "client_credentials" => Ok(accounts::issue_pair(c, app.account, app.id, ttl)?),
        "refresh_token" => match req.refresh_token.as_deref() {
            Some(t) => granted(accounts::refresh(c, app, t, ttl)?, "refresh_token"),
            None => Err(Refused::Answer(Box::new(oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "refresh_token is required",
            )))),
        },
        _ => match req.code.as_deref() {
            Some(code) => {
                let redirect = req.redirect_uri.as_deref();
                let grant = accounts::redeem_code(c, app, code, redirect, ttl, code_ttl)?;
                granted(grant, "authorization_code")
            }
            None => Err(Refused::Answer(Box::new(oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "code is required",
            )))),
        },
    };
    Ok(issued)
}

/// The answer to a token request of `client_id` from `peer`, as the store
/// decided it.
fn answer(
    s: &AppState,
    client_id: &str,
    peer: Option<std::net::IpAddr>,
    result: StoreResult<Result<TokenResponse, Refused>>,
) -> Response {
    match result {
        Ok(Ok(tokens)) => {
            let mut res = Json(tokens).into_response();
            res.headers_mut().insert(
                header::CACHE_CONTROL,
                header::HeaderValue::from_static("no-store"),
            );
            res
        }
        Ok(Err(Refused::Answer(res))) => *res,
        Ok(Err(Refused::WrongClient)) => {
            tracing::info!(target: log_target!(), client_id = %client_id, peer = ?peer, "client authentication failed");
            oauth_error(
                StatusCode::UNAUTHORIZED,
                "invalid_client",
                "unknown client or wrong secret",
            )
        }
        Ok(Err(Refused::Replayed {
            grant,
            family,
            revoked,
        })) => {
            // Committed: no cached token of the family may answer again.
            s.tokens.revoked();
            tracing::warn!(target: log_target!(),
                security_event = "token_replay",
                grant,
                client_id = %client_id,
                peer = ?peer,
                family = %family,
                revoked,
                "a spent {} was presented again: it leaked; every token of its family is revoked",
                if grant == "refresh_token" { "refresh token" } else { "authorization code" }
            );
            invalid_grant()
        }
        Err(e) => {
            tracing::error!(target: log_target!(), error = %e, "token service failed");
            oauth_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "server_error",
                "the token service failed",
            )
        }
    }
}
