//! The authorization page of the authorization-code flow (spec §5.5,
//! wire.md): `GET /oauth/authorize.php?client_id=&redirect_uri=&response_type=code&state=`
//! shows a login-and-approve form; its `POST` checks the user's password and
//! sends the browser back to `redirect_uri?code=…&state=…` (or
//! `error=access_denied`). The code is bound to that redirect URI and lives
//! `serve --code-ttl` seconds.
//!
//! Following RFC 6749 §4.1.2.1, an unknown client or a redirect URI the
//! application did not register gets an error page and never a redirect
//! (no open redirect); every other problem is reported to the application
//! through the redirect. The form is protected by [`csrf`], and wrong
//! passwords are limited per login and address and per address (answered
//! 429 with `Retry-After` before any hash is computed: see
//! [`crate::auth_failures`]).

mod csrf;
mod page;

use crate::auth_failures::{self, Attempt, Peer, Spent};
use crate::state::AppState;
use crate::store::accounts::{self, AppListing};
use crate::store::{StoreResult, redirect_uris, users};
use crate::wire::RawInput;
use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use listpipe_api::paths;
use serde_json::Value;

pub fn router() -> Router<AppState> {
    Router::new()
        .route(paths::AUTHORIZE, get(show).post(submit))
        .route("/oauth/authorize", get(show).post(submit))
}

/// The request parameters, from the query (GET) or the form (POST).
#[derive(Debug, Default)]
struct Params {
    client_id: Option<String>,
    redirect_uri: Option<String>,
    response_type: Option<String>,
    state: Option<String>,
    // Only in the form:
    csrf: Option<String>,
    email: Option<String>,
    password: Option<String>,
    decision: Option<String>,
}

impl Params {
    /// Reads the parameters; a repeated one is an error (RFC 6749 §3.1).
    fn from_pairs(pairs: impl Iterator<Item = (String, String)>) -> Result<Params, String> {
        let mut p = Params::default();
        for (key, value) in pairs {
            let slot = match key.as_str() {
                "client_id" => &mut p.client_id,
                "redirect_uri" => &mut p.redirect_uri,
                "response_type" => &mut p.response_type,
                "state" => &mut p.state,
                "csrf" => &mut p.csrf,
                "email" => &mut p.email,
                "password" => &mut p.password,
                "decision" => &mut p.decision,
                _ => continue,
            };
            if slot.replace(value).is_some() {
                return Err(format!("the parameter {key} is given more than once"));
            }
        }
        Ok(p)
    }

    fn from_form(body: Value) -> Result<Params, String> {
        let Value::Object(map) = body else {
            return Ok(Params::default());
        };
        Self::from_pairs(map.into_iter().filter_map(|(k, v)| match v {
            Value::String(s) => Some((k, s)),
            Value::Number(n) => Some((k, n.to_string())),
            _ => None,
        }))
    }
}

/// A request whose client and redirect URI check out: from here on,
/// problems go back to the application through the redirect.
struct Resolved {
    listing: AppListing,
    redirect_uri: String,
    key: Vec<u8>,
}

impl Resolved {
    fn binding<'a>(&'a self, p: &'a Params) -> csrf::Binding<'a> {
        csrf::Binding {
            client_id: &self.listing.app.client_id,
            redirect_uri: &self.redirect_uri,
            state: p.state.as_deref(),
        }
    }

    fn app_name(&self) -> String {
        let name = self.listing.name.trim();
        if name.is_empty() {
            format!("Application {}", self.listing.app.client_id)
        } else {
            name.to_string()
        }
    }
}

/// Headers every page of this flow carries: not cached, not framed
/// (clickjacking), no script, no referrer.
fn html(status: StatusCode, body: String) -> Response {
    let mut res = (status, body).into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    res
}

fn problem(status: StatusCode, title: &str, message: &str) -> Response {
    html(status, page::problem(title, message))
}

fn server_failed(e: impl std::fmt::Display) -> Response {
    tracing::error!(target: log_target!(), error = %e, "authorization page failed");
    problem(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Something went wrong",
        "The server could not handle the request.",
    )
}

/// Sends the browser back to the application with `pairs` added to its URI
/// (which is registered, so it is a safe place to send it).
fn back_to_app(redirect_uri: &str, pairs: &[(&str, Option<&str>)]) -> Response {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (key, value) in pairs {
        if let Some(value) = value {
            query.append_pair(key, value);
        }
    }
    let sep = if redirect_uri.contains('?') { '&' } else { '?' };
    let location = format!("{redirect_uri}{sep}{}", query.finish());
    match HeaderValue::from_str(&location) {
        Ok(location) => {
            let mut res = StatusCode::SEE_OTHER.into_response();
            res.headers_mut().insert(header::LOCATION, location);
            res.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            res
        }
        Err(e) => server_failed(e),
    }
}

/// Checks the client and the redirect URI. `Err` is the page to show.
async fn resolve(s: &AppState, p: &Params) -> Result<Resolved, Response> {
    let bad = |message: String| problem(StatusCode::BAD_REQUEST, "Cannot authorize", &message);
    let Some(client_id) = p.client_id.clone().filter(|c| !c.is_empty()) else {
        return Err(bad(
            "The request names no application (client_id is missing).".into(),
        ));
    };
    let Some(redirect_uri) = p.redirect_uri.clone().filter(|r| !r.is_empty()) else {
        return Err(bad(
            "The request names no address to return to (redirect_uri is missing).".into(),
        ));
    };
    let found = s
        .store
        .write(move |c| -> StoreResult<_> {
            let Some(listing) = accounts::app_by_client_id(c, &client_id)? else {
                return Ok(Err(format!(
                    "No application has the client id \"{client_id}\"."
                )));
            };
            if !redirect_uris::allows(c, listing.app.id, &redirect_uri)? {
                return Ok(Err(format!(
                    "The address \"{redirect_uri}\" is not registered for this application, so \
                     no code is sent there. Its owner can register it with \
                     `listpipe accounts app --redirect-uri URI`."
                )));
            }
            let key = csrf::secret(c)?;
            Ok(Ok(Resolved {
                listing,
                redirect_uri: redirect_uri.clone(),
                key,
            }))
        })
        .await;
    match found {
        Ok(Ok(resolved)) => Ok(resolved),
        Ok(Err(message)) => Err(bad(message)),
        Err(e) => Err(server_failed(e)),
    }
}

/// The redirect for a request that is not for a code (RFC 6749 §4.1.2.1).
fn wrong_response_type(r: &Resolved, p: &Params) -> Option<Response> {
    let error = match p.response_type.as_deref() {
        Some("code") => return None,
        None | Some("") => "invalid_request",
        Some(_) => "unsupported_response_type",
    };
    Some(back_to_app(
        &r.redirect_uri,
        &[("error", Some(error)), ("state", p.state.as_deref())],
    ))
}

fn login_page(
    s: &AppState,
    r: &Resolved,
    p: &Params,
    nonce: &str,
    status: StatusCode,
    error: Option<&str>,
) -> Response {
    let token = csrf::issue(&r.key, nonce, &r.binding(p), s.store.clock().now());
    let body = page::login(&page::LoginForm {
        app_name: &r.app_name(),
        account_name: &r.listing.account_name,
        client_id: &r.listing.app.client_id,
        redirect_uri: &r.redirect_uri,
        response_type: "code",
        state: p.state.as_deref(),
        csrf: &token,
        email: p.email.as_deref().unwrap_or(""),
        error,
    });
    let mut res = html(status, body);
    res.headers_mut()
        .insert(header::SET_COOKIE, csrf::cookie(nonce));
    res
}

/// `GET`: the login-and-approve page.
async fn show(State(s): State<AppState>, headers: HeaderMap, RawQuery(q): RawQuery) -> Response {
    let pairs = form_urlencoded::parse(q.as_deref().unwrap_or("").as_bytes()).into_owned();
    let p = match Params::from_pairs(pairs) {
        Ok(p) => p,
        Err(why) => return problem(StatusCode::BAD_REQUEST, "Cannot authorize", &why),
    };
    let r = match resolve(&s, &p).await {
        Ok(r) => r,
        Err(page) => return page,
    };
    if let Some(res) = wrong_response_type(&r, &p) {
        return res;
    }
    let nonce = match csrf::nonce_of(&headers).map_or_else(csrf::new_nonce, Ok) {
        Ok(n) => n,
        Err(e) => return server_failed(e),
    };
    login_page(&s, &r, &p, &nonce, StatusCode::OK, None)
}

/// `POST`: the form's answer.
async fn submit(
    State(s): State<AppState>,
    Peer(peer): Peer,
    headers: HeaderMap,
    RawInput(body): RawInput,
) -> Response {
    let p = match Params::from_form(body) {
        Ok(p) => p,
        Err(why) => return problem(StatusCode::BAD_REQUEST, "Cannot authorize", &why),
    };
    let r = match resolve(&s, &p).await {
        Ok(r) => r,
        Err(page) => return page,
    };
    let nonce = csrf::nonce_of(&headers);
    if !csrf::verify(
        &r.key,
        nonce.as_deref(),
        p.csrf.as_deref(),
        &r.binding(&p),
        s.store.clock().now(),
    ) {
        return problem(
            StatusCode::FORBIDDEN,
            "This form has expired",
            "The form was too old, or it did not come from this page in this browser.",
        );
    }
    let Some(nonce) = nonce else {
        return server_failed("verified without a nonce");
    };
    if let Some(res) = wrong_response_type(&r, &p) {
        return res;
    }
    match p.decision.as_deref() {
        Some("approve") => {}
        Some("deny") => {
            return back_to_app(
                &r.redirect_uri,
                &[
                    ("error", Some("access_denied")),
                    ("state", p.state.as_deref()),
                ],
            );
        }
        _ => {
            return problem(
                StatusCode::BAD_REQUEST,
                "Cannot authorize",
                "The form's answer must be approve or deny.",
            );
        }
    }
    let email = p.email.clone().unwrap_or_default();
    let password = p.password.clone().unwrap_or_default();
    if email.trim().is_empty() || password.is_empty() {
        return login_page(
            &s,
            &r,
            &p,
            &nonce,
            StatusCode::OK,
            Some("Enter your email and password."),
        );
    }
    let account = r.listing.app.account;
    // Failed logins, per login from this address and per address: while
    // either waits, the password is not checked, no hash is computed (see
    // `auth_failures`). The login is counted whether or not it exists, so
    // the wait tells nothing of who has an account. Let through, the
    // attempt counts as a failure until it is told otherwise below.
    let limit = s.auth_failures.logins();
    let attempt = Attempt::new(
        &format!("{}\n{}", account.0, email.trim().to_lowercase()),
        peer,
    );
    if let Err((spent, secs)) = limit.admit(&attempt, auth_failures::now(s.store.clock())) {
        tracing::debug!(target: log_target!(), client_id = %r.listing.app.client_id, peer = ?peer, "authorization: too many failed logins, password not checked");
        let message = format!(
            "Too many failed attempts to log in {}. Try again in {secs} second{}.",
            match spent {
                Spent::NameFromAddress => "with this email",
                Spent::Address => "from your network address",
            },
            if secs == 1 { "" } else { "s" }
        );
        let mut res = login_page(
            &s,
            &r,
            &p,
            &nonce,
            StatusCode::TOO_MANY_REQUESTS,
            Some(&message),
        );
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        return res;
    }
    let found = s
        .store
        .call(move |c| users::login_hash(c, account, &email))
        .await;
    let found = match found {
        Ok(found) => found,
        Err(e) => {
            limit.undecided(&attempt);
            return server_failed(e);
        }
    };
    // Argon2 takes a while on purpose: off the async threads, outside the store lock.
    let (user, stored) = found.map_or((None, None), |(u, h)| (Some(u), Some(h)));
    let ok = tokio::task::spawn_blocking(move || users::verify(stored.as_deref(), &password))
        .await
        .unwrap_or(false);
    let Some(user) = user.filter(|_| ok) else {
        tracing::info!(target: log_target!(), client_id = %r.listing.app.client_id, peer = ?peer, "authorization: wrong email or password");
        return login_page(
            &s,
            &r,
            &p,
            &nonce,
            StatusCode::OK,
            Some("Wrong email or password."),
        );
    };
    limit.succeeded(&attempt);
    let (app, redirect_uri, code_ttl) = (r.listing.app.clone(), r.redirect_uri.clone(), s.code_ttl);
    let code = s
        .store
        .write(move |c| accounts::mint_code_for(c, &app, &redirect_uri, code_ttl))
        .await;
    match code {
        Ok(code) => {
            tracing::info!(target: log_target!(),
                client_id = %r.listing.app.client_id,
                user = user.id,
                "authorization approved"
            );
            back_to_app(
                &r.redirect_uri,
                &[("code", Some(&code)), ("state", p.state.as_deref())],
            )
        }
        Err(e) => server_failed(e),
    }
}
