//! One module per tool, each exporting its table entry as `TOOL`; what tools of one record
//! type share lives beside them (`crate::theme`, `crate::project`, …).

pub mod registry_host_add;
pub mod registry_host_list;
pub mod registry_host_update;
pub mod registry_project_add;
pub mod registry_project_list;
pub mod registry_project_update;
pub mod registry_snapshot_get;
pub mod registry_snapshot_save;
pub mod registry_source_add;
pub mod registry_source_list;
pub mod registry_source_update;
pub mod registry_theme_add;
pub mod registry_theme_list;
pub mod registry_theme_update;
