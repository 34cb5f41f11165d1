//! One module per subcommand. Each returns the process exit code; errors that stop a command
//! before it runs are [`crate::cli::Failure`]s.

pub mod call;
pub mod hosts;
pub mod plugins;
pub mod probe;
pub mod serve;
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
