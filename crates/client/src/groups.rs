//! Groups (spec §4.4).

use super::{ApiClient, Result};
use listpipe_api::group::GroupAdvancedStats;
use listpipe_api::paths::{self, fill};
use listpipe_api::*;

impl ApiClient {
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
}
