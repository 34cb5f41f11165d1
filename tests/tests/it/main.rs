//! The integration suite: one binary that drives the real `coremcp` over real pipes, with the
//! fixture plugin, the real Publishing plugin and real child processes.

mod commands;
mod damaged;
mod deploy;
mod docker;
mod docs;
mod dynamic;
mod files;
mod git;
mod golden;
mod hosts;
mod http;
mod modern;
mod notepad;
mod ops;
mod plugins;
mod policy;
mod profiles;
mod protocol;
mod publishing;
mod reference;
mod registry;
mod relays;
mod routing;
mod scrolls;
mod scrub;
mod seele;
mod session;
mod sidecars;
mod sql;
mod status;
mod stores;
mod swap;
mod tls;
mod upstream;
mod upstream_calls;
