//! What every route shares: [`AppState`], the router's state. It sits low
//! in the crate: it holds the store and the per-process tables of the
//! middlewares (the token cache, the rate limit, the faults, the failed
//! authentications), and none of them knows of it. The middlewares are
//! given their own part of it (see [`crate::serve::app`]); the extractors
//! that need a part take it through [`FromRef`].

use crate::auth::TokenCache;
use crate::auth_failures::AuthFailures;
use crate::faults::Faults;
use crate::ratelimit::RateLimit;
use crate::store::Store;
use axum::extract::FromRef;
use std::sync::Arc;

#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    /// Where this server is reached (for links it writes, such as confirmation links).
    pub base_url: String,
    /// Access-token lifetime in seconds.
    pub token_ttl: i64,
    /// Authorization-code lifetime in seconds (`serve --code-ttl`).
    pub code_ttl: i64,
    /// `serve --rate-limit`: requests per second per account; `None` is no limit.
    pub rate_limit: Option<Arc<RateLimit>>,
    /// `serve --faults`: injected failures for tests; `None` (the default) is none.
    pub faults: Option<Arc<Faults>>,
    /// Tokens recently checked (see [`TokenCache`]).
    pub tokens: TokenCache,
    /// Failed client authentications at the token endpoint and failed
    /// logins on the authorization page, and where requests come from (see
    /// [`crate::auth_failures`]).
    pub auth_failures: Arc<AuthFailures>,
    /// Serve the spec's endpoints only, without the live service's extensions.
    pub spec_only: bool,
}

/// For [`crate::auth_failures::Peer`].
impl FromRef<AppState> for Arc<AuthFailures> {
    fn from_ref(state: &AppState) -> Self {
        state.auth_failures.clone()
    }
}
