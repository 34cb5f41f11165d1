//! Logging: set up once, to **stderr only** (stdout is the protocol in stdio mode), filtered by
//! `COREMCP_LOG` (`info` by default; `coremcp=debug,plugin=trace` style targets work).

use std::str::FromStr;

use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Installs the stderr logger. A filter that does not parse is reported and `info` used.
pub fn init(filter: Option<&str>) {
    let (targets, bad) = match filter.map(str::trim).filter(|f| !f.is_empty()) {
        None => (Targets::new().with_default(tracing::Level::INFO), None),
        Some(text) => match Targets::from_str(text) {
            Ok(t) => (t, None),
            Err(e) => (
                Targets::new().with_default(tracing::Level::INFO),
                Some(format!("{text:?}: {e}")),
            ),
        },
    };
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(true);
    // A second init (tests run commands in one process) keeps the first subscriber.
    let _ = tracing_subscriber::registry()
        .with(layer)
        .with(targets)
        .try_init();
    if let Some(bad) = bad {
        tracing::warn!(
            "{} is not a valid log filter ({bad}); using info",
            crate::config::env::LOG
        );
    }
}
