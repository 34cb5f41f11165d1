//! A small group written the way every group is: typed arguments, a table, the catalog.

use coremcp_plugin_sdk::catalog::{self, tool};
use coremcp_plugin_sdk::page::Paging;
use coremcp_plugin_sdk::prelude::*;
use coremcp_plugin_sdk::testing::{assert_group, call};
use coremcp_plugin_sdk::Runs;

static CATALOG: catalog::Group = catalog::Group {
    id: "demo",
    title: "Demo",
    purpose: "test the SDK",
    runs: Runs::Forwarded,
    remote_host: true,
    open_world: false,
    tools: &[tool("demo_put"), tool("demo_list").open_world(true)],
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ArgEnum)]
enum Mode {
    Skip,
    ReplaceAll,
}

#[derive(Debug, Args)]
struct Entry {
    /// the entry's key
    #[arg(min_len = 1, max_len = 5)]
    key: String,
    /// seconds it lives
    #[arg(min = 1)]
    ttl_s: Option<u64>,
}

/// Put entries: a tool description
/// over two lines.
#[derive(Debug, Args)]
struct Put {
    /// what to store
    #[arg(required)]
    entries: Vec<Entry>,
    /// what to do with a present key
    #[arg(default = Mode::Skip)]
    mode: Mode,
    /// a reserved word as a name
    r#type: Option<String>,
}

fn put(_: &Ctx<'_>, args: Put) -> Result<Value, ToolError> {
    Ok(json!({
        "keys": args.entries.iter().map(|e| e.key.as_str()).collect::<Vec<_>>(),
        "ttl": args.entries.iter().map(|e| e.ttl_s).collect::<Vec<_>>(),
        "mode": args.mode.as_str(),
        "type": args.r#type,
    }))
}

#[derive(Debug, Args)]
struct List {
    /// only these kinds
    #[arg(max_items = 3)]
    kinds: Vec<Mode>,
    #[arg(flatten)]
    page: Paging,
}

fn list(_: &Ctx<'_>, args: List) -> Result<Value, ToolError> {
    Ok(json!({"limit": args.page.limit, "cursor": args.page.cursor, "kinds": args.kinds.len()}))
}

static GROUP: Group = Group::new(
    &CATALOG,
    "1.0.0",
    &[
        Tool::typed("demo_put", &typed(put)).hints(Hints::IDEMPOTENT),
        Tool::new("demo_list", "List entries.", &typed(list)),
    ],
)
.internal(&[Tool::new(
    "demo_store",
    "Store entries for the host.",
    &typed(list),
)]);

#[test]
fn the_schema_comes_from_the_type() {
    assert_group(&GROUP);
    let schema = GROUP.tools[0].handler.schema();
    assert_eq!(
        schema,
        json!({
            "type": "object",
            "properties": {
                "entries": {"type": "array", "description": "what to store", "items": {
                    "type": "object",
                    "properties": {
                        "key": {"type": "string", "minLength": 1, "maxLength": 5, "description": "the entry's key"},
                        "ttl_s": {"type": "integer", "minimum": 1, "description": "seconds it lives"}
                    },
                    "required": ["key"],
                    "additionalProperties": false
                }},
                "mode": {"type": "string", "enum": ["skip", "replace_all"], "description": "what to do with a present key"},
                "type": {"type": "string", "description": "a reserved word as a name"}
            },
            "required": ["entries"],
            "additionalProperties": false
        })
    );
    let list = GROUP.tools[1].handler.schema();
    assert_eq!(
        list["properties"]["limit"],
        json!({"type": "integer", "minimum": 1, "maximum": 200, "description": "default 50"})
    );
    assert_eq!(list.get("required"), None);
}

#[test]
fn arguments_arrive_typed_and_defaults_fill_in() {
    let out = call(
        &GROUP,
        "demo_put",
        json!({"entries": [{"key": "a", "ttl_s": 3}, {"key": "b"}]}),
    )
    .expect("put");
    assert_eq!(
        out,
        json!({"keys": ["a", "b"], "ttl": [3, null], "mode": "skip", "type": null})
    );
    let out = call(
        &GROUP,
        "demo_put",
        json!({"entries": [], "mode": "replace_all", "type": "x"}),
    )
    .expect("put");
    assert_eq!(out["mode"], "replace_all");
    assert_eq!(out["type"], "x");
    let out = call(&GROUP, "demo_list", json!({"cursor": "c"})).expect("list");
    assert_eq!(out, json!({"limit": 50, "cursor": "c", "kinds": 0}));
}

#[test]
fn a_wrong_argument_is_refused_by_name_before_the_handler() {
    let cases = [
        (json!({}), "missing required argument \"entries\""),
        (
            json!({"entries": [{"key": ""}]}),
            "argument \"entries\"[0]: argument \"key\": 0 characters",
        ),
        (
            json!({"entries": [{"key": "a", "ttl_s": 0}]}),
            "below the minimum 1",
        ),
        (
            json!({"entries": [], "mode": "all"}),
            "argument \"mode\": \"all\" is not one of",
        ),
        (
            json!({"entries": [], "extra": 1}),
            "unknown argument \"extra\"",
        ),
        (
            json!({"entries": [], "type": null}),
            "argument \"type\": expected a string, got null",
        ),
    ];
    for (args, needle) in cases {
        let err = call(&GROUP, "demo_put", args).expect_err(needle);
        assert_eq!(err.code.as_str(), codes::INVALID_ARGUMENTS);
        assert!(
            err.message.contains(needle),
            "{} lacks {needle}",
            err.message
        );
    }
    let err = call(&GROUP, "demo_list", json!({"limit": 201})).expect_err("limit");
    assert!(
        err.message
            .contains("\"limit\": 201 is above the maximum 200"),
        "{err}"
    );
    let err = call(
        &GROUP,
        "demo_list",
        json!({"kinds": ["skip", "skip", "skip", "skip"]}),
    )
    .expect_err("kinds");
    assert!(
        err.message
            .contains("\"kinds\": 4 items is over the limit of 3"),
        "{err}"
    );
}

#[test]
fn the_manifest_takes_runs_remote_host_and_open_world_from_the_catalog() {
    let schemas: Vec<Value> = GROUP.entries().map(|t| t.handler.schema()).collect();
    let manifest = coremcp_plugin_sdk::manifest(&GROUP, &schemas);
    let names: Vec<&str> = manifest.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["demo_put", "demo_list"],
        "internal entries are never listed"
    );
    let put = &manifest.tools[0];
    assert_eq!((put.runs, put.remote_host), (Runs::Forwarded, true));
    assert_eq!(put.annotations.open_world_hint, Some(false));
    assert_eq!(put.annotations.idempotent_hint, Some(true));
    assert_eq!(manifest.tools[1].annotations.open_world_hint, Some(true));
    assert_eq!(manifest.tools[1].annotations.read_only_hint, Some(true));
}

#[test]
#[should_panic(expected = "not the catalog's")]
fn a_table_out_of_catalog_order_fails_the_group_check() {
    static SWAPPED: Group = Group::new(
        &CATALOG,
        "1.0.0",
        &[
            Tool::new("demo_list", "List entries.", &typed(list)),
            Tool::new("demo_put", "Put entries.", &typed(put)),
        ],
    );
    assert_group(&SWAPPED);
}

#[test]
fn a_typed_tool_is_described_by_its_argument_struct() {
    assert_eq!(
        GROUP.tools[0].description,
        "Put entries: a tool description over two lines."
    );
    assert_eq!(
        <List as coremcp_plugin_sdk::args::ToolArgs>::DESCRIPTION,
        ""
    );
}

#[test]
#[should_panic(expected = "demo_list: no description")]
fn a_tool_without_a_description_fails_the_group_check() {
    static UNDESCRIBED: Group = Group::new(
        &CATALOG,
        "1.0.0",
        &[
            Tool::typed("demo_put", &typed(put)),
            Tool::typed("demo_list", &typed(list)),
        ],
    );
    assert_group(&UNDESCRIBED);
}

#[test]
fn an_internal_entry_is_called_and_checked_like_a_tool() {
    assert_group(&GROUP);
    let out = call(&GROUP, "demo_store", json!({"limit": 2})).expect("store");
    assert_eq!(out["limit"], 2);
    let err = call(&GROUP, "demo_store", json!({"limit": "x"})).expect_err("typed");
    assert_eq!(err.code.as_str(), codes::INVALID_ARGUMENTS, "{err}");
}
