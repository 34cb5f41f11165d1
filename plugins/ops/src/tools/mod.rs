//! The Ops tools, one module each, exporting its table entry as `TOOL`.

pub mod bootstrap;
pub mod core_status;
pub mod repo_setup;
pub mod session_record;
pub mod shell_run;
pub mod stale_containers_find;
