//! The types that cross the library boundary. Everything here is `#[repr(C)]` and
//! `StableAbi`; changing a field here is a major version of the ABI, appending a prefix field
//! after the last one is a minor one.

use std::sync::atomic::{AtomicBool, Ordering};

use abi_stable::{
    declare_root_module_statics,
    library::RootModule,
    package_version_strings,
    sabi_types::VersionStrings,
    std_types::{ROption, RResult, RStr, RString},
    StableAbi,
};

/// The root module every plugin library exports.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = PluginModRef)))]
#[sabi(missing_field(panic))]
pub struct PluginMod {
    /// The group's [`crate::Manifest`] as JSON text.
    pub manifest: extern "C" fn() -> RResult<RString, ToolError>,
    /// Called once, before the first `call`, with the host's callbacks.
    pub init: extern "C" fn(host: HostApiRef) -> RResult<(), ToolError>,
    /// Runs one tool. `args_json` is a JSON object; the result is JSON text.
    #[sabi(last_prefix_field)]
    pub call: extern "C" fn(ctx: &CallCtx, tool: RStr<'_>, args_json: RStr<'_>) -> CallResult,
}

/// What one `call` returns: JSON text, or a structured error.
pub type CallResult = RResult<RString, ToolError>;

impl RootModule for PluginModRef {
    declare_root_module_statics! {PluginModRef}
    const BASE_NAME: &'static str = "coremcp_plugin";
    const NAME: &'static str = "coremcp_plugin";
    const VERSION_STRINGS: VersionStrings = package_version_strings!();
}

/// Callbacks from a plugin into the host. Plugins log and reach the network through these, so
/// that the host's logging, limits and credential scrub apply (`tracing` and tokio do not cross
/// the boundary: each library has its own copies).
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = HostApiRef)))]
#[sabi(missing_field(option))]
pub struct HostApi {
    /// Log one message for `group` at `level`.
    pub log: extern "C" fn(level: LogLevel, group: RStr<'_>, message: RStr<'_>),
    /// Read one configuration value (for example `publish.cmd`), `None` when unset.
    pub config: extern "C" fn(key: RStr<'_>) -> ROption<RString>,
    /// Ask the host to perform an operation on the plugin's behalf, with JSON in and out.
    #[sabi(last_prefix_field)]
    pub host_call: extern "C" fn(op: RStr<'_>, json: RStr<'_>) -> RResult<RString, ToolError>,
}

/// Severity of a log message sent through [`HostApi::log`].
#[repr(u8)]
#[derive(StableAbi, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

/// The per-call context the host passes to `call`.
///
/// `cancelled` is the authoritative stop signal: the host sets it when the deadline passes or
/// the client cancels the request. A tool that runs long polls it and returns early; its late
/// answer is dropped either way.
#[repr(C)]
#[derive(StableAbi)]
pub struct CallCtx<'a> {
    /// The call's deadline as milliseconds since the Unix epoch (a hint for timeouts of child
    /// processes; wall-clock based).
    pub deadline_unix_ms: u64,
    /// Set by the host when the call must stop.
    pub cancelled: &'a AtomicBool,
}

impl CallCtx<'_> {
    /// Whether the host asked this call to stop.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }
}

/// A structured tool error: a stable machine-readable `code` and a human message.
///
/// Codes in use: see [`crate::codes`].
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    pub code: RString,
    pub message: RString,
}

impl ToolError {
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: RString::from(message.into()),
        }
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for ToolError {}
