//! Building results from store rows. The budget and paging helpers are the SDK's, the
//! timestamp readers the store layer's, re-exported here for the NervHQ groups.

pub use coremcp_plugin_sdk::budget::{capped, chars, put_opt, result_budget, MAX_LISTED};
pub use coremcp_plugin_sdk::page::{page, page_result};
pub use coremcp_store::plugin::{ts, ts_opt};
