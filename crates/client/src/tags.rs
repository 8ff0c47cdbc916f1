//! Tags (spec §4.9). `origin`: `None` any, `Some("")` none, `Some(name)`.

use super::{ApiClient, Result};
use listpipe_api::paths::{self, fill};
use listpipe_api::*;

impl ApiClient {
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
}
