//! The command line: flags (each also read from its `COREMCP_*` variable), resolved once into
//! a [`Config`], then one subcommand. Exit codes are decided here and nowhere else:
//! 0 success, 1 a tool reported an error (`call`), 2 bad usage or configuration,
//! 3 a runtime failure.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use crate::commands::Failure;
use crate::config::{self, env, Config};
use coremcp_engine::GroupSelection;

mod args;
mod stdio_line;

pub use args::{parse_fast, Cli, Command, PluginsAction};

impl Cli {
    /// Validated flags to a configuration.
    pub fn resolve(&self) -> Result<Config, Failure> {
        let exe = std::env::current_exe()
            .map_err(|e| Failure::runtime(format!("cannot find this program's path: {e}")))?;
        let plugins_dir = match &self.plugins {
            Some(dir) => dir.clone(),
            None => config::default_plugins_dir(&exe),
        };
        let roots = if self.roots.is_empty() {
            std::env::var_os(env::ROOTS)
                .map(|v| {
                    std::env::split_paths(&v)
                        .filter(|p| !p.as_os_str().is_empty())
                        .collect()
                })
                .unwrap_or_default()
        } else {
            self.roots.clone()
        };
        let docs = if self.docs.is_empty() {
            std::env::var(env::DOCS)
                .map(|v| v.split(';').map(str::to_owned).collect())
                .unwrap_or_default()
        } else {
            self.docs.clone()
        };
        let sql = if self.sql.is_empty() {
            std::env::var(env::SQL).map(|v| vec![v]).unwrap_or_default()
        } else {
            self.sql.clone()
        };
        let sql_allowed = if self.sql_allow_privileged.is_empty() {
            std::env::var(env::SQL_ALLOW_PRIVILEGED)
                .map(|v| vec![v])
                .unwrap_or_default()
        } else {
            self.sql_allow_privileged.clone()
        };
        let sql = config::parse_sql(&sql).map_err(Failure::usage)?;
        let relays = if self.relays.is_empty() {
            std::env::var(env::RELAYS)
                .map(|v| vec![v])
                .unwrap_or_default()
        } else {
            self.relays.clone()
        };
        let routes = if self.routes.is_empty() {
            std::env::var(env::ROUTES)
                .map(|v| vec![v])
                .unwrap_or_default()
        } else {
            self.routes.clone()
        };
        let routes = config::parse_routes(&routes).map_err(Failure::usage)?;
        let from_env = |given: &[String], var: &str| -> Vec<String> {
            if given.is_empty() {
                std::env::var(var).map(|v| vec![v]).unwrap_or_default()
            } else {
                given.to_vec()
            }
        };
        let peers =
            config::parse_peers(&from_env(&self.peers, env::PEERS)).map_err(Failure::usage)?;
        let peer_tokens = config::parse_peer_tokens(&from_env(&self.peer_tokens, env::PEER_TOKENS))
            .map_err(Failure::usage)?;
        let operators = config::parse_operators(&from_env(&self.operators, env::OPERATORS))
            .map_err(Failure::usage)?;
        let service_mode = matches!(self.command, Command::Serve { service: true, .. });
        if !routes.is_empty() && !service_mode && !matches!(self.command, Command::Tools { .. }) {
            return Err(Failure::usage(
                "--route applies to coremcp serve --service (a Core MCP on an agent's machine \
                 sends the forwarded groups to --relay)",
            ));
        }
        let consul = coremcp_relay::ConsulAgent {
            addr: config::parse_consul_addr(&self.consul).map_err(Failure::usage)?,
            token: std::env::var(env::CONSUL_HTTP_TOKEN)
                .ok()
                .filter(|t| !t.trim().is_empty()),
        };
        let mcp_grants = std::env::var(env::MCP_GRANTS).ok();
        let grants = coremcp_wire::policy::Grants::parse(
            env::GRANT_VARS,
            self.grants.as_deref(),
            mcp_grants.as_deref(),
        )
        .map(std::sync::Arc::new)
        .map_err(Failure::usage)?;
        let mut upstream =
            config::upstream_settings(&config::install_root(&exe)).map_err(Failure::usage)?;
        // One policy: the upstream listings read the same rules the routes decide by.
        upstream.grants = std::sync::Arc::clone(&grants);
        let servers: Vec<&str> = upstream.servers.iter().map(|s| s.id.as_str()).collect();
        let mut unknown = grants.unknown_names(&servers);
        if !unknown.is_empty() {
            // A group outside the catalog installed here, or one of its tools, is a name too
            // (read from the sidecars only when a rule names something else).
            let installed = coremcp_engine::installed_names(&plugins_dir);
            unknown.retain(|(_, name)| !installed.contains(name));
        }
        for (rule, name) in unknown {
            tracing::warn!(
                "{rule} names \"{name}\": no catalog group or tool, no installed plugin and \
                 no configured upstream server has that name, so it grants nothing (check the \
                 spelling)"
            );
        }
        let publish_cmd = std::env::var(env::PUBLISH_CMD)
            .ok()
            .filter(|v| !v.trim().is_empty());
        let shell = std::env::var(env::SHELL)
            .ok()
            .filter(|v| !v.trim().is_empty());
        let compose = std::env::var(env::COMPOSE)
            .ok()
            .filter(|v| !v.trim().is_empty());
        let advertise = self
            .advertise
            .as_deref()
            .filter(|v| !v.trim().is_empty())
            .map(config::parse_advertise)
            .transpose()
            .map_err(Failure::usage)?;
        Ok(Config {
            plugins_dir,
            shell,
            compose,
            advertise,
            groups: GroupSelection::parse(&self.groups).map_err(Failure::usage)?,
            publish_cmd,
            call_timeout: Duration::from_secs(self.call_timeout),
            page_size: self.page_size,
            result_budget: self
                .result_budget
                .as_deref()
                .filter(|v| !v.trim().is_empty())
                .map(coremcp_wire::budget::parse)
                .transpose()
                .map_err(|e| Failure::usage(format!("--result-budget: {e}")))?,
            group_concurrency: self.group_concurrency as usize,
            roots: config::resolve_roots(&roots).map_err(Failure::usage)?,
            sql_allow_privileged: config::parse_sql_allowed(&sql_allowed, &sql)
                .map_err(Failure::usage)?,
            sql,
            docs: config::parse_docs(&docs).map_err(Failure::usage)?,
            data_dir: config::resolve_data_dir(
                self.data.as_deref(),
                std::env::var(env::XDG_DATA_HOME).ok().as_deref(),
                std::env::var(env::HOME).ok().as_deref(),
                &std::env::current_dir().unwrap_or_default(),
            ),
            store: config::check_store(&self.store).map_err(Failure::usage)?,
            host_name: config::host_name(),
            relay: coremcp_relay::Settings {
                relays: config::parse_relays(&relays).map_err(Failure::usage)?,
                retry: Duration::from_secs(self.relay_retry),
                connect_timeout: self.relay_connect_timeout,
                peers,
                routes,
                consul,
            },
            peer_tokens,
            operators,
            oauth_issuer: None,
            service_mode,
            upstream,
            grants,
            probe_program: Some(exe),
        })
    }
}

/// Reads how this process signs in to its peers: `COREMCP_RELAY_TOKEN` (a static bearer
/// token) or `COREMCP_RELAY_OAUTH_*` (the client credentials grant), never both; refuses a
/// token that could not be one and OAuth settings that are incomplete.
fn relay_token() -> Result<(), Failure> {
    use coremcp_net::oauth::client::{ClientCredentials, Settings};
    use coremcp_relay::client::Credential;
    let token = std::env::var(env::RELAY_TOKEN)
        .ok()
        .filter(|t| !t.is_empty());
    if let Some(token) = &token {
        crate::http::auth::check_token(token)
            .map_err(|why| Failure::usage(format!("{}: the token {why}", env::RELAY_TOKEN)))?;
    }
    let oauth = Settings::from(&env::RELAY_OAUTH, |name| std::env::var(name).ok())
        .map_err(Failure::usage)?;
    let credential = match (token, oauth) {
        (Some(_), Some(_)) => {
            return Err(Failure::usage(format!(
                "{} and {} are both set: the relays are signed in to one way, a static token \
                 or OAuth; unset one",
                env::RELAY_TOKEN,
                env::RELAY_OAUTH_ISSUER
            )))
        }
        (Some(token), None) => Some(Credential::Static(token)),
        (None, Some(settings)) => Some(Credential::OAuth(ClientCredentials::new(settings))),
        (None, None) => None,
    };
    coremcp_relay::client::set_credential(credential);
    Ok(())
}

/// Reads `--ca-file`, the extra CA bundle the TLS client trusts; an unusable one stops here.
fn extra_ca(file: Option<&std::path::Path>) -> Result<(), Failure> {
    match file {
        Some(file) => coremcp_net::client::set_extra_ca(file)
            .map_err(|e| Failure::usage(format!("--ca-file {e}"))),
        None => Ok(()),
    }
}

/// Parses the command line, runs the command and maps the outcome to an exit code.
pub fn main() -> ExitCode {
    crate::hardening::at_start();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = stdio_line::parse(&args, &|name| std::env::var_os(name))
        .or_else(|| parse_fast(&args))
        .unwrap_or_else(|| Cli::parse_from(&args));
    crate::logging::init(std::env::var(env::LOG).ok().as_deref());
    crate::hardening::warn_about_credentials_in(&args);
    if let Command::ProbePlugin { file } = &cli.command {
        // Takes nothing from the configuration: it runs with a scrubbed environment.
        return crate::commands::probe::run(file);
    }
    let outcome = relay_token()
        .and_then(|()| extra_ca(cli.ca_file.as_deref()))
        .and_then(|()| cli.resolve())
        .and_then(|config| match cli.command {
            Command::Stdio { ref status_listen } => {
                crate::commands::stdio::run(config, status_listen.as_deref())
            }
            Command::Status { ref url, json } => {
                crate::commands::status::run(&config, url.as_deref(), json)
            }
            Command::Tools { json } => crate::commands::tools::run(config, json),
            Command::Call { ref tool, ref json } => {
                crate::commands::call::run(config, tool, json.as_deref())
            }
            Command::Serve {
                ref listen,
                ref tokens,
                ref tls_cert,
                ref tls_key,
                max_connections_per_client,
                ref oauth_issuer,
                ref oauth_audience,
                ref oauth_principal_claim,
                ref oauth_scopes,
                oauth_untyped_tokens,
                ..
            } => crate::commands::serve::run(
                config,
                &crate::http::Options {
                    listen,
                    tokens: tokens.as_deref(),
                    tokens_text: std::env::var(env::TOKENS_TEXT).ok().as_deref(),
                    per_client: max_connections_per_client as usize,
                    tls_cert: tls_cert.as_deref(),
                    tls_key: tls_key.as_deref(),
                    oauth: oauth_issuer
                        .as_deref()
                        .map(|issuer| crate::http::OAuthOptions {
                            issuer,
                            audience: oauth_audience.as_deref(),
                            principal_claim: oauth_principal_claim,
                            scopes: oauth_scopes.as_deref(),
                            untyped_tokens: oauth_untyped_tokens,
                        }),
                },
            ),
            Command::Hosts { json } => crate::commands::hosts::run(config, json),
            Command::Upstream { json } => crate::commands::upstream::run(config, json),
            Command::Plugins { action: None } => crate::commands::plugins::run(config),
            Command::Plugins {
                action: Some(PluginsAction::Install { ref file }),
            } => crate::commands::plugins::install(&config, file),
            Command::Plugins {
                action: Some(PluginsAction::Index),
            } => crate::commands::plugins::index(&config),
            Command::ProbePlugin { .. } => Err(Failure::usage("probe-plugin runs on its own")),
        });
    match outcome {
        Ok(code) => code,
        Err(failure) => {
            eprintln!("coremcp: {}", failure.message());
            ExitCode::from(failure.code())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// Each of `texts`, as a command line, parses with `parse` to what clap makes of it.
    pub(super) fn assert_agrees_with_clap(
        texts: &[&str],
        parse: &dyn Fn(&[std::ffi::OsString]) -> Option<Cli>,
    ) {
        for text in texts {
            let args = line(text);
            let ours = parse(&args).unwrap_or_else(|| panic!("not parsed: {text}"));
            let clap = Cli::try_parse_from(&args).expect(text);
            assert_eq!(format!("{ours:?}"), format!("{clap:?}"), "{text}");
        }
    }

    /// `coremcp` and the words of `text`, as a command line.
    pub(super) fn line(text: &str) -> Vec<std::ffi::OsString> {
        std::iter::once("coremcp")
            .chain(text.split_whitespace())
            .map(Into::into)
            .collect()
    }

    /// The fast parse gives what clap gives, wherever the global flags are, and leaves to clap
    /// what it does not handle.
    #[test]
    fn the_fast_parse_agrees_with_clap() {
        let texts = [
            "stdio --plugins /p --data /d",
            "--plugins /p --data /d stdio",
            "--plugins=/p stdio --data=/d --groups git,files",
            "stdio --status-listen 127.0.0.1:0 --call-timeout 5",
            "serve --listen 127.0.0.1:9 --service --groups git --tokens /t",
            "--groups git serve --max-connections-per-client 3",
            "call git_status {\"path\":\".\"} --root /a --root /b",
            "--root /a call git_status --root /b",
            "--root /a --data /d call git_status --root /b --root /c",
            "plugins index --plugins /p",
            "plugins install /x/lib.so --plugins /p --relay http://r/mcp",
            "tools --json --page-size 3 --grants stdio=!git",
            "status --url http://127.0.0.1:9 --json",
            "hosts",
            "upstream --json --store sqlite:",
        ];
        assert_agrees_with_clap(&texts, &|args| parse_fast(args));
        for text in [
            "",
            "--help",
            "stdio --help",
            "stdio -h",
            "-V",
            "--version",
            "stdio --bogus",
            "stdio -x",
            "stdio -- x",
            "--plugins",
            "--plugins /p",
            "nothing-of-ours",
            "stdio --call-timeout 0",
            "plugins help",
        ] {
            assert!(parse_fast(&line(text)).is_none(), "parsed fast: {text:?}");
        }
    }
}
