//! The Scrolls tools besides the level matrix (`crate::matrix`), one module each, exporting
//! its table entry as `TOOL`.

pub mod scrolls_activity_list;
pub mod scrolls_agent_delete;
pub mod scrolls_agent_get;
pub mod scrolls_agent_list;
pub mod scrolls_agent_register;
pub mod scrolls_agent_update;
pub mod scrolls_board_get;
pub mod scrolls_comment_add;
pub mod scrolls_comment_list;
pub mod scrolls_item_claim;
pub mod scrolls_item_move;
pub mod scrolls_progress_get;
pub mod scrolls_ready_list;
pub mod scrolls_search;

use coremcp_store::plugin::TxError;
use coremcp_store::Tx;

use crate::items;

/// The id of item `key` (argument `field`).
pub fn item_id(tx: &mut Tx<'_>, field: &str, key: &str) -> Result<String, TxError> {
    Ok(items::find(tx, field, key)?.get_text("id")?)
}
