//! Debug operations, spec §4.1: exchange, ttl, validate, whoami.

use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::openapi::Routes;
use crate::state::AppState;
use crate::store::{accounts, tokens};
use axum::Json;
use axum::extract::State;
use listpipe_api::client_info::ClientInfo;
use listpipe_api::debug::Ttl;
use listpipe_api::{TokenResponse, paths};

pub(super) fn routes() -> Routes {
    Routes::new("debug")
        .get(
            paths::DEBUG_EXCHANGE,
            "Exchange the calling token for a new one",
            exchange,
        )
        .get(paths::DEBUG_TTL, "Time to live of the calling token", ttl)
        .get(
            paths::DEBUG_VALIDATE,
            "Whether the calling token is valid",
            validate,
        )
        .get(
            paths::DEBUG_WHOAMI,
            "The client the token belongs to",
            whoami,
        )
}

/// A new token pair of the same family; the calling token and the refresh
/// token issued with it stop working at once.
async fn exchange(State(s): State<AppState>, Auth(caller): Auth) -> ApiResult<Json<TokenResponse>> {
    let ttl = s.token_ttl;
    let pair = s
        .store
        .write(move |c| {
            // Two exchanges of one token at once: the second finds it
            // revoked and gets no pair (one token, one successor).
            if !accounts::revoke_pair(c, &caller)? {
                return Ok(None);
            }
            tokens::issue_pair_in(c, caller.account, caller.app_id, ttl, &caller.family).map(Some)
        })
        .await;
    // After the commit, and whatever came of it: see `auth::TokenCache`.
    s.tokens.revoked();
    let pair = pair?;
    match pair {
        Some(pair) => Ok(Json(pair)),
        None => Err(ApiError::unauthorized("invalid or expired access token")),
    }
}

async fn ttl(State(s): State<AppState>, Auth(caller): Auth) -> Json<Ttl> {
    let date = chrono::DateTime::from_timestamp(caller.expires, 0)
        .map(|d| d.to_rfc3339())
        .unwrap_or_default();
    Json(Ttl {
        ttl: (caller.expires - s.store.clock().now()).max(0),
        date,
    })
}

/// Reaching here means the token is valid (the auth layer answers 401 otherwise).
async fn validate(_: Auth) -> Json<bool> {
    Json(true)
}

async fn whoami(State(s): State<AppState>, auth: Auth) -> ApiResult<Json<ClientInfo>> {
    let account = auth.account();
    Ok(Json(
        s.store
            .call(move |c| accounts::client_info(c, account))
            .await?,
    ))
}
