//! `coremcp [FLAGS] stdio [FLAGS]` read without clap: the line every agent client starts, so
//! the one whose start-up counts. Building clap's command (every subcommand and flag) is the
//! largest part of a start-up's own work, most of it first touches of clap's code and data.
//!
//! Invariants:
//! - A line is taken here only when it means exactly what clap makes of it: only long flags of
//!   [`GLOBALS`] and [`STDIO`], each with one value that is UTF-8, not empty and does not start
//!   with `-`, numbers as plain digits in range, and no single-valued flag twice on one side of
//!   `stdio`. Anything else (help, version, a short flag, `--`, a bad value, an unknown flag)
//!   returns `None`, and clap parses the line and says what is wrong, as it always did.
//! - Where a flag is given both before and after `stdio`, the occurrences after it win (clap's
//!   way with global flags); a flag not given takes its variable, then its default. The tables
//!   hold the variables and defaults clap's definitions hold, which a test checks flag by flag,
//!   and a second test compares whole lines with clap's result.

use std::ffi::OsString;
use std::path::PathBuf;

use super::args::{Cli, Command};
use crate::config::{self, env};

/// One long flag that takes a value: its variable and default, as clap's definition has them.
pub(super) struct Flag {
    pub long: &'static str,
    pub env: Option<&'static str>,
    pub default: Option<&'static str>,
    /// Given again, it adds a value (`Vec` fields) rather than being refused.
    pub repeatable: bool,
}

const fn flag(
    long: &'static str,
    env: Option<&'static str>,
    default: Option<&'static str>,
) -> Flag {
    Flag {
        long,
        env,
        default,
        repeatable: false,
    }
}

const fn many(long: &'static str) -> Flag {
    Flag {
        long,
        env: None,
        default: None,
        repeatable: true,
    }
}

/// The global flags of [`Cli`], every one of which takes a value.
pub(super) const GLOBALS: &[Flag] = &[
    flag("plugins", Some(env::PLUGINS), None),
    flag("groups", Some(env::GROUPS), Some("all")),
    flag("call-timeout", Some(env::CALL_TIMEOUT), Some("30")),
    flag("page-size", Some(env::PAGE_SIZE), Some("0")),
    flag("result-budget", Some(env::RESULT_BUDGET), None),
    many("root"),
    many("docs"),
    many("sql"),
    many("sql-allow-privileged"),
    flag("data", Some(env::DATA), None),
    flag("store", Some(env::STORE), Some("sqlite:")),
    many("relay"),
    many("route"),
    many("peer"),
    many("peer-token"),
    many("operator"),
    flag(
        "consul",
        Some(env::CONSUL_HTTP_ADDR),
        Some(coremcp_relay::consul::DEFAULT_AGENT),
    ),
    flag("relay-retry", Some(env::RELAY_RETRY), Some("30")),
    flag(
        "relay-connect-timeout",
        Some(env::RELAY_CONNECT_TIMEOUT),
        Some("2"),
    ),
    flag(
        "group-concurrency",
        Some(env::GROUP_CONCURRENCY),
        Some("16"),
    ),
    flag("grants", Some(crate::config::env::GRANTS), None),
    flag("ca-file", Some(env::CA_FILE), None),
    flag("advertise", Some(env::ADVERTISE_URL), None),
];

/// The flags of the `stdio` subcommand itself.
pub(super) const STDIO: &[Flag] = &[flag("status-listen", Some(env::STATUS_LISTEN), None)];

/// Which side of `stdio` a flag was given on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Before,
    After,
}

/// The flags given, and where the variables come from.
struct Given<'a> {
    flags: Vec<(&'static Flag, Side, &'a str)>,
    env: &'a dyn Fn(&str) -> Option<OsString>,
}

impl Given<'_> {
    /// The values `long` was given: those after `stdio` if any, else those before it.
    fn values(&self, long: &str) -> Vec<&str> {
        let on = |side: Side| -> Vec<&str> {
            self.flags
                .iter()
                .filter(|(f, s, _)| f.long == long && *s == side)
                .map(|(_, _, v)| *v)
                .collect()
        };
        let after = on(Side::After);
        if after.is_empty() {
            on(Side::Before)
        } else {
            after
        }
    }

    /// A single-valued flag's value: given, else its variable, else its default. `None` when
    /// clap should judge the line; `Some(None)` when the flag has no value at all.
    fn one(&self, long: &str) -> Option<Option<String>> {
        let spec = GLOBALS.iter().chain(STDIO).find(|f| f.long == long)?;
        match self.values(long).as_slice() {
            [] => {}
            [value] => return Some(Some((*value).to_owned())),
            _ => return None,
        }
        if let Some(value) = spec.env.and_then(|name| (self.env)(name)) {
            let value = value.into_string().ok()?;
            return (!value.is_empty()).then_some(Some(value));
        }
        Some(spec.default.map(str::to_owned))
    }

    /// A single-valued flag that has a default.
    fn with_default(&self, long: &str) -> Option<String> {
        self.one(long)?
    }

    fn many(&self, long: &str) -> Vec<String> {
        self.values(long).into_iter().map(str::to_owned).collect()
    }
}

/// A whole number in `range`, written as plain digits (what clap's ranged parser accepts
/// without question).
fn number(text: &str, range: std::ops::RangeInclusive<u64>) -> Option<u64> {
    if text.is_empty() || text.len() > 18 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok().filter(|n| range.contains(n))
}

/// The line as clap would parse it, if it is a plain `stdio` line (see the module's
/// invariants); `env` reads a variable.
pub(super) fn parse(args: &[OsString], env: &dyn Fn(&str) -> Option<OsString>) -> Option<Cli> {
    let mut given = Given {
        flags: Vec::new(),
        env,
    };
    let mut side = Side::Before;
    let mut words = args.iter().skip(1);
    while let Some(word) = words.next() {
        let word = word.to_str()?;
        if side == Side::Before && word == "stdio" {
            side = Side::After;
            continue;
        }
        let long = word.strip_prefix("--")?;
        let (name, inline) = match long.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (long, None),
        };
        let own = if side == Side::After { STDIO } else { &[] };
        let spec = GLOBALS.iter().chain(own).find(|f| f.long == name)?;
        let value = match inline {
            Some(value) => value,
            None => words.next()?.to_str()?,
        };
        if value.is_empty() || value.starts_with('-') {
            return None;
        }
        let again = given
            .flags
            .iter()
            .any(|(f, s, _)| f.long == spec.long && *s == side);
        if again && !spec.repeatable {
            // clap refuses a single-valued flag given twice.
            return None;
        }
        given.flags.push((spec, side, value));
    }
    if side == Side::Before {
        return None;
    }
    Some(Cli {
        plugins: given.one("plugins")?.map(PathBuf::from),
        groups: given.with_default("groups")?,
        call_timeout: number(&given.with_default("call-timeout")?, 1..=3600)?,
        page_size: usize::try_from(number(
            &given.with_default("page-size")?,
            0..=u32::MAX.into(),
        )?)
        .ok()?,
        result_budget: given.one("result-budget")?,
        roots: given.many("root").into_iter().map(PathBuf::from).collect(),
        docs: given.many("docs"),
        sql: given.many("sql"),
        sql_allow_privileged: given.many("sql-allow-privileged"),
        data: given.one("data")?.map(PathBuf::from),
        store: given.with_default("store")?,
        relays: given.many("relay"),
        routes: given.many("route"),
        peers: given.many("peer"),
        peer_tokens: given.many("peer-token"),
        operators: given.many("operator"),
        consul: given.with_default("consul")?,
        relay_retry: number(&given.with_default("relay-retry")?, 1..=3600)?,
        relay_connect_timeout: config::parse_connect_timeout(
            &given.with_default("relay-connect-timeout")?,
        )
        .ok()?,
        group_concurrency: number(&given.with_default("group-concurrency")?, 1..=256)?,
        grants: given.one("grants")?,
        ca_file: given.one("ca-file")?.map(PathBuf::from),
        advertise: given.one("advertise")?,
        command: Command::Stdio {
            status_listen: given.one("status-listen")?,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::tests::{assert_agrees_with_clap, line};
    use clap::{ArgAction, CommandFactory};

    fn real_env(name: &str) -> Option<OsString> {
        std::env::var_os(name)
    }

    /// Every flag of the tables is clap's, with clap's variable, default and repeatability, and
    /// every long flag clap gives `stdio` is in the tables: a flag added to [`Cli`] fails here
    /// until it is added to the tables too (and the struct literal in [`parse`] to compile).
    #[test]
    fn the_tables_hold_what_claps_definitions_hold() {
        let command = Cli::command();
        let stdio = command.find_subcommand("stdio").expect("stdio");
        let check = |tables: &[Flag], args: Vec<&clap::Arg>| {
            let mut seen = Vec::new();
            for arg in args {
                let long = arg.get_long().expect("only long flags");
                let spec = tables
                    .iter()
                    .find(|f| f.long == long)
                    .unwrap_or_else(|| panic!("--{long} is not in the fast parser's tables"));
                assert!(arg.get_action().takes_values(), "--{long} takes a value");
                assert_eq!(
                    spec.env,
                    arg.get_env().and_then(|e| e.to_str()),
                    "--{long}'s variable"
                );
                let default: Vec<_> = arg.get_default_values().iter().collect();
                assert_eq!(
                    spec.default,
                    default.first().and_then(|d| d.to_str()),
                    "--{long}'s default"
                );
                assert_eq!(
                    spec.repeatable,
                    matches!(arg.get_action(), ArgAction::Append),
                    "--{long} repeatable"
                );
                seen.push(long);
            }
            assert_eq!(
                seen.len(),
                tables.len(),
                "the tables name only clap's flags"
            );
        };
        check(
            GLOBALS,
            command
                .get_arguments()
                .filter(|a| a.get_long().is_some_and(|l| l != "help" && l != "version"))
                .collect(),
        );
        check(
            STDIO,
            stdio
                .get_arguments()
                .filter(|a| !a.is_global_set())
                .filter(|a| a.get_long().is_some_and(|l| l != "help"))
                .collect(),
        );
    }

    /// Whole lines give what clap gives, and the lines this parser leaves alone are clap's to
    /// judge.
    #[test]
    fn a_stdio_line_parses_as_clap_parses_it() {
        let texts = [
            "stdio",
            "stdio --plugins /p --data /d",
            "--plugins /p --data /d stdio",
            "--plugins=/p stdio --data=/d --groups git,files",
            "stdio --status-listen 127.0.0.1:0 --call-timeout 5",
            "--root /a stdio --root /b --root /c",
            "--root /a --root /b stdio",
            "--groups git stdio --groups files",
            "stdio --relay http://r1/mcp --relay http://r2/mcp --relay-retry 7",
            "stdio --relay-connect-timeout 0.5 --group-concurrency 256 --page-size 20",
            "stdio --grants stdio=!git --ca-file /ca.pem --advertise http://h:1/mcp",
            "stdio --sql db=postgres://x --sql-allow-privileged db --docs /docs",
            "stdio --route git=http://r/mcp --peer http://p/ --peer-token t --operator o",
            "stdio --store postgres://db/x --consul 127.0.0.1:1 --call-timeout 3600",
        ];
        assert_agrees_with_clap(&texts, &|args| parse(args, &real_env));
        for text in [
            "",
            "--plugins /p",
            "serve",
            "stdio --help",
            "stdio -h",
            "--version",
            "stdio --bogus x",
            "stdio --plugins",
            "stdio --plugins -x",
            "stdio --plugins=",
            "stdio -- x",
            "stdio extra",
            "stdio stdio",
            "--status-listen 127.0.0.1:0 stdio",
            "stdio --groups a --groups b",
            "stdio --call-timeout 0",
            "stdio --call-timeout 3601",
            "stdio --call-timeout +5",
            "stdio --group-concurrency 257",
            "stdio --relay-connect-timeout 61",
            "stdio --json",
        ] {
            assert!(parse(&line(text), &real_env).is_none(), "parsed: {text:?}");
        }
    }

    /// A flag not given takes its variable, then its default; a given one beats its variable;
    /// a variable clap would refuse is left to clap.
    #[test]
    fn variables_come_after_flags_and_before_defaults() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        let env = vars(&[
            (env::GROUPS, "git"),
            (env::DATA, "/from-env"),
            (env::CALL_TIMEOUT, "9"),
            (env::STATUS_LISTEN, "127.0.0.1:0"),
        ]);
        let cli = parse(&line("stdio --data /flag"), &env).expect("parsed");
        assert_eq!(cli.groups, "git");
        assert_eq!(cli.data, Some(PathBuf::from("/flag")));
        assert_eq!(cli.call_timeout, 9);
        assert_eq!(cli.store, "sqlite:");
        assert!(matches!(
            cli.command,
            Command::Stdio { status_listen: Some(ref a) } if a == "127.0.0.1:0"
        ));
        for bad in [
            &[(env::CALL_TIMEOUT, "0")][..],
            &[(env::PAGE_SIZE, "x")],
            &[(env::DATA, "")],
        ] {
            let env = |name: &str| {
                bad.iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| OsString::from(v))
            };
            assert!(parse(&line("stdio"), &env).is_none(), "{bad:?}");
        }
    }
}
