//! The `coremcp` binary: all behaviour lives in the library.

fn main() -> std::process::ExitCode {
    coremcp::cli::main()
}
