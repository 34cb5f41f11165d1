//! Building results from store rows: timestamps normalised whichever backend stored them. The
//! budget and paging helpers are the SDK's, re-exported here for the NervHQ groups.

pub use coremcp_plugin_sdk::budget::{capped, chars, fit_text, put_opt, MAX_LISTED, RESULT_BUDGET};
pub use coremcp_plugin_sdk::page::{page, page_result};
use coremcp_store::plugin::timestamp_out;
use coremcp_store::{Row, StoreError};

/// A timestamp column, normalised to the fixed-width form whichever backend stored it.
pub fn ts(row: &Row, column: &str) -> Result<String, StoreError> {
    row.get_text(column).map(|t| timestamp_out(&t))
}

/// A nullable timestamp column, normalised.
pub fn ts_opt(row: &Row, column: &str) -> Result<Option<String>, StoreError> {
    Ok(row.get_opt_text(column)?.map(|t| timestamp_out(&t)))
}
