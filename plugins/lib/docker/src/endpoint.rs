//! A Docker daemon address: `unix://PATH` or `tcp://HOST:PORT` (`http://` alike).
//!
//! `ssh://` and `npipe://` are recognised and refused with a reason: this build links no ssh
//! transport (reach a host that has its own Core MCP with `remote_host` instead), and named
//! pipes exist only on Windows.

use std::fmt;

use crate::DockerError;

/// The socket a daemon listens on when `DOCKER_HOST` is unset.
pub const DEFAULT_SOCKET: &str = "/var/run/docker.sock";

/// Where a daemon listens.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Endpoint {
    Unix(String),
    Tcp(String),
}

impl Endpoint {
    /// Parses a `docker_endpoint` or `DOCKER_HOST` value.
    pub fn parse(text: &str) -> Result<Self, DockerError> {
        let text = text.trim();
        let unsupported = |why: &str| DockerError::Unsupported {
            endpoint: text.to_owned(),
            why: why.to_owned(),
        };
        if let Some(path) = text.strip_prefix("unix://") {
            if !path.starts_with('/') {
                return Err(unsupported(
                    "a unix:// endpoint needs an absolute socket path",
                ));
            }
            return Ok(Self::Unix(path.to_owned()));
        }
        for scheme in ["tcp://", "http://"] {
            if let Some(rest) = text.strip_prefix(scheme) {
                let authority = rest.trim_end_matches('/');
                if authority.is_empty() || authority.contains(['/', '@', '?', '#']) {
                    return Err(unsupported(
                        "a tcp:// endpoint is HOST:PORT, without a path or credentials",
                    ));
                }
                let authority = if authority.contains(':') {
                    authority.to_owned()
                } else {
                    format!("{authority}:2375")
                };
                return Ok(Self::Tcp(authority));
            }
        }
        if text.starts_with("ssh://") {
            return Err(unsupported(
                "this build has no ssh transport; give the host a tcp:// or unix:// endpoint, \
                 or reach its own Core MCP with remote_host",
            ));
        }
        if text.starts_with("npipe://") {
            return Err(unsupported("named pipes exist only on Windows"));
        }
        if text.starts_with("https://") || text.starts_with("tls://") {
            return Err(unsupported(
                "this build has no TLS transport to Docker daemons",
            ));
        }
        Err(unsupported("expected unix://PATH or tcp://HOST:PORT"))
    }

    /// The daemon of this machine: `DOCKER_HOST` when set, else the default socket.
    pub fn local() -> Result<Self, DockerError> {
        match std::env::var("DOCKER_HOST") {
            Ok(value) if !value.trim().is_empty() => Self::parse(&value),
            _ => Ok(Self::Unix(DEFAULT_SOCKET.to_owned())),
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unix(path) => write!(f, "unix://{path}"),
            Self::Tcp(authority) => write!(f, "tcp://{authority}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse_and_the_unsupported_ones_say_why() {
        assert_eq!(
            Endpoint::parse("unix:///run/d.sock").expect("unix"),
            Endpoint::Unix("/run/d.sock".into())
        );
        assert_eq!(
            Endpoint::parse("tcp://10.0.0.2:2376").expect("tcp"),
            Endpoint::Tcp("10.0.0.2:2376".into())
        );
        assert_eq!(
            Endpoint::parse("tcp://box")
                .expect("default port")
                .to_string(),
            "tcp://box:2375"
        );
        for (bad, says) in [
            ("ssh://me@box", "no ssh transport"),
            ("npipe:////./pipe/docker", "Windows"),
            ("unix://relative.sock", "absolute"),
            ("tcp://u:p@box:1", "credentials"),
            ("https://box:2376", "TLS"),
            ("box:2375", "expected unix://"),
        ] {
            let err = Endpoint::parse(bad).expect_err(bad).to_string();
            assert!(err.contains(says) && err.contains(bad), "{bad}: {err}");
        }
    }
}
