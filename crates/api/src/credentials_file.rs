//! The credentials file that `serve`, `accounts credentials` and `auth
//! login` write and a pipeline's `[target] credentials = ...` names: the
//! one piece of I/O in this crate, shared by the server and the client.

use crate::TokenResponse;
use crate::oauth::Credentials;
use std::path::{Path, PathBuf};

/// A credentials file that could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write credentials to {}: {source}", path.display())]
pub struct WriteError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// The credentials of an application's new tokens at `base_url`.
pub fn credentials_of(
    base_url: &str,
    client_id: &str,
    secret: &str,
    tokens: TokenResponse,
) -> Credentials {
    Credentials {
        base_url: base_url.to_string(),
        client_id: client_id.to_string(),
        client_secret: secret.to_string(),
        access_token: tokens.access_token,
        refresh_token: tokens.refresh_token,
        expires_in: tokens.expires_in,
        ..Credentials::default()
    }
}

/// Writes credentials as JSON readable by the owner only (mode 0600),
/// atomically ([`listpipe_base::state_file`]): a kill during a token refresh leaves
/// the old tokens or the new ones, never a cut file without its refresh token.
pub fn write_credentials(path: &Path, creds: &Credentials) -> Result<(), WriteError> {
    let err = |source| WriteError {
        path: path.to_path_buf(),
        source,
    };
    let json = creds
        .file_bytes()
        .map_err(|e| err(std::io::Error::other(e)))?;
    listpipe_base::state_file::write(path, &json, listpipe_base::state_file::Access::Private)
        .map_err(|e| err(e.source))
}
