//! Which Core MCPs the operator trusts with this process's credential (`COREMCP_RELAY_TOKEN`)
//! and with the principal of a call: the relays (`--relay`), the targets of the routes
//! (`--route`, Consul instances included: the operator named the service), and the URLs
//! allowed by `--peer` / `COREMCP_PEERS`.
//!
//! A `remote_host` target comes from a Registry record, which the operator does not write
//! alone; it gets the credential only when its URL is one the operator allowed. Otherwise the
//! call goes without a token and without a principal (the other side then judges it as an
//! anonymous caller, and refuses it if it needs tokens).
//!
//! Invariant: a URL is allowed only when its scheme, host and port equal an allowed entry's
//! and the entry's path is a prefix of its path at a `/` boundary — `http://a:7070` never
//! allows `http://a:70701/` or `http://a:7070.evil/`, and `http://a/mcp` not `http://a/mcpx`;
//! and a path that a server could resolve to another one — a `.` or `..` segment, written
//! plainly or percent-encoded, an encoded `/` or `\` — is allowed by nothing
//! (`http://a/mcp/../evil` is not below `http://a/mcp`).

use coremcp_net::client::Url;

/// The URLs allowed to receive the credential, parsed.
#[derive(Debug, Clone, Default)]
pub struct Peers {
    allowed: Vec<Allowed>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Allowed {
    tls: bool,
    host: String,
    port: u16,
    path: String,
}

impl Allowed {
    fn of(url: &Url) -> Self {
        Self {
            tls: url.tls,
            host: url.host.to_ascii_lowercase(),
            port: url.port,
            path: url
                .path
                .split(['?', '#'])
                .next()
                .unwrap_or_default()
                .trim_end_matches('/')
                .to_owned(),
        }
    }

    fn covers(&self, url: &Url) -> bool {
        let other = Self::of(url);
        !walks(&other.path)
            && self.tls == other.tls
            && self.host == other.host
            && self.port == other.port
            && other
                .path
                .strip_prefix(self.path.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    }
}

/// Whether `path` holds what a server may resolve to another path: a dot segment (plain or
/// percent-encoded), an encoded separator, a backslash.
fn walks(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    if ["%2e", "%2f", "%5c", "\\"]
        .iter()
        .any(|m| lower.contains(m))
    {
        return true;
    }
    path.split('/')
        .any(|segment| segment == "." || segment == "..")
}

impl Peers {
    /// The peers of `entries` (URLs; `consul://` entries are left out: their instances are
    /// trusted as the list they belong to is).
    pub fn new<'a>(entries: impl IntoIterator<Item = &'a str>) -> Result<Self, String> {
        let mut allowed = Vec::new();
        for entry in entries {
            if entry.starts_with("consul://") {
                continue;
            }
            let url = Url::parse(entry).map_err(|e| format!("peer {entry}: {e}"))?;
            allowed.push(Allowed::of(&url));
        }
        Ok(Self { allowed })
    }

    /// Whether `url` may receive the credential and the principal.
    pub fn allows(&self, url: &str) -> bool {
        Url::parse(url).is_ok_and(|url| self.allowed.iter().any(|a| a.covers(&url)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(entries: &[&str], url: &str, expected: bool) {
        let peers = Peers::new(entries.iter().copied()).expect("peers");
        assert_eq!(peers.allows(url), expected, "{entries:?} allows {url}?");
    }

    #[test]
    fn only_the_same_origin_and_a_path_below_is_allowed() {
        let box2 = ["http://10.0.0.2:7070"];
        check(&box2, "http://10.0.0.2:7070/mcp", true);
        check(&box2, "http://10.0.0.2:7070", true);
        check(&box2, "http://10.0.0.2:7070/mcp?x=1", true);
        check(&box2, "http://10.0.0.2:70701/mcp", false);
        check(&box2, "http://10.0.0.2:7071/mcp", false);
        check(&box2, "https://10.0.0.2:7070/mcp", false);
        check(&box2, "http://10.0.0.20:7070/mcp", false);
        check(
            &["http://box.example"],
            "http://box.example.evil:80/mcp",
            false,
        );
        check(&["http://box.example"], "http://box.example:80/mcp", true);
        check(&["http://a/mcp"], "http://a/mcp", true);
        check(&["http://a/mcp/"], "http://a/mcp", true);
        check(&["http://a/mcp"], "http://a/mcpx", false);
        check(&["http://a/mcp"], "http://a/other", false);
        check(&[], "http://a/mcp", false);
        check(&["consul://seele"], "http://seele/mcp", false);
        check(&box2, "not a url", false);
        // Nothing a server could resolve above the allowed path.
        for walk in [
            "http://a/mcp/../evil",
            "http://a/mcp/./x",
            "http://a/mcp/%2e%2e/evil",
            "http://a/mcp/%2E%2e/evil",
            "http://a/mcp/.%2e/evil",
            "http://a/mcp%2f..%2fevil",
            "http://a/mcp/..\\evil",
        ] {
            check(&["http://a/mcp"], walk, false);
        }
        check(&["http://a/mcp"], "http://a/mcp/a..b", true);
        assert!(Peers::new(["box:7070"]).is_err());
    }
}
