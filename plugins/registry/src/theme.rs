//! Themes, the top-level groupings of projects.
//!
//! Invariants: a theme key matches `^[a-z0-9][a-z0-9-]{0,39}$` and never changes; a theme is
//! never deleted, only archived (projects and other services refer to its key).

use coremcp_store::records::{Entity, Key};

pub static THEME: Entity = Entity {
    noun: "theme",
    tools: "registry_theme",
    table: "registry_theme",
    unique: "key",
    select: "SELECT id, key, name, description, status, version, created_at, updated_at \
        FROM registry_theme",
    fields: "key name description? status",
    key: &[Key::text("key", "key")],
};
