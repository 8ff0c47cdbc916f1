//! One router per resource, merged under `/v3` behind the token check.

mod attributes;
pub mod authorize;
mod blacklist;
mod clients;
mod debug;
mod extensions;
mod filters;
pub mod forms;
mod groups;
pub mod oauth;
mod receivers;
mod tags;

use super::error::{ApiError, ApiResult};
use super::openapi::Routes;

/// Every `/v3` route with its documentation (authentication is layered on
/// by the caller). The OpenAPI document is made from the same table.
/// `extensions`: also the live service's extensions (wire.md), which a
/// target that only serves the spec lacks.
pub fn v3(extensions: bool) -> Routes {
    let routes = debug::routes()
        .merge(groups::routes())
        .merge(receivers::routes());
    let routes = if extensions {
        routes.merge(extensions::routes())
    } else {
        routes.merge(extensions::absent())
    };
    routes
        .merge(attributes::routes())
        .merge(filters::routes())
        .merge(tags::routes())
        .merge(blacklist::routes())
        .merge(clients::routes())
        .merge(forms::routes())
}

pub use extensions::old_versions;

/// A numeric path id; anything else names no resource, so it is a 404.
pub fn path_id(segment: &str, what: &str) -> ApiResult<i64> {
    listpipe_api::Id::parse(segment)
        .map(|id| id.0)
        .ok_or_else(|| ApiError::not_found(format!("invalid {what}")))
}

/// A page of receivers is sent as the store wrote it, with the header
/// `Json` would give it: the same answer, without `Receiver` values in
/// between (`store::receivers::page`).
impl axum::response::IntoResponse for crate::store::receivers::ReceiversJson {
    fn into_response(self) -> axum::response::Response {
        (
            [(
                axum::http::header::CONTENT_TYPE,
                axum::http::HeaderValue::from_static("application/json"),
            )],
            self.0,
        )
            .into_response()
    }
}
