//! Extensions of the live service that real clients call (wire.md), not in
//! the spec: receiver batches (`upsert`, `insert`, `upsertplus`) and
//! `activate`/`deactivate`; plus the answer for the old API versions.
//!
//! Batch bodies: an array of receiver objects (the fields of create), or one
//! object; either may come wrapped in `postdata`. An array answers one item
//! per input item, in order; an item that cannot be read or breaks a rule
//! answers its error message and does not stop the others. One object
//! answers the receiver itself (as create or update do), or the error with
//! its status. An empty body is the empty batch (`[]`). More than 1,000
//! items is a 413 and nothing is stored.

use super::path_id;
use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::openapi::Routes;
use crate::state::AppState;
use crate::store::receivers::{
    self, Activation, BatchItem, BatchMode, ItemOutcome, ReceiverKey, ReceiversJson, Selection,
};
use crate::wire::{Input, QueryInput, RawInput};
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::{Json, Router};
use listpipe_api::batch::{BatchReceiver, BatchStatus};
use listpipe_api::receiver::EmailChange;
use listpipe_api::{Group, Receiver, ReceiverInput, ReceiverQuery, paths};
use serde_json::Value;

pub(super) fn routes() -> Routes {
    Routes::new("receivers")
        .post(
            paths::GROUP_RECEIVERS_UPSERT,
            "Create or update receivers in a batch (extension)",
            upsert,
        )
        .post(
            paths::GROUP_RECEIVERS_INSERT,
            "Insert receivers in a batch (extension)",
            insert,
        )
        .post(
            paths::GROUP_RECEIVERS_UPSERTPLUS,
            "Create or update receivers, answering them (extension)",
            upsert_plus,
        )
        .put(
            paths::GROUP_RECEIVER_ACTIVATE,
            "Activate a receiver (extension)",
            activate,
        )
        .put(
            paths::GROUP_RECEIVER_DEACTIVATE,
            "Deactivate a receiver (extension)",
            deactivate,
        )
        .get(
            paths::RECEIVERS_BOUNCED,
            "List the receivers with a bounce, account-wide, paged (extension)",
            bounced,
        )
        .get(
            paths::RECEIVER_GROUPS,
            "List the groups a receiver is in (extension)",
            groups_of,
        )
        .put(
            paths::RECEIVER_EMAIL,
            "Change a receiver's address in every group (extension)",
            change_email,
        )
}

/// The batch paths under `serve --spec-only`: 404, as docs/server.md says.
pub(super) fn absent() -> Routes {
    Routes::new("receivers")
        .absent(paths::GROUP_RECEIVERS_UPSERT)
        .absent(paths::GROUP_RECEIVERS_INSERT)
        .absent(paths::GROUP_RECEIVERS_UPSERTPLUS)
        .absent(paths::RECEIVERS_BOUNCED)
        .absent(paths::RECEIVER_GROUPS)
        .absent(paths::RECEIVER_EMAIL)
}

/// Every path under `/v1` and `/v2`, with or without a token: 410 Gone,
/// naming the v3 path to use instead (spec §9: v3 is the current version).
pub fn old_versions() -> Router<AppState> {
    Router::new()
        .route("/v1", any(gone))
        .route("/v1/{*rest}", any(gone))
        .route("/v2", any(gone))
        .route("/v2/{*rest}", any(gone))
}

async fn gone(uri: Uri) -> ApiError {
    let path = uri.path();
    let (version, rest) = path
        .strip_prefix("/v1")
        .map(|rest| ("v1", rest))
        .or_else(|| path.strip_prefix("/v2").map(|rest| ("v2", rest)))
        .unwrap_or(("v1", ""));
    ApiError::new(
        StatusCode::GONE,
        format!("Gone: API {version} is not served; v3 is the current version: /v3{rest}"),
    )
}

/// A batch body: one object, or the items of an array.
enum Body {
    One(Box<ReceiverInput>),
    Many(Vec<BatchItem>),
}

fn unwrap_postdata(value: Value) -> Value {
    match value {
        Value::Object(mut o) if o.len() == 1 && o.contains_key("postdata") => {
            o.remove("postdata").unwrap_or_default()
        }
        v => v,
    }
}

fn read_body(value: Value) -> ApiResult<Body> {
    match unwrap_postdata(value) {
        Value::Null => Ok(Body::Many(Vec::new())),
        Value::Array(items) => Ok(Body::Many(
            items
                .into_iter()
                .enumerate()
                .map(|(i, item)| match unwrap_postdata(item) {
                    // serde would fill a receiver from an array by position.
                    Value::Array(_) => Err(format!(
                        "Bad Request: item {i} is not a receiver: expected an object, got an array"
                    )),
                    item => serde_json::from_value(item)
                        .map_err(|e| format!("Bad Request: item {i} is not a receiver: {e}")),
                })
                .collect(),
        )),
        one @ Value::Object(_) => serde_json::from_value(one)
            .map(|one| Body::One(Box::new(one)))
            .map_err(|e| ApiError::bad_request(format!("invalid body: {e}"))),
        _ => Err(ApiError::bad_request(
            "the body must be a receiver object or an array of them",
        )),
    }
}

/// Runs a batch in one transaction (the decoding happened in `read_body`).
async fn run(
    s: &AppState,
    auth: &Auth,
    g: &str,
    items: Vec<BatchItem>,
    mode: BatchMode,
    full: bool,
) -> ApiResult<Vec<ItemOutcome>> {
    let (account, g) = (auth.account(), path_id(g, "group")?);
    Ok(s.store
        // Borrowed, not moved: on PostgreSQL a write that lost a race runs again.
        .write(move |c| receivers::write_batch(c, account, g, &items, mode, full))
        .await?)
}

/// One object: the receiver written, or its error with its status.
async fn one(
    s: &AppState,
    auth: &Auth,
    g: &str,
    input: ReceiverInput,
    mode: BatchMode,
) -> Response {
    let outcome = run(s, auth, g, vec![Ok(input)], mode, true).await;
    match outcome.map(|mut o| o.pop()) {
        Ok(Some(ItemOutcome::Inserted(Some(r)) | ItemOutcome::Updated(Some(r)))) => {
            Json::<Receiver>(r).into_response()
        }
        Ok(Some(ItemOutcome::Failed(e))) => ApiError::from(e).into_response(),
        Ok(_) => ApiError::internal("a one-item batch answered no receiver").into_response(),
        Err(e) => e.into_response(),
    }
}

fn status_of(outcome: ItemOutcome) -> BatchStatus {
    match outcome {
        ItemOutcome::Inserted(_) => BatchStatus::inserted(),
        ItemOutcome::Updated(_) => BatchStatus::updated(),
        ItemOutcome::Failed(e) => BatchStatus::new(e.to_string()),
    }
}

async fn statuses(
    s: AppState,
    auth: Auth,
    g: String,
    body: Value,
    mode: BatchMode,
) -> ApiResult<Response> {
    Ok(match read_body(body)? {
        Body::One(input) => one(&s, &auth, &g, *input, mode).await,
        Body::Many(items) => {
            let out = run(&s, &auth, &g, items, mode, false).await?;
            Json(out.into_iter().map(status_of).collect::<Vec<_>>()).into_response()
        }
    })
}

/// `POST /v3/groups/{g}/receivers/upsert`: create or update each item.
async fn upsert(
    State(s): State<AppState>,
    auth: Auth,
    Path(g): Path<String>,
    RawInput(body): RawInput,
) -> ApiResult<Response> {
    statuses(s, auth, g, body, BatchMode::Upsert).await
}

/// `POST /v3/groups/{g}/receivers/insert`: create each item; an address
/// already in the group answers `"duplicate address"`.
async fn insert(
    State(s): State<AppState>,
    auth: Auth,
    Path(g): Path<String>,
    RawInput(body): RawInput,
) -> ApiResult<Response> {
    statuses(s, auth, g, body, BatchMode::Insert).await
}

/// `POST /v3/groups/{g}/receivers/upsertplus`: as upsert, answering the
/// full receivers (with tags, orders and events, as create does).
async fn upsert_plus(
    State(s): State<AppState>,
    auth: Auth,
    Path(g): Path<String>,
    RawInput(body): RawInput,
) -> ApiResult<Response> {
    Ok(match read_body(body)? {
        Body::One(input) => one(&s, &auth, &g, *input, BatchMode::Upsert).await,
        Body::Many(items) => {
            let out = run(&s, &auth, &g, items, BatchMode::Upsert, true).await?;
            let answers: Vec<BatchReceiver> = out
                .into_iter()
                .map(|o| match o {
                    ItemOutcome::Inserted(Some(r)) | ItemOutcome::Updated(Some(r)) => {
                        BatchReceiver::Done(Box::new(r))
                    }
                    other => BatchReceiver::Failed(status_of(other)),
                })
                .collect();
            Json(answers).into_response()
        }
    })
}

async fn set_activation(
    s: AppState,
    auth: Auth,
    g: String,
    r: String,
    what: Activation,
) -> ApiResult<Json<bool>> {
    let (account, g, key) = (
        auth.account(),
        path_id(&g, "group")?,
        ReceiverKey::parse(&r),
    );
    s.store
        .write(move |c| receivers::set_activation(c, account, g, &key, what))
        .await?;
    Ok(Json(true))
}

/// `PUT /v3/groups/{g}/receivers/{id}/activate` (see `store::receivers::activation`).
async fn activate(
    State(s): State<AppState>,
    auth: Auth,
    Path((g, r)): Path<(String, String)>,
) -> ApiResult<Json<bool>> {
    set_activation(s, auth, g, r, Activation::Activate).await
}

/// `PUT /v3/groups/{g}/receivers/{id}/deactivate`.
async fn deactivate(
    State(s): State<AppState>,
    auth: Auth,
    Path((g, r)): Path<(String, String)>,
) -> ApiResult<Json<bool>> {
    set_activation(s, auth, g, r, Activation::Deactivate).await
}

/// `GET /v3/receivers/bounced`: every receiver with a bounce, in id order,
/// paged and with `detail` as the group lists are (`type` is implied).
async fn bounced(
    State(s): State<AppState>,
    auth: Auth,
    QueryInput(mut q): QueryInput<ReceiverQuery>,
) -> ApiResult<ReceiversJson> {
    let account = auth.account();
    q.kind = Some("bounce".into());
    let everyone = Selection {
        sql: "TRUE".into(),
        params: Vec::new(),
        whole_group: None,
    };
    Ok(s.store
        .read(move |c| receivers::list_matching(c, account, &everyone, &q, false))
        .await?)
}

/// `GET /v3/receivers/{id}/groups`.
async fn groups_of(
    State(s): State<AppState>,
    auth: Auth,
    Path(r): Path<String>,
) -> ApiResult<Json<Vec<Group>>> {
    let (account, key) = (auth.account(), ReceiverKey::parse(&r));
    Ok(Json(
        s.store
            .read(move |c| receivers::groups_of(c, account, &key))
            .await?,
    ))
}

/// `PUT /v3/receivers/{id}/email` with `{"email": "new@example.com"}`.
async fn change_email(
    State(s): State<AppState>,
    auth: Auth,
    Path(r): Path<String>,
    Input(input): Input<EmailChange>,
) -> ApiResult<Json<Receiver>> {
    let (account, key) = (auth.account(), ReceiverKey::parse(&r));
    let email = input
        .email
        .ok_or_else(|| ApiError::bad_request("Bad Request: email is required"))?;
    Ok(Json(
        s.store
            .write(move |c| receivers::change_email(c, account, &key, &email))
            .await?,
    ))
}
