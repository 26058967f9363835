//! `tfnc`: the tfn compiler driver. See `tfnc --help`, and `src/cli/` for each subcommand.
//!
//! Exit codes: 0 success, 1 the user's program or data is wrong, 2 bad command line.

use clap::Parser;
use std::process::ExitCode;
use tfn::cli::{Cli, Outcome};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help/version to stdout with exit 0, usage errors to stderr with 2.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match tfn::cli::run(cli) {
        Outcome::Ok => ExitCode::SUCCESS,
        Outcome::UserError(message) => {
            if !message.is_empty() {
                eprintln!("{}", message.trim_end());
            }
            ExitCode::from(1)
        }
        Outcome::UsageError(message) => {
            eprintln!("error: {}", message.trim_end());
            ExitCode::from(2)
        }
    }
}
