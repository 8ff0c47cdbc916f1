//! Attributes, spec §4.6: all 13 operations.

use super::path_id;
use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::openapi::Routes;
use crate::state::AppState;
use crate::store::receivers::{self, ReceiverKey};
use crate::store::{AccountId, Db, StoreResult, attributes, not_found};
use crate::wire::{Input, QueryInput};
use axum::Json;
use axum::extract::{Path, State};
use listpipe_api::attribute::{AttributeLimits, AttributeValue, AttributeValueInput};
use listpipe_api::{AttributeInput, paths};
use serde::Deserialize;
use serde_json::Value;

pub(super) fn routes() -> Routes {
    Routes::new("attributes")
        .get(
            paths::ATTRIBUTES,
            "List global (or a group's) attributes",
            list,
        )
        .post(paths::ATTRIBUTES, "Create an attribute", create)
        .get(
            paths::ATTRIBUTE_LIMITS,
            "Attribute limits of the account",
            limits,
        )
        .get(paths::ATTRIBUTE, "Get an attribute", read)
        .put(paths::ATTRIBUTE, "Update an attribute", update)
        .delete(paths::ATTRIBUTE, "Delete an attribute", remove)
        .get(
            paths::GROUP_ATTRIBUTES,
            "List a group's attributes",
            list_in_group,
        )
        .post(
            paths::GROUP_ATTRIBUTES,
            "Create a group attribute",
            create_in_group,
        )
        .put(
            paths::GROUP_ATTRIBUTE,
            "Update a group attribute",
            update_in_group,
        )
        .delete(
            paths::GROUP_ATTRIBUTE,
            "Delete a group attribute",
            remove_in_group,
        )
        .get(
            paths::RECEIVER_ATTRIBUTES,
            "Attribute values of a receiver",
            values,
        )
        .put(
            paths::GROUP_RECEIVER_ATTRIBUTE,
            "Set a receiver's attribute value in a group",
            set_value_in_group,
        )
        .put(
            paths::RECEIVER_ATTRIBUTE,
            "Set a receiver's attribute value",
            set_value,
        )
}

#[derive(Deserialize, Default)]
struct GroupQuery {
    #[serde(default, deserialize_with = "listpipe_api::lenient::opt_i64")]
    group_id: Option<i64>,
}

fn wire(list: Vec<listpipe_api::Attribute>) -> Json<Vec<Value>> {
    Json(list.iter().map(|a| a.to_wire()).collect())
}

async fn list(
    State(s): State<AppState>,
    auth: Auth,
    QueryInput(q): QueryInput<GroupQuery>,
) -> ApiResult<Json<Vec<Value>>> {
    let account = auth.account();
    Ok(wire(
        s.store
            .read(move |c| attributes::list(c, account, q.group_id.unwrap_or(0)))
            .await?,
    ))
}

async fn list_in_group(
    State(s): State<AppState>,
    auth: Auth,
    Path(g): Path<String>,
) -> ApiResult<Json<Vec<Value>>> {
    let (account, g) = (auth.account(), path_id(&g, "group")?);
    Ok(wire(
        s.store
            .read(move |c| attributes::list(c, account, g))
            .await?,
    ))
}

async fn create(
    State(s): State<AppState>,
    auth: Auth,
    Input(input): Input<AttributeInput>,
) -> ApiResult<Json<Value>> {
    let account = auth.account();
    let g = input.group_id.unwrap_or(0).max(0);
    Ok(Json(
        s.store
            .write(move |c| attributes::create(c, account, g, &input))
            .await?
            .to_wire(),
    ))
}

async fn create_in_group(
    State(s): State<AppState>,
    auth: Auth,
    Path(g): Path<String>,
    Input(input): Input<AttributeInput>,
) -> ApiResult<Json<Value>> {
    let (account, g) = (auth.account(), path_id(&g, "group")?);
    Ok(Json(
        s.store
            .write(move |c| attributes::create(c, account, g, &input))
            .await?
            .to_wire(),
    ))
}

async fn limits(State(s): State<AppState>, auth: Auth) -> ApiResult<Json<AttributeLimits>> {
    let account = auth.account();
    Ok(Json(
        s.store
            .read(move |c| attributes::limits(c, account))
            .await?,
    ))
}

async fn read(
    State(s): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let (account, id) = (auth.account(), path_id(&id, "attribute")?);
    Ok(Json(
        s.store
            .read(move |c| attributes::get(c, account, id, None))
            .await?
            .to_wire(),
    ))
}

async fn update(
    State(s): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    Input(input): Input<AttributeInput>,
) -> ApiResult<Json<Value>> {
    let (account, id) = (auth.account(), path_id(&id, "attribute")?);
    Ok(Json(
        s.store
            .write(move |c| attributes::update(c, account, id, None, &input))
            .await?
            .to_wire(),
    ))
}

async fn update_in_group(
    State(s): State<AppState>,
    auth: Auth,
    Path((g, id)): Path<(String, String)>,
    Input(input): Input<AttributeInput>,
) -> ApiResult<Json<Value>> {
    let (account, g, id) = (
        auth.account(),
        path_id(&g, "group")?,
        path_id(&id, "attribute")?,
    );
    Ok(Json(
        s.store
            .write(move |c| attributes::update(c, account, id, Some(g), &input))
            .await?
            .to_wire(),
    ))
}

async fn remove(
    State(s): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<Json<bool>> {
    let (account, id) = (auth.account(), path_id(&id, "attribute")?);
    s.store
        .write(move |c| attributes::delete(c, account, id, None))
        .await?;
    Ok(Json(true))
}

async fn remove_in_group(
    State(s): State<AppState>,
    auth: Auth,
    Path((g, id)): Path<(String, String)>,
) -> ApiResult<Json<bool>> {
    let (account, g, id) = (
        auth.account(),
        path_id(&g, "group")?,
        path_id(&id, "attribute")?,
    );
    s.store
        .write(move |c| attributes::delete(c, account, id, Some(g)))
        .await?;
    Ok(Json(true))
}

/// `GET /v3/receivers/{id}/attributes`: the global values, and with
/// `group_id` that group's values too.
async fn values(
    State(s): State<AppState>,
    auth: Auth,
    Path(r): Path<String>,
    QueryInput(q): QueryInput<GroupQuery>,
) -> ApiResult<Json<Vec<AttributeValue>>> {
    let (account, key) = (auth.account(), ReceiverKey::parse(&r));
    let group = q.group_id.filter(|g| *g > 0);
    Ok(Json(
        s.store
            .call(move |c| {
                let (contact, _) = receivers::contact_of(c, account, group, &key)?;
                attributes::values_of(c, account, contact, group)
            })
            .await?,
    ))
}

/// Sets one value; a group attribute needs the receiver in its group.
fn set(
    c: &Db,
    account: AccountId,
    group: Option<i64>,
    key: &ReceiverKey,
    attr_id: i64,
    value: &str,
) -> StoreResult<()> {
    let attr = attributes::get(c, account, attr_id, None)?;
    if group.is_some_and(|g| attr.group_id != 0 && attr.group_id != g) {
        return not_found("Not Found: invalid attribute (not of this group)");
    }
    let scope = group.or((attr.group_id != 0).then_some(attr.group_id));
    let (contact, _) = receivers::contact_of(c, account, scope, key)?;
    attributes::set_value(c, contact, &attr, value)
}

async fn set_value_in_group(
    State(s): State<AppState>,
    auth: Auth,
    Path((g, r, id)): Path<(String, String, String)>,
    Input(input): Input<AttributeValueInput>,
) -> ApiResult<Json<bool>> {
    let (account, g, key, id) = (
        auth.account(),
        path_id(&g, "group")?,
        ReceiverKey::parse(&r),
        path_id(&id, "attribute")?,
    );
    let value = input
        .value
        .ok_or_else(|| ApiError::bad_request("value is required"))?;
    s.store
        .write(move |c| set(c, account, Some(g), &key, id, &value))
        .await?;
    Ok(Json(true))
}

async fn set_value(
    State(s): State<AppState>,
    auth: Auth,
    Path((r, id)): Path<(String, String)>,
    Input(input): Input<AttributeValueInput>,
) -> ApiResult<Json<bool>> {
    let (account, key, id) = (
        auth.account(),
        ReceiverKey::parse(&r),
        path_id(&id, "attribute")?,
    );
    let value = input
        .value
        .ok_or_else(|| ApiError::bad_request("value is required"))?;
    s.store
        .write(move |c| set(c, account, None, &key, id, &value))
        .await?;
    Ok(Json(true))
}
