//! The two form endpoints a person reaches without a token: the sign-up an
//! embedded form posts to (`POST /forms/{id}/submit`) and the link in a
//! double-opt-in mail (`GET /forms/confirm/{token}`). Both answer a small
//! HTML page; failures are the API's usual error body (the wire layer puts
//! every error answer into it).

use super::html::page;
use crate::error::ApiResult;
use crate::routes::path_id;
use crate::state::AppState;
use crate::store::forms::doi::{self, Confirmation, Outcome};
use crate::wire::RawInput;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use axum::response::Response;
use axum::routing::{get, post};
use listpipe_api::form::DoiData;
use listpipe_api::paths;
use serde_json::Value;
use std::collections::BTreeMap;

pub fn router() -> Router<AppState> {
    Router::new()
        .route(paths::FORM_SUBMIT, post(submit))
        .route(paths::FORM_CONFIRM, get(confirm))
}

/// The two pages as documented operations (no token), for the OpenAPI document.
pub fn operations() -> Vec<crate::openapi::Operation> {
    let op = |method, path, summary| crate::openapi::Operation {
        method,
        path,
        summary,
        tag: "forms",
    };
    vec![
        op(
            "post",
            paths::FORM_SUBMIT,
            "Sign up through a form (form-encoded email and attributes); answers an HTML page",
        ),
        op(
            "get",
            paths::FORM_CONFIRM,
            "Follow a double-opt-in link (one-time); answers an HTML page",
        ),
    ]
}

/// The visitor as the double-opt-in record keeps them. The server sees no
/// peer address of its own, so the IP is what a proxy forwarded, if any.
fn visitor(headers: &HeaderMap) -> DoiData {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    let forwarded = text("x-forwarded-for");
    let user_ip = match forwarded.split(',').next().map(str::trim) {
        Some(ip) if !ip.is_empty() => ip.to_string(),
        _ => text("x-real-ip"),
    };
    DoiData {
        user_ip,
        referer: text(header::REFERER.as_str()),
        user_agent: text(header::USER_AGENT.as_str()),
    }
}

/// The posted fields as text; anything not a scalar is left out.
fn fields(body: Value) -> BTreeMap<String, String> {
    let Value::Object(map) = body else {
        return BTreeMap::new();
    };
    map.into_iter()
        .filter_map(|(k, v)| match v {
            Value::String(s) => Some((k, s)),
            Value::Number(n) => Some((k, n.to_string())),
            Value::Bool(b) => Some((k, b.to_string())),
            _ => None,
        })
        .collect()
}

async fn submit(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    RawInput(body): RawInput,
) -> ApiResult<Response> {
    let id = path_id(&id, "form")?;
    let (values, doi, fallback) = (fields(body), visitor(&headers), s.base_url.clone());
    let email = s
        .store
        .write(move |c| doi::submit(c, id, &values, &doi, &fallback))
        .await?;
    Ok(page(
        "Please check your inbox",
        &format!(
            "If {email} can be subscribed to this list, a mail with a confirmation link is on \
             its way to it. The subscription starts when that link is opened."
        ),
    ))
}

async fn confirm(State(s): State<AppState>, Path(token): Path<String>) -> ApiResult<Response> {
    let outcome = s.store.write(move |c| doi::confirm(c, &token)).await?;
    let (title, message) = match outcome {
        Confirmation::Followed {
            email,
            group,
            outcome,
        } => match outcome {
            Outcome::Activated => (
                "Subscription confirmed",
                format!("{email} now receives mail from \"{group}\"."),
            ),
            Outcome::AlreadyActive => (
                "Already subscribed",
                format!("{email} was already active in \"{group}\". Nothing changed."),
            ),
            Outcome::OptedOut => (
                "Not subscribed",
                format!(
                    "{email} unsubscribed from \"{group}\" before; this link does not \
                     subscribe it again. Nothing changed."
                ),
            ),
            Outcome::Deactivated => (
                "Unsubscribed",
                format!("{email} no longer receives mail from \"{group}\"."),
            ),
            Outcome::AlreadyDeactivated => (
                "Already unsubscribed",
                format!("{email} was already unsubscribed from \"{group}\". Nothing changed."),
            ),
        },
        Confirmation::Used(when) => (
            "Link already used",
            format!(
                "This link was used on {}; it works once. Nothing changed.",
                chrono::DateTime::from_timestamp(when, 0)
                    .map(|d| d.format("%Y-%m-%d %H:%M UTC").to_string())
                    .unwrap_or_default()
            ),
        ),
        Confirmation::Expired => (
            "Link expired",
            format!(
                "This link was valid for {} days and has expired. Nothing changed.",
                doi::LINK_TTL_SECS / 86_400
            ),
        ),
    };
    Ok(page(title, &message))
}
