//! Stable error codes of [`crate::ToolError`]. The host shows them to the model; callers may
//! branch on them. A code is never renamed or removed within a major version.

/// The arguments do not fit the tool's schema or its rules.
pub const INVALID_ARGUMENTS: &str = "invalid_arguments";
/// Something the tool needs is not configured (an env var, a CLI).
pub const NOT_CONFIGURED: &str = "not_configured";
/// The named thing does not exist.
pub const NOT_FOUND: &str = "not_found";
/// The operation ran and failed (a non-zero exit, bad output).
pub const FAILED: &str = "failed";
/// The operation did not finish in time.
pub const TIMEOUT: &str = "timeout";
/// The host asked the call to stop.
pub const CANCELLED: &str = "cancelled";
/// The plugin panicked; the host keeps serving.
pub const PANIC: &str = "panic";
/// The tool or its group cannot run in this build or on this host.
pub const UNAVAILABLE: &str = "unavailable";
/// A row changed since it was read (`expected_version`).
pub const CONFLICT: &str = "conflict";
/// A bug: something that should not happen did.
pub const INTERNAL: &str = "internal";
