//! Tags, spec §4.9: the account's tags, a receiver's tags, adding tags.

use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::openapi::Routes;
use crate::routes::path_id;
use crate::state::AppState;
use crate::store::receivers::{self, ReceiverKey};
use crate::store::tags::{self, Origin};
use crate::wire::{Input, QueryInput};
use axum::Json;
use axum::extract::{Path, State};
use listpipe_api::{TagsInput, paths};
use serde::Deserialize;

pub(super) fn routes() -> Routes {
    Routes::new("tags")
        .get(paths::TAGS, "Tags set in the account", list)
        .get(paths::RECEIVER_TAGS, "Tags of a receiver", of_receiver)
        .post(paths::RECEIVER_TAGS, "Add tags to a receiver", add)
        .post(
            paths::GROUP_RECEIVER_TAGS,
            "Add tags to a receiver of a group",
            add_in_group,
        )
}

#[derive(Deserialize, Default)]
struct OriginQuery {
    #[serde(default, deserialize_with = "listpipe_api::lenient::opt_i64")]
    group_id: Option<i64>,
}

/// The raw `origin` parameter: absent is "any", present and blank is "none"
/// (the lenient decoder would fold both into one, so read it directly).
fn origin_of(uri: &axum::http::Uri) -> Origin {
    let raw = form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
        .find(|(k, _)| k == "origin")
        .map(|(_, v)| v.into_owned());
    Origin::from_query(raw.as_deref())
}

async fn list(
    State(s): State<AppState>,
    auth: Auth,
    uri: axum::http::Uri,
) -> ApiResult<Json<Vec<String>>> {
    let (account, origin) = (auth.account(), origin_of(&uri));
    Ok(Json(
        s.store
            .read(move |c| tags::of_account(c, account, &origin))
            .await?,
    ))
}

async fn of_receiver(
    State(s): State<AppState>,
    auth: Auth,
    Path(r): Path<String>,
    QueryInput(q): QueryInput<OriginQuery>,
    uri: axum::http::Uri,
) -> ApiResult<Json<Vec<String>>> {
    let (account, key, origin) = (auth.account(), ReceiverKey::parse(&r), origin_of(&uri));
    let group = q.group_id.filter(|g| *g > 0);
    Ok(Json(
        s.store
            .call(move |c| {
                let (contact, _) = receivers::contact_of(c, account, group, &key)?;
                tags::of_contact(c, contact, &origin)
            })
            .await?,
    ))
}

async fn add_tags(
    s: AppState,
    auth: Auth,
    group: Option<i64>,
    key: ReceiverKey,
    input: TagsInput,
) -> ApiResult<Json<Vec<String>>> {
    let account = auth.account();
    let list = input
        .tags
        .ok_or_else(|| ApiError::bad_request("tags is required"))?;
    Ok(Json(
        s.store
            .write(move |c| {
                let (contact, _) = receivers::contact_of(c, account, group, &key)?;
                tags::apply(c, contact, &list)
            })
            .await?,
    ))
}

/// Without a group id no tag automation runs (spec §4.9); this server runs
/// none either way, so the two differ only in the receiver check.
async fn add(
    State(s): State<AppState>,
    auth: Auth,
    Path(r): Path<String>,
    Input(input): Input<TagsInput>,
) -> ApiResult<Json<Vec<String>>> {
    let group = input.group_id.filter(|g| *g > 0);
    add_tags(s, auth, group, ReceiverKey::parse(&r), input).await
}

async fn add_in_group(
    State(s): State<AppState>,
    auth: Auth,
    Path((g, r)): Path<(String, String)>,
    Input(input): Input<TagsInput>,
) -> ApiResult<Json<Vec<String>>> {
    let g = path_id(&g, "group")?;
    add_tags(s, auth, Some(g), ReceiverKey::parse(&r), input).await
}
