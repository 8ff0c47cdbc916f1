//! What a call to the API can fail with.

/// A failed call. `Api` carries the server's status and its message (from
/// the error body when there is one), so callers can branch on the status.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{method} {path}: HTTP {status}: {message}")]
    Api {
        method: String,
        path: String,
        status: u16,
        message: String,
        /// Seconds the server asked to wait (`Retry-After`), on 429 and 503.
        retry_after: Option<u64>,
    },
    #[error("{method} {path}: cannot reach the server: {source}")]
    Transport {
        method: String,
        path: String,
        source: reqwest::Error,
    },
    #[error("{method} {path}: unexpected answer: {detail}")]
    Decode {
        method: String,
        path: String,
        detail: String,
    },
    #[error("invalid target URL \"{0}\"")]
    BadUrl(String),
    #[error("cannot build the HTTP client: {0}")]
    Build(reqwest::Error),
}

impl ClientError {
    /// The HTTP status of an API error.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }

    pub fn retry_after(&self) -> Option<u64> {
        match self {
            ClientError::Api { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The server's own message (for rejects files), or the whole error.
    pub fn server_message(&self) -> String {
        match self {
            ClientError::Api {
                status, message, ..
            } => format!("HTTP {status}: {message}"),
            other => other.to_string(),
        }
    }

    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404)
    }

    /// Worth retrying: the connection failed, or the server was busy or broken.
    pub fn is_transient(&self) -> bool {
        match self {
            ClientError::Transport { .. } => true,
            ClientError::Api { status, .. } => matches!(status, 408 | 429 | 500 | 502 | 503 | 504),
            _ => false,
        }
    }
}
