//! The six levels of a Scrolls item, described once: what a level's key looks like, which
//! levels may hold it, whether a `get` shows its children by default, and the key arguments
//! its `create` and `list` take. Every rule about
//! levels — the matrix tools' arguments, their checks and `scrolls_item_move` — reads this
//! table, so a reader finds the level rules here and nowhere else.
//!
//! Invariants:
//! - A theme and a project are named by their own key (`reliability`, `CORE`); epics, stories,
//!   tasks and subtasks by their project's key and a number from one sequence per project
//!   (`CORE-42`), so a key names its level's kind of key without a lookup.
//! - A project sits under a theme or nothing; an epic under a project; a story or a task under
//!   an epic or directly under a project; a subtask under a story or a task. Nothing else.

use coremcp_plugin_sdk::ArgEnum;

/// A level of the hierarchy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ArgEnum)]
pub enum Level {
    Theme,
    Project,
    Epic,
    Story,
    Task,
    Subtask,
}

/// How a level's items are keyed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyRule {
    /// Given by the caller: a lowercase slug (`reliability`).
    Slug,
    /// Given by the caller: a project key (`CORE`), the Registry project's.
    ProjectKey,
    /// Taken from the project's sequence on create (`CORE-42`).
    Sequence,
}

/// A key argument of a level tool other than `id`: its name and what it says.
#[derive(Debug, Clone, Copy)]
pub struct KeyArg {
    pub name: &'static str,
    pub description: &'static str,
    pub required: bool,
}

const fn arg(name: &'static str, description: &'static str, required: bool) -> KeyArg {
    KeyArg {
        name,
        description,
        required,
    }
}

const IN_THEME: KeyArg = arg("theme", "e.g. reliability", false);
const IN_PROJECT: KeyArg = arg("project", "e.g. CORE", false);
const IN_EPIC: KeyArg = arg("epic", "e.g. CORE-1", false);

/// What is true of one level.
#[derive(Debug)]
pub struct Rules {
    pub level: Level,
    /// The levels an item of this level may sit under; `None` in it: at the top.
    pub parents: &'static [Option<Level>],
    pub key: KeyRule,
    /// Whether `get` lists the item's children when the caller does not say.
    pub children_by_default: bool,
    /// The argument of `create` that names where the item goes.
    pub parent_arg: Option<KeyArg>,
    /// What `list` filters on besides the common list arguments.
    pub list_filters: &'static [KeyArg],
}

/// Every level, top down.
pub static LEVELS: [Rules; 6] = [
    Rules {
        level: Level::Theme,
        parents: &[None],
        key: KeyRule::Slug,
        children_by_default: true,
        parent_arg: None,
        list_filters: &[],
    },
    Rules {
        level: Level::Project,
        parents: &[Some(Level::Theme), None],
        key: KeyRule::ProjectKey,
        children_by_default: true,
        parent_arg: Some(arg("theme", "e.g. reliability", false)),
        list_filters: &[IN_THEME],
    },
    Rules {
        level: Level::Epic,
        parents: &[Some(Level::Project)],
        key: KeyRule::Sequence,
        children_by_default: true,
        parent_arg: Some(arg("project", "e.g. CORE", true)),
        list_filters: &[IN_PROJECT, IN_THEME],
    },
    Rules {
        level: Level::Story,
        parents: &[Some(Level::Epic), Some(Level::Project)],
        key: KeyRule::Sequence,
        children_by_default: false,
        parent_arg: Some(arg("parent", "epic or project, e.g. CORE-1", true)),
        list_filters: &[IN_PROJECT, IN_EPIC],
    },
    Rules {
        level: Level::Task,
        parents: &[Some(Level::Epic), Some(Level::Project)],
        key: KeyRule::Sequence,
        children_by_default: false,
        parent_arg: Some(arg("parent", "epic or project, e.g. CORE-1", true)),
        list_filters: &[IN_PROJECT, IN_EPIC],
    },
    Rules {
        level: Level::Subtask,
        parents: &[Some(Level::Story), Some(Level::Task)],
        key: KeyRule::Sequence,
        children_by_default: false,
        parent_arg: Some(arg("parent", "story or task, e.g. CORE-7", true)),
        list_filters: &[arg("parent", "story or task, e.g. CORE-7", true)],
    },
];

impl Level {
    /// How a key of this level looks, for an argument's description.
    pub fn key_example(self) -> &'static str {
        match self {
            Level::Theme => "e.g. reliability",
            Level::Project => "e.g. CORE",
            Level::Epic | Level::Story | Level::Task | Level::Subtask => "e.g. CORE-42",
        }
    }

    pub fn rules(self) -> &'static Rules {
        &LEVELS[self as usize]
    }

    /// Whether an item of this level may sit under `parent` (`None`: at the top).
    pub fn may_sit_under(self, parent: Option<Level>) -> bool {
        self.rules().parents.contains(&parent)
    }

    /// The parents this level takes, as an error shows them: "an epic or a project".
    pub fn parents_named(self) -> String {
        let names: Vec<String> = self
            .rules()
            .parents
            .iter()
            .map(|p| {
                p.map_or("nothing (the top)".to_owned(), |l| {
                    format!("{} {}", l.article(), l.as_str())
                })
            })
            .collect();
        names.join(" or ")
    }

    /// Refuses an item of this level under `parent`, naming what it may sit under.
    pub fn check_parent(self, parent: Option<Level>) -> Result<(), String> {
        if self.may_sit_under(parent) {
            return Ok(());
        }
        let under = parent.map_or("at the top".to_owned(), |p| {
            format!("under {} {}", p.article(), p.as_str())
        });
        Err(format!(
            "{} {} cannot sit {under}: it goes under {}",
            self.article(),
            self.as_str(),
            self.parents_named()
        ))
    }

    /// The levels an item of this level may hold.
    pub fn children(self) -> impl Iterator<Item = Level> {
        LEVELS
            .iter()
            .filter(move |r| r.parents.contains(&Some(self)))
            .map(|r| r.level)
    }

    /// "a" or "an", as a message puts it before the level's name.
    pub fn article(self) -> &'static str {
        match self {
            Level::Epic => "an",
            Level::Theme | Level::Project | Level::Story | Level::Task | Level::Subtask => "a",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Level; 6] = [
        Level::Theme,
        Level::Project,
        Level::Epic,
        Level::Story,
        Level::Task,
        Level::Subtask,
    ];

    #[test]
    fn the_table_is_in_level_order() {
        for (i, rules) in LEVELS.iter().enumerate() {
            assert_eq!(rules.level as usize, i, "{:?}", rules.level);
            assert_eq!(rules.level.rules().level, rules.level);
        }
    }

    #[test]
    fn every_parent_rule_of_the_catalog() {
        // (child, parent): allowed.
        let allowed: [(Level, Option<Level>); 9] = [
            (Level::Theme, None),
            (Level::Project, Some(Level::Theme)),
            (Level::Project, None),
            (Level::Epic, Some(Level::Project)),
            (Level::Story, Some(Level::Epic)),
            (Level::Story, Some(Level::Project)),
            (Level::Task, Some(Level::Epic)),
            (Level::Task, Some(Level::Project)),
            (Level::Subtask, Some(Level::Story)),
        ];
        for child in ALL {
            for parent in std::iter::once(None).chain(ALL.map(Some)) {
                let expected = allowed.contains(&(child, parent))
                    || (child, parent) == (Level::Subtask, Some(Level::Task));
                assert_eq!(
                    child.may_sit_under(parent),
                    expected,
                    "{child:?} under {parent:?}"
                );
                assert_eq!(child.check_parent(parent).is_ok(), expected);
            }
        }
    }

    #[test]
    fn a_wrong_parent_names_the_allowed_kinds() {
        let err = Level::Subtask
            .check_parent(Some(Level::Epic))
            .expect_err("refused");
        assert_eq!(
            err,
            "a subtask cannot sit under an epic: it goes under a story or a task"
        );
        let err = Level::Epic.check_parent(None).expect_err("refused");
        assert_eq!(
            err,
            "an epic cannot sit at the top: it goes under a project"
        );
        assert_eq!(
            Level::Project.parents_named(),
            "a theme or nothing (the top)"
        );
    }

    #[test]
    fn children_follow_from_the_parent_rules() {
        let of = |l: Level| l.children().collect::<Vec<_>>();
        assert_eq!(of(Level::Theme), [Level::Project]);
        assert_eq!(of(Level::Project), [Level::Epic, Level::Story, Level::Task]);
        assert_eq!(of(Level::Epic), [Level::Story, Level::Task]);
        assert_eq!(of(Level::Story), [Level::Subtask]);
        assert_eq!(of(Level::Subtask), []);
    }
}
