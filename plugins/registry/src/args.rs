//! The Registry's argument types: keys, names, refs and readable text, each checked by its rule
//! (the SDK's `rules`, and here the source names and refs) while the arguments are parsed, so a
//! handler only ever sees valid values and a wrong one is refused, named, before it runs; and
//! the enums of its filters.

use coremcp_plugin_sdk::args::{self, ArgError, ArgType};
use coremcp_plugin_sdk::prelude::*;
use coremcp_plugin_sdk::rules;
use coremcp_store::Param;

use crate::common::{MAX_DESCRIPTION, MAX_NAME};

coremcp_plugin_sdk::checked_string! {
    /// `^[a-z0-9][a-z0-9-]{0,39}$`
    ThemeKey => |at, v| rules::slug(at, v, "theme key", 40, "-", "reliability");
    /// `^[A-Z][A-Z0-9]{1,9}$`
    ProjectKey => rules::project_key;
    /// `^[a-z0-9][a-z0-9._-]*$`, at most 100 characters
    SourceName => source_name;
    /// `^[a-z0-9][a-z0-9-]{0,62}$`
    HostName => |at, v| rules::slug(at, v, "host name", 63, "-", "devbox-1");
    /// `PROJECT/name`
    SourceRef => source_ref;
    /// A display name: readable text of at most 200 characters.
    Name => |at, v| rules::text(at, v, MAX_NAME);
    /// A description: readable text of at most 4000 characters.
    Description => |at, v| rules::text(at, v, MAX_DESCRIPTION);
    /// A branch name git would accept.
    Branch => rules::branch;
    /// A URL or other single token of at most 2000 characters.
    Url => |at, v| rules::token(at, v, crate::common::MAX_URL);
    /// A host address: a DNS name or an IP address.
    Address => rules::address;
    /// An absolute http(s) URL of a Core MCP.
    CoreMcpUrl => rules::http_url;
    /// A Docker endpoint: `unix://`, `npipe://`, `ssh://` or `tcp://`.
    DockerEndpoint => rules::docker_endpoint;
}

fn source_name(field: &str, name: &str) -> Result<(), ToolError> {
    rules::slug(field, name, "source name", 100, "._-", "core-mcp")
}

/// A source ref `PROJECT/name`.
fn source_ref(field: &str, text: &str) -> Result<(), ToolError> {
    let Some((project, name)) = text.split_once('/') else {
        let problem =
            format!("{text:?} is not a source ref: write it PROJECT/name, e.g. CORE/core-mcp");
        return Err(args::invalid(field, problem));
    };
    rules::project_key(field, project)?;
    source_name(field, name)
}

/// The columns' values of the checked strings and the enums.
macro_rules! params {
    ($($name:ident),*; $($enum:ty),*) => {
        $(impl From<&$name> for Param {
            fn from(value: &$name) -> Self {
                value.as_str().into()
            }
        })*
        $(impl From<$enum> for Param {
            fn from(value: $enum) -> Self {
                value.as_str().into()
            }
        })*
    };
}

params!(
    ThemeKey, ProjectKey, SourceName, HostName, SourceRef, Name, Description, Branch, Url,
    Address, CoreMcpUrl, DockerEndpoint; Status, Os, crate::source::Kind
);

impl SourceRef {
    /// The project key and the source name.
    pub fn parts(&self) -> (&str, &str) {
        self.0.split_once('/').unwrap_or((&self.0, ""))
    }

    /// The source's key, as [`crate::source::SOURCE`] looks it up.
    pub fn key(&self) -> [&str; 2] {
        let (project, name) = self.parts();
        [project, name]
    }
}

/// Which records a list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ArgEnum)]
pub enum Shown {
    Active,
    Archived,
    All,
}

impl Shown {
    /// The `status` to filter on; `None` for all.
    pub fn status(self) -> Option<&'static str> {
        (self != Shown::All).then(|| self.as_str())
    }
}

/// A record's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ArgEnum)]
pub enum Status {
    Active,
    Archived,
}

/// One host role: a token of 1–64 characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Role(pub String);

impl ArgType for Role {
    fn schema() -> Value {
        serde_json::json!({"type": "string", "minLength": 1, "maxLength": crate::host::MAX_ROLE})
    }

    fn from_value(value: Value, at: &str) -> Result<Self, ArgError> {
        let text = String::from_value(value, at)?;
        rules::token(at, &text, crate::host::MAX_ROLE).map_err(|e| ArgError::refused(at, e))?;
        Ok(Self(text))
    }
}

/// Which hosts a list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ArgEnum)]
pub enum HostsShown {
    Enabled,
    Disabled,
    All,
}

/// A host's operating system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ArgEnum)]
pub enum Os {
    Linux,
    Windows,
    Macos,
}

#[cfg(test)]
mod tests {
    use coremcp_plugin_sdk::testing::refused;

    const BAD_REFS: [&str; 7] = [
        "CORE",
        "core/x",
        "CORE/",
        "/x",
        "CORE/a/b",
        "CORE/X",
        "CORE/.git",
    ];

    #[test]
    fn refs_and_names() {
        assert!(super::source_ref("source", "CORE/core-mcp").is_ok());
        for bad in BAD_REFS {
            refused(super::source_ref("source", bad), "source");
        }
        for ok in ["core-mcp", "a", "x.y_z-1", "9"] {
            assert!(super::source_name("name", ok).is_ok(), "{ok}");
        }
    }
}
