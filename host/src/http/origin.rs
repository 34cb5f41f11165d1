//! DNS-rebinding protection: the `Host` and `Origin` checks every request passes before it is
//! served.
//!
//! A web page on `evil.example` whose name is made to resolve to 127.0.0.1 can reach a loopback
//! server from the user's browser; the browser then sends `Host: evil.example:PORT` and
//! `Origin: http://evil.example`. So, on a **loopback listener**:
//! - `Host` must name a loopback host — `localhost` or a loopback address (`127.0.0.0/8`,
//!   `[::1]`) — with the listening port (no port means 80);
//! - `Origin`, when present, must be a loopback origin (`http`/`https`, any port): a page served
//!   from the same machine. `Origin: null` is refused.
//!
//! On a **non-loopback listener** (which always has bearer tokens, which a browser cannot add by
//! itself) the server is reached by names this code cannot know, so `Host` is not checked; an
//! `Origin`, when present, must be the server's own (`http(s)://` + the `Host` value).

use std::net::{IpAddr, SocketAddr};

/// Why a request was refused (403).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    #[error("the Host header is missing")]
    NoHost,
    #[error(
        "Host \"{0}\" is not this server (expected localhost or a loopback address with port {1})"
    )]
    Host(String, u16),
    #[error("Origin \"{0}\" is not allowed to call this server")]
    Origin(String),
}

/// The checks for one listener.
#[derive(Debug, Clone)]
pub struct HostGuard {
    port: u16,
    loopback: bool,
}

impl HostGuard {
    pub fn new(listening: SocketAddr) -> Self {
        Self {
            port: listening.port(),
            loopback: listening.ip().is_loopback(),
        }
    }

    /// Whether the listener is on a loopback address.
    pub fn loopback(&self) -> bool {
        self.loopback
    }

    /// Checks a request's `Host` and `Origin` header values.
    pub fn check(&self, host: Option<&[u8]>, origin: Option<&[u8]>) -> Result<(), Rejected> {
        let host = host.map(|h| String::from_utf8_lossy(h).trim().to_owned());
        let origin = origin.map(|o| String::from_utf8_lossy(o).trim().to_owned());
        if self.loopback {
            let host = host.ok_or(Rejected::NoHost)?;
            let fits = split_authority(&host).is_some_and(|(name, port)| {
                is_loopback_name(name) && port.unwrap_or(80) == self.port
            });
            if !fits {
                return Err(Rejected::Host(host, self.port));
            }
            if let Some(origin) = origin {
                let fits = origin_authority(&origin)
                    .and_then(split_authority)
                    .is_some_and(|(name, _)| is_loopback_name(name));
                if !fits {
                    return Err(Rejected::Origin(origin));
                }
            }
        } else if let Some(origin) = origin {
            let same = host.as_deref().is_some_and(|host| {
                origin_authority(&origin).is_some_and(|a| a.eq_ignore_ascii_case(host))
            });
            if !same {
                return Err(Rejected::Origin(origin));
            }
        }
        Ok(())
    }
}

/// The authority of an `http://` or `https://` origin (no path allowed).
fn origin_authority(origin: &str) -> Option<&str> {
    let lower = origin
        .get(..8)
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    let rest = if lower.starts_with("http://") {
        &origin[7..]
    } else if lower.starts_with("https://") {
        &origin[8..]
    } else {
        return None;
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    (!rest.is_empty() && !rest.contains(['/', '?', '#', '@'])).then_some(rest)
}

/// Splits `name[:port]` or `[v6][:port]`; `None` if the port is not a number.
fn split_authority(authority: &str) -> Option<(&str, Option<u16>)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        return match after {
            "" => Some((inside, None)),
            _ => Some((inside, Some(after.strip_prefix(':')?.parse().ok()?))),
        };
    }
    match authority.rsplit_once(':') {
        // A bare IPv6 address is not a valid Host; treat the colon as the port separator.
        Some((name, port)) => Some((name, Some(port.parse().ok()?))),
        None => Some((authority, None)),
    }
}

/// `localhost` (any case, one trailing dot allowed) or a loopback IP literal.
fn is_loopback_name(name: &str) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name);
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback() -> HostGuard {
        HostGuard::new("127.0.0.1:7070".parse().expect("addr"))
    }

    fn check(guard: &HostGuard, host: Option<&str>, origin: Option<&str>) -> Result<(), Rejected> {
        guard.check(host.map(str::as_bytes), origin.map(str::as_bytes))
    }

    #[test]
    fn loopback_hosts_with_the_listening_port_pass() {
        let g = loopback();
        for host in [
            "127.0.0.1:7070",
            "localhost:7070",
            "LOCALHOST:7070",
            "localhost.:7070",
            "[::1]:7070",
            "127.0.0.2:7070",
        ] {
            assert_eq!(check(&g, Some(host), None), Ok(()), "{host}");
        }
        for origin in [
            "http://127.0.0.1:7070",
            "http://localhost:3000",
            "https://localhost",
            "http://[::1]:7070",
            "HTTP://LOCALHOST:7070/",
        ] {
            assert_eq!(
                check(&g, Some("localhost:7070"), Some(origin)),
                Ok(()),
                "{origin}"
            );
        }
    }

    #[test]
    fn rebinding_attempts_are_refused() {
        let g = loopback();
        for host in [
            "evil.example:7070",
            "evil.example",
            "127.0.0.1:7071",
            "127.0.0.1",
            "localhost.evil.example:7070",
            "10.0.0.1:7070",
            "localhost:notaport",
            "[::1",
            "",
        ] {
            assert!(
                matches!(check(&g, Some(host), None), Err(Rejected::Host(..))),
                "{host}"
            );
        }
        assert_eq!(check(&g, None, None), Err(Rejected::NoHost));
        for origin in [
            "http://evil.example",
            "http://evil.example.com:7070",
            "null",
            "file://",
            "http://localhost.evil.example",
            "http://user@localhost:7070",
            "http://localhost:7070/path",
            "ftp://localhost",
        ] {
            assert_eq!(
                check(&g, Some("127.0.0.1:7070"), Some(origin)),
                Err(Rejected::Origin(origin.to_owned())),
                "{origin}"
            );
        }
    }

    #[test]
    fn port_80_may_be_left_out() {
        let g = HostGuard::new("127.0.0.1:80".parse().expect("addr"));
        assert_eq!(check(&g, Some("localhost"), None), Ok(()));
        assert_eq!(check(&g, Some("localhost:80"), None), Ok(()));
    }

    #[test]
    fn a_public_listener_checks_only_that_an_origin_is_its_own() {
        let g = HostGuard::new("0.0.0.0:7070".parse().expect("addr"));
        assert!(!g.loopback());
        assert_eq!(check(&g, Some("relay-1.lan:7070"), None), Ok(()));
        assert_eq!(
            check(
                &g,
                Some("relay-1.lan:7070"),
                Some("https://relay-1.lan:7070")
            ),
            Ok(())
        );
        assert!(check(&g, Some("relay-1.lan:7070"), Some("http://evil.example")).is_err());
        assert!(check(&g, None, Some("http://relay-1.lan:7070")).is_err());
    }
}
