//! Receivers, spec §4.8: the list (GET and `get_receivers`), create, read,
//! update and delete, in a group or account-wide.

use super::path_id;
use crate::auth::Auth;
use crate::error::ApiResult;
use crate::openapi::Routes;
use crate::state::AppState;
use crate::store::receivers::{self, ReceiverKey, ReceiversJson};
use crate::wire::{Input, QueryInput};
use axum::Json;
use axum::extract::{Path, State};
use listpipe_api::{Receiver, ReceiverInput, ReceiverQuery, paths};

pub(super) fn routes() -> Routes {
    Routes::new("receivers")
        .get(paths::GROUP_RECEIVERS, "List a group's receivers", list)
        .post(
            paths::GROUP_RECEIVERS,
            "Create a receiver in a group",
            create,
        )
        .post(
            paths::GROUP_GET_RECEIVERS,
            "List a group's receivers, parameters in the body",
            list_by_body,
        )
        .get(
            paths::GROUP_RECEIVER,
            "Get a receiver of a group",
            read_in_group,
        )
        .put(
            paths::GROUP_RECEIVER,
            "Update a receiver of a group",
            update,
        )
        .delete(
            paths::GROUP_RECEIVER,
            "Delete a receiver from a group",
            remove_from_group,
        )
        .get(paths::RECEIVER, "Get a receiver by id or email", read)
        .delete(paths::RECEIVER, "Delete a receiver", remove)
}

async fn list(
    State(s): State<AppState>,
    auth: Auth,
    Path(g): Path<String>,
    QueryInput(q): QueryInput<ReceiverQuery>,
) -> ApiResult<ReceiversJson> {
    let (account, g) = (auth.account(), path_id(&g, "group")?);
    Ok(s.store
        .read(move |c| receivers::list(c, account, g, &q))
        .await?)
}

/// The same list with its parameters in the body, for long email lists.
async fn list_by_body(
    State(s): State<AppState>,
    auth: Auth,
    Path(g): Path<String>,
    Input(q): Input<ReceiverQuery>,
) -> ApiResult<ReceiversJson> {
    let (account, g) = (auth.account(), path_id(&g, "group")?);
    Ok(s.store
        .read(move |c| receivers::list(c, account, g, &q))
        .await?)
}

async fn create(
    State(s): State<AppState>,
    auth: Auth,
    Path(g): Path<String>,
    Input(input): Input<ReceiverInput>,
) -> ApiResult<Json<Receiver>> {
    let (account, g) = (auth.account(), path_id(&g, "group")?);
    Ok(Json(s.store.create_receiver(account, g, input).await?))
}

async fn read_in_group(
    State(s): State<AppState>,
    auth: Auth,
    Path((g, r)): Path<(String, String)>,
    QueryInput(q): QueryInput<ReceiverQuery>,
) -> ApiResult<Json<Receiver>> {
    let (account, g, key) = (
        auth.account(),
        path_id(&g, "group")?,
        ReceiverKey::parse(&r),
    );
    let detail = q.detail.unwrap_or(0);
    Ok(Json(
        s.store
            .read(move |c| receivers::get(c, account, Some(g), &key, detail))
            .await?,
    ))
}

async fn update(
    State(s): State<AppState>,
    auth: Auth,
    Path((g, r)): Path<(String, String)>,
    Input(input): Input<ReceiverInput>,
) -> ApiResult<Json<Receiver>> {
    let (account, g, key) = (
        auth.account(),
        path_id(&g, "group")?,
        ReceiverKey::parse(&r),
    );
    Ok(Json(
        s.store
            .write(move |c| receivers::update(c, account, g, &key, &input))
            .await?,
    ))
}

async fn remove_from_group(
    State(s): State<AppState>,
    auth: Auth,
    Path((g, r)): Path<(String, String)>,
) -> ApiResult<Json<bool>> {
    let (account, g, key) = (
        auth.account(),
        path_id(&g, "group")?,
        ReceiverKey::parse(&r),
    );
    s.store
        .write(move |c| receivers::delete(c, account, Some(g), &key))
        .await?;
    Ok(Json(true))
}

async fn read(
    State(s): State<AppState>,
    auth: Auth,
    Path(r): Path<String>,
    QueryInput(q): QueryInput<ReceiverQuery>,
) -> ApiResult<Json<Receiver>> {
    let (account, key) = (auth.account(), ReceiverKey::parse(&r));
    let detail = q.detail.unwrap_or(0);
    Ok(Json(
        s.store
            .read(move |c| receivers::get(c, account, q.group_id.filter(|g| *g > 0), &key, detail))
            .await?,
    ))
}

async fn remove(
    State(s): State<AppState>,
    auth: Auth,
    Path(r): Path<String>,
    QueryInput(q): QueryInput<ReceiverQuery>,
) -> ApiResult<Json<bool>> {
    let (account, key) = (auth.account(), ReceiverKey::parse(&r));
    s.store
        .write(move |c| receivers::delete(c, account, q.group_id.filter(|g| *g > 0), &key))
        .await?;
    Ok(Json(true))
}
