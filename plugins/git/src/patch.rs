//! The patch part of `git_diff` and `git_show` of a commit: the per-file stats beside either
//! their summary (`stat_only`) or the patch read in a window from `offset`.
//!
//! Invariants: the patch is never held whole — git's output past the window is counted, not
//! kept — and `text_next_offset` reads on, so a patch of any size is read whole in pieces; the
//! per-file list leaves the window at least half the call's budget (whole entries left out
//! from the end, `files_omitted`); the answer fits the call's budget.

use coremcp_plugin_sdk::budget::{fit_array, fit_piece};
use coremcp_plugin_sdk::ToolError;
use serde_json::{json, Value};

use crate::parse::numstat::{self, FileStat};
use crate::repo::Repo;
use crate::text;

/// What the patch is read with: git's arguments, the window, and the hint a cut one gives.
pub struct Window<'a> {
    pub args: &'a [&'a str],
    pub offset: usize,
    pub max_chars: usize,
    pub hint: &'static str,
}

/// Fills `value` (which holds `files`) with the stat summary when `stat_only`, else with the
/// patch `window.args` prints, read from `window.offset`.
pub fn answer(
    repo: &Repo<'_>,
    value: &mut Value,
    files: &[FileStat],
    stat_only: bool,
    window: &Window<'_>,
) -> Result<(), ToolError> {
    if stat_only {
        let cut = text::cut(&numstat::summary(files), usize::MAX, 0, window.hint);
        value["text"] = json!(cut.text);
        value["truncated"] = json!(cut.truncated);
        if cut.truncated {
            value["total_chars"] = json!(cut.total_chars);
        }
        text::fit(value, "text", Some("files"), window.hint);
        return Ok(());
    }
    let budget = text::result_budget();
    let omitted = fit_array(
        value,
        "files",
        budget.saturating_sub(window.max_chars.min(budget / 2) + 1_000),
    );
    if omitted > 0 {
        value["files_omitted"] = json!(omitted);
    }
    let read = repo.read_window(
        window.args,
        coremcp_spawn::Window {
            skip: window.offset,
            keep: window.max_chars,
        },
    )?;
    let total = read.stdout.chars as usize;
    value["text"] = json!(String::from_utf8_lossy(&read.stdout.bytes));
    fit_piece(
        value,
        "text",
        (window.offset.min(total), total),
        window.max_chars,
        budget,
    );
    value["truncated"] = value.get("text_truncated").cloned().unwrap_or(json!(false));
    if value["truncated"] == true {
        value["total_chars"] = json!(total);
        value["hint"] = json!(window.hint);
    }
    Ok(())
}
