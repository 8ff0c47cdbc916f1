//! Receivers (spec §4.8). A `receiver` argument is an id or an email address.

use super::{ApiClient, Result};
use listpipe_api::paths::{self, fill};
use listpipe_api::*;
use reqwest::Method;
use serde::de::{DeserializeOwned, IgnoredAny};

/// A page of receivers as the answer's bytes: [`Page::rows`] reads them
/// into rows that borrow their text from it, so a bulk read (an export, a
/// re-import's comparison) copies no text it does not keep.
pub struct Page {
    pub(super) method: Method,
    pub(super) path: String,
    pub(super) bytes: bytes::Bytes,
}

impl Page {
    pub fn rows(&self) -> Result<Vec<ReceiverRow<'_>>> {
        super::decode(&self.method, &self.path, &self.bytes)
    }
}

impl ApiClient {
    pub async fn receivers(&self, group: Id, query: &ReceiverQuery) -> Result<Vec<Receiver>> {
        self.get(
            &fill(paths::GROUP_RECEIVERS, &[&group.to_string()]),
            &query.to_pairs(),
        )
        .await
    }
    /// The same list as a [`Page`].
    pub async fn receivers_page(&self, group: Id, query: &ReceiverQuery) -> Result<Page> {
        let path = fill(paths::GROUP_RECEIVERS, &[&group.to_string()]);
        self.page(Method::GET, &path, &query.to_pairs(), None).await
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
        self.create(group, input).await
    }
    /// [`create_receiver`](Self::create_receiver) for a caller that needs
    /// only to know the write worked (the importer): the answer is checked
    /// as JSON, but no `Receiver` is built from it.
    pub async fn create_receiver_unread(&self, group: Id, input: &ReceiverInput) -> Result<()> {
        self.create::<IgnoredAny>(group, input).await.map(drop)
    }
    async fn create<T: DeserializeOwned>(&self, group: Id, input: &ReceiverInput) -> Result<T> {
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
        self.update(group, receiver, input).await
    }
    /// [`update_receiver`](Self::update_receiver) with the answer checked
    /// but not built (see [`create_receiver_unread`](Self::create_receiver_unread)).
    pub async fn update_receiver_unread(
        &self,
        group: Id,
        receiver: &str,
        input: &ReceiverInput,
    ) -> Result<()> {
        self.update::<IgnoredAny>(group, receiver, input)
            .await
            .map(drop)
    }
    async fn update<T: DeserializeOwned>(
        &self,
        group: Id,
        receiver: &str,
        input: &ReceiverInput,
    ) -> Result<T> {
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
}
