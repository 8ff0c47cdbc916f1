//! One router per resource, merged under `/v3` behind the token check.

mod attributes;
mod blacklist;
mod debug;
mod groups;
pub mod oauth;
mod receivers;
mod tags;

use super::AppState;
use super::error::{ApiError, ApiResult};
use axum::Router;

/// Every `/v3` route (authentication is layered on by the caller).
pub fn v3() -> Router<AppState> {
    Router::new()
        .merge(debug::router())
        .merge(groups::router())
        .merge(receivers::router())
        .merge(attributes::router())
        .merge(tags::router())
        .merge(blacklist::router())
}

/// A numeric path id; anything else names no resource, so it is a 404.
pub fn path_id(segment: &str, what: &str) -> ApiResult<i64> {
    crate::api::Id::parse(segment)
        .map(|id| id.0)
        .ok_or_else(|| ApiError::not_found(format!("invalid {what}")))
}
