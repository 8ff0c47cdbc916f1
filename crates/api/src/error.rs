//! The one error body of the API: `{"error": {"code": 404, "message": "..."}}`,
//! `code` always equal to the HTTP status.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ErrorDetail {
    #[serde(deserialize_with = "crate::lenient::i64_or_zero", default)]
    pub code: i64,
    #[serde(deserialize_with = "crate::lenient::string_or_empty", default)]
    pub message: String,
}

impl ErrorBody {
    pub fn new(code: u16, message: impl Into<String>) -> Self {
        ErrorBody {
            error: ErrorDetail {
                code: code as i64,
                message: message.into(),
            },
        }
    }
}
