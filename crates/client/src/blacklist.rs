//! The blacklist and group blocklists (spec §4.3).

use super::{ApiClient, Result};
use listpipe_api::blacklist::BlacklistInput;
use listpipe_api::paths::{self, fill};
use listpipe_api::*;

impl ApiClient {
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
