//! The policy's tables: principal × tool → decision, and the rules' grammar.

use super::*;

/// The names the binary gives, so messages read as users see them.
const VARS: Vars = Vars {
    grants: "COREMCP_GRANTS",
    mcp_grants: "COREMCP_MCP_GRANTS",
};

fn upstream<'a>(server: &'a str, tool: &'a str, full: &'a str) -> Subject<'a> {
    Subject::Upstream { server, tool, full }
}

/// A built-in catalog tool, with its guard applied to `args`.
fn built_in<'a>(tool: &'a str, args: &str) -> Subject<'a> {
    let (group, entry) = coremcp_catalog::find(tool).expect("a catalog tool");
    let args: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(args).expect("object");
    Subject::BuiltIn {
        group: group.id,
        tool,
        guard: entry.guarded(&args),
    }
}

fn token(name: &str) -> Caller {
    Caller::Token(name.to_owned())
}

#[test]
fn the_default_table_of_principal_by_tool() {
    let none = Grants::parse(VARS, None, None).expect("no rules");
    let callers = [Caller::Stdio, token("ci"), Caller::Anonymous];
    // (tool, arguments, [stdio, token, anonymous]) — true: allowed.
    let table: &[(&str, &str, [bool; 3])] = &[
        ("git_status", "{}", [true, true, true]),
        ("git_add", "{}", [true, false, false]),
        ("git_commit", "{}", [true, false, false]),
        ("git_push", "{}", [true, false, false]),
        ("docs_read", "{}", [true, true, true]),
        ("docs_write", "{}", [true, false, false]),
        ("sql_query", "{}", [true, true, true]),
        ("sql_query", r#"{"read_only":true}"#, [true, true, true]),
        ("sql_query", r#"{"read_only":false}"#, [true, false, false]),
        ("shell_run", "{}", [true, false, false]),
        ("bootstrap", "{}", [true, false, false]),
        ("repo_setup", "{}", [true, false, false]),
        ("docker_container_list", "{}", [true, true, true]),
        ("docker_container_action", "{}", [true, false, false]),
        ("docker_compose", r#"{"action":"ps"}"#, [true, true, true]),
        (
            "docker_compose",
            r#"{"action":"down"}"#,
            [true, false, false],
        ),
        // The Registry and the forwarded groups keep serving relays' callers, but where calls
        // and Docker requests go is written over HTTP only with a grant.
        (
            "registry_host_add",
            r#"{"name":"a","address":"10.0.0.2"}"#,
            [true, true, true],
        ),
        (
            "registry_host_add",
            r#"{"name":"a","core_mcp_url":"http://a/mcp"}"#,
            [true, false, false],
        ),
        (
            "registry_host_update",
            r#"{"name":"a","docker_endpoint":"tcp://a:2375"}"#,
            [true, false, false],
        ),
        (
            "registry_host_update",
            r#"{"name":"a","status":"enabled"}"#,
            [true, true, true],
        ),
        ("notepad_delete", "{}", [true, true, true]),
        ("scrolls_task_delete", "{}", [true, true, true]),
        ("publishing", "{}", [true, true, true]),
    ];
    for (tool, args, expected) in table {
        for (caller, allowed) in callers.iter().zip(expected) {
            let decision = none.decide(caller, built_in(tool, args));
            assert_eq!(
                decision == Decision::Allow,
                *allowed,
                "{caller:?} × {tool} {args}: {decision:?}"
            );
        }
    }
    for caller in &callers {
        let decision = none.decide(caller, upstream("time", "now", "mcp__time__now"));
        assert!(matches!(decision, Decision::Refuse(_)), "{caller:?}");
    }
}

#[test]
fn a_host_address_written_over_http_needs_a_grant_that_names_it() {
    let args = r#"{"name":"evil","core_mcp_url":"http://127.0.0.1:9/mcp"}"#;
    let Decision::Refuse(text) = Grants::parse(VARS, None, None)
        .expect("no rules")
        .decide(&token("bob"), built_in("registry_host_add", args))
    else {
        panic!("a host address over HTTP must need a grant");
    };
    assert!(
        text.contains("with core_mcp_url or docker_endpoint is refused")
            && text.contains("steers where code, credentials or calls go")
            && text.contains("COREMCP_GRANTS=\"bob=registry_host_add\""),
        "{text}"
    );
    let grants = Grants::parse(VARS, Some("ops=registry_host_add"), None).expect("grants");
    assert_eq!(
        grants.decide(&token("ops"), built_in("registry_host_add", args)),
        Decision::Allow
    );
}

#[test]
fn every_field_that_steers_needs_a_grant_naming_the_tool_and_never_the_groups() {
    let group = Grants::parse(VARS, Some("ops=registry"), None).expect("grants");
    let named = Grants::parse(
        VARS,
        Some("ops=registry_source_add,registry_source_update,registry_project_update"),
        None,
    )
    .expect("grants");
    for (tool, args) in [
        (
            "registry_source_add",
            r#"{"project":"CORE","name":"x","kind":"git","url":"https://evil.example/x.git"}"#,
        ),
        (
            "registry_source_update",
            r#"{"source":"CORE/x","url":"https://evil.example/x.git"}"#,
        ),
        (
            "registry_source_update",
            r#"{"source":"CORE/x","checkout_host":"h","checkout_path":"/srv/other"}"#,
        ),
        (
            "registry_source_update",
            r#"{"source":"CORE/x","checkout_host":"h","checkout_path":"/p","checkout_url":"u"}"#,
        ),
        (
            "registry_project_update",
            r#"{"key":"CORE","docs_source":"CORE/other-docs"}"#,
        ),
    ] {
        for grants in [&Grants::parse(VARS, None, None).expect("no rules"), &group] {
            let decision = grants.decide(&token("ops"), built_in(tool, args));
            let Decision::Refuse(text) = decision else {
                panic!("{tool} {args} needs a grant naming it");
            };
            assert!(text.contains("steers"), "{text}");
        }
        assert_eq!(
            named.decide(&token("ops"), built_in(tool, args)),
            Decision::Allow,
            "{tool} {args}"
        );
        assert_eq!(
            Grants::parse(VARS, None, None)
                .expect("no rules")
                .decide(&Caller::Stdio, built_in(tool, args)),
            Decision::Allow,
            "the stdio client: {tool}"
        );
    }
    // The same tools, writing nothing that steers, are the Registry's plain writes.
    for (tool, args) in [
        (
            "registry_source_update",
            r#"{"source":"CORE/x","description":"d"}"#,
        ),
        ("registry_project_update", r#"{"key":"CORE","name":"Core"}"#),
    ] {
        assert_eq!(
            Grants::parse(VARS, None, None)
                .expect("no rules")
                .decide(&token("ops"), built_in(tool, args)),
            Decision::Allow,
            "{tool} {args}"
        );
    }
}

#[test]
fn handing_over_the_host_needs_a_grant_that_names_the_tool() {
    let up = r#"{"action":"up","allow_host_access":true}"#;
    let group = Grants::parse(VARS, Some("ops=docker"), None).expect("grants");
    assert_eq!(
        group.decide(
            &token("ops"),
            built_in("docker_compose", r#"{"action":"up"}"#)
        ),
        Decision::Allow
    );
    let Decision::Refuse(text) = group.decide(&token("ops"), built_in("docker_compose", up)) else {
        panic!("a group grant must not hand over the host");
    };
    assert!(
        text.contains("only a grant that names the tool itself")
            && text.contains("COREMCP_GRANTS=\"ops=docker_compose\""),
        "{text}"
    );
    let named = Grants::parse(VARS, Some("ops=docker_compose"), None).expect("grants");
    assert_eq!(
        named.decide(&token("ops"), built_in("docker_compose", up)),
        Decision::Allow
    );
    assert_eq!(
        Grants::parse(VARS, None, None)
            .expect("no rules")
            .decide(&Caller::Stdio, built_in("docker_compose", up)),
        Decision::Allow
    );
    // Likewise the repository's own hooks, which run on every later commit.
    let ops = Grants::parse(VARS, Some("ci=ops"), None).expect("grants");
    assert_eq!(
        ops.decide(&token("ci"), built_in("repo_setup", r#"{"source":"A/b"}"#)),
        Decision::Allow
    );
    let hooks = r#"{"source":"A/b","hooks":true}"#;
    let Decision::Refuse(text) = ops.decide(&token("ci"), built_in("repo_setup", hooks)) else {
        panic!("a group grant must not enable a repository's hooks");
    };
    assert!(
        text.contains("hook programs run on every later commit"),
        "{text}"
    );
    let named = Grants::parse(VARS, Some("ci=repo_setup"), None).expect("grants");
    assert_eq!(
        named.decide(&token("ci"), built_in("repo_setup", hooks)),
        Decision::Allow
    );
}

#[test]
fn a_refusal_names_the_grant_that_would_allow_it() {
    let Decision::Refuse(text) = Grants::parse(VARS, None, None)
        .expect("no rules")
        .decide(&token("ci"), built_in("git_push", "{}"))
    else {
        panic!("git_push over HTTP must be refused");
    };
    assert!(
        text.contains("git_push is refused to the token \"ci\""),
        "{text}"
    );
    assert!(text.contains("COREMCP_GRANTS=\"ci=git_push\""), "{text}");
    assert!(text.contains("COREMCP_GRANTS=\"ci=git\""), "{text}");
    let Decision::Refuse(text) = Grants::parse(VARS, None, None)
        .expect("no rules")
        .decide(&Caller::Anonymous, built_in("docs_write", "{}"))
    else {
        panic!("docs_write over HTTP must be refused");
    };
    assert!(text.contains("\"*=docs_write\""), "{text}");
    let Decision::Refuse(text) = Grants::parse(VARS, None, None)
        .expect("no rules")
        .decide(&token("ci"), upstream("time", "now", "mcp__time__now"))
    else {
        panic!("upstream tools are default deny");
    };
    assert!(text.contains("COREMCP_MCP_GRANTS=\"ci=time\""), "{text}");
    let Decision::Refuse(text) = Grants::parse(VARS, None, None)
        .expect("no rules")
        .decide(&Caller::Stdio, upstream("time", "now", "mcp__time__now"))
    else {
        panic!("upstream tools are default deny, for stdio too");
    };
    assert!(
        text.contains("COREMCP_MCP_GRANTS=\"stdio=mcp__time__now\""),
        "{text}"
    );
}

#[test]
fn grants_allow_tools_groups_and_servers_and_bang_takes_away() {
    let grants = Grants::parse(
        VARS,
        Some("ci=git_push,docs; *=git; relay-user=!notepad,!registry_host_add; stdio=!shell_run"),
        Some("ci=time"),
    )
    .expect("grants");
    let ci = token("ci");
    let other = token("other");
    let relay = token("relay-user");
    let allowed = |caller: &Caller, subject| grants.decide(caller, subject) == Decision::Allow;
    assert!(allowed(&ci, built_in("git_push", "{}")));
    assert!(allowed(&ci, built_in("docs_write", "{}")));
    assert!(allowed(&other, built_in("git_commit", "{}")), "*=git");
    assert!(!allowed(&other, built_in("docs_write", "{}")));
    assert!(!allowed(
        &other,
        built_in("sql_query", r#"{"read_only":false}"#)
    ));
    assert!(allowed(&ci, upstream("time", "now", "mcp__time__now")));
    assert!(!allowed(&other, upstream("time", "now", "mcp__time__now")));
    // `!` restricts what is otherwise allowed by default, for that principal only.
    assert!(!allowed(&relay, built_in("notepad_get", "{}")));
    assert!(!allowed(&relay, built_in("registry_host_add", "{}")));
    assert!(allowed(&relay, built_in("registry_host_list", "{}")));
    assert!(allowed(&other, built_in("notepad_get", "{}")));
    let Decision::Refuse(text) = grants.decide(&Caller::Stdio, built_in("shell_run", "{}")) else {
        panic!("stdio=!shell_run");
    };
    assert!(
        text.contains("COREMCP_GRANTS rule 4 (\"stdio=!shell_run\")"),
        "{text}"
    );
    assert!(allowed(&Caller::Stdio, built_in("git_push", "{}")));
    // Taken away means not listed; not granted over HTTP still lists (the refusal says how).
    assert!(grants.takes_away(&Caller::Stdio, "ops", "shell_run"));
    assert!(grants.takes_away(&relay, "notepad", "notepad_get"));
    assert!(!grants.takes_away(&other, "docs", "docs_write"));
}

#[test]
fn a_bare_name_outside_the_catalog_names_a_server_or_an_outside_plugin() {
    let grants = Grants::parse(VARS, Some("ci=time,hello_tool"), None).expect("grants");
    let ci = token("ci");
    assert!(grants.allows(&ci, "time", "now"));
    let outside = Subject::BuiltIn {
        group: "hello",
        tool: "hello_tool",
        guard: Some(Guarded::ChangesMachine),
    };
    assert_eq!(grants.decide(&ci, outside), Decision::Allow);
    assert_eq!(
        grants.unknown_names(&["time"]),
        [(
            "COREMCP_GRANTS rule 1 (\"ci=time,hello_tool\")".to_owned(),
            "hello_tool".to_owned()
        )]
    );
    // In COREMCP_MCP_GRANTS a bare name is a server id, never a group.
    let mcp = Grants::parse(VARS, None, Some("ci=git")).expect("grants");
    assert!(mcp.allows(&ci, "git", "anything"));
    assert_ne!(mcp.decide(&ci, built_in("git_push", "{}")), Decision::Allow);
}

#[test]
fn nothing_upstream_is_granted_by_default() {
    for text in [None, Some(""), Some("none"), Some("  none ")] {
        let grants = Grants::parse(VARS, text, text).expect("none");
        assert!(!grants.allows(&Caller::Stdio, "everything", "echo"));
        assert!(grants.granted_to("everything", "echo").is_empty());
    }
}

#[test]
fn upstream_rules_grant_servers_and_single_tools_to_principals() {
    let grants = Grants::parse(
        VARS,
        None,
        Some(
            "stdio=everything, mcp__time__get_current_time; ci-bot=mcp__time__*; \
             *=mcp__docs__search",
        ),
    )
    .expect("grants");
    assert!(grants.allows(&Caller::Stdio, "everything", "echo"));
    assert!(grants.allows(&Caller::Stdio, "time", "get_current_time"));
    assert!(!grants.allows(&Caller::Stdio, "time", "convert_time"));
    assert!(grants.allows(&token("ci-bot"), "time", "convert_time"));
    assert!(!grants.allows(&token("ci-bot"), "everything", "echo"));
    assert!(!grants.allows(&token("other"), "time", "convert_time"));
    assert!(!grants.allows(&Caller::Anonymous, "everything", "echo"));
    for caller in [Caller::Stdio, Caller::Anonymous, token("x")] {
        assert!(grants.allows(&caller, "docs", "search"));
    }
    assert_eq!(
        grants.granted_to("time", "get_current_time"),
        ["stdio", "ci-bot"]
    );
    assert_eq!(grants.granted_to("docs", "search"), ["*"]);
    let taken = Grants::parse(VARS, Some("ci=!time"), Some("ci=time")).expect("grants");
    assert!(!taken.allows(&token("ci"), "time", "now"));
    assert!(taken.granted_to("time", "now").is_empty());
}

#[test]
fn scopes_of_oauth_tokens_are_principals_too() {
    let grants = Grants::parse(
        VARS,
        Some("scope:deploy=git_push; scope:notes-ro=!notepad_set; oauth:alice=docs; bob=docs"),
        Some("scope:tools=time"),
    )
    .expect("grants");
    let signed = |name: &str, scopes: &[&str]| Caller::Signed {
        issuer: std::sync::Arc::from("https://id.example"),
        name: name.to_owned(),
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
    };
    let allowed = |caller: &Caller, subject| grants.decide(caller, subject) == Decision::Allow;
    let deployer = signed("svc-1", &["deploy", "tools"]);
    assert!(allowed(&deployer, built_in("git_push", "{}")));
    assert!(allowed(
        &deployer,
        upstream("time", "now", "mcp__time__now")
    ));
    assert!(!allowed(
        &signed("svc-2", &["tools"]),
        built_in("git_push", "{}")
    ));
    // A `!` on a scope takes away from whoever carries it.
    let reader = signed("svc-3", &["notes-ro"]);
    assert!(!allowed(&reader, built_in("notepad_set", "{}")));
    assert!(allowed(&reader, built_in("notepad_get", "{}")));
    // `oauth:NAME` is the OAuth subject, a bare NAME the static token: never each other; a
    // static token never has scopes.
    assert!(allowed(&signed("alice", &[]), built_in("docs_write", "{}")));
    assert!(!allowed(&token("alice"), built_in("docs_write", "{}")));
    assert!(allowed(&token("bob"), built_in("docs_write", "{}")));
    assert!(!allowed(&signed("bob", &[]), built_in("docs_write", "{}")));
    assert!(!allowed(&token("deploy"), built_in("git_push", "{}")));
    assert_eq!(signed("alice", &[]).principal(), "oauth:alice");
    assert!(signed("alice", &[]).is("oauth:alice") && !signed("alice", &[]).is("alice"));
    assert!(token("alice").is("alice") && !token("alice").is("oauth:alice"));
    let Decision::Refuse(text) = grants.decide(&signed("svc-2", &[]), built_in("git_push", "{}"))
    else {
        panic!("not granted");
    };
    assert!(text.contains("the OAuth principal \"svc-2\""), "{text}");
    assert!(
        text.contains("COREMCP_GRANTS=\"oauth:svc-2=git_push\""),
        "{text}"
    );
    assert!(Grants::parse(VARS, Some("oauth:=git"), None)
        .expect_err("empty subject")
        .contains("is not an OAuth subject"));
    assert!(Grants::parse(VARS, Some("scope:=git"), None)
        .expect_err("empty scope")
        .contains("is not a scope"));
    assert!(Grants::parse(VARS, Some("scope:a\\b=git"), None)
        .expect_err("backslash")
        .contains("is not a scope"));
}

#[test]
fn malformed_rules_are_refused_by_variable_and_number() {
    let cases = [
        ("stdio", "rule 1 (\"stdio\"): expected PRINCIPAL=TARGET"),
        ("=x", "no principal"),
        ("a b=x", "is not a principal"),
        ("stdio=x;stdio=mcp__x", "rule 2"),
        ("stdio=mcp__x__", "names no tool"),
        ("stdio=x,", "an empty target"),
        ("stdio=!", "an empty target"),
        ("stdio=a/b", "is not a target"),
    ];
    for (text, needle) in cases {
        let err = Grants::parse(VARS, Some(text), None).expect_err(text);
        assert!(err.contains(needle), "{text}: {err}");
        assert!(err.starts_with("COREMCP_GRANTS rule"), "{err}");
    }
    let err = Grants::parse(VARS, None, Some("stdio=my_server")).expect_err("underscore");
    assert!(err.contains("\"__\" separates"), "{err}");
    assert!(err.starts_with("COREMCP_MCP_GRANTS rule 1"), "{err}");
}
