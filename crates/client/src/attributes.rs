//! Attributes (spec §4.6).

use super::{ApiClient, Result};
use listpipe_api::attribute::{AttributeLimits, AttributeValue, AttributeValueInput};
use listpipe_api::paths::{self, fill};
use listpipe_api::*;

impl ApiClient {
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
}
