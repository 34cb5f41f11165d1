//! Bounding what a git tool returns: the SDK's cut marker and result budget, under the names
//! the tools use.

pub use coremcp_plugin_sdk::budget::{
    chars as size, cut, fit, fit_array, result_budget, Cut, DEFAULT_MAX_CHARS,
};
