//! `ApiClient`: typed async calls to a v3 API (the real service or the
//! built-in server) over HTTP with keep-alive. Every call goes through
//! [`ApiClient::call`], the one place that turns a response into `Ok(T)` or
//! a [`ClientError`] carrying the status and the server's message.

mod error;
pub mod oauth;

pub use error::ClientError;

use crate::api::attribute::{AttributeLimits, AttributeValue, AttributeValueInput};
use crate::api::blacklist::BlacklistInput;
use crate::api::client_info::ClientInfo;
use crate::api::debug::Ttl;
use crate::api::group::GroupAdvancedStats;
use crate::api::paths::{self, fill};
use crate::api::*;
use reqwest::Method;
use serde::de::DeserializeOwned;
use std::sync::{Arc, Once, RwLock};
use std::time::Duration;

/// Installs rustls' ring provider once per process; without it building
/// any reqwest client panics (even for plain http://).
pub fn init_tls() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

pub(crate) fn http_client(timeout: Duration) -> std::result::Result<reqwest::Client, ClientError> {
    init_tls();
    reqwest::Client::builder()
        .timeout(timeout)
        .pool_idle_timeout(Duration::from_secs(60))
        .user_agent(concat!("listpipe/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(ClientError::Build)
}

#[derive(Clone)]
pub struct ApiClient {
    http: reqwest::Client,
    base: String,
    token: Arc<RwLock<String>>,
}

type Result<T> = std::result::Result<T, ClientError>;

impl ApiClient {
    /// A client for `base_url` (e.g. `http://127.0.0.1:8080`) with a bearer token.
    pub fn new(base_url: &str, token: &str) -> Result<Self> {
        Self::with_timeout(base_url, token, Duration::from_secs(30))
    }

    pub fn with_timeout(base_url: &str, token: &str, timeout: Duration) -> Result<Self> {
        let base = base_url.trim().trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(ClientError::BadUrl(base_url.to_string()));
        }
        Ok(ApiClient {
            http: http_client(timeout)?,
            base,
            token: Arc::new(RwLock::new(token.to_string())),
        })
    }

    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// Replaces the bearer token (after a refresh or an exchange).
    pub fn set_token(&self, token: &str) {
        *self.token.write().unwrap_or_else(|p| p.into_inner()) = token.to_string();
    }

    pub fn token(&self) -> String {
        self.token.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Sends one request and decodes the answer: the single place where a
    /// status becomes `Ok` or a typed error.
    pub async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&dyn erased::Body>,
    ) -> Result<T> {
        let mut req = self
            .http
            .request(method.clone(), format!("{}{path}", self.base))
            .bearer_auth(self.token());
        if !query.is_empty() {
            req = req.query(query);
        }
        if let Some(body) = body {
            req = req
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.to_json());
        }
        let transport = |source| ClientError::Transport {
            method: method.to_string(),
            path: path.to_string(),
            source,
        };
        let res = req.send().await.map_err(transport)?;
        let status = res.status();
        let bytes = res.bytes().await.map_err(transport)?;
        if !status.is_success() {
            let message = serde_json::from_slice::<ErrorBody>(&bytes)
                .map(|b| b.error.message)
                .unwrap_or_else(|_| String::from_utf8_lossy(&bytes).chars().take(300).collect());
            return Err(ClientError::Api {
                method: method.to_string(),
                path: path.to_string(),
                status: status.as_u16(),
                message,
            });
        }
        serde_json::from_slice(&bytes).map_err(|e| ClientError::Decode {
            method: method.to_string(),
            path: path.to_string(),
            detail: format!(
                "{e} in {}",
                String::from_utf8_lossy(&bytes)
                    .chars()
                    .take(200)
                    .collect::<String>()
            ),
        })
    }

    async fn get<T: DeserializeOwned>(&self, path: &str, query: &[(&str, String)]) -> Result<T> {
        self.call(Method::GET, path, query, None).await
    }
    async fn post<T: DeserializeOwned>(&self, path: &str, body: &dyn erased::Body) -> Result<T> {
        self.call(Method::POST, path, &[], Some(body)).await
    }
    async fn put<T: DeserializeOwned>(&self, path: &str, body: &dyn erased::Body) -> Result<T> {
        self.call(Method::PUT, path, &[], Some(body)).await
    }
    async fn delete(&self, path: &str, query: &[(&str, String)]) -> Result<bool> {
        self.call(Method::DELETE, path, query, None).await
    }

    // Debug (spec §4.1)

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

    // Groups (spec §4.4)

    /// `order`: `created ASC`, `created DESC`, `changed ASC` or `changed DESC`.
    pub async fn groups(&self, order: Option<&str>) -> Result<Vec<Group>> {
        let q: Vec<_> = order
            .map(|o| ("order", o.to_string()))
            .into_iter()
            .collect();
        self.get(paths::GROUPS, &q).await
    }
    pub async fn create_group(&self, input: &GroupInput) -> Result<Group> {
        self.post(paths::GROUPS, input).await
    }
    pub async fn group(&self, id: Id) -> Result<Group> {
        self.get(&fill(paths::GROUP, &[&id.to_string()]), &[]).await
    }
    pub async fn update_group(&self, id: Id, input: &GroupInput) -> Result<Group> {
        self.put(&fill(paths::GROUP, &[&id.to_string()]), input)
            .await
    }
    pub async fn delete_group(&self, id: Id) -> Result<bool> {
        self.delete(&fill(paths::GROUP, &[&id.to_string()]), &[])
            .await
    }
    pub async fn group_stats(&self, id: Id) -> Result<GroupStats> {
        self.get(&fill(paths::GROUP_STATS, &[&id.to_string()]), &[])
            .await
    }
    pub async fn group_advanced_stats(&self, id: Id) -> Result<GroupAdvancedStats> {
        self.get(&fill(paths::GROUP_ADVANCED_STATS, &[&id.to_string()]), &[])
            .await
    }
    pub async fn clear_group(&self, id: Id) -> Result<bool> {
        self.delete(&fill(paths::GROUP_CLEAR, &[&id.to_string()]), &[])
            .await
    }

    // Receivers (spec §4.8). `receiver` is an id or an email address.

    pub async fn receivers(&self, group: Id, query: &ReceiverQuery) -> Result<Vec<Receiver>> {
        self.get(
            &fill(paths::GROUP_RECEIVERS, &[&group.to_string()]),
            &query.to_pairs(),
        )
        .await
    }
    /// The same list with the parameters in the body (for long email lists).
    pub async fn receivers_by_body(
        &self,
        group: Id,
        query: &ReceiverQuery,
    ) -> Result<Vec<Receiver>> {
        self.post(
            &fill(paths::GROUP_GET_RECEIVERS, &[&group.to_string()]),
            query,
        )
        .await
    }
    pub async fn create_receiver(&self, group: Id, input: &ReceiverInput) -> Result<Receiver> {
        self.post(&fill(paths::GROUP_RECEIVERS, &[&group.to_string()]), input)
            .await
    }
    pub async fn group_receiver(&self, group: Id, receiver: &str, detail: i64) -> Result<Receiver> {
        let q = [("detail", detail.to_string())];
        self.get(
            &fill(paths::GROUP_RECEIVER, &[&group.to_string(), receiver]),
            &q,
        )
        .await
    }
    pub async fn update_receiver(
        &self,
        group: Id,
        receiver: &str,
        input: &ReceiverInput,
    ) -> Result<Receiver> {
        self.put(
            &fill(paths::GROUP_RECEIVER, &[&group.to_string(), receiver]),
            input,
        )
        .await
    }
    pub async fn delete_group_receiver(&self, group: Id, receiver: &str) -> Result<bool> {
        self.delete(
            &fill(paths::GROUP_RECEIVER, &[&group.to_string(), receiver]),
            &[],
        )
        .await
    }
    pub async fn receiver(
        &self,
        receiver: &str,
        group: Option<Id>,
        detail: i64,
    ) -> Result<Receiver> {
        let mut q = vec![("detail", detail.to_string())];
        q.extend(group.map(|g| ("group_id", g.to_string())));
        self.get(&fill(paths::RECEIVER, &[receiver]), &q).await
    }
    pub async fn delete_receiver(&self, receiver: &str, group: Option<Id>) -> Result<bool> {
        let q: Vec<_> = group
            .map(|g| ("group_id", g.to_string()))
            .into_iter()
            .collect();
        self.delete(&fill(paths::RECEIVER, &[receiver]), &q).await
    }

    // Attributes (spec §4.6)

    /// Global attributes, or with a group that group's local ones.
    pub async fn attributes(&self, group: Option<Id>) -> Result<Vec<Attribute>> {
        let q: Vec<_> = group
            .map(|g| ("group_id", g.to_string()))
            .into_iter()
            .collect();
        self.get(paths::ATTRIBUTES, &q).await
    }
    pub async fn create_attribute(&self, input: &AttributeInput) -> Result<Attribute> {
        self.post(paths::ATTRIBUTES, input).await
    }
    pub async fn attribute(&self, id: i64) -> Result<Attribute> {
        self.get(&fill(paths::ATTRIBUTE, &[&id.to_string()]), &[])
            .await
    }
    pub async fn update_attribute(&self, id: i64, input: &AttributeInput) -> Result<Attribute> {
        self.put(&fill(paths::ATTRIBUTE, &[&id.to_string()]), input)
            .await
    }
    pub async fn delete_attribute(&self, id: i64) -> Result<bool> {
        self.delete(&fill(paths::ATTRIBUTE, &[&id.to_string()]), &[])
            .await
    }
    pub async fn attribute_limits(&self) -> Result<AttributeLimits> {
        self.get(paths::ATTRIBUTE_LIMITS, &[]).await
    }
    pub async fn group_attributes(&self, group: Id) -> Result<Vec<Attribute>> {
        self.get(&fill(paths::GROUP_ATTRIBUTES, &[&group.to_string()]), &[])
            .await
    }
    pub async fn create_group_attribute(
        &self,
        group: Id,
        input: &AttributeInput,
    ) -> Result<Attribute> {
        self.post(&fill(paths::GROUP_ATTRIBUTES, &[&group.to_string()]), input)
            .await
    }
    pub async fn update_group_attribute(
        &self,
        group: Id,
        id: i64,
        input: &AttributeInput,
    ) -> Result<Attribute> {
        self.put(
            &fill(
                paths::GROUP_ATTRIBUTE,
                &[&group.to_string(), &id.to_string()],
            ),
            input,
        )
        .await
    }
    pub async fn delete_group_attribute(&self, group: Id, id: i64) -> Result<bool> {
        self.delete(
            &fill(
                paths::GROUP_ATTRIBUTE,
                &[&group.to_string(), &id.to_string()],
            ),
            &[],
        )
        .await
    }
    pub async fn receiver_attributes(
        &self,
        receiver: &str,
        group: Option<Id>,
    ) -> Result<Vec<AttributeValue>> {
        let q: Vec<_> = group
            .map(|g| ("group_id", g.to_string()))
            .into_iter()
            .collect();
        self.get(&fill(paths::RECEIVER_ATTRIBUTES, &[receiver]), &q)
            .await
    }
    pub async fn set_group_receiver_attribute(
        &self,
        group: Id,
        receiver: &str,
        id: i64,
        value: &str,
    ) -> Result<bool> {
        let body = AttributeValueInput {
            value: Some(value.to_string()),
        };
        self.put(
            &fill(
                paths::GROUP_RECEIVER_ATTRIBUTE,
                &[&group.to_string(), receiver, &id.to_string()],
            ),
            &body,
        )
        .await
    }
    pub async fn set_receiver_attribute(
        &self,
        receiver: &str,
        id: i64,
        value: &str,
    ) -> Result<bool> {
        let body = AttributeValueInput {
            value: Some(value.to_string()),
        };
        self.put(
            &fill(paths::RECEIVER_ATTRIBUTE, &[receiver, &id.to_string()]),
            &body,
        )
        .await
    }

    // Tags (spec §4.9). `origin`: None any, Some("") none, Some(name).

    pub async fn tags(&self, origin: Option<&str>) -> Result<Vec<String>> {
        let q: Vec<_> = origin
            .map(|o| ("origin", o.to_string()))
            .into_iter()
            .collect();
        self.get(paths::TAGS, &q).await
    }
    pub async fn receiver_tags(&self, receiver: &str, origin: Option<&str>) -> Result<Vec<String>> {
        let q: Vec<_> = origin
            .map(|o| ("origin", o.to_string()))
            .into_iter()
            .collect();
        self.get(&fill(paths::RECEIVER_TAGS, &[receiver]), &q).await
    }
    /// Adds tags (a `-tag` removes one); answers the tags actually added.
    pub async fn add_receiver_tags(
        &self,
        receiver: &str,
        tags: &[&str],
        group: Option<Id>,
    ) -> Result<Vec<String>> {
        let body = TagsInput {
            tags: Some(tags.iter().map(|t| t.to_string()).collect()),
            group_id: group.map(|g| g.0),
        };
        self.post(&fill(paths::RECEIVER_TAGS, &[receiver]), &body)
            .await
    }
    pub async fn add_group_receiver_tags(
        &self,
        group: Id,
        receiver: &str,
        tags: &[&str],
    ) -> Result<Vec<String>> {
        let body = TagsInput {
            tags: Some(tags.iter().map(|t| t.to_string()).collect()),
            group_id: None,
        };
        self.post(
            &fill(paths::GROUP_RECEIVER_TAGS, &[&group.to_string(), receiver]),
            &body,
        )
        .await
    }

    // Blacklist (spec §4.3)

    pub async fn blacklist(&self) -> Result<Vec<BlacklistEntry>> {
        self.get(paths::BLACKLIST, &[]).await
    }
    pub async fn add_to_blacklist(&self, email: &str, comment: &str) -> Result<BlacklistEntry> {
        self.post(paths::BLACKLIST, &BlacklistInput::new(email, comment))
            .await
    }
    pub async fn update_blacklist(&self, email: &str, comment: &str) -> Result<BlacklistEntry> {
        self.put(paths::BLACKLIST, &BlacklistInput::new(email, comment))
            .await
    }
    pub async fn blacklist_entry(&self, email: &str) -> Result<BlacklistEntry> {
        self.get(&fill(paths::BLACKLIST_ENTRY, &[email]), &[]).await
    }
    pub async fn remove_from_blacklist(&self, email: &str) -> Result<bool> {
        self.delete(&fill(paths::BLACKLIST_ENTRY, &[email]), &[])
            .await
    }
    /// At most 1,000 entries per call (the server answers 413 above that).
    pub async fn blacklist_batch(&self, items: &[BlacklistInput]) -> Result<Vec<BlacklistEntry>> {
        self.post(
            paths::BLACKLIST_BATCH,
            &BlacklistBatch {
                items: Some(items.to_vec()),
            },
        )
        .await
    }
    /// The addresses that are NOT blocked (with `invert`, those that are).
    pub async fn validate_blacklist(
        &self,
        emails: &[String],
        group: Option<Id>,
        invert: bool,
    ) -> Result<Vec<String>> {
        let body = BlacklistValidate {
            emails: Some(emails.to_vec()),
            group_id: group.map(|g| g.0),
            invert: Some(invert),
        };
        self.post(paths::BLACKLIST_VALIDATE, &body).await
    }
    pub async fn group_blocklist(&self, group: Id) -> Result<Vec<BlacklistEntry>> {
        self.get(&fill(paths::GROUP_BLOCKLIST, &[&group.to_string()]), &[])
            .await
    }
    pub async fn add_to_group_blocklist(&self, group: Id, email: &str) -> Result<BlacklistEntry> {
        let body = BlocklistInput {
            email: Some(email.to_string()),
        };
        self.post(&fill(paths::GROUP_BLOCKLIST, &[&group.to_string()]), &body)
            .await
    }
    pub async fn remove_from_group_blocklist(&self, group: Id, email: &str) -> Result<bool> {
        self.delete(
            &fill(paths::GROUP_BLOCKLIST_ENTRY, &[&group.to_string(), email]),
            &[],
        )
        .await
    }
}

/// Request bodies as trait objects, so [`ApiClient::call`] is not generic
/// over the body type (one copy of the send path, not one per body type).
pub mod erased {
    pub trait Body: Sync {
        fn to_json(&self) -> Vec<u8>;
    }
    impl<T: serde::Serialize + Sync> Body for T {
        fn to_json(&self) -> Vec<u8> {
            serde_json::to_vec(self).unwrap_or_else(|_| b"{}".to_vec())
        }
    }
}
