//! Extensions of the live service (wire.md), not in the spec: receiver
//! batches and activate/deactivate. A batch holds at most
//! [`MAX_BATCH`](listpipe_api::batch::MAX_BATCH) items; the server answers 413
//! above that (clients shrink the batch and send again).

use super::{ApiClient, Result};
use listpipe_api::paths::{self, fill};
use listpipe_api::*;
use reqwest::Method;

impl ApiClient {
    /// Creates each address not yet in the group and updates the others;
    /// one status per item, in order (an item's error does not stop the rest).
    pub async fn upsert_receivers<T: serde::Serialize + Sync>(
        &self,
        group: Id,
        items: &[T],
    ) -> Result<Vec<BatchStatus>> {
        self.post(
            &fill(paths::GROUP_RECEIVERS_UPSERT, &[&group.to_string()]),
            &items,
        )
        .await
    }
    /// Upserts one receiver and answers it as create or update would.
    pub async fn upsert_receiver(&self, group: Id, input: &ReceiverInput) -> Result<Receiver> {
        self.post(
            &fill(paths::GROUP_RECEIVERS_UPSERT, &[&group.to_string()]),
            input,
        )
        .await
    }
    /// Creates each item; an address already in the group answers
    /// `"duplicate address"` in its place.
    pub async fn insert_receivers(
        &self,
        group: Id,
        items: &[ReceiverInput],
    ) -> Result<Vec<BatchStatus>> {
        self.post(
            &fill(paths::GROUP_RECEIVERS_INSERT, &[&group.to_string()]),
            &items,
        )
        .await
    }
    /// As [`upsert_receivers`](Self::upsert_receivers), answering the full
    /// receivers (or a status for the items that failed).
    pub async fn upsert_receivers_plus(
        &self,
        group: Id,
        items: &[ReceiverInput],
    ) -> Result<Vec<BatchReceiver>> {
        self.post(
            &fill(paths::GROUP_RECEIVERS_UPSERTPLUS, &[&group.to_string()]),
            &items,
        )
        .await
    }
    /// Activates a receiver of the group (clears an opt-out); `receiver` is an id or an email.
    pub async fn activate_receiver(&self, group: Id, receiver: &str) -> Result<bool> {
        let path = fill(
            paths::GROUP_RECEIVER_ACTIVATE,
            &[&group.to_string(), receiver],
        );
        self.call(Method::PUT, &path, &[], None).await
    }
    /// Deactivates (opts out) a receiver of the group.
    pub async fn deactivate_receiver(&self, group: Id, receiver: &str) -> Result<bool> {
        let path = fill(
            paths::GROUP_RECEIVER_DEACTIVATE,
            &[&group.to_string(), receiver],
        );
        self.call(Method::PUT, &path, &[], None).await
    }
}
