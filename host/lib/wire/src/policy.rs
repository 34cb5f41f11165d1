//! One policy for every tool call (ARCHITECTURE.md, "Policy"): who may call what, for the
//! built-in tools and the upstream ones alike.
//!
//! Grants are `;`-separated rules `PRINCIPAL=TARGET,TARGET…`, read from `COREMCP_GRANTS`
//! (`--grants`) and `COREMCP_MCP_GRANTS` (the upstream grants; same grammar):
//!
//! - PRINCIPAL: `stdio` (the client of `coremcp stdio`), the NAME of an HTTP bearer token,
//!   `oauth:SUBJECT` (the principal claim of an OAuth access token: a kind of its own, never
//!   the static token of the same name), `scope:NAME` (every caller whose OAuth access token
//!   carries that scope), or `*` (every principal, and HTTP callers of a listener without
//!   tokens);
//! - TARGET: `mcp__<id>__<tool>` (one upstream tool), `mcp__<id>__*` (every tool of server
//!   `<id>`), or a bare name: in `COREMCP_GRANTS` a catalog group id or built-in tool name
//!   (`git`, `git_push`), else an upstream server id or a group or tool of a plugin outside the
//!   catalog; in `COREMCP_MCP_GRANTS` a bare name is always an upstream server id;
//! - a target written `!TARGET` takes away instead of granting, and wins over any grant.
//!
//! Without a rule naming them: upstream tools are refused to everyone; built-in tools that
//! change the machine they run on (catalog [`Guard`](coremcp_catalog::Guard): `git_push`,
//! `docs_write`, `sql_query` with `read_only: false`, …) are allowed to the stdio client and
//! refused over HTTP; every other built-in tool (reads, the Registry, the forwarded groups) is
//! allowed.
//!
//! Invariants: every classification is an exhaustive `match` with no wildcard arm, so a new
//! kind of principal, target or subject cannot slip through unconsidered; a refusal names the
//! rule that refused or the grant that would allow; a malformed rule is refused at start,
//! naming its variable and number.

use coremcp_catalog::Guarded;

/// Who is calling. Each kind of principal is its own namespace: a static token named `alice`,
/// the OAuth subject `alice` and the stdio client never stand for one another, whatever their
/// names ([`Caller::principal`] keeps them apart in text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// The client of a `coremcp stdio` session.
    Stdio,
    /// An HTTP caller, by the name of its bearer token.
    Token(String),
    /// An HTTP caller by an OAuth access token: its issuer, its principal claim (the subject,
    /// unless `--oauth-principal-claim` names another), and its scopes.
    Signed {
        issuer: std::sync::Arc<str>,
        name: String,
        scopes: Vec<String>,
    },
    /// An HTTP caller on a listener without tokens (loopback only).
    Anonymous,
}

/// The prefix of an OAuth subject as grants and `--operator`/`--peer-token` write it.
pub const OAUTH_PREFIX: &str = "oauth:";

impl Caller {
    /// The principal as grants name it: `stdio`, the token's NAME, `oauth:SUBJECT`, or `*`
    /// (no token). Distinct kinds never share a text.
    pub fn principal(&self) -> String {
        match self {
            Caller::Stdio => "stdio".to_owned(),
            Caller::Token(name) => name.clone(),
            Caller::Signed { name, .. } => format!("{OAUTH_PREFIX}{name}"),
            Caller::Anonymous => "*".to_owned(),
        }
    }

    /// The caller in a sentence.
    pub fn described(&self) -> String {
        match self {
            Caller::Stdio => "the stdio client".to_owned(),
            Caller::Token(name) => format!("the token \"{name}\""),
            Caller::Signed { name, .. } => format!("the OAuth principal \"{name}\""),
            Caller::Anonymous => "HTTP callers without a token".to_owned(),
        }
    }

    /// Whether this caller is the one `key` names, as [`Caller::principal`] writes it (a
    /// configured peer or operator): same kind, same name.
    pub fn is(&self, key: &str) -> bool {
        match self {
            Caller::Stdio => key == "stdio",
            Caller::Token(name) => key == name,
            Caller::Signed { name, .. } => key
                .strip_prefix(OAUTH_PREFIX)
                .is_some_and(|subject| subject == name),
            Caller::Anonymous => key == "*",
        }
    }
}

/// What a call is a call of.
#[derive(Debug, Clone, Copy)]
pub enum Subject<'a> {
    /// Tool `tool` of upstream server `server`, published as `full` (`mcp__<id>__<tool>`).
    Upstream {
        server: &'a str,
        tool: &'a str,
        full: &'a str,
    },
    /// A built-in tool of group `group`; `guard`: what this call does that needs a grant over
    /// HTTP (its catalog guard said so for these arguments), wherever it runs.
    BuiltIn {
        group: &'a str,
        tool: &'a str,
        guard: Option<Guarded>,
    },
}

/// What the policy says about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Refused, with the text the model sees.
    Refuse(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Principal {
    Stdio,
    /// A bare NAME: a static token's.
    Token(String),
    /// `oauth:NAME`: an OAuth subject.
    OAuth(String),
    /// `scope:NAME`.
    Scope(String),
    Everyone,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// Every tool of an upstream server.
    Server(String),
    /// One upstream tool.
    UpstreamTool { server: String, tool: String },
    /// Every tool of a catalog group.
    Group(&'static str),
    /// One catalog tool.
    Tool(&'static str),
    /// A bare name outside the catalog: an upstream server, or a group or tool of a plugin
    /// outside the catalog, whichever has that name.
    Named(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Grant {
    /// `!TARGET`: takes away.
    deny: bool,
    target: Target,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    principal: Principal,
    grants: Vec<Grant>,
    /// `COREMCP_GRANTS rule 2 ("ci=git_push")`, for refusals.
    origin: String,
}

/// The names of the two variables rules come from, as errors and refusals name them (the
/// binary's configuration module holds every variable's name). The default names the flag,
/// which is what a refusal advises when no rule was given at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vars {
    /// Grants for every kind of tool.
    pub grants: &'static str,
    /// Grants for upstream tools (a bare target is a server id).
    pub mcp_grants: &'static str,
}

impl Default for Vars {
    fn default() -> Self {
        Self {
            grants: "--grants",
            mcp_grants: "--grants",
        }
    }
}

/// The parsed grants of both variables.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    rules: Vec<Rule>,
    vars: Vars,
}

/// Which variable a rule came from: it decides what a bare target names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Grants,
    McpGrants,
}

impl Source {
    fn var(self, vars: Vars) -> &'static str {
        match self {
            Source::Grants => vars.grants,
            Source::McpGrants => vars.mcp_grants,
        }
    }
}

impl Grants {
    /// Parses the rules of the variable `vars.grants` (`grants`) and of `vars.mcp_grants`
    /// (`mcp_grants`); `None`, empty and `none` grant nothing.
    pub fn parse(
        vars: Vars,
        grants: Option<&str>,
        mcp_grants: Option<&str>,
    ) -> Result<Self, String> {
        let mut rules = parse_rules(vars, Source::Grants, grants)?;
        rules.extend(parse_rules(vars, Source::McpGrants, mcp_grants)?);
        Ok(Self { rules, vars })
    }

    /// Whether `caller` may make this call, and why not.
    pub fn decide(&self, caller: &Caller, subject: Subject<'_>) -> Decision {
        let mine = || self.rules.iter().filter(|r| applies(&r.principal, caller));
        if let Some(rule) = mine().find(|r| r.grants.iter().any(|g| g.deny && covers(g, subject))) {
            return Decision::Refuse(format!(
                "{} is refused to {} by {}",
                subject.name(),
                caller.described(),
                rule.origin
            ));
        }
        if mine().any(|r| r.grants.iter().any(|g| !g.deny && covers(g, subject))) {
            return Decision::Allow;
        }
        match (subject, caller) {
            (Subject::Upstream { server, full, .. }, _) => {
                Decision::Refuse(not_granted_upstream(caller, server, full))
            }
            (
                Subject::BuiltIn { guard: None, .. },
                Caller::Stdio | Caller::Token(_) | Caller::Signed { .. } | Caller::Anonymous,
            ) => Decision::Allow,
            (Subject::BuiltIn { guard: Some(_), .. }, Caller::Stdio) => Decision::Allow,
            (
                Subject::BuiltIn {
                    group,
                    tool,
                    guard: Some(guarded),
                },
                Caller::Token(_) | Caller::Signed { .. } | Caller::Anonymous,
            ) => {
                let what = match guarded {
                    Guarded::ChangesMachine => {
                        "called over HTTP it changes this machine".to_owned()
                    }
                    Guarded::Steers(names) => {
                        return Decision::Refuse(format!(
                            "{tool} with {} is refused to {}: it writes a record that steers \
                             where code, credentials or calls go, and over HTTP only a grant \
                             that names the tool itself allows that (a grant of its group does \
                             not). To allow it, start coremcp with {}=\"{p}={tool}\", or \
                             --grants.",
                            names.join(" or "),
                            caller.described(),
                            self.vars.grants,
                            p = caller.principal(),
                        ))
                    }
                    Guarded::Escalates(escalation) => {
                        return Decision::Refuse(format!(
                            "{tool} with {}: true is refused to {}: {}, and over HTTP only a \
                             grant that names the tool itself allows that (a grant of its group \
                             does not). To allow it, start coremcp with {}=\"{p}={tool}\", or \
                             --grants.",
                            escalation.argument,
                            caller.described(),
                            escalation.hands_over,
                            self.vars.grants,
                            p = caller.principal(),
                        ))
                    }
                };
                Decision::Refuse(format!(
                    "{tool} is refused to {}: {what}, and no grant names it. To allow it, start \
                     coremcp with {}=\"{p}={tool}\" (this tool) or {}=\"{p}={group}\" (its \
                     group), or --grants.",
                    caller.described(),
                    self.vars.grants,
                    self.vars.grants,
                    p = caller.principal(),
                ))
            }
        }
    }

    /// Whether a `!` rule takes built-in `tool` (of `group`) away from `caller`: such a tool is
    /// not listed to it.
    pub fn takes_away(&self, caller: &Caller, group: &str, tool: &str) -> bool {
        let subject = Subject::BuiltIn {
            group,
            tool,
            guard: None,
        };
        matches!(self.decide(caller, subject), Decision::Refuse(_))
    }

    /// The bare names rules give that are neither a catalog group or tool nor one of
    /// `servers` (the configured upstream ids), with the rule each is in: likely typos (a
    /// plugin outside the catalog may still have the name).
    pub fn unknown_names(&self, servers: &[&str]) -> Vec<(String, String)> {
        let mut unknown = Vec::new();
        for rule in &self.rules {
            for grant in &rule.grants {
                match &grant.target {
                    Target::Named(name) if !servers.contains(&name.as_str()) => {
                        unknown.push((rule.origin.clone(), name.clone()));
                    }
                    Target::Named(_)
                    | Target::Server(_)
                    | Target::UpstreamTool { .. }
                    | Target::Group(_)
                    | Target::Tool(_) => {}
                }
            }
        }
        unknown
    }

    /// The bare names the rules give as principals (static token names), with the rule each
    /// is in, for the start's check that no kind stands for another.
    pub fn token_principals(&self) -> Vec<(String, String)> {
        self.rules
            .iter()
            .filter_map(|r| match &r.principal {
                Principal::Token(name) => Some((r.origin.clone(), name.clone())),
                Principal::Stdio
                | Principal::OAuth(_)
                | Principal::Scope(_)
                | Principal::Everyone => None,
            })
            .collect()
    }

    /// Whether `caller` may call `tool` of upstream server `server`.
    pub fn allows(&self, caller: &Caller, server: &str, tool: &str) -> bool {
        let full = format!("mcp__{server}__{tool}");
        let subject = Subject::Upstream {
            server,
            tool,
            full: &full,
        };
        matches!(self.decide(caller, subject), Decision::Allow)
    }

    /// Who is granted `tool` of upstream server `server`, for reports: `*`, `stdio` and token
    /// names (a principal a `!` rule refuses is left out).
    pub fn granted_to(&self, server: &str, tool: &str) -> Vec<String> {
        let full = format!("mcp__{server}__{tool}");
        let subject = Subject::Upstream {
            server,
            tool,
            full: &full,
        };
        let mut who: Vec<String> = Vec::new();
        for rule in &self.rules {
            if !rule.grants.iter().any(|g| !g.deny && covers(g, subject)) {
                continue;
            }
            let (name, caller) = match &rule.principal {
                Principal::Stdio => ("stdio".to_owned(), Caller::Stdio),
                Principal::Token(name) => (name.clone(), Caller::Token(name.clone())),
                Principal::OAuth(name) => {
                    let caller = Caller::Signed {
                        issuer: std::sync::Arc::from(""),
                        name: name.clone(),
                        scopes: Vec::new(),
                    };
                    (caller.principal(), caller)
                }
                Principal::Scope(scope) => (
                    format!("scope:{scope}"),
                    Caller::Signed {
                        issuer: std::sync::Arc::from(""),
                        name: String::new(),
                        scopes: vec![scope.clone()],
                    },
                ),
                Principal::Everyone => ("*".to_owned(), Caller::Anonymous),
            };
            if !who.contains(&name) && matches!(self.decide(&caller, subject), Decision::Allow) {
                who.push(name);
            }
        }
        who
    }
}

impl Subject<'_> {
    fn name(&self) -> &str {
        match self {
            Subject::Upstream { full, .. } => full,
            Subject::BuiltIn { tool, .. } => tool,
        }
    }
}

fn parse_rules(vars: Vars, source: Source, text: Option<&str>) -> Result<Vec<Rule>, String> {
    let text = text.map(str::trim).unwrap_or("");
    if text.is_empty() || text == "none" {
        return Ok(Vec::new());
    }
    let mut rules = Vec::new();
    for (n, rule) in text.split(';').map(str::trim).enumerate() {
        if rule.is_empty() {
            continue;
        }
        let origin = format!("{} rule {} (\"{rule}\")", source.var(vars), n + 1);
        let (who, what) = rule
            .split_once('=')
            .ok_or_else(|| format!("{origin}: expected PRINCIPAL=TARGET[,TARGET…]"))?;
        let principal = match who.trim() {
            "" => return Err(format!("{origin}: no principal before \"=\"")),
            "*" => Principal::Everyone,
            "stdio" => Principal::Stdio,
            signed if signed.starts_with(OAUTH_PREFIX) => {
                let subject = &signed[OAUTH_PREFIX.len()..];
                if !is_principal_name(subject) || subject == "*" {
                    return Err(format!(
                        "{origin}: \"{subject}\" is not an OAuth subject as grants name one \
                         (letters, digits, _ - .)"
                    ));
                }
                Principal::OAuth(subject.to_owned())
            }
            scoped if scoped.starts_with("scope:") => {
                let scope = &scoped["scope:".len()..];
                if !is_scope(scope) {
                    return Err(format!(
                        "{origin}: \"{scope}\" is not a scope (visible characters, no \
                         ; , = or \\)"
                    ));
                }
                Principal::Scope(scope.to_owned())
            }
            name if is_principal_name(name) => Principal::Token(name.to_owned()),
            name => {
                return Err(format!(
                    "{origin}: \"{name}\" is not a principal (stdio, *, a token name of \
                     letters, digits, _ - ., oauth:SUBJECT or scope:NAME)"
                ))
            }
        };
        let grants = what
            .split(',')
            .map(str::trim)
            .map(|t| grant(source, t).map_err(|e| format!("{origin}: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        rules.push(Rule {
            principal,
            grants,
            origin,
        });
    }
    Ok(rules)
}

/// Whether `scope` may be named in a grant: an OAuth scope token (RFC 6749 §3.3) without the
/// characters the grants grammar separates with.
pub fn is_scope(scope: &str) -> bool {
    !scope.is_empty()
        && scope
            .chars()
            .all(|c| c.is_ascii_graphic() && !matches!(c, '"' | '\\' | ';' | ',' | '='))
}

/// Whether `name` is a principal as grants write it: `stdio`, `*`, or a token name (letters,
/// digits, `_`, `-`, `.`; at most 255 characters).
pub fn is_principal_name(name: &str) -> bool {
    name == "*"
        || (!name.is_empty()
            && name.len() <= 255
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
}

fn applies(principal: &Principal, caller: &Caller) -> bool {
    match (principal, caller) {
        (
            Principal::Everyone,
            Caller::Stdio | Caller::Token(_) | Caller::Signed { .. } | Caller::Anonymous,
        ) => true,
        (Principal::Stdio, Caller::Stdio) => true,
        (Principal::Stdio, Caller::Token(_) | Caller::Signed { .. } | Caller::Anonymous) => false,
        // A bare name is a static token's, and only a static token's.
        (Principal::Token(name), Caller::Token(caller)) => name == caller,
        (Principal::Token(_), Caller::Stdio | Caller::Signed { .. } | Caller::Anonymous) => false,
        (Principal::OAuth(subject), Caller::Signed { name, .. }) => subject == name,
        (Principal::OAuth(_), Caller::Stdio | Caller::Token(_) | Caller::Anonymous) => false,
        (Principal::Scope(scope), Caller::Signed { scopes, .. }) => scopes.contains(scope),
        (Principal::Scope(_), Caller::Stdio | Caller::Token(_) | Caller::Anonymous) => false,
    }
}

fn covers(grant: &Grant, subject: Subject<'_>) -> bool {
    match (&grant.target, subject) {
        (Target::Server(id), Subject::Upstream { server, .. }) => id == server,
        (
            Target::UpstreamTool {
                server: id,
                tool: t,
            },
            Subject::Upstream { server, tool, .. },
        ) => id == server && t == tool,
        (Target::Named(name), Subject::Upstream { server, .. }) => name == server,
        (Target::Group(_) | Target::Tool(_), Subject::Upstream { .. }) => false,
        // Handing over the whole host, or writing where code, credentials and calls go, is
        // granted by naming the tool, never by its group.
        (
            Target::Group(_),
            Subject::BuiltIn {
                guard: Some(Guarded::Escalates(_) | Guarded::Steers(_)),
                ..
            },
        ) => false,
        (
            Target::Group(id),
            Subject::BuiltIn {
                group,
                guard: None | Some(Guarded::ChangesMachine),
                ..
            },
        ) => *id == group,
        (Target::Tool(name), Subject::BuiltIn { tool, .. }) => *name == tool,
        // A bare name outside the catalog: a third-party group, or one of its tools.
        (Target::Named(name), Subject::BuiltIn { group, tool, guard }) => match guard {
            Some(Guarded::Escalates(_) | Guarded::Steers(_)) => name == tool,
            None | Some(Guarded::ChangesMachine) => name == group || name == tool,
        },
        (Target::Server(_) | Target::UpstreamTool { .. }, Subject::BuiltIn { .. }) => false,
    }
}

fn grant(source: Source, text: &str) -> Result<Grant, String> {
    let (deny, text) = match text.strip_prefix('!') {
        Some(rest) => (true, rest.trim()),
        None => (false, text),
    };
    Ok(Grant {
        deny,
        target: target(source, text)?,
    })
}

fn target(source: Source, text: &str) -> Result<Target, String> {
    if text.is_empty() {
        return Err("an empty target".to_owned());
    }
    if let Some(rest) = text.strip_prefix("mcp__") {
        let (server, tool) = rest.split_once("__").ok_or_else(|| {
            format!("\"{text}\" is not mcp__<server>__<tool> or mcp__<server>__*")
        })?;
        crate::names::check_id(server)?;
        return match tool {
            "" => Err(format!("\"{text}\" names no tool (use mcp__{server}__*)")),
            "*" => Ok(Target::Server(server.to_owned())),
            tool => Ok(Target::UpstreamTool {
                server: server.to_owned(),
                tool: tool.to_owned(),
            }),
        };
    }
    match source {
        Source::McpGrants => {
            crate::names::check_id(text)?;
            Ok(Target::Server(text.to_owned()))
        }
        Source::Grants => {
            if let Some(group) = coremcp_catalog::group(text) {
                return Ok(Target::Group(group.id));
            }
            if let Some((_, entry)) = coremcp_catalog::find(text) {
                return Ok(Target::Tool(entry.name));
            }
            let name_like = text.len() <= 64
                && text.starts_with(|c: char| c.is_ascii_alphanumeric())
                && text
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
            if name_like {
                Ok(Target::Named(text.to_owned()))
            } else {
                Err(format!(
                    "\"{text}\" is not a target (a group, a tool name, an upstream server id, \
                     mcp__<server>__<tool> or mcp__<server>__*, optionally after \"!\")"
                ))
            }
        }
    }
}

/// The refusal for an upstream tool no grant names, with the grant that would allow it.
fn not_granted_upstream(caller: &Caller, id: &str, full: &str) -> String {
    let principal = caller.principal();
    format!(
        "{full} is not granted to {}: upstream MCP tools are default deny. To allow it, start \
         coremcp with COREMCP_MCP_GRANTS=\"{principal}={id}\" (every tool of \"{id}\") or \
         COREMCP_MCP_GRANTS=\"{principal}={full}\" (this tool).",
        caller.described()
    )
}

#[cfg(test)]
mod tests;
