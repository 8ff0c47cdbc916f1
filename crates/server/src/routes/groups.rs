//! Groups, spec §4.4: all 8 operations.

use super::path_id;
use crate::auth::Auth;
use crate::error::ApiResult;
use crate::openapi::Routes;
use crate::state::AppState;
use crate::store::groups;
use crate::wire::{Input, QueryInput};
use axum::Json;
use axum::extract::{Path, State};
use listpipe_api::group::GroupAdvancedStats;
use listpipe_api::{Group, GroupInput, GroupStats, paths};
use serde::Deserialize;

pub(super) fn routes() -> Routes {
    Routes::new("groups")
        .get(paths::GROUPS, "List groups", list)
        .post(paths::GROUPS, "Create a group", create)
        .get(paths::GROUP, "Get a group", read)
        .put(paths::GROUP, "Update a group", update)
        .delete(paths::GROUP, "Delete a group", remove)
        .get(paths::GROUP_STATS, "Group statistics", stats)
        .get(
            paths::GROUP_ADVANCED_STATS,
            "Advanced group statistics",
            advanced_stats,
        )
        .delete(
            paths::GROUP_CLEAR,
            "Remove every receiver from a group",
            clear,
        )
}

#[derive(Deserialize, Default)]
struct ListQuery {
    #[serde(default, deserialize_with = "listpipe_api::lenient::opt_string")]
    order: Option<String>,
}

async fn list(
    State(s): State<AppState>,
    auth: Auth,
    QueryInput(q): QueryInput<ListQuery>,
) -> ApiResult<Json<Vec<Group>>> {
    let account = auth.account();
    Ok(Json(
        s.store
            .read(move |c| groups::list(c, account, q.order.as_deref()))
            .await?,
    ))
}

async fn create(
    State(s): State<AppState>,
    auth: Auth,
    Input(input): Input<GroupInput>,
) -> ApiResult<Json<Group>> {
    let account = auth.account();
    Ok(Json(
        s.store
            .write(move |c| groups::create(c, account, &input))
            .await?,
    ))
}

async fn read(
    State(s): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<Json<Group>> {
    let (account, id) = (auth.account(), path_id(&id, "group")?);
    Ok(Json(
        s.store.read(move |c| groups::get(c, account, id)).await?,
    ))
}

async fn update(
    State(s): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    Input(input): Input<GroupInput>,
) -> ApiResult<Json<Group>> {
    let (account, id) = (auth.account(), path_id(&id, "group")?);
    Ok(Json(
        s.store
            .write(move |c| groups::update(c, account, id, &input))
            .await?,
    ))
}

async fn remove(
    State(s): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<Json<bool>> {
    let (account, id) = (auth.account(), path_id(&id, "group")?);
    s.store
        .write(move |c| groups::delete(c, account, id))
        .await?;
    Ok(Json(true))
}

async fn stats(
    State(s): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<Json<GroupStats>> {
    let (account, id) = (auth.account(), path_id(&id, "group")?);
    Ok(Json(
        s.store.read(move |c| groups::stats(c, account, id)).await?,
    ))
}

async fn advanced_stats(
    State(s): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<Json<GroupAdvancedStats>> {
    let (account, id) = (auth.account(), path_id(&id, "group")?);
    Ok(Json(
        s.store
            .read(move |c| groups::advanced_stats(c, account, id))
            .await?,
    ))
}

async fn clear(
    State(s): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<Json<bool>> {
    let (account, id) = (auth.account(), path_id(&id, "group")?);
    s.store
        .write(move |c| groups::clear(c, account, id))
        .await?;
    Ok(Json(true))
}
