//! The server's one error type. Every failure leaves as the API's error
//! body `{"error": {"code": N, "message": "..."}}` with `code` equal to the
//! status; internals are logged, never shown.

use super::store::{RETRY_AFTER_SECS, StoreError};
use axum::Json;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use listpipe_api::ErrorBody;

#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
        }
    }
    /// 400: the request is malformed or breaks a rule.
    pub fn bad_request(detail: impl std::fmt::Display) -> Self {
        Self::new(StatusCode::BAD_REQUEST, format!("Bad Request: {detail}"))
    }
    /// 401: no token, or a token that is unknown, revoked or expired.
    pub fn unauthorized(detail: impl std::fmt::Display) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, format!("Unauthorized: {detail}"))
    }
    /// 404: nothing of that id in the caller's account.
    pub fn not_found(detail: impl std::fmt::Display) -> Self {
        Self::new(StatusCode::NOT_FOUND, format!("Not Found: {detail}"))
    }
    /// 413: the body or batch is larger than allowed.
    pub fn too_large(detail: impl std::fmt::Display) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("Payload Too Large: {detail}"),
        )
    }
    /// 500: a bug or a broken database; the detail goes to the log only.
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        tracing::error!(target: log_target!(), error = %detail, "internal error");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        let status = match &e {
            StoreError::NotFound(_) => StatusCode::NOT_FOUND,
            StoreError::Conflict(_) => StatusCode::CONFLICT,
            StoreError::Invalid(_) => StatusCode::BAD_REQUEST,
            StoreError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            StoreError::Forbidden(_) => StatusCode::FORBIDDEN,
            StoreError::Busy(_) | StoreError::Raced(_) | StoreError::Unavailable(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            StoreError::Sqlite(_)
            | StoreError::Postgres(_)
            | StoreError::Io { .. }
            | StoreError::Task(_)
            | StoreError::Internal(_) => {
                return ApiError::internal(listpipe_base::cause::flat(&e));
            }
        };
        ApiError::new(status, e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody::new(self.status.as_u16(), self.message);
        let mut res = (self.status, Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            res.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
        }
        // Every 503 is "busy, come back": it says when (server::overload,
        // store::writer).
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            res.headers_mut().insert(
                header::RETRY_AFTER,
                header::HeaderValue::from(RETRY_AFTER_SECS),
            );
        }
        res
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
