//! The integration suite: one binary that drives the real `coremcp` over real pipes, with the
//! fixture plugin, the real Publishing plugin and real child processes.

mod commands;
mod files;
mod git;
mod golden;
mod plugins;
mod protocol;
mod publishing;
mod sql;
