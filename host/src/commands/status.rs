//! `coremcp status`: what the running Core MCPs of this machine are doing, for a person.
//!
//! It finds the `coremcp stdio --status-listen` processes by their address files under the
//! data folder (`crate::status_files`), or asks the one `coremcp serve` named by `--url`, reads
//! each one's `/api/status` and prints pid, mode, groups, relays, upstream servers and the last
//! errors. A process that does not answer is reported, not fatal; exit 0 when every one asked
//! answered, 1 when one did not, 2 for a bad flag.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::Failure;
use crate::config::{env, Config};
use coremcp_net::client::{Conn, Url};

/// How long one process gets to answer.
const WAIT: Duration = Duration::from_secs(3);

pub fn run(config: &Config, url: Option<&str>, as_json: bool) -> Result<ExitCode, Failure> {
    let targets: Vec<Value> = match url {
        Some(url) => {
            let base = url.trim_end_matches('/').trim_end_matches("/mcp");
            Url::parse(&format!("{base}/api/status"))
                .map_err(|e| Failure::usage(format!("--url {url}: {e}")))?;
            vec![json!({"url": format!("{base}/"), "mode": "serve"})]
        }
        None => {
            let Some(data) = &config.data_dir else {
                return Err(Failure::usage(
                    "no data folder to look in: pass --data DIR (or COREMCP_DATA), or --url",
                ));
            };
            crate::status_files::running(data)
        }
    };
    let token = std::env::var(env::STATUS_TOKEN).ok();
    let mut all_answered = true;
    let mut documents = Vec::new();
    let mut out = String::new();
    for target in &targets {
        let base = target["url"].as_str().unwrap_or("").trim_end_matches('/');
        let answer = fetch(&format!("{base}/api/status"), token.as_deref());
        all_answered &= answer.is_ok();
        if as_json {
            let mut entry = target.clone();
            match answer {
                Ok(status) => entry["status"] = status,
                Err(e) => entry["error"] = e.into(),
            }
            documents.push(entry);
        } else {
            out.push_str(&describe(target, &answer));
        }
    }
    if as_json {
        out = format!("{}\n", Value::Array(documents));
    } else if targets.is_empty() {
        out = "no running Core MCP serves its status here: start coremcp stdio with \
               --status-listen 127.0.0.1:0 (or COREMCP_STATUS_LISTEN), or pass --url\n"
            .to_owned();
    }
    super::print(&out).map_err(|e| Failure::runtime(format!("stdout: {e}")))?;
    Ok(match all_answered {
        true => ExitCode::SUCCESS,
        false => ExitCode::from(1),
    })
}

/// GET `url`: its JSON, or why not.
fn fetch(url: &str, token: Option<&str>) -> Result<Value, String> {
    let parsed = Url::parse(url).map_err(|e| e.to_string())?;
    let deadline = Instant::now() + WAIT;
    let cancelled = AtomicBool::new(false);
    let mut conn = Conn::connect(&parsed, WAIT).map_err(|e| e.to_string())?;
    let bearer = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = bearer
        .iter()
        .map(|b| ("Authorization", b.as_str()))
        .collect();
    let mut response = conn
        .exchange(&parsed, "GET", &headers, b"", deadline, &cancelled)
        .map_err(|e| e.to_string())?;
    let status = response.status;
    let body = response
        .read_all(deadline, &cancelled)
        .map_err(|e| e.to_string())?;
    match status {
        200 => serde_json::from_slice(&body).map_err(|e| format!("not a status document: {e}")),
        401 => Err(format!(
            "{url} needs a bearer token: set {}",
            env::STATUS_TOKEN
        )),
        other => Err(format!(
            "{url} answered {other}: {}",
            String::from_utf8_lossy(&body).trim()
        )),
    }
}

/// A person's view of one process.
fn describe(target: &Value, answer: &Result<Value, String>) -> String {
    let mut out = String::new();
    let who = match target["pid"].as_u64() {
        Some(pid) => format!("coremcp stdio, pid {pid}"),
        None => "coremcp serve".to_owned(),
    };
    out.push_str(&format!("{who} · {}", text(&target["url"])));
    if let Some(started) = target["started_unix_ms"].as_u64() {
        out.push_str(&format!(" · up {}", age(started)));
    }
    if let Some(cwd) = target["cwd"].as_str().filter(|c| !c.is_empty()) {
        out.push_str(&format!(" · in {cwd}"));
    }
    out.push('\n');
    let status = match answer {
        Ok(status) => status,
        Err(e) => {
            out.push_str(&format!("  does not answer: {e}\n\n"));
            return out;
        }
    };
    out.push_str(&format!(
        "  version {}, {} mode, {} session(s)\n",
        text(&status["version"]),
        text(&status["mode"]),
        status["sessions"]
    ));
    out.push_str(&format!("  groups: {}\n", list(&group_lines(status))));
    out.push_str(&format!("  relays: {}\n", list(&relay_lines(status))));
    out.push_str(&format!("  upstream: {}\n", list(&upstream_lines(status))));
    let errors: Vec<String> = rows(&status["recent_errors"])
        .rev()
        .take(3)
        .map(|e| {
            let first = e["message"]
                .as_str()
                .unwrap_or("")
                .lines()
                .next()
                .unwrap_or("");
            let ago = e["at_unix_ms"].as_u64().map(age).unwrap_or_default();
            format!("{} ago {}: {first}", ago, text(&e["tool"]))
        })
        .collect();
    if !errors.is_empty() {
        out.push_str("  last errors:\n");
        for error in errors {
            out.push_str(&format!("    {error}\n"));
        }
    }
    out.push('\n');
    out
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or("").to_owned()
}

/// Each group in a few words: loaded with its tools, failed with why; then those not loaded
/// yet and those not installed, named together.
fn group_lines(status: &Value) -> Vec<String> {
    let mut groups: Vec<String> = Vec::new();
    let (mut idle, mut absent) = (Vec::new(), Vec::new());
    for g in rows(&status["groups"]) {
        let id = text(&g["id"]);
        match g["state"].as_str() {
            Some("loaded") => groups.push(format!("{id} ({} tools)", g["tools"])),
            Some("failed") => groups.push(format!("{id} FAILED: {}", text(&g["error"]))),
            Some("not_loaded") => idle.push(id),
            _ => absent.push(id),
        }
    }
    if !idle.is_empty() {
        groups.push(format!("not loaded yet: {}", idle.join(", ")));
    }
    if !absent.is_empty() {
        groups.push(format!("not installed: {}", absent.join(", ")));
    }
    groups
}

/// Each relay: its state, since when, the next try and why.
fn relay_lines(status: &Value) -> Vec<String> {
    rows(&status["relays"])
        .map(|r| {
            let mut line = format!("{} {}", text(&r["url"]), text(&r["state"]));
            if let Some(since) = r["down_since_unix_ms"].as_u64() {
                line.push_str(&format!(" for {}", age(since)));
            }
            if let Some(ms) = r["retry_in_ms"].as_u64() {
                line.push_str(&format!(", next try in {} s", ms.div_ceil(1000)));
            }
            if let Some(reason) = r["reason"].as_str() {
                line.push_str(&format!(": {reason}"));
            }
            line
        })
        .collect()
}

/// Each upstream server: its state, tools and restarts, and the first line of why.
fn upstream_lines(status: &Value) -> Vec<String> {
    rows(&status["upstream"])
        .map(|u| {
            let mut line = format!(
                "{} {} ({} tools, {} restarts)",
                text(&u["id"]),
                text(&u["state"]),
                u["tools"],
                u["restarts"]
            );
            if let Some(reason) = u["reason"].as_str() {
                let first = reason.lines().next().unwrap_or("");
                line.push_str(&format!(": {first}"));
            }
            line
        })
        .collect()
}

fn rows(value: &Value) -> impl DoubleEndedIterator<Item = &Value> {
    value.as_array().into_iter().flatten()
}

fn list(items: &[String]) -> String {
    match items.is_empty() {
        true => "none".to_owned(),
        false => items.join("; "),
    }
}

/// How long ago a wall-clock time in milliseconds was, shortly: `42 s`, `5 min`, `3 h`.
fn age(unix_ms: u64) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let seconds = now.saturating_sub(unix_ms) / 1000;
    match seconds {
        0..120 => format!("{seconds} s"),
        120..7200 => format!("{} min", seconds / 60),
        _ => format!("{} h", seconds / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_person_reads_every_part() {
        let target =
            json!({"pid": 42, "url": "http://127.0.0.1:5/", "cwd": "/w", "started_unix_ms": 0});
        let status = json!({
            "version": "0.1.0", "mode": "proxy", "sessions": 1,
            "groups": [{"id": "git", "state": "loaded", "tools": 8},
                       {"id": "seele", "state": "failed", "error": "bad file"},
                       {"id": "files", "state": "not_loaded"},
                       {"id": "docker", "state": "not_installed"}],
            "relays": [{"url": "http://r:1/mcp", "state": "down", "retry_in_ms": 1500,
                        "reason": "refused"}],
            "upstream": [{"id": "time", "state": "restarting", "tools": 0, "restarts": 3,
                          "reason": "exited 1\nstderr: boom"}],
            "recent_errors": [{"tool": "git_push", "message": "rejected\nmore", "at_unix_ms": 0}],
        });
        let text = describe(&target, &Ok(status));
        for part in [
            "coremcp stdio, pid 42 · http://127.0.0.1:5/ · up",
            "groups: git (8 tools); seele FAILED: bad file; not loaded yet: files; not \
             installed: docker",
            "relays: http://r:1/mcp down, next try in 2 s: refused",
            "upstream: time restarting (0 tools, 3 restarts): exited 1",
            "git_push: rejected",
        ] {
            assert!(text.contains(part), "{part} missing in:\n{text}");
        }
        let gone = describe(&target, &Err("cannot connect".into()));
        assert!(gone.contains("does not answer: cannot connect"), "{gone}");
    }
}
