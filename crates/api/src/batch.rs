//! The receiver batch answers of the live service's extensions (wire.md,
//! "Extensions of the live service"): `upsert` and `insert` answer one
//! [`BatchStatus`] per item, `upsertplus` one [`BatchReceiver`] per item.

use super::Receiver;
use serde::{Deserialize, Serialize};

/// The most items one batch call may carry; more is a 413 and nothing is
/// stored (clients shrink the batch and send again).
pub const MAX_BATCH: usize = 1000;

/// The status of an item that created a receiver.
pub const INSERT_SUCCESS: &str = "insert success";
/// The status of an item that updated a receiver already in the group.
pub const UPDATE_SUCCESS: &str = "update success";
/// The status of an `insert` item whose address is already in the group.
pub const DUPLICATE_ADDRESS: &str = "duplicate address";

/// What one item of an `upsert` or `insert` batch did: `"insert success"`,
/// `"update success"`, or the error message of that item.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct BatchStatus {
    pub status: String,
}

impl BatchStatus {
    pub fn new(status: impl Into<String>) -> Self {
        BatchStatus {
            status: status.into(),
        }
    }
    pub fn inserted() -> Self {
        Self::new(INSERT_SUCCESS)
    }
    pub fn updated() -> Self {
        Self::new(UPDATE_SUCCESS)
    }
    pub fn is_inserted(&self) -> bool {
        self.status == INSERT_SUCCESS
    }
    pub fn is_updated(&self) -> bool {
        self.status == UPDATE_SUCCESS
    }
    pub fn is_success(&self) -> bool {
        self.is_inserted() || self.is_updated()
    }
    /// The item's error message, when it failed.
    pub fn error(&self) -> Option<&str> {
        (!self.is_success()).then_some(self.status.as_str())
    }
}

/// One item of an `upsertplus` answer: the receiver as create or update
/// return it, or `{"status": "<error message>"}` for an item that failed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum BatchReceiver {
    // Tried first: a receiver never carries `status`.
    Failed(BatchStatus),
    Done(Box<Receiver>),
}

impl BatchReceiver {
    pub fn receiver(&self) -> Option<&Receiver> {
        match self {
            BatchReceiver::Done(r) => Some(r),
            BatchReceiver::Failed(_) => None,
        }
    }
    pub fn error(&self) -> Option<&str> {
        match self {
            BatchReceiver::Failed(s) => Some(&s.status),
            BatchReceiver::Done(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upsertplus_item_reads_as_a_receiver_or_a_status() {
        let items: Vec<BatchReceiver> = serde_json::from_str(
            r#"[{"id": "7", "email": "a@example.com", "group_id": "3", "active": true},
                {"status": "Bad Request: email is required"}]"#,
        )
        .unwrap();
        assert_eq!(items[0].receiver().map(|r| r.id.0), Some(7));
        assert_eq!(items[1].error(), Some("Bad Request: email is required"));
    }
}
