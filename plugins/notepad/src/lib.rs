//! The notepad group (being built).

use coremcp_plugin_api::sdk::Group;

pub static GROUP: Group = Group {
    id: "notepad",
    version: env!("CARGO_PKG_VERSION"),
    tools: &[],
    init: None,
};

coremcp_plugin_api::export_plugin!(GROUP);
