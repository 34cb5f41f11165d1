//! Who a call is made for, as the host knows it: the principal (a token's name; `stdio` for
//! this machine's own user) and the client's name ("name version", as the client introduced
//! itself; for a call a configured peer passed on, the client it carried). Records that say
//! who wrote them (`updated_by`, `created_by`, an activity's actor) take it from here, so a
//! write made through a relay or `remote_host` names the agent, not the Core MCP between.
//!
//! Invariants: it comes from the host's `caller` operation, which believes a carried principal
//! or client only from configured peers; a principal that stands for no person (`stdio`, `*`,
//! a peer's own token) is not shown as one.

use serde_json::{json, Value};

/// The caller of the running call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    /// A token's principal that stands for a person.
    pub principal: Option<String>,
    /// The client as it introduced itself ("name version").
    pub client: Option<String>,
}

impl Caller {
    /// The caller of the running call; `None` outside a host (a plugin's own tests).
    pub fn of_call() -> Option<Self> {
        crate::host_call("caller", &json!({}))
            .ok()
            .map(|answer| Self::from_answer(&answer))
            .or_else(|| {
                // A host without the `caller` operation: this session's client.
                let client = crate::config("client").filter(|c| !c.is_empty())?;
                Some(Self {
                    principal: None,
                    client: Some(client),
                })
            })
    }

    /// The caller the host's `caller` answer describes.
    pub fn from_answer(answer: &Value) -> Self {
        let principal = answer["principal"]
            .as_str()
            .filter(|p| !matches!(*p, "stdio" | "*") && answer["peer"] != true)
            .map(str::to_owned);
        let client = answer["client"]
            .as_str()
            .filter(|c| !c.is_empty())
            .map(str::to_owned);
        Self { principal, client }
    }

    /// The client's name without its version ("claude-code" of "claude-code 2.1.3").
    pub fn client_name(&self) -> Option<&str> {
        self.client.as_deref().map(|c| match c.rsplit_once(' ') {
            Some((name, version)) if version.starts_with(|v: char| v.is_ascii_digit()) => name,
            _ => c,
        })
    }

    /// Who, for a record's `updated_by`: "principal (client)", or whichever is known.
    pub fn who(&self) -> Option<String> {
        match (&self.principal, &self.client) {
            (Some(p), Some(c)) => Some(format!("{p} ({c})")),
            (Some(one), None) | (None, Some(one)) => Some(one.clone()),
            (None, None) => None,
        }
    }
}

/// [`Caller::who`] of the running call.
pub fn who() -> Option<String> {
    Caller::of_call().and_then(|c| c.who())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_is_its_person_and_its_client() {
        let of = |v: Value| Caller::from_answer(&v);
        let both = of(json!({"principal": "alice", "client": "claude-code 2.1.3"}));
        assert_eq!(both.who().as_deref(), Some("alice (claude-code 2.1.3)"));
        assert_eq!(both.client_name(), Some("claude-code"));
        // This machine's own user, anyone, and a peer's own token stand for no person.
        for principal in ["stdio", "*"] {
            let c = of(json!({"principal": principal, "client": "codex 0.1"}));
            assert_eq!(c.who().as_deref(), Some("codex 0.1"), "{principal}");
        }
        let peer = of(json!({"principal": "relay", "peer": true, "client": "opencode"}));
        assert_eq!(peer.who().as_deref(), Some("opencode"));
        assert_eq!(peer.client_name(), Some("opencode"));
        assert_eq!(
            of(json!({"principal": "bob"})).who().as_deref(),
            Some("bob")
        );
        assert_eq!(of(json!({})).who(), None);
        // A name that ends in a word, not a version, is kept whole.
        let named = of(json!({"client": "my agent"}));
        assert_eq!(named.client_name(), Some("my agent"));
    }
}
