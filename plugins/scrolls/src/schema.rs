//! The Scrolls tables (docs/tools.md, the data model), written once for both backends in
//! PostgreSQL type names, with the two full-text indexes declared for the store layer.
//!
//! Invariants:
//! - One `scrolls_item` table holds all six levels; `key` is unique across them. `project_id`
//!   is the project an item counts in (a project counts in itself; NULL only for themes), so a
//!   project's whole subtree is one range of an index. `seq` is the item's number in it, and
//!   (`project_id`, `seq`) is unique, so a number is never given twice.
//! - `scrolls_project_seq.next_seq` is the next number of a project; it is only ever taken by
//!   one `UPDATE … SET next_seq = next_seq + 1 RETURNING` inside the create transaction, so
//!   concurrent creates get distinct numbers without gaps, and a deleted item's number is not
//!   given again.
//! - A dependency never points at its own item (CHECK); cycles are refused on write.
//! - `scrolls_activity` is append-only and refers to items by key as well as id, so its rows
//!   outlive a delete: a delete points the removed items' rows at their nearest surviving
//!   ancestor (`items::delete`), so every scope above keeps their history; with none left,
//!   the foreign key sets `item_id` NULL.
//! - `scrolls_tally` counts each project's items (see `ITEM_TALLY`); triggers keep it, so no
//!   statement here writes it.
//! - A migration, once released, never changes.

use coremcp_store::search::Index;
use coremcp_store::tally::Tally;
use coremcp_store::Migration;

/// The search index over items' titles and descriptions.
pub const ITEM_SEARCH: Index = Index {
    table: "scrolls_item",
    columns: &["title", "description"],
};

/// Each project's items counted by status, level and assignee (`''` for none), with their
/// estimates summed: a project's progress reads these few rows.
pub const ITEM_TALLY: Tally = Tally {
    table: "scrolls_item",
    into: "scrolls_tally",
    by: &["project_id", "status", "level", "assignee_id"],
    sum: &["estimate"],
    when: "{row}.project_id IS NOT NULL",
};

/// The search index over comments.
pub const COMMENT_SEARCH: Index = Index {
    table: "scrolls_comment",
    columns: &["body"],
};

/// Priority as a sort rank, urgent first, as a literal: the ready queue orders by it and an
/// index holds it, and the planner uses the index only when the two spell it the same.
macro_rules! priority_rank {
    () => {
        "CASE priority WHEN 'urgent' THEN 0 WHEN 'high' THEN 1 WHEN 'medium' THEN 2 \
         WHEN 'low' THEN 3 ELSE 4 END"
    };
}

/// Priority as a sort rank, urgent first (of the item in the query's only `scrolls_item`).
pub const PRIORITY_RANK: &str = priority_rank!();

pub static MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "scrolls tables",
        sql: "
CREATE TABLE scrolls_agent (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    kind TEXT,
    capabilities JSONB,
    host TEXT,
    description TEXT,
    status TEXT NOT NULL CHECK (status IN ('active', 'paused', 'retired')),
    last_seen_at TIMESTAMPTZ,
    version BIGINT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE scrolls_item (
    id TEXT PRIMARY KEY,
    level TEXT NOT NULL
        CHECK (level IN ('theme', 'project', 'epic', 'story', 'task', 'subtask')),
    key TEXT NOT NULL UNIQUE,
    parent_id TEXT REFERENCES scrolls_item (id),
    project_id TEXT REFERENCES scrolls_item (id),
    seq BIGINT,
    title TEXT NOT NULL,
    description TEXT,
    status TEXT NOT NULL
        CHECK (status IN ('open', 'in_progress', 'blocked', 'review', 'done', 'cancelled')),
    priority TEXT NOT NULL CHECK (priority IN ('urgent', 'high', 'medium', 'low', 'none')),
    assignee_id TEXT REFERENCES scrolls_agent (id) ON DELETE SET NULL,
    labels JSONB,
    estimate DOUBLE PRECISION,
    due_date TEXT,
    acceptance_criteria JSONB,
    external_ref TEXT,
    registry_key TEXT,
    position BIGINT,
    resolution TEXT CHECK (resolution IN ('done', 'cancelled', 'duplicate', 'wont_do')),
    created_by TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    started_at TIMESTAMPTZ,
    closed_at TIMESTAMPTZ,
    version BIGINT NOT NULL,
    UNIQUE (project_id, seq)
);
CREATE INDEX scrolls_item_parent ON scrolls_item (parent_id);
CREATE INDEX scrolls_item_project ON scrolls_item (project_id, level, status);
CREATE INDEX scrolls_item_assignee ON scrolls_item (assignee_id, status);

CREATE TABLE scrolls_project_seq (
    project_id TEXT PRIMARY KEY REFERENCES scrolls_item (id) ON DELETE CASCADE,
    next_seq BIGINT NOT NULL
);

CREATE TABLE scrolls_dependency (
    item_id TEXT NOT NULL REFERENCES scrolls_item (id) ON DELETE CASCADE,
    depends_on_id TEXT NOT NULL REFERENCES scrolls_item (id) ON DELETE CASCADE,
    PRIMARY KEY (item_id, depends_on_id),
    CHECK (item_id <> depends_on_id)
);
CREATE INDEX scrolls_dependency_on ON scrolls_dependency (depends_on_id);

CREATE TABLE scrolls_comment (
    id TEXT PRIMARY KEY,
    item_id TEXT NOT NULL REFERENCES scrolls_item (id) ON DELETE CASCADE,
    author TEXT,
    body TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX scrolls_comment_item ON scrolls_comment (item_id, created_at);

CREATE TABLE scrolls_activity (
    id TEXT PRIMARY KEY,
    at TIMESTAMPTZ NOT NULL,
    actor TEXT,
    item_id TEXT REFERENCES scrolls_item (id) ON DELETE SET NULL,
    item_key TEXT,
    agent_id TEXT REFERENCES scrolls_agent (id) ON DELETE SET NULL,
    action TEXT NOT NULL CHECK (action IN ('created', 'updated', 'closed', 'reopened', 'moved',
        'claimed', 'commented', 'deleted')),
    changes JSONB
);
CREATE INDEX scrolls_activity_item ON scrolls_activity (item_id, at);
CREATE INDEX scrolls_activity_at ON scrolls_activity (at);
",
        search: &[ITEM_SEARCH, COMMENT_SEARCH],
        ranks: &[],
        tallies: &[],
    },
    Migration {
        version: 2,
        name: "scrolls views on indexes",
        // A project counts in itself. The ready index is in the ready queue's order (see
        // PRIORITY_RANK); the two partial indexes hold only what progress looks up by date.
        sql: concat!(
            "
UPDATE scrolls_item SET project_id = id WHERE level = 'project';
DROP INDEX scrolls_item_project;
CREATE INDEX scrolls_item_due ON scrolls_item (project_id, due_date)
    WHERE due_date IS NOT NULL AND status NOT IN ('done', 'cancelled');
CREATE INDEX scrolls_item_closed ON scrolls_item (project_id, closed_at)
    WHERE closed_at IS NOT NULL;
CREATE INDEX scrolls_item_ready ON scrolls_item (status, (",
            priority_rank!(),
            "), (due_date IS NULL), due_date, created_at, key);
"
        ),
        search: &[],
        ranks: &[],
        tallies: &[ITEM_TALLY],
    },
    Migration {
        version: 3,
        name: "scrolls project leads",
        // A project's lead was kept as its assignee: it moves to a field of its own.
        sql: "
ALTER TABLE scrolls_item ADD COLUMN lead_id TEXT REFERENCES scrolls_agent (id) ON DELETE SET NULL;
UPDATE scrolls_item SET lead_id = assignee_id, assignee_id = NULL
    WHERE level = 'project' AND assignee_id IS NOT NULL;
",
        search: &[],
        ranks: &[],
        tallies: &[],
    },
    Migration {
        version: 4,
        name: "scrolls ranks by an item's head",
        // PostgreSQL ranks by the start of an item and of a comment
        // (`coremcp_store::search::RANK_HEAD`), as Seele does.
        sql: "",
        search: &[],
        ranks: &[ITEM_SEARCH, COMMENT_SEARCH],
        tallies: &[],
    },
    Migration {
        version: 5,
        name: "scrolls search walks",
        // The order a search found at its first page (`coremcp_store::walk`).
        sql: "CREATE TABLE scrolls_walk (token TEXT PRIMARY KEY, created_ms BIGINT NOT NULL, \
              ids TEXT NOT NULL);",
        search: &[],
        ranks: &[],
        tallies: &[],
    },
];
