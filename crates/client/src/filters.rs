//! Filters (spec §4.7): saved filters of a group and the runtime filter.

use super::{ApiClient, Result};
use listpipe_api::filter::{Filter, FilterInput, FilterStats, RuntimeFilter};
use listpipe_api::paths::{self, fill};
use listpipe_api::{Id, Receiver, ReceiverQuery};
use reqwest::Method;

impl ApiClient {
    pub async fn filters(&self, group: Id) -> Result<Vec<Filter>> {
        self.get(&fill(paths::GROUP_FILTERS, &[&group.to_string()]), &[])
            .await
    }
    pub async fn create_filter(&self, group: Id, input: &FilterInput) -> Result<Filter> {
        self.post(&fill(paths::GROUP_FILTERS, &[&group.to_string()]), input)
            .await
    }
    pub async fn filter(&self, group: Id, id: Id) -> Result<Filter> {
        self.get(
            &fill(paths::GROUP_FILTER, &[&group.to_string(), &id.to_string()]),
            &[],
        )
        .await
    }
    pub async fn update_filter(&self, group: Id, id: Id, input: &FilterInput) -> Result<bool> {
        self.put(
            &fill(paths::GROUP_FILTER, &[&group.to_string(), &id.to_string()]),
            input,
        )
        .await
    }
    pub async fn delete_filter(&self, group: Id, id: Id) -> Result<bool> {
        self.delete(
            &fill(paths::GROUP_FILTER, &[&group.to_string(), &id.to_string()]),
            &[],
        )
        .await
    }
    pub async fn filter_stats(&self, group: Id, id: Id) -> Result<FilterStats> {
        self.get(
            &fill(
                paths::GROUP_FILTER_STATS,
                &[&group.to_string(), &id.to_string()],
            ),
            &[],
        )
        .await
    }
    pub async fn filter_count(&self, group: Id, id: Id) -> Result<i64> {
        self.get(
            &fill(
                paths::GROUP_FILTER_COUNT,
                &[&group.to_string(), &id.to_string()],
            ),
            &[],
        )
        .await
    }
    pub async fn filter_receivers(
        &self,
        group: Id,
        id: Id,
        query: &ReceiverQuery,
    ) -> Result<Vec<Receiver>> {
        self.get(
            &fill(
                paths::GROUP_FILTER_RECEIVERS,
                &[&group.to_string(), &id.to_string()],
            ),
            &query.to_pairs(),
        )
        .await
    }
    /// The same receivers as a [`Page`](super::Page).
    pub async fn filter_receivers_page(
        &self,
        group: Id,
        id: Id,
        query: &ReceiverQuery,
    ) -> Result<super::Page> {
        let path = fill(
            paths::GROUP_FILTER_RECEIVERS,
            &[&group.to_string(), &id.to_string()],
        );
        self.page(Method::GET, &path, &query.to_pairs(), None).await
    }
    pub async fn runtime_filter(&self, filter: &RuntimeFilter) -> Result<Vec<Receiver>> {
        self.post(paths::RUNTIME_FILTER, filter).await
    }
    /// The same receivers as a [`Page`](super::Page).
    pub async fn runtime_filter_page(&self, filter: &RuntimeFilter) -> Result<super::Page> {
        self.page(Method::POST, paths::RUNTIME_FILTER, &[], Some(filter))
            .await
    }
}
