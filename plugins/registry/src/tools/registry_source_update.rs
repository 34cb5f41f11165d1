//! `registry_source_update`: patch a source; `metadata` is merged (RFC 7386); `checkout_host`
//! with `checkout_path` records where the source is checked out on that host, and
//! `checkout_url` the URL that checkout was made from (what `repo_setup` writes, and
//! `registry_source_list include_checkouts` shows). `url` and the checkout fields steer where
//! code goes: over HTTP they need a grant naming this tool (the catalog's guard).

use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::{invalid, json_text, json_value, now, TxError};
use coremcp_store::Tx;

use crate::args::{Branch, Description, HostName, SourceRef, Status, Url};
use crate::common::SERVICE;
use crate::host::HOST;
use crate::source::{self, SOURCE};

pub const TOOL: Tool =
    Tool::typed("registry_source_update", &typed(handler)).hints(Hints::IDEMPOTENT);

/// Patch a source: only given fields change; metadata merges; archive with status archived.
/// checkout_* record a checkout.
#[derive(Debug, Args)]
pub struct Update {
    /// source ref, e.g. CORE/core-mcp
    #[arg(min_len = 1)]
    source: SourceRef,
    /// new URL
    #[arg(min_len = 1, max_len = 2000)]
    url: Option<Url>,
    /// new default branch
    #[arg(min_len = 1, max_len = 255)]
    default_branch: Option<Branch>,
    /// "" clears it
    #[arg(max_len = 4000)]
    description: Option<Clearable<Description>>,
    /// merged in (null removes a key)
    metadata: Option<Map<String, Value>>,
    /// archive or re-activate
    status: Option<Status>,
    /// version read
    #[arg(min = 1)]
    expected_version: Option<u64>,
    /// host of checkout_path
    #[arg(min_len = 1)]
    checkout_host: Option<HostName>,
    /// absolute path there
    #[arg(min_len = 1, max_len = 4096)]
    checkout_path: Option<String>,
    /// the checkout's branch
    #[arg(min_len = 1, max_len = 255)]
    checkout_branch: Option<Branch>,
    /// URL cloned from
    #[arg(min_len = 1, max_len = 2000)]
    checkout_url: Option<Url>,
}

/// Records (or moves) the checkout of source `source_id` on host `host`.
fn record_checkout(
    tx: &mut Tx<'_>,
    source_id: &str,
    host: &HostName,
    path: &str,
    branch: Option<&Branch>,
    url: Option<&Url>,
) -> Result<(), TxError> {
    let host_id = HOST.id(tx, "checkout_host", &[host.as_str()], false)?;
    let branch = branch.map(Branch::as_str);
    // A URL not given keeps the one recorded.
    tx.execute(
        "INSERT INTO registry_checkout (host_id, source_id, path, branch, url, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (host_id, source_id) DO UPDATE \
         SET path = excluded.path, branch = excluded.branch, \
             url = COALESCE(excluded.url, registry_checkout.url), \
             updated_at = excluded.updated_at \
         WHERE registry_checkout.path <> excluded.path \
            OR COALESCE(registry_checkout.branch, '') <> COALESCE(excluded.branch, '') \
            OR (excluded.url IS NOT NULL \
                AND COALESCE(registry_checkout.url, '') <> excluded.url)",
        &[
            host_id.as_str().into(),
            source_id.into(),
            path.into(),
            branch.into(),
            url.map(|u| u.as_str()).into(),
            now().as_str().into(),
        ],
    )?;
    Ok(())
}

fn handler(_: &Ctx<'_>, args: Update) -> Result<Value, ToolError> {
    let metadata = args.metadata.map(Value::Object);
    let checkout = match (&args.checkout_host, &args.checkout_path) {
        (Some(host), Some(path)) if path.starts_with('/') && !path.contains('\0') => {
            Some((host, path))
        }
        (Some(_), Some(_)) => return Err(invalid("checkout_path", "must be an absolute path")),
        (Some(_), None) => return Err(invalid("checkout_path", "is needed with checkout_host")),
        (None, Some(_)) => return Err(invalid("checkout_host", "is needed with checkout_path")),
        (None, None) if args.checkout_branch.is_some() || args.checkout_url.is_some() => {
            let field = match args.checkout_branch {
                Some(_) => "checkout_branch",
                None => "checkout_url",
            };
            return Err(invalid(field, "goes with checkout_host and checkout_path"));
        }
        (None, None) => None,
    };
    SERVICE.run(|tx| {
        if let Some((host, path)) = checkout {
            let source_id = SOURCE.id(tx, "source", &args.source.key(), false)?;
            record_checkout(
                tx,
                &source_id,
                host,
                path,
                args.checkout_branch.as_ref(),
                args.checkout_url.as_ref(),
            )?;
        }
        SOURCE.update(
            tx,
            "source",
            &args.source.key(),
            args.expected_version,
            |_, row| {
                let old = json_value(row.get_opt_text("metadata")?);
                let mut new = old.clone();
                if let Some(patch) = &metadata {
                    source::merge_patch(&mut new, patch);
                }
                // An emptied object is stored as no metadata at all.
                if new.as_object().is_some_and(Map::is_empty) {
                    new = Value::Null;
                }
                if !new.is_null() {
                    source::check_metadata_size(&new)?;
                }
                // Compared as JSON: the store may keep another spelling of the same object.
                let metadata =
                    (new != old).then(|| (!new.is_null()).then(|| json_text(&new)).into());
                Ok(vec![
                    ("url", args.url.as_ref().map(Into::into)),
                    (
                        "default_branch",
                        args.default_branch.as_ref().map(Into::into),
                    ),
                    (
                        "description",
                        args.description.as_ref().map(|c| c.value().into()),
                    ),
                    ("metadata", metadata),
                    ("status", args.status.map(Into::into)),
                ])
            },
        )
    })
}
