//! Token authentication for every `/v3` operation (spec §5, wire.md). The
//! token arrives as `Authorization: Bearer <t>`, `X-ACCESS-TOKEN: <t>` or
//! `?token=<t>`. It is never logged.

use crate::error::ApiError;
use crate::store::accounts::{self, Caller};
use crate::store::{AccountId, Backend, Store};
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

/// Live tokens seen in the last few seconds, so that a client's stream of
/// requests costs one database lookup per [`CACHE_SECS`] rather than one
/// per request. Keyed by the token's SHA-256 (no token is kept in clear);
/// an entry never outlives its token's expiry. SQLite only: on PostgreSQL
/// other server processes revoke tokens this one would not hear of, so
/// every request asks the database ([`require_token`]).
///
/// Revocation is immediate (issue 43): every revocation in this process
/// calls [`TokenCache::revoked`] after it commits, which empties the cache
/// and starts a new generation. A lookup remembers the generation it began
/// in, and its answer is cached only if no revocation came since: a lookup
/// that read the token live just before a revocation cannot put it back
/// after the cache was emptied (the check-then-insert race).
#[derive(Clone, Default)]
pub struct TokenCache(Arc<Mutex<Cached>>);

#[derive(Default)]
struct Cached {
    tokens: HashMap<TokenHash, (Caller, Instant)>,
    /// Revocations so far.
    generation: u64,
}

type TokenHash = [u8; 32];

/// How long a looked-up token is trusted without asking the database again.
const CACHE_SECS: u64 = 5;
/// Entries kept at most; past this the cache starts over.
const CACHE_MAX: usize = 10_000;

impl TokenCache {
    fn key(token: &str) -> TokenHash {
        Sha256::digest(token.as_bytes()).into()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cached> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The caller of `token` if cached, and live at second `now` (the server's clock).
    fn get(&self, token: &str, now: i64) -> Option<Caller> {
        self.lock()
            .tokens
            .get(&Self::key(token))
            .filter(|(c, until)| Instant::now() < *until && c.is_live_at(now))
            .map(|(c, _)| c.clone())
    }

    /// The generation a lookup begins in (see [`TokenCache::put`]).
    fn generation(&self) -> u64 {
        self.lock().generation
    }

    /// Caches a token looked up in `generation`, unless a revocation came since.
    fn put(&self, token: &str, caller: &Caller, generation: u64) {
        let mut cached = self.lock();
        if cached.generation != generation {
            return;
        }
        if cached.tokens.len() >= CACHE_MAX {
            cached.tokens.clear();
        }
        let until = Instant::now() + Duration::from_secs(CACHE_SECS);
        cached
            .tokens
            .insert(Self::key(token), (caller.clone(), until));
    }

    /// Tokens were revoked (and the revocation committed): nothing cached
    /// before is trusted again, nor anything looked up before now.
    pub fn revoked(&self) {
        let mut cached = self.lock();
        cached.generation += 1;
        cached.tokens.clear();
    }
}

/// What [`require_token`] needs: the store to look tokens up in and the
/// cache of those recently seen.
#[derive(Clone)]
pub struct TokenCheck {
    pub store: Store,
    pub tokens: TokenCache,
}

/// Rejects requests without a live token; puts the [`Caller`] in the request.
pub async fn require_token(
    State(state): State<TokenCheck>,
    mut req: Request,
    next: Next,
) -> Response {
    let Some(token) = presented_token(req.headers(), req.uri().query()) else {
        return ApiError::unauthorized("no access token (send Authorization: Bearer <token>)")
            .into_response();
    };
    // Decision: no cache on PostgreSQL. A token revoked by another server
    // process on the same database (a debug exchange, `accounts rotate`)
    // must stop working here at once too, which a cache could only promise
    // with word of every revocation (LISTEN/NOTIFY); one lookup by primary
    // key per request is the price.
    let cached = state.store.backend() == Backend::Sqlite;
    if cached && let Some(caller) = state.tokens.get(&token, state.store.clock().now()) {
        req.extensions_mut().insert(caller);
        return next.run(req).await;
    }
    let cache = state.tokens.clone();
    // Read before the database is: see [`TokenCache`].
    let generation = cache.generation();
    match state
        .store
        .read(move |conn| {
            let caller = accounts::authenticate(conn, &token)?;
            if let Some(c) = caller.as_ref().filter(|_| cached) {
                cache.put(&token, c, generation);
            }
            Ok(caller)
        })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::now;

    fn caller() -> Caller {
        Caller {
            account: AccountId(1),
            app_id: 1,
            selector: "s".into(),
            expires: super::super::store::now() + 3600,
            family: "f".into(),
            pair: "p".into(),
        }
    }

    #[test]
    fn a_lookup_that_began_before_a_revocation_cannot_put_its_token_back_in_the_cache() {
        let cache = TokenCache::default();
        // The lookup reads the generation, then the database (token live)...
        let began = cache.generation();
        // ...the revocation commits and empties the cache...
        cache.revoked();
        // ...and the lookup's answer comes too late to be cached.
        cache.put("token", &caller(), began);
        assert!(cache.get("token", now()).is_none());
    }

    #[test]
    fn a_revocation_empties_the_cache() {
        let cache = TokenCache::default();
        cache.put("token", &caller(), cache.generation());
        assert!(cache.get("token", now()).is_some());
        cache.revoked();
        assert!(cache.get("token", now()).is_none());
    }
}
