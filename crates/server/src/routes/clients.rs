//! Clients, spec §2.2 and §4.2: all 11 operations. One client per account
//! (the account itself); another client's id or domain is a 404.

use super::path_id;
use crate::auth::Auth;
use crate::error::ApiResult;
use crate::openapi::Routes;
use crate::state::AppState;
use crate::store::{AccountId, Db, StoreResult, clients};
use crate::wire::{MAX_BODY_BYTES, QueryInput};
use axum::Json;
use axum::extract::{Path, State};
use listpipe_api::client_info::{
    ClientInfo, ClientLimit, ClientList, ClientUser, InvoiceAddress, Plan,
};
use listpipe_api::paths;
use serde::Deserialize;

pub(super) fn routes() -> Routes {
    Routes::new("clients")
        .get(
            paths::CLIENTS,
            "List clients (a single client is answered as an object)",
            list,
        )
        .get(paths::CLIENT, "Get a client", read)
        .get(
            paths::CLIENT_BY_DOMAIN,
            "Get a client by its login domain",
            by_domain,
        )
        .get(paths::CLIENT_PLAN, "The client's plan", plan)
        .get(paths::CLIENT_LIMITS, "The client's limits", limits)
        .get(
            paths::CLIENT_INVOICE_ADDRESS,
            "The client's invoice address",
            invoice_address,
        )
        .get(
            paths::CLIENT_NEXT_INVOICE_DATE,
            "The next invoice date",
            next_invoice_date,
        )
        .get(
            paths::CLIENT_CONTINGENT,
            "The available contingent (0 on a flat-rate plan)",
            contingent,
        )
        .get(
            paths::CLIENT_RECEIVER_COUNT,
            "How many receivers the client has",
            receiver_count,
        )
        .get(
            paths::CLIENT_ACTIVE_RECEIVER_COUNT,
            "How many active receivers the client has",
            active_receiver_count,
        )
        .get(paths::CLIENT_USERS, "The client's users", users)
}

#[derive(Deserialize, Default)]
struct ListQuery {
    #[serde(default, deserialize_with = "listpipe_api::lenient::opt_i64")]
    pagesize: Option<i64>,
    #[serde(default, deserialize_with = "listpipe_api::lenient::opt_i64")]
    page: Option<i64>,
}

/// A single client is answered as an object, several as an array (spec §4.2).
async fn list(
    State(s): State<AppState>,
    auth: Auth,
    QueryInput(q): QueryInput<ListQuery>,
) -> ApiResult<Json<ClientList>> {
    let account = auth.account();
    let mut page = s
        .store
        .call(move |c| clients::list(c, account, q.pagesize, q.page))
        .await?;
    Ok(Json(match page.len() {
        1 => ClientList::One(page.remove(0)),
        _ => ClientList::Many(page),
    }))
}

/// Runs a read of the client named by the path id.
async fn of_client<T, F>(s: &AppState, auth: &Auth, id: &str, f: F) -> ApiResult<Json<T>>
where
    T: Send + 'static,
    F: Fn(&Db, AccountId, i64) -> StoreResult<T> + Send + 'static,
{
    let (account, id) = (auth.account(), path_id(id, "client")?);
    Ok(Json(s.store.call(move |c| f(c, account, id)).await?))
}

async fn read(
    State(s): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<Json<ClientInfo>> {
    of_client(&s, &auth, &id, clients::get).await
}

async fn by_domain(
    State(s): State<AppState>,
    auth: Auth,
    Path(domain): Path<String>,
) -> ApiResult<Json<ClientInfo>> {
    let account = auth.account();
    Ok(Json(
        s.store
            .call(move |c| clients::by_domain(c, account, &domain))
            .await?,
    ))
}

async fn plan(
    State(s): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<Json<Plan>> {
    of_client(&s, &auth, &id, clients::plan).await
}

async fn limits(
    State(s): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<ClientLimit>>> {
    // The rate limiter does not tell its rate (yet): reported as no limit.
    let rate = None;
    of_client(&s, &auth, &id, move |c, a, i| {
        clients::limits(c, a, i, MAX_BODY_BYTES, rate)
    })
    .await
}

async fn invoice_address(
    State(s): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<Json<InvoiceAddress>> {
    of_client(&s, &auth, &id, clients::invoice_address).await
}

async fn next_invoice_date(
    State(s): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<Json<i64>> {
    of_client(&s, &auth, &id, clients::next_invoice_date).await
}

async fn contingent(
    State(s): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<Json<i64>> {
    of_client(&s, &auth, &id, clients::contingent).await
}

async fn receiver_count(
    State(s): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<Json<i64>> {
    of_client(&s, &auth, &id, clients::receiver_count).await
}

async fn active_receiver_count(
    State(s): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<Json<i64>> {
    of_client(&s, &auth, &id, clients::active_receiver_count).await
}

async fn users(
    State(s): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<ClientUser>>> {
    of_client(&s, &auth, &id, clients::users).await
}
