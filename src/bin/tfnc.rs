//! `tfnc`: the tfn compiler driver. See `tfnc --help`, and `src/cli/` for each subcommand.
//!
//! Exit codes: 0 success, 1 the user's program or data is wrong (or the output cannot be
//! written, which is said on stderr), 2 bad command line. Nothing here panics on a closed or
//! full stdout/stderr.

use clap::Parser;
use std::process::ExitCode;
use tfn::cli::output::{ensure_std_fds, finish_stdout, stderr_failed, stderr_fmt};
use tfn::cli::{Cli, Outcome};

fn main() -> ExitCode {
    ensure_std_fds();
    let code = match Cli::try_parse() {
        Ok(cli) => match tfn::cli::run(cli) {
            Outcome::Ok => 0,
            Outcome::UserError(message) => {
                if !message.is_empty() {
                    stderr_fmt(format_args!("{}\n", message.trim_end()));
                }
                1
            }
            Outcome::UsageError(message) => {
                stderr_fmt(format_args!("error: {}\n", message.trim_end()));
                2
            }
        },
        Err(e) => {
            // clap prints help/version to stdout with exit 0, usage errors to stderr with 2.
            let text = e.render().to_string();
            if e.use_stderr() {
                stderr_fmt(format_args!("{text}"));
                2
            } else {
                tfn::cli::output::stdout_fmt(format_args!("{text}"));
                0
            }
        }
    };
    // Output that could not be written is a failure (see `tfn::cli::output`).
    let code = if stderr_failed() { code.max(1) } else { code };
    match finish_stdout() {
        Ok(()) => ExitCode::from(code),
        // The reader went away (`tfnc ... | head -c1`): the output is incomplete; say so.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            stderr_fmt(format_args!(
                "error: cannot write to standard output: the reader closed the pipe ({e})\n"
            ));
            ExitCode::from(code.max(1))
        }
        Err(e) => {
            stderr_fmt(format_args!("error: cannot write to standard output: {e}\n"));
            ExitCode::from(code.max(1))
        }
    }
}
