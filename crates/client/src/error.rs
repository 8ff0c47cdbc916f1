//! What a call to the API can fail with. Transport failures keep the
//! error reqwest raised as their source, so what the operating system said
//! (connection refused, no such host, a certificate refused) reaches the
//! user as a `caused by:` line (see [`crate::cause`]).

use std::sync::Arc;

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
    #[error("{method} {path}: cannot reach the server")]
    Transport {
        method: String,
        path: String,
        #[source]
        source: reqwest::Error,
    },
    /// Not sent: the run's circuit breaker found that the target stopped
    /// answering (see `load::breaker`); `cause` is the last transport failure.
    #[error("target {url} stopped answering: {summary}")]
    Stopped {
        url: String,
        /// What the operating system said, in short.
        summary: String,
        #[source]
        cause: Arc<ClientError>,
    },
    #[error("{method} {path}: unexpected answer: {detail}")]
    Decode {
        method: String,
        path: String,
        detail: String,
    },
    /// The request's body could not be written as JSON (a bug of the
    /// caller's types, or a value JSON cannot hold): nothing was sent.
    #[error("{method} {path}: the request body cannot be written as JSON")]
    Encode {
        method: String,
        path: String,
        #[source]
        source: serde_json::Error,
    },
    /// Not sent: the run is stopping (Ctrl-C, SIGTERM) and this request
    /// was still waiting for its turn; its row stays for `--resume`.
    #[error("not sent: the run is stopping")]
    Interrupted,
    #[error("invalid target URL \"{0}\"")]
    BadUrl(String),
    #[error("cannot build the HTTP client")]
    Build(#[source] reqwest::Error),
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
            other => listpipe_base::cause::flat(other),
        }
    }

    /// The request never got an HTTP answer: the connection failed, was
    /// reset, or timed out. What the circuit breaker counts.
    pub fn is_transport(&self) -> bool {
        matches!(
            self,
            ClientError::Transport { .. } | ClientError::Stopped { .. }
        )
    }

    /// The target answered and refused this request for what it is (a 4xx
    /// other than 401, 403, 408 and 429): another request may do better.
    pub fn is_refusal(&self) -> bool {
        matches!(self.status(), Some(s) if (400..500).contains(&s) && !matches!(s, 401 | 403 | 408 | 429))
    }

    /// The target refused the credentials (401, 403): nothing else will work.
    pub fn is_auth(&self) -> bool {
        matches!(self.status(), Some(401 | 403))
    }

    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404)
    }

    /// Worth retrying: the connection failed, or the server was busy or broken.
    pub fn is_transient(&self) -> bool {
        match self {
            ClientError::Transport { .. }
            | ClientError::Stopped { .. }
            | ClientError::Interrupted => true,
            ClientError::Api { status, .. } => matches!(status, 408 | 429 | 500 | 502 | 503 | 504),
            _ => false,
        }
    }
}
