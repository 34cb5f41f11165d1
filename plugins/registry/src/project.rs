//! Projects.
//!
//! Invariants:
//! - A project key matches `^[A-Z][A-Z0-9]{1,9}$` and never changes: it is also the Scrolls
//!   item prefix (`CORE-42`), and other services refer to it.
//! - `docs_source`, when set, is an active `docs`-kind source of the same project. The store
//!   has no foreign key for it (project and source refer to each other), so
//!   `registry_project_update` is the only place that writes it, and it checks.
//! - A project is never deleted, only archived.

use coremcp_store::records::{Entity, Key};

/// A project with its theme key, docs source ref and count of active sources.
pub static PROJECT: Entity = Entity {
    noun: "project",
    tools: "registry_project",
    table: "registry_project",
    unique: "key",
    select: "SELECT p.id, p.key, p.name, p.description, p.status, p.version, \
        p.created_at, p.updated_at, p.theme_id, p.docs_source_id, t.key AS theme_key, \
        dp.key || '/' || ds.name AS docs_source, \
        (SELECT COUNT(*) FROM registry_source c \
         WHERE c.project_id = p.id AND c.status = 'active') AS source_count \
        FROM registry_project p \
        LEFT JOIN registry_theme t ON t.id = p.theme_id \
        LEFT JOIN registry_source ds ON ds.id = p.docs_source_id \
        LEFT JOIN registry_project dp ON dp.id = ds.project_id",
    fields: "key name description? theme=theme_key? docs_source? source_count:int status",
    key: &[Key::text("p.key", "key")],
};
