//! One module per tool, each exporting its table entry as `TOOL`.

pub mod publishing;
