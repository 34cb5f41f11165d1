//! One module per subcommand. Each returns the process exit code; errors that stop a command
//! before it runs are [`Failure`]s, which `cli` turns into the message and exit code.

pub mod call;
pub mod hosts;
pub mod plugins;
pub mod probe;
pub mod serve;
pub mod status;
pub mod stdio;
pub mod tools;
pub mod upstream;

use std::io::Write;

/// Writes command output to stdout. A closed pipe (`coremcp tools | head`) is not an error.
pub fn print(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// A command that could not run.
#[derive(Debug)]
pub struct Failure {
    message: String,
    code: u8,
}

impl Failure {
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The process exit code.
    pub fn code(&self) -> u8 {
        self.code
    }

    /// Bad usage or configuration (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code: 2,
        }
    }

    /// Something failed while running (exit 3).
    pub fn runtime(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code: 3,
        }
    }
}
