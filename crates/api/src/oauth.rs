//! The OAuth token service, spec §5 and wire.md: `POST /oauth/token.php`.

use super::lenient as l;
use serde::{Deserialize, Serialize};

/// The token answer. Several clients fail unless access_token, expires_in
/// and refresh_token are all set, so all are always written.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct TokenResponse {
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub access_token: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub token_type: String,
    #[serde(deserialize_with = "l::i64_or_zero", default)]
    pub expires_in: i64,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub refresh_token: String,
    #[serde(deserialize_with = "l::string_or_empty", default)]
    pub scope: String,
}

/// The token service's error body (OAuth's, not the API's).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct OAuthError {
    pub error: String,
    #[serde(default)]
    pub error_description: String,
}

/// The grant request, as read from form, JSON or multipart fields.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct TokenRequest {
    #[serde(deserialize_with = "l::opt_string", default)]
    pub grant_type: Option<String>,
    #[serde(
        deserialize_with = "l::opt_string",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub refresh_token: Option<String>,
    #[serde(
        deserialize_with = "l::opt_string",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub code: Option<String>,
    #[serde(
        deserialize_with = "l::opt_string",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub redirect_uri: Option<String>,
    #[serde(
        deserialize_with = "l::opt_string",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub client_id: Option<String>,
    #[serde(
        deserialize_with = "l::opt_string",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub client_secret: Option<String>,
}

/// What `listpipe serve` and `listpipe accounts create` write: everything a
/// pipeline needs to reach the account.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Credentials {
    pub base_url: String,
    pub client_id: String,
    pub client_secret: String,
    pub access_token: String,
    pub refresh_token: String,
    pub expires_in: i64,
    /// The login of the account's first user, for the authorization page:
    /// written only by a server's first start, kept when the file is saved back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_email: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_password: Option<String>,
}

impl Credentials {
    /// The credentials file's bytes: pretty JSON and a final newline, as
    /// `serve`, `accounts create`, `auth login` and a refresh write them.
    pub fn file_bytes(&self) -> serde_json::Result<Vec<u8>> {
        let mut json = serde_json::to_vec_pretty(self)?;
        json.push(b'\n');
        Ok(json)
    }
}
