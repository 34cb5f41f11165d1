//! The Docker tools, one module each, exporting its table entry as `TOOL`, and what they
//! share ([`common`]).

pub mod action;
pub mod common;
pub mod compose;
pub mod inspect;
pub mod list;
pub mod logs;
