//! Item keys: what an `id`, `parent` or `depends_on` argument names. A key says its own kind,
//! so it is checked, and its level narrowed, before any lookup.
//!
//! Invariants: a theme key is a slug (`reliability`), a project key the Registry's form
//! (`CORE`), and every other item `PROJECT-n` with `n` from 1 without leading zeros, never
//! reused within the project.

use coremcp_plugin_sdk::{rules, ToolError};

use crate::level::Level;

/// The longest theme key.
pub const MAX_THEME_KEY: usize = 40;

/// A parsed key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemKey {
    Theme(String),
    Project(String),
    /// An epic, story, task or subtask: its project's key and its number.
    Item {
        project: String,
        seq: u64,
    },
}

impl ItemKey {
    /// Reads the key `text` of argument `field`, refusing what no item could be named.
    pub fn parse(field: &str, text: &str) -> Result<Self, ToolError> {
        if let Some((project, number)) = text
            .rsplit_once('-')
            .filter(|(p, _)| p.starts_with(|c: char| c.is_ascii_uppercase()))
        {
            rules::project_key(field, project)?;
            let seq = number
                .parse::<u64>()
                .ok()
                .filter(|n| *n > 0 && !number.starts_with('0') && number.len() <= 12)
                .ok_or_else(|| {
                    coremcp_plugin_sdk::args::invalid(
                        field,
                        format!(
                            "{text:?} is not an item key: write PROJECT-n, n from 1 (e.g. CORE-42)"
                        ),
                    )
                })?;
            return Ok(Self::Item {
                project: project.to_owned(),
                seq,
            });
        }
        if text.starts_with(|c: char| c.is_ascii_uppercase()) {
            rules::project_key(field, text)?;
            return Ok(Self::Project(text.to_owned()));
        }
        rules::slug(field, text, "theme key", MAX_THEME_KEY, "-", "reliability")?;
        Ok(Self::Theme(text.to_owned()))
    }

    /// The levels an item with this key may be.
    pub fn levels(&self) -> &'static [Level] {
        match self {
            Self::Theme(_) => &[Level::Theme],
            Self::Project(_) => &[Level::Project],
            Self::Item { .. } => &[Level::Epic, Level::Story, Level::Task, Level::Subtask],
        }
    }

    /// The key as written.
    pub fn text(&self) -> String {
        match self {
            Self::Theme(key) | Self::Project(key) => key.clone(),
            Self::Item { project, seq } => format!("{project}-{seq}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coremcp_plugin_sdk::testing::refused;

    #[test]
    fn keys_name_their_kind() {
        let item = |p: &str, seq| ItemKey::Item {
            project: p.to_owned(),
            seq,
        };
        let cases = [
            ("reliability", ItemKey::Theme("reliability".into())),
            ("dev-ops", ItemKey::Theme("dev-ops".into())),
            ("CORE", ItemKey::Project("CORE".into())),
            ("CORE-42", item("CORE", 42)),
            ("X1-1", item("X1", 1)),
        ];
        for (text, expected) in cases {
            let key = ItemKey::parse("id", text).expect(text);
            assert_eq!(key.text(), text);
            assert_eq!(key, expected);
        }
        assert_eq!(
            ItemKey::parse("id", "CORE-7").expect("item").levels().len(),
            4
        );
    }

    #[test]
    fn anything_else_is_refused_by_name() {
        for bad in [
            "",
            "CORE-0",
            "CORE-01",
            "CORE-",
            "CORE-x",
            "C-1",
            "core-1x!",
            "Core",
            "-a",
            "CORE-1-2",
            "CORE-9999999999999",
        ] {
            refused(ItemKey::parse("parent", bad), "parent");
        }
    }
}
