//! What `docs/tools.md` says of each tool's answer when the data is larger than one answer
//! may hold (the result contract, ARCHITECTURE.md): how the rest is reached. A tool that takes
//! `cursor` or `offset` gets the general rule from its schema, a tool with its own way gets
//! it here by name, and every other tool answers one bounded record; `reference.rs` prints it
//! and the test below keeps every rule pointing at a tool that exists.

use serde_json::Value;

/// Tools whose way to the rest is their own (besides what their schema shows).
const OWN: &[(&str, &str)] = &[
    ("scrolls_theme_get", "the description reads on by `offset` (`description_next_offset`), beside the dependencies whole; with `include_comments`, `comments_total` counts them and `comments_next_cursor` (as `cursor` to `scrolls_comment_list`) reads every one not shown; children and comments that do not fit are counted in `children_omitted` and `comments_omitted`."),
    ("scrolls_project_get", "the description reads on by `offset` (`description_next_offset`), beside the dependencies whole; with `include_comments`, `comments_total` counts them and `comments_next_cursor` (as `cursor` to `scrolls_comment_list`) reads every one not shown; children and comments that do not fit are counted in `children_omitted` and `comments_omitted`."),
    ("scrolls_epic_get", "the description reads on by `offset` (`description_next_offset`), beside the dependencies whole; with `include_comments`, `comments_total` counts them and `comments_next_cursor` (as `cursor` to `scrolls_comment_list`) reads every one not shown; children and comments that do not fit are counted in `children_omitted` and `comments_omitted`."),
    ("scrolls_story_get", "the description reads on by `offset` (`description_next_offset`), beside the dependencies whole; with `include_comments`, `comments_total` counts them and `comments_next_cursor` (as `cursor` to `scrolls_comment_list`) reads every one not shown; children and comments that do not fit are counted in `children_omitted` and `comments_omitted`."),
    ("scrolls_task_get", "the description reads on by `offset` (`description_next_offset`), beside the dependencies whole; with `include_comments`, `comments_total` counts them and `comments_next_cursor` (as `cursor` to `scrolls_comment_list`) reads every one not shown; children and comments that do not fit are counted in `children_omitted` and `comments_omitted`."),
    ("scrolls_subtask_get", "the description reads on by `offset` (`description_next_offset`), beside the dependencies whole; with `include_comments`, `comments_total` counts them and `comments_next_cursor` (as `cursor` to `scrolls_comment_list`) reads every one not shown; children and comments that do not fit are counted in `children_omitted` and `comments_omitted`."),
    ("docs_read", "a document's front matter takes at most half the answer beside its body, keys in order with whole values: `front_matter_next_offset`, passed as `offset` with `front_matter_only`, reads its other keys (`front_matter_keys` counts them all); a folder's entry shows its front matter's first 2 000 characters and counts the keys left out in `front_matter_omitted`."),
    ("scrolls_comment_list", "a body over 1 000 characters shows its start with `body_truncated`; pass its `body_cursor` as `cursor` to read the rest of that body in pieces."),
    ("scrolls_agent_get", "the agent's open items (`work`) are whole items that fit; `work_total` and `work_omitted` count the rest, which the level lists with `assignee` page."),
    ("scrolls_board_get", "whole items that fit: `truncated` is set and a column's `shown` says how many of its `count` are listed; the level lists with `status` page the rest."),
    ("scrolls_agent_list", "a description shows its first 1 000 characters (`description_truncated`); `scrolls_agent_get` reads it whole."),
    ("scrolls_search", "ranked; the first page of a search that finds more keeps the order it found for an hour (up to 10 000 items), and every page goes on through that order, so a walk sees an item that stays in the list exactly once, whatever is claimed, closed or created between its pages; a page holds whole items that fit."),
    ("scrolls_ready_list", "in queue order; a page holds whole items that fit and goes on from the queue place of the last one shown, so a walk sees an item that stays ready exactly once, whatever is claimed, closed or created between its pages."),
    ("seele_search", "ranked; the first page of a search that finds more keeps the order it found for an hour (up to 10 000 nodes), and every page goes on through that order, so a walk sees a node that stays exactly once, whatever is written between its pages; a page holds whole nodes that fit."),
    ("seele_read", "the links take at most half the answer, whole, by rel then path (`links_total`, `links_omitted` count the rest; `links_next_offset`, passed as `links_offset`, reads on); the front matter takes a quarter of the answer, keys in order with whole values, and `front_matter_next_offset`, passed as `keys_offset`, reads its other keys; with `include_children`, the outline holds whole nodes in path order in the room the body leaves, `children_omitted` counts every node below it did not show, and `children_next_offset` (as `children_offset`) reads on."),
    ("notepad_list", "with `include_values`, a value shows its first 1 000 characters (`value_truncated`); `notepad_get` reads it whole."),
    ("notepad_cleanup", "lists a sample of up to 200 notes, as many as fit beside the count, and counts the rest in `more`."),
    ("session_close_stale", "lists a sample of up to 200 sessions, as many as fit beside the count, and counts the rest in `more`."),
    ("session_list_recorded", "a summary shows its first 1 000 characters (`summary_truncated`); `session_get` reads it whole."),
    ("session_close", "a summary longer than the answer holds is cut (`summary_truncated`, `summary_next_offset`); `session_get` with `offset` reads it whole."),
    ("files_search", "at most `max_results` matches, whole, as many as fit."),
    ("files_list", "at most `max_entries` entries, whole, as many as fit."),
    ("code_snapshot", "the whole snapshot when it fits; else a summary (counts, languages, the largest files) with the files that fit, whole (`truncated`, `files_omitted`). Narrow `path` or `include`, or pass `save_to` (a Registry source) to store the whole snapshot at the checkout's HEAD, which `registry_snapshot_get` serves in views."),
    ("sql_query", "the rows that fit (`row_count` shown, `truncated`, `rows_omitted`, and a `hint`): page with the query's own `ORDER BY … LIMIT … OFFSET …`. A long value is cut and listed in `cells_truncated` with its row, column and `total_chars`; `substr()` reads it in pieces."),
    ("publishing", "the CLI's JSON when it fits; else its text cut with a marker in `{truncated: true, total_chars, text}`: ask the CLI for less."),
    ("shell_run", "each stream keeps its end (where errors are), cut at a line start with a marker (`stdout_truncated`, `stdout_total_bytes`): write long output to a file and read that."),
    ("registry_source_list", "with `include_checkouts`, a source keeps the checkouts that fit beside it (its description yields first, `description_truncated`: the list without them shows it whole) and counts the rest in `checkouts_omitted`."),
    ("registry_project_list", "with `include_sources`, a project keeps the sources that fit beside it (its description yields first) and counts the rest in `sources_omitted`; `registry_source_list` with `project` pages them all."),
    ("registry_snapshot_get", "files in path order, whole, as many as fit (`truncated`, `omitted_files`); `omitted_by_folder` names the folders of those left out, one level below what they share, with how many, for `paths`. `detail` chooses a smaller view."),
    ("git_diff", "the patch reads on by `offset` (`text_next_offset`); the per-file list keeps the entries that fit beside it (`files_omitted`): narrow with `paths`, or ask `stat_only`."),
    ("git_status", "whole entries that fit (`truncated`): narrow by folder with git_diff `paths`."),
    ("git_add", "the staged paths that fit (`truncated`)."),
    ("docker_container_list", "in name order, whole containers that fit, `more` counting the rest; `label` `com.docker.compose.service=NAME` narrows a Compose project to one service."),
    ("docker_container_logs", "keeps the end of the logs with a marker: narrow with `since`, `until` or `tail`."),
    ("docker_compose", "output keeps its end; `ps` lists whole containers as many as fit and counts the rest in `more`: `docker_container_list` with `compose_project` pages them all."),
    ("stale_containers_find", "host by host in the order they are looked at, by name within a host; a host listed on an earlier page says `listed_before`, and each counts what it did not show in `more`."),
    ("core_status", "at most 20 recent errors, each cut to 300 characters; a list too long for the answer (hosts first) keeps whole entries that fit and counts the rest in `<list>_omitted`: `include` asks for fewer parts."),
];

/// The sentence `docs/tools.md` shows under a tool's arguments.
pub fn of(name: &str, schema: &Value) -> String {
    let takes = |arg: &str| schema["properties"].get(arg).is_some();
    let mut parts = Vec::new();
    if name.starts_with("scrolls_") && name.ends_with("_list") && takes("query") {
        parts.push("a description shows its first 1 000 characters (`description_truncated`); the level's get tool reads it whole.".to_owned());
    }
    if name.starts_with("scrolls_") && (name.ends_with("_close") || name.ends_with("_delete")) {
        let what = if name.ends_with("_close") {
            "closed"
        } else {
            "deleted"
        };
        parts.push(format!(
            "answers `{what}_count` and up to 200 of the keys in `{what}` (`more` counts the rest); `scrolls_activity_list` with `scope` and `actions` holds every one."
        ));
    }
    if let Some((_, own)) = OWN.iter().find(|(tool, _)| *tool == name) {
        parts.push((*own).to_owned());
    }
    if takes("cursor") {
        parts.push("a page holds whole items that fit the answer; pass `next_cursor` back as `cursor` for the next (it is absent on the last page), so the pages return every item once.".to_owned());
    }
    if takes("offset") {
        parts.push("a long text is shown from `offset` and cut with `<field>_truncated`, `<field>_total_chars` and `<field>_next_offset`: call again with `offset` set to it to read on.".to_owned());
    }
    if parts.is_empty() {
        parts.push("one record, whole; should every field at its limit outgrow the session's budget (a Codex session's 10 000 characters), its largest parts yield and say so (`<field>_truncated`, `<field>_omitted`, `<field>_omitted_keys`).".to_owned());
    }
    format!("Answer larger than a result: {}", parts.join(" "))
}

#[test]
fn every_rule_names_a_tool_of_the_catalog() {
    for (tool, _) in OWN {
        assert!(
            coremcp_catalog::group_of(tool).is_some(),
            "{tool} is in no group of the catalog"
        );
    }
}
