//! The SDK a Core MCP group is written with. A group is a [`Group`] table of [`Tool`]s; each
//! tool is a handler taking one typed argument struct (`#[derive(Args)]`); and
//! [`export_plugin!`] turns the table into the library's root module.
//!
//! The SDK is linked statically into each plugin, so it may change in any minor release; the
//! frozen contract with the host is the ABI crate (`coremcp-plugin-api`), re-exported here as
//! [`abi`]. What runs where and who takes `remote_host` come from the catalog
//! (`coremcp-catalog`), never from the plugin.
//!
//! ```ignore
//! use coremcp_plugin_sdk::prelude::*;
//!
//! #[derive(Args)]
//! struct Get {
//!     /// the note's key
//!     key: String,
//! }
//!
//! fn get(_: &Ctx<'_>, args: Get) -> Result<Value, ToolError> {
//!     Ok(json!({ "key": args.key }))
//! }
//!
//! pub static GROUP: Group = Group::new(&coremcp_catalog::NOTEPAD, env!("CARGO_PKG_VERSION"), &[
//!     Tool::new("notepad_get", "Get one note.", &typed(get)).hints(Hints::READ),
//! ]);
//! export_plugin!(GROUP);
//! ```

extern crate self as coremcp_plugin_sdk;

pub mod args;
pub mod budget;
pub mod caller;
mod export;
mod group;
pub mod page;
pub mod rules;
pub mod schema;
pub mod task;
pub mod testing;
pub mod time;

pub use coremcp_catalog as catalog;
pub use coremcp_plugin_api as abi;
pub use coremcp_plugin_api::{codes, Annotations, CallCtx, LogLevel, Runs, ToolError};
pub use coremcp_plugin_derive::{ArgEnum, Args};
pub use export::{config, host_call, log, manifest, root_module, Ctx};
pub use group::{typed, Group, Handler, Hints, Tool, Typed};

/// A tool's serialisable result as its JSON value (a value that cannot be serialised is an
/// `internal` error).
pub fn to_json<T: serde::Serialize>(value: &T) -> Result<serde_json::Value, ToolError> {
    serde_json::to_value(value).map_err(|e| ToolError::new(codes::INTERNAL, format!("result: {e}")))
}

/// What a tool module needs, in one `use`.
pub mod prelude {
    pub use crate::args::{Clearable, NoArgs, Scalar};
    pub use crate::page::Paging;
    pub use crate::{codes, typed, ArgEnum, Args, Ctx, Group, Hints, Tool, ToolError};
    pub use serde_json::{json, Map, Value};
}

/// Re-exports [`export_plugin!`] builds the library header with; not for plugin code.
#[doc(hidden)]
pub mod __private {
    pub use coremcp_plugin_api::__private::*;
    pub use coremcp_plugin_api::PluginModRef;
    pub use serde_json;
}

/// Exports a [`Group`] as the library's root module.
///
/// ```ignore
/// pub static GROUP: coremcp_plugin_sdk::Group = /* … */;
/// coremcp_plugin_sdk::export_plugin!(GROUP);
/// ```
///
/// The static it defines is the abi_stable library header the host reads (name and layout
/// included) before running any code of the plugin.
#[macro_export]
macro_rules! export_plugin {
    ($group:path) => {
        #[no_mangle]
        #[allow(non_upper_case_globals)]
        pub static _1as_0lib_1header_0root_bmodule_bloader: $crate::__private::LibHeader = {
            extern "C" fn __coremcp_root_module() -> $crate::__private::RootModuleResult {
                $crate::__private::__call_root_module_loader(__coremcp_module)
            }
            fn __coremcp_module() -> $crate::__private::PluginModRef {
                $crate::root_module(&$group)
            }
            // SAFETY: the constructor returns the `PluginModRef` that `root_module` builds,
            // which is the module type `from_constructor` is instantiated with.
            unsafe {
                $crate::__private::LibHeader::from_constructor::<$crate::__private::PluginModRef>(
                    __coremcp_root_module,
                    $crate::__private::CheckTypeLayout::Yes,
                )
            }
        };
    };
}
