//! What every Registry tool shares: its store service, its limits, and (from the store layer)
//! the record helpers every versioned-record group uses.

use coremcp_store::plugin::Service;

/// The Registry's store: `registry.sqlite3` under the data dir, or schema `registry`.
pub static SERVICE: Service = Service::new("registry", crate::schema::MIGRATIONS);

/// The longest name a record may have, and the longest description.
pub const MAX_NAME: usize = 200;
pub const MAX_DESCRIPTION: usize = 4000;
/// The longest URL.
pub const MAX_URL: usize = 2000;

pub use coremcp_store::query::Query;

pub use coremcp_store::records::{not_found, Record, Relate};
