//! The blacklist and group blocklists, spec §4.3: all 10 operations.

use super::path_id;
use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::openapi::Routes;
use crate::state::AppState;
use crate::store::blacklist;
use crate::wire::{Input, RawInput};
use axum::Json;
use axum::extract::{Path, State};
use listpipe_api::blacklist::BlacklistInput;
use listpipe_api::{BlacklistBatch, BlacklistEntry, BlacklistValidate, BlocklistInput, paths};
use serde_json::Value;

pub(super) fn routes() -> Routes {
    Routes::new("blacklist")
        .get(paths::BLACKLIST, "List the blacklist", list)
        .post(paths::BLACKLIST, "Add an address to the blacklist", add)
        .put(paths::BLACKLIST, "Update a blacklist entry", update)
        .post(paths::BLACKLIST_BATCH, "Add up to 1,000 entries", batch)
        .post(
            paths::BLACKLIST_VALIDATE,
            "Which addresses are not blacklisted",
            validate,
        )
        .get(paths::BLACKLIST_ENTRY, "Get a blacklist entry", read)
        .delete(
            paths::BLACKLIST_ENTRY,
            "Remove an address from the blacklist",
            remove,
        )
        .get(
            paths::GROUP_BLOCKLIST,
            "List a group's blocklist",
            group_list,
        )
        .post(
            paths::GROUP_BLOCKLIST,
            "Add an address to a group's blocklist",
            group_add,
        )
        .delete(
            paths::GROUP_BLOCKLIST_ENTRY,
            "Remove an address from a group's blocklist",
            group_remove,
        )
}

async fn list(State(s): State<AppState>, auth: Auth) -> ApiResult<Json<Vec<BlacklistEntry>>> {
    let account = auth.account();
    Ok(Json(
        s.store.read(move |c| blacklist::list(c, account)).await?,
    ))
}

async fn add(
    State(s): State<AppState>,
    auth: Auth,
    Input(input): Input<BlacklistInput>,
) -> ApiResult<Json<BlacklistEntry>> {
    let account = auth.account();
    Ok(Json(
        s.store
            .write(move |c| blacklist::add(c, account, &input))
            .await?,
    ))
}

async fn update(
    State(s): State<AppState>,
    auth: Auth,
    Input(input): Input<BlacklistInput>,
) -> ApiResult<Json<BlacklistEntry>> {
    let account = auth.account();
    Ok(Json(
        s.store
            .write(move |c| blacklist::update(c, account, &input))
            .await?,
    ))
}

async fn read(
    State(s): State<AppState>,
    auth: Auth,
    Path(email): Path<String>,
) -> ApiResult<Json<BlacklistEntry>> {
    let account = auth.account();
    Ok(Json(
        s.store
            .read(move |c| blacklist::get(c, account, &email))
            .await?,
    ))
}

async fn remove(
    State(s): State<AppState>,
    auth: Auth,
    Path(email): Path<String>,
) -> ApiResult<Json<bool>> {
    let account = auth.account();
    s.store
        .write(move |c| blacklist::delete(c, account, &email))
        .await?;
    Ok(Json(true))
}

/// The batch body is `{"items": [...]}`; a bare array of entries is taken too.
async fn batch(
    State(s): State<AppState>,
    auth: Auth,
    RawInput(body): RawInput,
) -> ApiResult<Json<Vec<BlacklistEntry>>> {
    let account = auth.account();
    let body = match body {
        Value::Array(items) => serde_json::json!({ "items": items }),
        v => v,
    };
    let input: BlacklistBatch = serde_json::from_value(body)
        .map_err(|e| ApiError::bad_request(format!("invalid body: {e}")))?;
    let items = input
        .items
        .ok_or_else(|| ApiError::bad_request("items is required"))?;
    Ok(Json(
        s.store
            .write(move |c| blacklist::batch(c, account, &items))
            .await?,
    ))
}

async fn validate(
    State(s): State<AppState>,
    auth: Auth,
    Input(input): Input<BlacklistValidate>,
) -> ApiResult<Json<Vec<String>>> {
    let account = auth.account();
    let emails = input
        .emails
        .ok_or_else(|| ApiError::bad_request("emails is required"))?;
    let group = input.group_id.filter(|g| *g > 0);
    let invert = input.invert.unwrap_or(false);
    Ok(Json(
        s.store
            .read(move |c| blacklist::validate(c, account, &emails, group, invert))
            .await?,
    ))
}

async fn group_list(
    State(s): State<AppState>,
    auth: Auth,
    Path(g): Path<String>,
) -> ApiResult<Json<Vec<BlacklistEntry>>> {
    let (account, g) = (auth.account(), path_id(&g, "group")?);
    Ok(Json(
        s.store
            .read(move |c| blacklist::group_list(c, account, g))
            .await?,
    ))
}

async fn group_add(
    State(s): State<AppState>,
    auth: Auth,
    Path(g): Path<String>,
    Input(input): Input<BlocklistInput>,
) -> ApiResult<Json<BlacklistEntry>> {
    let (account, g) = (auth.account(), path_id(&g, "group")?);
    Ok(Json(
        s.store
            .write(move |c| blacklist::group_add(c, account, g, input.email.as_deref()))
            .await?,
    ))
}

async fn group_remove(
    State(s): State<AppState>,
    auth: Auth,
    Path((g, email)): Path<(String, String)>,
) -> ApiResult<Json<bool>> {
    let (account, g) = (auth.account(), path_id(&g, "group")?);
    s.store
        .write(move |c| blacklist::group_delete(c, account, g, &email))
        .await?;
    Ok(Json(true))
}
