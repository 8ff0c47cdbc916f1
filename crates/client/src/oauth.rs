//! Getting tokens from the OAuth token service (spec §5): the three grants,
//! with the client id and secret sent as form fields.

use super::{ClientError, http_client};
use listpipe_api::oauth::OAuthError;
use listpipe_api::{TokenResponse, paths};
use std::time::Duration;

/// One grant request to `{base_url}/oauth/token.php`.
pub async fn request_token(
    base_url: &str,
    client_id: &str,
    client_secret: &str,
    grant: &[(&str, &str)],
) -> Result<TokenResponse, ClientError> {
    let http = http_client(Duration::from_secs(30))?;
    let mut form: Vec<(&str, &str)> = grant.to_vec();
    form.push(("client_id", client_id));
    form.push(("client_secret", client_secret));
    let url = format!("{}{}", base_url.trim_end_matches('/'), paths::TOKEN);
    let fail = |source| ClientError::Transport {
        method: "POST".into(),
        path: paths::TOKEN.into(),
        source,
    };
    let res = http.post(&url).form(&form).send().await.map_err(fail)?;
    let status = res.status();
    let bytes = res.bytes().await.map_err(fail)?;
    if !status.is_success() {
        let message = serde_json::from_slice::<OAuthError>(&bytes)
            .map(|e| format!("{}: {}", e.error, e.error_description))
            .unwrap_or_else(|_| String::from_utf8_lossy(&bytes).into_owned());
        return Err(ClientError::Api {
            method: "POST".into(),
            path: paths::TOKEN.into(),
            status: status.as_u16(),
            message,
            retry_after: None,
        });
    }
    serde_json::from_slice(&bytes).map_err(|e| ClientError::Decode {
        method: "POST".into(),
        path: paths::TOKEN.into(),
        detail: e.to_string(),
    })
}

pub async fn refresh(
    base_url: &str,
    client_id: &str,
    secret: &str,
    refresh_token: &str,
) -> Result<TokenResponse, ClientError> {
    request_token(
        base_url,
        client_id,
        secret,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
        ],
    )
    .await
}

pub async fn client_credentials(
    base_url: &str,
    client_id: &str,
    secret: &str,
) -> Result<TokenResponse, ClientError> {
    request_token(
        base_url,
        client_id,
        secret,
        &[("grant_type", "client_credentials")],
    )
    .await
}

pub async fn authorization_code(
    base_url: &str,
    client_id: &str,
    secret: &str,
    code: &str,
    redirect_uri: &str,
) -> Result<TokenResponse, ClientError> {
    let grant = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", redirect_uri),
    ];
    request_token(base_url, client_id, secret, &grant).await
}
