//! One module per tool of the group, each exporting its table entry as `TOOL`.

pub mod code_snapshot;
pub mod files_list;
pub mod files_search;
pub mod sql_query;
