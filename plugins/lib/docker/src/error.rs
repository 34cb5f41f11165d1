//! What can go wrong talking to a daemon, each naming the endpoint, and how it reaches the
//! agent as a tool error.

use coremcp_plugin_sdk::{codes, ToolError};

#[derive(Debug, thiserror::Error)]
pub enum DockerError {
    #[error("unsupported Docker endpoint \"{endpoint}\": {why}")]
    Unsupported { endpoint: String, why: String },
    #[error("the Docker daemon at {endpoint} is not reachable: {detail}")]
    Unreachable { endpoint: String, detail: String },
    #[error("the Docker daemon at {endpoint} did not answer before the call's deadline")]
    Deadline { endpoint: String },
    #[error("the call was cancelled while waiting for the Docker daemon at {endpoint}")]
    Cancelled { endpoint: String },
    #[error("{what} on the Docker daemon at {endpoint}")]
    NotFound { endpoint: String, what: String },
    #[error("the Docker daemon at {endpoint} refused: {message}")]
    Conflict { endpoint: String, message: String },
    #[error("the Docker daemon at {endpoint}: {too_large}")]
    TooLarge {
        endpoint: String,
        too_large: crate::transport::TooLarge,
    },
    #[error("the Docker daemon at {endpoint} answered {status}: {message}")]
    Api {
        endpoint: String,
        status: u16,
        message: String,
    },
}

impl From<DockerError> for ToolError {
    fn from(e: DockerError) -> Self {
        let code = match &e {
            DockerError::Unsupported { .. } => codes::INVALID_ARGUMENTS,
            DockerError::Unreachable { .. } => codes::UNAVAILABLE,
            DockerError::Deadline { .. } => codes::TIMEOUT,
            DockerError::Cancelled { .. } => codes::CANCELLED,
            DockerError::NotFound { .. } => codes::NOT_FOUND,
            DockerError::Conflict { .. } => codes::CONFLICT,
            DockerError::Api { .. } | DockerError::TooLarge { .. } => codes::FAILED,
        };
        ToolError::new(code, e.to_string())
    }
}

impl DockerError {
    /// Reads a bollard error from `endpoint`; `what` names the object a 404 is about.
    pub fn from_bollard(endpoint: &str, what: &str, e: bollard::errors::Error) -> Self {
        use bollard::errors::Error as B;
        let endpoint = endpoint.to_owned();
        if let Some(too_large) = crate::transport::TooLarge::within(&e) {
            return Self::TooLarge {
                endpoint,
                too_large,
            };
        }
        match e {
            B::DockerResponseServerError {
                status_code: 404,
                message,
            } => Self::NotFound {
                endpoint,
                what: if what.is_empty() {
                    message
                } else {
                    what.to_owned()
                },
            },
            B::DockerResponseServerError {
                status_code: 409 | 304,
                message,
            } => Self::Conflict { endpoint, message },
            B::DockerResponseServerError {
                status_code,
                message,
            } => Self::Api {
                endpoint,
                status: status_code,
                message,
            },
            B::RequestTimeoutError => Self::Deadline { endpoint },
            other @ (B::HyperResponseError { .. }
            | B::IOError { .. }
            | B::HyperLegacyError { .. }
            | B::SocketNotFoundError(_)) => Self::Unreachable {
                endpoint,
                detail: detail(&other),
            },
            other => Self::Api {
                endpoint,
                status: 0,
                message: detail(&other),
            },
        }
    }
}

/// The error with its causes, on one line.
fn detail(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let line = cause.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = cause.source();
    }
    text
}
