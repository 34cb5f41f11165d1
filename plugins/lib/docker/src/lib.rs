//! Docker Engine API access for Core MCP's plugins (the Docker group and Ops'
//! `stale_containers_find`): which daemon a call talks to ([`endpoint`]), running one Engine API
//! exchange inside a tool call ([`run`]) over a connection whose answers are bounded
//! ([`transport`]), the Registry host a call names ([`target`]), and the container summary both
//! groups answer with ([`summary`]).
//!
//! Invariants:
//! - Every exchange runs on this library's own small tokio runtime and is bounded by the call's
//!   deadline and stop flag: a daemon that does not answer costs the call its deadline, never a
//!   hang. Nothing async leaves this crate.
//! - The API version is negotiated once per endpoint (`/version`), so a daemon that accepts only
//!   an older API (dockerd 20.10: ≤ 1.41) is spoken to in its own version.
//! - Every error names the endpoint it came from.
//! - No answer of a daemon over 8 MB is held ([`transport::MAX_ANSWER`]): it is refused with
//!   its size.

pub mod endpoint;
pub mod error;
pub mod run;
pub mod summary;
pub mod target;
pub mod transport;

pub use endpoint::Endpoint;
pub use error::DockerError;
pub use run::{daemon, exchange};
pub use target::{resolve, Target};
