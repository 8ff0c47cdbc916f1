//! Debug operations (spec §4.1).

use super::{ApiClient, Result};
use listpipe_api::client_info::ClientInfo;
use listpipe_api::debug::Ttl;
use listpipe_api::paths::{self};
use listpipe_api::*;

impl ApiClient {
    /// A new token; the current one stops working. The client switches to it.
    pub async fn exchange(&self) -> Result<TokenResponse> {
        let t: TokenResponse = self.get(paths::DEBUG_EXCHANGE, &[]).await?;
        self.set_token(&t.access_token);
        Ok(t)
    }
    pub async fn ttl(&self) -> Result<Ttl> {
        self.get(paths::DEBUG_TTL, &[]).await
    }
    pub async fn validate(&self) -> Result<bool> {
        self.get(paths::DEBUG_VALIDATE, &[]).await
    }
    pub async fn whoami(&self) -> Result<ClientInfo> {
        self.get(paths::DEBUG_WHOAMI, &[]).await
    }
}
