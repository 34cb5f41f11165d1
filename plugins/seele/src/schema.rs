//! The Seele tables (docs/tools.md, the data model), written once for both backends in
//! PostgreSQL type names, with the full-text index declared for the store layer.
//!
//! Invariants:
//! - `seele_node.path` is the node's materialised path (`core/architecture/relays`), unique;
//!   every node but a root has the node at its parent path as `parent_id`, so a subtree is the
//!   nodes whose path starts with `<path>/`.
//! - `front_matter` and `tags` are JSON **text**, not `JSONB`: PostgreSQL's `jsonb` reorders an
//!   object's keys, and a node's front matter keeps the order its writer gave.
//! - `version` is the node's latest revision; `seele_revision` holds one row per version that
//!   was written (an import with `on_conflict: replace` drops the older ones), so
//!   `seele_read version=N` reads row N.
//! - `content_hash` is [`crate::nodes::content_hash`] of the current revision: an import that
//!   brings the same content writes nothing.
//! - `seele_tag` repeats `tags` one row per tag, for the tag filter; `tag_text` repeats them as
//!   words, for the search index. Both are written with the node, in its transaction.
//! - A migration, once released, never changes.

use coremcp_store::search::Index;
use coremcp_store::Migration;

/// The search index over nodes' titles, bodies and tags.
pub const NODE_SEARCH: Index = Index {
    table: "seele_node",
    columns: &["title", "body", "tag_text"],
};

pub static MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "seele tables",
        sql: "
CREATE TABLE seele_node (
    id TEXT PRIMARY KEY,
    parent_id TEXT REFERENCES seele_node (id),
    path TEXT NOT NULL UNIQUE,
    slug TEXT NOT NULL,
    kind TEXT NOT NULL
        CHECK (kind IN ('folder', 'doc', 'section', 'note', 'adr', 'runbook')),
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    front_matter TEXT NOT NULL,
    project_key TEXT,
    theme_key TEXT,
    tags TEXT NOT NULL,
    tag_text TEXT NOT NULL,
    source_ref TEXT,
    content_hash TEXT NOT NULL,
    version BIGINT NOT NULL,
    created_by TEXT,
    updated_by TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    deleted_at TIMESTAMPTZ
);
CREATE INDEX seele_node_parent ON seele_node (parent_id);
CREATE INDEX seele_node_project ON seele_node (project_key) WHERE project_key IS NOT NULL;

CREATE TABLE seele_revision (
    node_id TEXT NOT NULL REFERENCES seele_node (id) ON DELETE CASCADE,
    version BIGINT NOT NULL,
    kind TEXT NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    front_matter TEXT NOT NULL,
    tags TEXT NOT NULL,
    source_ref TEXT,
    author TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (node_id, version)
);

CREATE TABLE seele_tag (
    node_id TEXT NOT NULL REFERENCES seele_node (id) ON DELETE CASCADE,
    tag TEXT NOT NULL,
    PRIMARY KEY (node_id, tag)
);
CREATE INDEX seele_tag_tag ON seele_tag (tag, node_id);

CREATE TABLE seele_link (
    from_id TEXT NOT NULL REFERENCES seele_node (id) ON DELETE CASCADE,
    to_path TEXT NOT NULL,
    rel TEXT NOT NULL CHECK (rel IN ('references', 'supersedes')),
    PRIMARY KEY (from_id, to_path, rel)
);
CREATE INDEX seele_link_to ON seele_link (to_path);
",
        search: &[NODE_SEARCH],
        ranks: &[],
        tallies: &[],
    },
    Migration {
        version: 2,
        name: "seele moved paths",
        // Where a moved node was: a link written with its old path (in a body not edited since)
        // still leads to it. A node at the path itself always wins over an alias.
        sql: "
CREATE TABLE seele_alias (
    path TEXT PRIMARY KEY,
    node_id TEXT NOT NULL REFERENCES seele_node (id) ON DELETE CASCADE
);
",
        search: &[],
        ranks: &[],
        tallies: &[],
    },
    Migration {
        version: 3,
        name: "seele ranks by a node's head",
        // PostgreSQL ranks by the start of a node (`coremcp_store::search::RANK_HEAD`): a
        // search of common words over large nodes read every match's whole text vector.
        sql: "",
        search: &[],
        ranks: &[NODE_SEARCH],
        tallies: &[],
    },
    Migration {
        version: 4,
        name: "seele search walks",
        // The order a search found at its first page (`coremcp_store::walk`).
        sql: "CREATE TABLE seele_walk (token TEXT PRIMARY KEY, created_ms BIGINT NOT NULL, \
              ids TEXT NOT NULL);",
        search: &[],
        ranks: &[],
        tallies: &[],
    },
];
