//! `notepad_list`: notes' keys and metadata (values on request), filtered by scope, scope
//! prefix and key prefix, in (scope, key) order, byte-wise on both backends.
//!
//! Invariants:
//! - Keyset paging on (scope, key): `next_cursor` is the last note returned, and only there
//!   when more notes follow, so notes written between pages are neither repeated nor skipped
//!   unless they sort before the cursor.
//! - With values a page may hold fewer than `limit` notes, so the result stays under the host's
//!   result limit and keeps its structured content.

use coremcp_nervhq::{Query, SERVICE};
use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::now;
use coremcp_store::records::{Key, Order, Record};

use super::{live, Scope};

pub const TOOL: Tool = Tool::typed("notepad_list", &typed(handler)).hints(Hints::READ);

/// List notes by scope and key (values only with include_values); expired ones left out. Filters
/// combine.
#[derive(Debug, Args)]
pub struct List {
    /// exact scope
    scope: Option<Scope>,
    /// e.g. project:
    scope_prefix: Option<String>,
    /// key prefix
    key_prefix: Option<String>,
    /// add values
    #[arg(default)]
    include_values: bool,
    #[arg(flatten)]
    page: Paging,
}

/// The list's order and cursors.
const ORDER: Order<'static> = Order::asc(
    "note",
    &[Key::text("scope", "scope"), Key::text("key", "key")],
);

fn handler(_: &Ctx<'_>, args: List) -> Result<Value, ToolError> {
    let scope = args.scope.as_ref().map(Scope::as_str);
    let scope_prefix = args.scope_prefix.as_deref();
    let key_prefix = args.key_prefix.as_deref();
    let (value, fields) = match args.include_values {
        true => (
            ", value",
            "scope key version:int updated_at:ts expires_at?:ts value",
        ),
        false => ("", "scope key version:int updated_at:ts expires_at?:ts"),
    };
    let select =
        format!("SELECT scope, key, version, updated_at, expires_at{value} FROM notepad_entry");
    let mut q = Query::new();
    let p = q.bind(now());
    q.and(live(&p));
    q.eq_opt("scope", scope);
    q.prefix_opt("scope", scope_prefix);
    q.prefix_opt("key", key_prefix);
    SERVICE.read(|tx| {
        ORDER.list(tx, &select, &q, &args.page, |row| {
            // A listed value shows its start; notepad_get reads it whole.
            let mut note = Record::of(row, fields)?.done();
            coremcp_plugin_sdk::budget::cut_field(
                &mut note,
                "value",
                coremcp_plugin_sdk::budget::LISTED_TEXT,
            );
            Ok(note)
        })
    })
}
