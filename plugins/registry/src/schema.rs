//! The Registry's tables (docs/tools.md), written once for both backends: PostgreSQL type
//! names, which the store maps for SQLite (`TIMESTAMPTZ`/`JSONB` → `TEXT`).
//!
//! Invariants:
//! - A migration, once released, never changes: a new column or index is a new version.
//! - Every mutable record has `version BIGINT` (starts at 1) and `created_at`/`updated_at`.
//! - `registry_project.docs_source_id` has no foreign key: project and source refer to each
//!   other, so the tools check it (a `docs` source of the same project) instead.
//! - `registry_host_role` mirrors `registry_host.roles` (the JSON array, in the caller's order)
//!   one row per role, so the `role` filter is a plain indexed lookup on both backends.
//! - `registry_snapshot.seq` numbers a source's snapshots in save order (a replaced one gets a
//!   new number): "latest" and retention never depend on two saves landing in different
//!   milliseconds.

use coremcp_store::Migration;

pub static MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "registry tables",
        sql: "
CREATE TABLE registry_theme (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    description TEXT,
    status TEXT NOT NULL CHECK (status IN ('active', 'archived')),
    version BIGINT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE registry_project (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    theme_id TEXT REFERENCES registry_theme (id),
    name TEXT NOT NULL,
    description TEXT,
    docs_source_id TEXT,
    status TEXT NOT NULL CHECK (status IN ('active', 'archived')),
    version BIGINT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX registry_project_theme ON registry_project (theme_id);

CREATE TABLE registry_source (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES registry_project (id),
    name TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('git', 'docs', 'package', 'service', 'url')),
    url TEXT NOT NULL,
    default_branch TEXT NOT NULL,
    description TEXT,
    metadata JSONB,
    status TEXT NOT NULL CHECK (status IN ('active', 'archived')),
    version BIGINT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    UNIQUE (project_id, name)
);

CREATE TABLE registry_host (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    address TEXT NOT NULL,
    core_mcp_url TEXT,
    docker_endpoint TEXT,
    os TEXT CHECK (os IN ('linux', 'windows', 'macos')),
    roles JSONB NOT NULL,
    enabled BOOLEAN NOT NULL,
    description TEXT,
    last_seen_at TIMESTAMPTZ,
    version BIGINT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
-- The forwarding targets: what remote_host resolves against.
CREATE INDEX registry_host_forwarding ON registry_host (name)
    WHERE core_mcp_url IS NOT NULL AND enabled;

CREATE TABLE registry_host_role (
    host_id TEXT NOT NULL REFERENCES registry_host (id),
    role TEXT NOT NULL,
    PRIMARY KEY (host_id, role)
);
CREATE INDEX registry_host_role_role ON registry_host_role (role);

-- Written by repo_setup; read by registry_source_list include_checkouts.
CREATE TABLE registry_checkout (
    host_id TEXT NOT NULL REFERENCES registry_host (id),
    source_id TEXT NOT NULL REFERENCES registry_source (id),
    path TEXT NOT NULL,
    branch TEXT,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (host_id, source_id)
);
CREATE INDEX registry_checkout_source ON registry_checkout (source_id);

CREATE TABLE registry_snapshot (
    id TEXT PRIMARY KEY,
    source_id TEXT NOT NULL REFERENCES registry_source (id),
    commit_sha TEXT NOT NULL,
    branch TEXT,
    format_version BIGINT NOT NULL,
    stats JSONB NOT NULL,
    content TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    created_by TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    seq BIGINT NOT NULL,
    UNIQUE (source_id, commit_sha)
);
CREATE INDEX registry_snapshot_latest ON registry_snapshot (source_id, seq DESC);
",
        search: &[],
        ranks: &[],
        tallies: &[],
    },
    // The URL a checkout was made from (repo_setup records it): a plain repo_setup restores
    // the checkout's origin to it, and never follows a source URL changed since.
    Migration {
        version: 2,
        name: "checkout url",
        sql: "ALTER TABLE registry_checkout ADD COLUMN url TEXT;",
        search: &[],
        ranks: &[],
        tallies: &[],
    },
];
