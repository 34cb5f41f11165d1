//! `docker_container_logs`: the end of a container's logs, the multiplexed stream decoded into
//! stdout and stderr.
//!
//! Invariants: at most `tail` lines are asked of the daemon, and at most [`KEPT_BYTES`] of them
//! are held while they arrive (the oldest are let go first); the answer keeps the end of the
//! text that fits the result budget and says how much it left out. With both streams, each
//! stderr line is marked with a leading `[stderr] `.

use std::collections::VecDeque;

use bollard::container::LogOutput;
use bollard::query_parameters::LogsOptions;
use coremcp_docker_api::exchange;
use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::budget::{chars, result_budget, tail};
use coremcp_plugin_sdk::prelude::*;
use futures_util::StreamExt;

use super::common::{answer, connect, container_ref};

pub const TOOL: Tool = Tool::typed("docker_container_logs", &typed(handler)).hints(Hints::READ);

/// Bytes of log held while it arrives; older lines beyond it are let go.
pub const KEPT_BYTES: usize = 4 * 1024 * 1024;
/// Marks a stderr line when both streams are shown.
const STDERR_MARK: &str = "[stderr] ";

/// Tail a container's logs; with both streams, stderr lines start with "[stderr] ". since/until:
/// RFC 3339 or an age like 10m. Long output keeps its end.
#[derive(Debug, Args)]
pub struct Logs {
    /// id, id prefix or name
    #[arg(min_len = 1, max_len = 256)]
    container: String,
    /// Registry host (default: here)
    #[arg(min_len = 1, max_len = 200)]
    host: Option<String>,
    /// last lines (default 200)
    #[arg(min = 1, max = 5000, default = 200)]
    tail: u64,
    /// RFC 3339 or age like 10m
    #[arg(min_len = 1, max_len = 64)]
    since: Option<String>,
    /// RFC 3339 or age like 10m
    #[arg(min_len = 1, max_len = 64)]
    until: Option<String>,
    /// prefix timestamps
    #[arg(default)]
    timestamps: bool,
    /// default both
    #[arg(default = Stream::Both)]
    stream: Stream,
}

/// Which of a container's streams to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ArgEnum)]
pub enum Stream {
    #[default]
    Both,
    Stdout,
    Stderr,
}

fn handler(ctx: &Ctx<'_>, args: Logs) -> Result<Value, ToolError> {
    let name = container_ref("container", &args.container)?;
    let now = coremcp_plugin_sdk::time::now_ms() / 1000;
    let since = args
        .since
        .as_deref()
        .map(|t| moment("since", t, now))
        .transpose()?;
    let until = args
        .until
        .as_deref()
        .map(|t| moment("until", t, now))
        .transpose()?;
    if let (Some(since), Some(until)) = (since, until) {
        if since > until {
            return Err(invalid("until", "is before since"));
        }
    }
    let d = connect(ctx, args.host.as_deref())?;
    let options = LogsOptions {
        follow: false,
        stdout: args.stream != Stream::Stderr,
        stderr: args.stream != Stream::Stdout,
        since: since.unwrap_or(0),
        until: until.unwrap_or(0),
        timestamps: args.timestamps,
        tail: args.tail.to_string(),
    };
    let what = format!("no container \"{name}\"");
    let (docker, owned) = (d.docker.clone(), name.clone());
    let kept = exchange(ctx, &d.target.endpoint, &what, async move {
        let mut stream = docker.logs(&owned, Some(options));
        let mut kept = Kept::default();
        while let Some(frame) = stream.next().await {
            kept.push(frame?);
        }
        Ok(kept)
    })?;
    Ok(render(
        answer(&d.target, json!({"container": name})),
        &kept,
        args.stream == Stream::Both,
    ))
}

/// The frames of a log as they arrive, bounded by [`KEPT_BYTES`].
#[derive(Debug, Default)]
pub struct Kept {
    frames: VecDeque<(bool, bytes::Bytes)>,
    bytes: usize,
    stdout_lines: u64,
    stderr_lines: u64,
    dropped_bytes: u64,
}

impl Kept {
    pub fn push(&mut self, frame: LogOutput) {
        let (stderr, message) = match frame {
            LogOutput::StdErr { message } => (true, message),
            LogOutput::StdOut { message } | LogOutput::Console { message } => (false, message),
            LogOutput::StdIn { .. } => return,
        };
        let lines = message.iter().filter(|b| **b == b'\n').count().max(1) as u64;
        *if stderr {
            &mut self.stderr_lines
        } else {
            &mut self.stdout_lines
        } += lines;
        self.bytes += message.len();
        self.frames.push_back((stderr, message));
        while self.bytes > KEPT_BYTES {
            let Some((_, old)) = self.frames.pop_front() else {
                break;
            };
            self.bytes -= old.len();
            self.dropped_bytes += old.len() as u64;
        }
    }
}

/// The answer: `out` plus the log's text (its end, fitting the budget) and line counts.
pub fn render(mut out: Value, kept: &Kept, mark_stderr: bool) -> Value {
    let mut text = String::with_capacity(kept.bytes.min(1 << 20));
    for (stderr, message) in &kept.frames {
        let message = String::from_utf8_lossy(message);
        if mark_stderr && *stderr {
            for line in message.split_inclusive('\n') {
                text.push_str(STDERR_MARK);
                text.push_str(line);
            }
        } else {
            text.push_str(&message);
        }
    }
    out["stdout_lines"] = kept.stdout_lines.into();
    out["stderr_lines"] = kept.stderr_lines.into();
    let room = result_budget().saturating_sub(chars(&out) + 400);
    // Escapes make a character cost more than one: shrink until it fits.
    let mut max = room;
    loop {
        let (end, cut) = tail(&text, max);
        let mut attempt = out.clone();
        attempt["logs"] = end.into();
        if cut > 0 || kept.dropped_bytes > 0 {
            attempt["truncated"] = true.into();
            attempt["hint"] = "the logs were cut to their end; ask for fewer lines (tail) or a \
                               time window (since, until)"
                .into();
        }
        if chars(&attempt) <= result_budget() || max < 64 {
            return attempt;
        }
        max = max * 3 / 4;
    }
}

/// `text` as unix seconds: RFC 3339, or an age (`90s`, `10m`, `2h`, `1d`) before `now`.
pub fn moment(field: &str, text: &str, now: i64) -> Result<i32, ToolError> {
    let text = text.trim();
    let seconds = if let Some(ms) = coremcp_plugin_sdk::time::parse_timestamp(text) {
        ms / 1000
    } else {
        let (digits, unit) =
            text.split_at(text.len() - text.chars().last().map_or(0, char::len_utf8));
        let scale = match unit {
            "s" => 1,
            "m" => 60,
            "h" => 3600,
            "d" => 86_400,
            _ => 0,
        };
        match digits.parse::<i64>() {
            Ok(n) if scale > 0 && n >= 0 && digits.bytes().all(|b| b.is_ascii_digit()) => {
                now - n.saturating_mul(scale).min(now)
            }
            _ => {
                return Err(invalid(
                    field,
                    format!(
                        "{text:?} is neither an RFC 3339 time nor an age like 90s, 10m, 2h, 1d"
                    ),
                ))
            }
        }
    };
    i32::try_from(seconds.max(0)).map_err(|_| invalid(field, format!("{text:?} is out of range")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_parse_and_bad_ones_say_why() {
        let now = 1_800_000_000;
        assert_eq!(
            moment("since", "10m", now).expect("age"),
            (now - 600) as i32
        );
        assert_eq!(
            moment("since", "2026-01-01T00:00:00Z", now).expect("time"),
            1_767_225_600
        );
        for bad in ["10", "m", "-5m", "10x", "yesterday"] {
            let e = moment("since", bad, now).expect_err(bad);
            assert!(e.message.contains("since"), "{bad}: {}", e.message);
        }
    }

    #[test]
    fn logs_keep_their_end_and_mark_stderr() {
        let mut kept = Kept::default();
        for i in 0..5000 {
            let message = bytes::Bytes::from(format!("line {i}\n"));
            kept.push(if i % 2 == 0 {
                LogOutput::StdOut { message }
            } else {
                LogOutput::StdErr { message }
            });
        }
        let out = render(json!({}), &kept, true);
        assert!(chars(&out) <= result_budget());
        let logs = out["logs"].as_str().expect("logs");
        assert!(
            logs.ends_with("[stderr] line 4999\n"),
            "{}",
            &logs[logs.len() - 40..]
        );
        assert!(logs.starts_with("line ") || logs.starts_with(STDERR_MARK));
        assert_eq!(out["truncated"], true);
        assert_eq!(
            (out["stdout_lines"].as_u64(), out["stderr_lines"].as_u64()),
            (Some(2500), Some(2500))
        );
    }
}
