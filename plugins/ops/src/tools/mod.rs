//! The Ops tools, one module each, exporting its table entry as `TOOL`.

pub mod shell_run;
