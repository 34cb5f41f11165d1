//! Who may call which upstream tool (DESIGN §6): default deny. `COREMCP_MCP_GRANTS` is `none`
//! (the default) or `;`-separated rules `PRINCIPAL=TARGET,TARGET…`:
//!
//! - PRINCIPAL: `stdio` (the client of `coremcp stdio`), the NAME of an HTTP bearer token, or
//!   `*` (every principal);
//! - TARGET: a server id (all its tools), `mcp__<id>__<tool>` (one tool), or `mcp__<id>__*`
//!   (all tools of that server, spelt as a pattern).
//!
//! Invariants: nothing is granted unless a rule names it; every classification is an
//! exhaustive `match` with no wildcard arm, so a new kind of principal or target cannot slip
//! through unconsidered; a malformed rule is refused at start, naming it.

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// The client of a `coremcp stdio` session.
    Stdio,
    /// An HTTP caller, by the name of its bearer token.
    Token(String),
    /// An HTTP caller on a listener without tokens (loopback only).
    Anonymous,
}

impl Caller {
    /// The principal as grants name it: `stdio`, the token's NAME, or `*` (no token).
    pub fn principal(&self) -> String {
        match self {
            Caller::Stdio => "stdio".to_owned(),
            Caller::Token(name) => name.clone(),
            Caller::Anonymous => "*".to_owned(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Principal {
    Stdio,
    Token(String),
    Everyone,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// Every tool of the server.
    Server(String),
    /// One tool.
    Tool { server: String, tool: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    principal: Principal,
    targets: Vec<Target>,
}

/// The parsed grants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    rules: Vec<Rule>,
}

impl Grants {
    /// Parses the variable's value (`None`, empty and `none` grant nothing).
    pub fn parse(text: Option<&str>) -> Result<Self, String> {
        let text = text.map(str::trim).unwrap_or("");
        if text.is_empty() || text == "none" {
            return Ok(Self::default());
        }
        let mut rules = Vec::new();
        for (n, rule) in text.split(';').map(str::trim).enumerate() {
            if rule.is_empty() {
                continue;
            }
            let at = format!("COREMCP_MCP_GRANTS rule {} (\"{rule}\")", n + 1);
            let (who, what) = rule
                .split_once('=')
                .ok_or_else(|| format!("{at}: expected PRINCIPAL=TARGET[,TARGET…]"))?;
            let principal = match who.trim() {
                "" => return Err(format!("{at}: no principal before \"=\"")),
                "*" => Principal::Everyone,
                "stdio" => Principal::Stdio,
                name if name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')) =>
                {
                    Principal::Token(name.to_owned())
                }
                name => {
                    return Err(format!(
                        "{at}: \"{name}\" is not a principal (stdio, *, or a token name of \
                         letters, digits, _ - .)"
                    ))
                }
            };
            let targets = what
                .split(',')
                .map(str::trim)
                .map(|t| target(t).map_err(|e| format!("{at}: {e}")))
                .collect::<Result<Vec<_>, _>>()?;
            rules.push(Rule { principal, targets });
        }
        Ok(Self { rules })
    }

    /// Whether `caller` may call `tool` of `server`.
    pub fn allows(&self, caller: &Caller, server: &str, tool: &str) -> bool {
        self.rules
            .iter()
            .any(|rule| applies(&rule.principal, caller) && covers(&rule.targets, server, tool))
    }

    /// Who may call `tool` of `server`, for reports: `*`, `stdio` and token names.
    pub fn granted_to(&self, server: &str, tool: &str) -> Vec<String> {
        let mut who: Vec<String> = Vec::new();
        for rule in &self.rules {
            if !covers(&rule.targets, server, tool) {
                continue;
            }
            let name = match &rule.principal {
                Principal::Stdio => "stdio".to_owned(),
                Principal::Token(name) => name.clone(),
                Principal::Everyone => "*".to_owned(),
            };
            if !who.contains(&name) {
                who.push(name);
            }
        }
        who
    }
}

fn applies(principal: &Principal, caller: &Caller) -> bool {
    match (principal, caller) {
        (Principal::Everyone, Caller::Stdio | Caller::Token(_) | Caller::Anonymous) => true,
        (Principal::Stdio, Caller::Stdio) => true,
        (Principal::Stdio, Caller::Token(_) | Caller::Anonymous) => false,
        (Principal::Token(name), Caller::Token(caller)) => name == caller,
        (Principal::Token(_), Caller::Stdio | Caller::Anonymous) => false,
    }
}

fn covers(targets: &[Target], server: &str, tool: &str) -> bool {
    targets.iter().any(|target| match target {
        Target::Server(id) => id == server,
        Target::Tool {
            server: id,
            tool: name,
        } => id == server && name == tool,
    })
}

fn target(text: &str) -> Result<Target, String> {
    if text.is_empty() {
        return Err("an empty target".to_owned());
    }
    match text.strip_prefix("mcp__") {
        Some(rest) => {
            let (server, tool) = rest.split_once("__").ok_or_else(|| {
                format!("\"{text}\" is not mcp__<server>__<tool> or mcp__<server>__*")
            })?;
            super::config::check_id(server)?;
            match tool {
                "" => Err(format!("\"{text}\" names no tool (use mcp__{server}__*)")),
                "*" => Ok(Target::Server(server.to_owned())),
                tool => Ok(Target::Tool {
                    server: server.to_owned(),
                    tool: tool.to_owned(),
                }),
            }
        }
        None => {
            super::config::check_id(text)?;
            Ok(Target::Server(text.to_owned()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_granted_by_default() {
        for text in [None, Some(""), Some("none"), Some("  none ")] {
            let grants = Grants::parse(text).expect("none");
            assert!(!grants.allows(&Caller::Stdio, "everything", "echo"));
            assert!(grants.granted_to("everything", "echo").is_empty());
        }
    }

    #[test]
    fn rules_grant_servers_and_single_tools_to_principals() {
        let grants = Grants::parse(Some(
            "stdio=everything, mcp__time__get_current_time; ci-bot=mcp__time__*; *=mcp__docs__search",
        ))
        .expect("grants");
        assert!(grants.allows(&Caller::Stdio, "everything", "echo"));
        assert!(grants.allows(&Caller::Stdio, "time", "get_current_time"));
        assert!(!grants.allows(&Caller::Stdio, "time", "convert_time"));
        assert!(grants.allows(&Caller::Token("ci-bot".into()), "time", "convert_time"));
        assert!(!grants.allows(&Caller::Token("ci-bot".into()), "everything", "echo"));
        assert!(!grants.allows(&Caller::Token("other".into()), "time", "convert_time"));
        assert!(!grants.allows(&Caller::Anonymous, "everything", "echo"));
        for caller in [Caller::Stdio, Caller::Anonymous, Caller::Token("x".into())] {
            assert!(grants.allows(&caller, "docs", "search"));
        }
        assert_eq!(
            grants.granted_to("time", "get_current_time"),
            ["stdio", "ci-bot"]
        );
        assert_eq!(grants.granted_to("docs", "search"), ["*"]);
    }

    #[test]
    fn malformed_rules_are_refused_by_number() {
        let cases = [
            ("stdio", "rule 1 (\"stdio\"): expected PRINCIPAL=TARGET"),
            ("=x", "no principal"),
            ("a b=x", "is not a principal"),
            ("stdio=my_server", "\"__\" separates"),
            ("stdio=x;stdio=mcp__x", "rule 2"),
            ("stdio=mcp__x__", "names no tool"),
            ("stdio=x,", "an empty target"),
        ];
        for (text, needle) in cases {
            let err = Grants::parse(Some(text)).expect_err(text);
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}
