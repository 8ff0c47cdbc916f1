//! Forms, spec §2.10 and §4.5: all 7 operations (deprecated, still
//! served), plus the outbox the double-opt-in mails go to (`GET
//! /v3/outbox`, a listpipe extension). The public sign-up and confirmation
//! pages, which take no token, are in [`public`].

mod code;
mod html;
mod public;

pub use public::{operations as public_operations, router as public_router};

use super::path_id;
use crate::auth::Auth;
use crate::error::ApiResult;
use crate::openapi::Routes;
use crate::state::AppState;
use crate::store::forms::{self, doi, outbox as mails};
use crate::wire::{Input, QueryInput};
use axum::Json;
use axum::extract::{Path, State};
use listpipe_api::form::{
    Form, FormCodeQuery, FormSendInput, FormTemplateInput, OutboxMail, OutboxQuery,
};
use listpipe_api::paths;

pub fn routes() -> Routes {
    Routes::new("forms")
        .get(paths::FORMS, "List forms", list)
        .get(paths::FORM, "Get a form", read)
        .delete(paths::FORM, "Delete a form", remove)
        .get(paths::FORM_CODE, "The embed code of a form", embed_code)
        .post(
            paths::FORM_FROM_TEMPLATE,
            "Create a form from a template",
            create_from_template,
        )
        .post(
            paths::FORM_SEND,
            "Send an activation or deactivation mail",
            send,
        )
        .get(paths::GROUP_FORMS, "List a group's forms", list_of_group)
        .get(
            paths::OUTBOX,
            "Mails the server sent (listpipe extension)",
            outbox,
        )
}

async fn list(State(s): State<AppState>, auth: Auth) -> ApiResult<Json<Vec<Form>>> {
    let account = auth.account();
    Ok(Json(s.store.call(move |c| forms::list(c, account)).await?))
}

async fn list_of_group(
    State(s): State<AppState>,
    auth: Auth,
    Path(g): Path<String>,
) -> ApiResult<Json<Vec<Form>>> {
    let (account, g) = (auth.account(), path_id(&g, "group")?);
    Ok(Json(
        s.store
            .call(move |c| forms::list_of_group(c, account, g))
            .await?,
    ))
}

async fn read(
    State(s): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<Json<Form>> {
    let (account, id) = (auth.account(), path_id(&id, "form")?);
    Ok(Json(
        s.store.call(move |c| forms::get(c, account, id)).await?,
    ))
}

async fn remove(
    State(s): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<Json<bool>> {
    let (account, id) = (auth.account(), path_id(&id, "form")?);
    s.store
        .write(move |c| forms::delete(c, account, id))
        .await?;
    Ok(Json(true))
}

/// The embed code as one JSON string of HTML.
async fn embed_code(
    State(s): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    QueryInput(q): QueryInput<FormCodeQuery>,
) -> ApiResult<Json<String>> {
    let (account, id) = (auth.account(), path_id(&id, "form")?);
    let fallback = s.base_url.clone();
    let opts = code::CodeOptions::from(&q);
    Ok(Json(
        s.store
            .call(move |c| {
                let form = forms::get(c, account, id)?;
                let fields = forms::fields(c, account, &form)?;
                let base = fallback.clone();
                Ok(code::render(&form, &fields, &base, opts))
            })
            .await?,
    ))
}

/// The body is `extradata` with `name` and/or `title` (spec §2.10).
async fn create_from_template(
    State(s): State<AppState>,
    auth: Auth,
    Path((g, template)): Path<(String, String)>,
    Input(input): Input<FormTemplateInput>,
) -> ApiResult<Json<Form>> {
    let (account, g) = (auth.account(), path_id(&g, "group")?);
    Ok(Json(
        s.store
            .write(move |c| forms::create_from_template(c, account, g, &template, &input))
            .await?,
    ))
}

async fn send(
    State(s): State<AppState>,
    auth: Auth,
    Path((id, kind)): Path<(String, String)>,
    Input(input): Input<FormSendInput>,
) -> ApiResult<Json<bool>> {
    let (account, id) = (auth.account(), path_id(&id, "form")?);
    let fallback = s.base_url.clone();
    s.store
        .write(move |c| doi::send(c, account, id, &kind, &input, &fallback))
        .await?;
    Ok(Json(true))
}

async fn outbox(
    State(s): State<AppState>,
    auth: Auth,
    QueryInput(q): QueryInput<OutboxQuery>,
) -> ApiResult<Json<Vec<OutboxMail>>> {
    let account = auth.account();
    Ok(Json(
        s.store.call(move |c| mails::list(c, account, &q)).await?,
    ))
}
