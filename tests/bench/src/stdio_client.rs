//! A blocking MCP client over `coremcp stdio` (or any MCP server on stdio pipes): one request
//! at a time, or a fixed number in flight ([`StdioClient::pipelined`]), each message written in
//! one `write` (a line written in pieces would wake the host once per piece and inflate the
//! figures). The process is killed when the client is dropped.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub struct StdioClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl StdioClient {
    /// Starts `PROGRAM stdio ARGS…` and initialises a session named `client`.
    pub fn start<I, S>(program: &Path, args: I, client: &str) -> Result<Self, String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut this = Self::start_bare(program, args)?;
        this.initialize(client)?;
        Ok(this)
    }

    /// Starts `command` (its program, arguments, environment and stderr as the caller set
    /// them; stdin and stdout become pipes) and initialises a session named `client`.
    pub fn spawn(command: Command, client: &str) -> Result<Self, String> {
        let mut this = Self::spawn_bare(command)?;
        this.initialize(client)?;
        Ok(this)
    }

    /// The 2025 handshake, as client `client`.
    fn initialize(&mut self, client: &str) -> Result<(), String> {
        self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": client, "version": "0"}}),
        )?;
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    }

    /// Starts `PROGRAM stdio ARGS…` without a handshake (for MCP 2026-07-28, which has none).
    pub fn start_bare<I, S>(program: &Path, args: I) -> Result<Self, String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        #[allow(clippy::disallowed_methods)] // The bench starts the binary it measures.
        let mut command = Command::new(program);
        command
            .arg("stdio")
            .args(args)
            .env_remove("COREMCP_GROUPS")
            .stderr(Stdio::null());
        Self::spawn_bare(command)
    }

    fn spawn_bare(mut command: Command) -> Result<Self, String> {
        let program = command.get_program().to_string_lossy().into_owned();
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("start {program}: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        Ok(Self {
            child,
            stdin,
            stdout,
            next_id: 1,
        })
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes one message.
    pub fn send(&mut self, message: &Value) -> Result<(), String> {
        self.send_line(&message.to_string())
    }

    /// Writes one message given as JSON text (without its newline), in one `write`.
    pub fn send_line(&mut self, message: &str) -> Result<(), String> {
        let mut line = String::with_capacity(message.len() + 1);
        line.push_str(message);
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("write: {e}"))
    }

    /// One request; its result, or the JSON-RPC error as text.
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            let Some(message) = self.read_message()? else {
                return Err(format!("coremcp closed stdout during {method}"));
            };
            if message["id"] == json!(id) {
                return match message.get("result") {
                    Some(result) => Ok(result.clone()),
                    None => Err(format!("{method}: {message}")),
                };
            }
        }
    }

    /// The next response (a message with an id and no method). Notifications are skipped; a
    /// request of the server's is answered -32601.
    pub fn receive(&mut self) -> Result<Value, String> {
        loop {
            let Some(message) = self.read_message()? else {
                return Err("the server closed stdout".to_owned());
            };
            match (message.get("id"), message.get("method")) {
                (Some(_), None) => return Ok(message),
                (Some(id), Some(method)) => {
                    let error = json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32601, "message": format!("no {method}")}});
                    self.send(&error)?;
                }
                (None, _) => {}
            }
        }
    }

    /// The next message the server wrote, or `None` once it closed stdout.
    fn read_message(&mut self) -> Result<Option<Value>, String> {
        let mut line = String::new();
        let read = self
            .stdout
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        if read == 0 {
            return Ok(None);
        }
        serde_json::from_str(&line)
            .map(Some)
            .map_err(|e| e.to_string())
    }

    /// `total` calls of `tool` with `arguments` with `in_flight` outstanding at a time on this
    /// one connection: `in_flight` requests written, then one more for each answer read. Every
    /// answer must be a result that is not `isError`. Returns the time from the first write to
    /// the last answer.
    pub fn pipelined(
        &mut self,
        tool: &str,
        arguments: &Value,
        total: usize,
        in_flight: usize,
    ) -> Result<Duration, String> {
        let params = json!({"name": tool, "arguments": arguments});
        let mut sent = 0;
        let started = Instant::now();
        while sent < total.min(in_flight.max(1)) {
            self.send_call(&params)?;
            sent += 1;
        }
        for _ in 0..total {
            let answer = self.receive()?;
            let Some(result) = answer.get("result") else {
                return Err(format!("{tool}: {answer}"));
            };
            if result["isError"] == json!(true) {
                return Err(format!("{tool}: {}", result["content"][0]["text"]));
            }
            if sent < total {
                self.send_call(&params)?;
                sent += 1;
            }
        }
        Ok(started.elapsed())
    }

    fn send_call(&mut self, params: &Value) -> Result<(), String> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}))
    }

    /// One tool call; an error result is a failure of the bench.
    pub fn call(&mut self, tool: &str, arguments: Value) -> Result<Value, String> {
        let result = self.request("tools/call", json!({"name": tool, "arguments": arguments}))?;
        if result["isError"] == json!(true) {
            return Err(format!("{tool}: {}", result["content"][0]["text"]));
        }
        Ok(result)
    }
}

impl Drop for StdioClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
