//! The Greet group: says hello, and counts to a number.

use coremcp_plugin_sdk::catalog::{self, tool};
use coremcp_plugin_sdk::prelude::*;
use coremcp_plugin_sdk::Runs;

/// A group outside the product's catalog declares its own entry; a product group uses
/// `catalog::NOTEPAD` and the like instead.
static CATALOG: catalog::Group = catalog::Group {
    id: "greet",
    title: "Greet",
    purpose: "say hello",
    runs: Runs::Local,
    remote_host: true,
    open_world: false,
    tools: &[tool("greet_hello"), tool("greet_count")],
};

#[derive(Debug, Clone, Copy, ArgEnum)]
enum Tone {
    Plain,
    Loud,
}

/// Say hello to someone.
#[derive(Debug, Args)]
struct Hello {
    /// who to greet
    #[arg(min_len = 1, max_len = 100)]
    name: String,
    /// how to say it (default plain)
    #[arg(default = Tone::Plain)]
    tone: Tone,
}

fn hello(_: &Ctx<'_>, args: Hello) -> Result<Value, ToolError> {
    let text = format!("hello, {}", args.name);
    Ok(
        json!({ "text": match args.tone { Tone::Plain => text, Tone::Loud => text.to_uppercase() } }),
    )
}

/// Count from 1.
#[derive(Debug, Args)]
struct Count {
    /// count from 1 to this
    #[arg(min = 1, max = 1000)]
    to: u32,
}

fn count(ctx: &Ctx<'_>, args: Count) -> Result<Value, ToolError> {
    let mut numbers = Vec::new();
    for n in 1..=args.to {
        if ctx.is_cancelled() {
            return Err(ToolError::new(codes::CANCELLED, "stopped by the host"));
        }
        numbers.push(n);
    }
    Ok(json!({ "numbers": numbers }))
}

pub static GROUP: Group = Group::new(
    &CATALOG,
    env!("CARGO_PKG_VERSION"),
    &[
        Tool::typed("greet_hello", &typed(hello)),
        Tool::typed("greet_count", &typed(count)),
    ],
);

coremcp_plugin_sdk::export_plugin!(GROUP);

#[cfg(test)]
mod tests {
    use coremcp_plugin_sdk::testing::{assert_group, call};
    use serde_json::json;

    #[test]
    fn the_table_follows_the_catalog() {
        assert_group(&super::GROUP);
    }

    #[test]
    fn a_wrong_argument_is_named() {
        let out = call(
            &super::GROUP,
            "greet_hello",
            json!({"name": "Ada", "tone": "loud"}),
        );
        assert_eq!(out.expect("hello")["text"], "HELLO, ADA");
        let err = call(&super::GROUP, "greet_count", json!({"to": 0})).expect_err("zero");
        assert!(err.message.contains("\"to\": 0 is below the minimum 1"));
    }
}
