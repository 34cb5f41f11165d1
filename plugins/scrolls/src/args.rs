//! The argument types every Scrolls tool shares (docs/tools.md, Scrolls: ItemFields, ListArgs,
//! GetArgs, CloseArgs, DeleteArgs): each value is checked while the arguments are parsed, so a
//! wrong key, date or name is refused by its argument's name before a handler runs.

use coremcp_plugin_sdk::page::Paging;
use coremcp_plugin_sdk::{rules, ArgEnum, Args, ToolError};
use coremcp_store::Param;

use crate::items::Resolution;
use crate::key::ItemKey;

/// The longest title, and the longest description or comment.
pub const MAX_TITLE: usize = 200;
pub const MAX_TEXT: usize = 20_000;

coremcp_plugin_sdk::checked_string! {
    /// An item key: a theme slug, a project key, or `PROJECT-n`.
    ItemId => |at, v| ItemKey::parse(at, v).map(|_| ());
    /// A title: one line of readable text, at most 200 characters.
    Title => |at, v| rules::line(at, v, MAX_TITLE);
    /// Markdown of at most 20 000 characters.
    Text => |at, v| rules::text(at, v, MAX_TEXT);
    /// A date, `YYYY-MM-DD`.
    DueDate => due_date;
    /// An agent's name.
    AgentName => crate::agents::check_name;
    /// A label or a link: one token of at most 200 characters.
    Token => |at, v| rules::token(at, v, MAX_TITLE);
}

impl ItemId {
    pub fn key(&self) -> ItemKey {
        // Parsed once already, while the arguments were read.
        ItemKey::parse("id", self.as_str()).unwrap_or(ItemKey::Theme(self.0.clone()))
    }
}

/// `YYYY-MM-DD` of a day that exists.
fn due_date(field: &str, text: &str) -> Result<(), ToolError> {
    let parts: Vec<&str> = text.split('-').collect();
    let number = |p: &str, len: usize| {
        (p.len() == len && p.bytes().all(|b| b.is_ascii_digit()))
            .then(|| p.parse::<u32>().ok())
            .flatten()
    };
    let ok = match parts[..] {
        [y, m, d] => match (number(y, 4), number(m, 2), number(d, 2)) {
            (Some(y), Some(m), Some(d)) => {
                let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
                let days = [
                    31,
                    if leap { 29 } else { 28 },
                    31,
                    30,
                    31,
                    30,
                    31,
                    31,
                    30,
                    31,
                    30,
                    31,
                ];
                (1..=12).contains(&m) && d >= 1 && d <= days[m as usize - 1]
            }
            _ => false,
        },
        _ => false,
    };
    if ok {
        return Ok(());
    }
    let problem = format!("{text:?} is not a date: write YYYY-MM-DD, e.g. 2026-12-31");
    Err(coremcp_plugin_sdk::args::invalid(field, problem))
}

/// An item's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ArgEnum)]
pub enum Status {
    Open,
    InProgress,
    Blocked,
    Review,
    Done,
    Cancelled,
}

/// An item's priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ArgEnum)]
pub enum Priority {
    Urgent,
    High,
    Medium,
    Low,
    None,
}

macro_rules! params {
    ($($name:ty),*) => {$(
        impl From<$name> for Param {
            fn from(value: $name) -> Self {
                value.as_str().into()
            }
        }
    )*};
}
params!(Status, Priority, Resolution);

/// The fields of an epic, story, task or subtask that create and update take (ItemFields,
/// less the title, which create requires and update may change).
#[derive(Debug, Args)]
pub struct ItemFields {
    /// Markdown
    #[arg(max_len = 20000)]
    pub description: Option<Text>,
    /// done/cancelled close
    pub status: Option<Status>,
    /// default none
    pub priority: Option<Priority>,
    /// agent ("" releases)
    pub assignee: Option<coremcp_plugin_sdk::args::Clearable<AgentName>>,
    /// replaces all
    #[arg(max_items = 50)]
    pub labels: Option<Vec<Token>>,
    /// YYYY-MM-DD ("" clears)
    pub due_date: Option<coremcp_plugin_sdk::args::Clearable<DueDate>>,
    /// points
    #[arg(min = 0)]
    pub estimate: Option<f64>,
    /// blocker keys
    #[arg(max_items = 100)]
    pub depends_on: Option<Vec<ItemId>>,
    /// URL ("" clears)
    pub external_ref: Option<coremcp_plugin_sdk::args::Clearable<Token>>,
}

/// The filters and paging of every level's list (ListArgs).
#[derive(Debug, Args)]
pub struct ListArgs {
    /// default open
    #[arg(max_items = 6)]
    pub status: Vec<Status>,
    /// closed too
    #[arg(default)]
    pub include_closed: bool,
    /// agent name
    pub assignee: Option<AgentName>,
    /// with this label
    pub label: Option<Token>,
    /// of this priority
    pub priority: Option<Priority>,
    /// title contains
    #[arg(min_len = 1, max_len = 200)]
    pub query: Option<String>,
    #[arg(flatten)]
    pub page: Paging,
}

/// One item (GetArgs).
#[derive(Debug, Args)]
pub struct GetArgs {
    /// item key
    pub id: ItemId,
    /// default above story
    pub include_children: Option<bool>,
    /// levels (default 1)
    #[arg(min = 1, max = 3, default = 1)]
    pub depth: u32,
    /// with comments
    #[arg(default)]
    pub include_comments: bool,
    /// description offset
    #[arg(min = 0, default = 0)]
    pub offset: usize,
}

/// Closing an item (CloseArgs).
#[derive(Debug, Args)]
pub struct CloseArgs {
    /// item key
    pub id: ItemId,
    /// default done
    #[arg(default = Resolution::Done)]
    pub resolution: Resolution,
    /// closing comment
    #[arg(max_len = 20000)]
    pub comment: Option<Text>,
    /// descendants too
    #[arg(default)]
    pub cascade: bool,
}

/// Deleting an item (DeleteArgs).
#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// item key
    pub id: ItemId,
    /// subtree too
    #[arg(default)]
    pub cascade: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use coremcp_plugin_sdk::testing::refused;

    #[test]
    fn due_dates_are_days_that_exist() {
        for ok in ["2026-12-31", "2024-02-29", "2000-02-29", "2026-01-01"] {
            assert!(due_date("due_date", ok).is_ok(), "{ok}");
        }
        for bad in [
            "2026-13-01",
            "2026-02-29",
            "1900-02-29",
            "2026-1-1",
            "26-01-01",
            "2026-01-32",
            "",
            "2026-01-01T00:00",
        ] {
            refused(due_date("due_date", bad), "due_date");
        }
    }
}
