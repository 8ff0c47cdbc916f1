//! Token authentication for every `/v3` operation (spec §5, wire.md). The
//! token arrives as `Authorization: Bearer <t>`, `X-ACCESS-TOKEN: <t>` or
//! `?token=<t>`. It is never logged.

use super::AppState;
use super::error::ApiError;
use super::store::AccountId;
use super::store::accounts::{self, Caller};
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The token a request carries, wherever the client put it.
pub fn presented_token(headers: &HeaderMap, query: Option<&str>) -> Option<String> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, rest) = v.trim().split_once(char::is_whitespace)?;
            scheme
                .eq_ignore_ascii_case("bearer")
                .then(|| rest.trim().to_string())
        });
    let header_token = || {
        headers
            .get("x-access-token")
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim().to_string())
    };
    let query_token = || {
        form_urlencoded::parse(query.unwrap_or("").as_bytes())
            .find(|(k, _)| k == "token")
            .map(|(_, v)| v.trim().to_string())
    };
    bearer
        .or_else(header_token)
        .or_else(query_token)
        .filter(|t| !t.is_empty())
}

/// Rejects requests without a live token; puts the [`Caller`] in the request.
pub async fn require_token(
    State(state): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    let Some(token) = presented_token(req.headers(), req.uri().query()) else {
        return ApiError::unauthorized("no access token (send Authorization: Bearer <token>)")
            .into_response();
    };
    match state
        .store
        .call(move |conn| accounts::authenticate(conn, &token))
        .await
    {
        Ok(Some(caller)) => {
            req.extensions_mut().insert(caller);
            next.run(req).await
        }
        Ok(None) => ApiError::unauthorized("invalid or expired access token").into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// The authenticated caller, for handlers.
pub struct Auth(pub Caller);

impl Auth {
    pub fn account(&self) -> AccountId {
        self.0.account
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Auth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Caller>()
            .cloned()
            .map(Auth)
            .ok_or_else(|| ApiError::unauthorized("no access token"))
    }
}
