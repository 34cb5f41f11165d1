//! One module per record type of the Registry, each exporting its tools' table entries
//! (`LIST`, `ADD`, `UPDATE`; `SAVE`, `GET` for snapshots).

pub mod host;
pub mod project;
pub mod snapshot;
pub mod source;
pub mod theme;
