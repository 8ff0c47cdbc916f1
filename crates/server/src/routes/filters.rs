//! Filters (segments), spec §4.7: all 9 operations.

use super::path_id;
use crate::auth::Auth;
use crate::error::ApiResult;
use crate::openapi::Routes;
use crate::state::AppState;
use crate::store::filters;
use crate::store::receivers::ReceiversJson;
use crate::wire::{Input, QueryInput};
use axum::Json;
use axum::extract::{Path, State};
use listpipe_api::filter::{Filter, FilterInput, FilterStats, RuntimeFilter};
use listpipe_api::{ReceiverQuery, paths};

pub(super) fn routes() -> Routes {
    Routes::new("filters")
        .get(paths::GROUP_FILTERS, "List a group's filters", list)
        .post(paths::GROUP_FILTERS, "Create a filter", create)
        .get(paths::GROUP_FILTER, "Get a filter", read)
        .put(paths::GROUP_FILTER, "Update a filter", update)
        .delete(paths::GROUP_FILTER, "Delete a filter", remove)
        .get(
            paths::GROUP_FILTER_STATS,
            "Statistics of a filter's receivers",
            stats,
        )
        .get(
            paths::GROUP_FILTER_COUNT,
            "How many receivers a filter selects",
            count,
        )
        .get(
            paths::GROUP_FILTER_RECEIVERS,
            "The receivers a filter selects",
            receivers,
        )
        .post(
            paths::RUNTIME_FILTER,
            "Receivers matching rules given in the body",
            runtime,
        )
}

fn ids(g: &str, f: &str) -> ApiResult<(i64, i64)> {
    Ok((path_id(g, "group")?, path_id(f, "filter")?))
}

async fn list(
    State(s): State<AppState>,
    auth: Auth,
    Path(g): Path<String>,
) -> ApiResult<Json<Vec<Filter>>> {
    let (account, g) = (auth.account(), path_id(&g, "group")?);
    Ok(Json(
        s.store.read(move |c| filters::list(c, account, g)).await?,
    ))
}

/// Answers the filter with its `id` (wire.md: clients read the id).
async fn create(
    State(s): State<AppState>,
    auth: Auth,
    Path(g): Path<String>,
    Input(input): Input<FilterInput>,
) -> ApiResult<Json<Filter>> {
    let (account, g) = (auth.account(), path_id(&g, "group")?);
    Ok(Json(
        s.store
            .write(move |c| filters::create(c, account, g, &input))
            .await?,
    ))
}

async fn read(
    State(s): State<AppState>,
    auth: Auth,
    Path((g, f)): Path<(String, String)>,
) -> ApiResult<Json<Filter>> {
    let (account, (g, f)) = (auth.account(), ids(&g, &f)?);
    Ok(Json(
        s.store
            .read(move |c| filters::get(c, account, g, f))
            .await?,
    ))
}

/// Answers `true` (spec §4.7: boolean).
async fn update(
    State(s): State<AppState>,
    auth: Auth,
    Path((g, f)): Path<(String, String)>,
    Input(input): Input<FilterInput>,
) -> ApiResult<Json<bool>> {
    let (account, (g, f)) = (auth.account(), ids(&g, &f)?);
    s.store
        .write(move |c| filters::update(c, account, g, f, &input))
        .await?;
    Ok(Json(true))
}

async fn remove(
    State(s): State<AppState>,
    auth: Auth,
    Path((g, f)): Path<(String, String)>,
) -> ApiResult<Json<bool>> {
    let (account, (g, f)) = (auth.account(), ids(&g, &f)?);
    s.store
        .write(move |c| filters::delete(c, account, g, f))
        .await?;
    Ok(Json(true))
}

async fn stats(
    State(s): State<AppState>,
    auth: Auth,
    Path((g, f)): Path<(String, String)>,
) -> ApiResult<Json<FilterStats>> {
    let (account, (g, f)) = (auth.account(), ids(&g, &f)?);
    Ok(Json(
        s.store
            .read(move |c| filters::stats(c, account, g, f))
            .await?,
    ))
}

/// A bare integer, like the other counts of the service (wire.md).
async fn count(
    State(s): State<AppState>,
    auth: Auth,
    Path((g, f)): Path<(String, String)>,
) -> ApiResult<Json<i64>> {
    let (account, (g, f)) = (auth.account(), ids(&g, &f)?);
    Ok(Json(
        s.store
            .read(move |c| filters::count(c, account, g, f))
            .await?,
    ))
}

async fn receivers(
    State(s): State<AppState>,
    auth: Auth,
    Path((g, f)): Path<(String, String)>,
    QueryInput(q): QueryInput<ReceiverQuery>,
) -> ApiResult<ReceiversJson> {
    let (account, (g, f)) = (auth.account(), ids(&g, &f)?);
    Ok(s.store
        .read(move |c| filters::receivers(c, account, g, f, &q))
        .await?)
}

async fn runtime(
    State(s): State<AppState>,
    auth: Auth,
    Input(input): Input<RuntimeFilter>,
) -> ApiResult<ReceiversJson> {
    let account = auth.account();
    Ok(s.store
        .read(move |c| filters::runtime_json(c, account, &input))
        .await?)
}
