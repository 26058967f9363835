//! The `tfnc` command-line driver: the argument model (clap) and one module per subcommand.

/// `print!` to stdout without panicking; a failure makes the exit code 1 ([`output`]).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::output::stdout_fmt(format_args!($($arg)*))
    };
}

/// `println!` to stdout without panicking.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::output::stdout_fmt(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprint!` ignoring write errors (a closed stderr must not turn into a panic).
macro_rules! err {
    ($($arg:tt)*) => {
        $crate::cli::output::stderr_fmt(format_args!($($arg)*))
    };
}

pub mod args;
mod bench;
pub(crate) mod build;
mod check;
mod gradcheck;
mod graph;
mod ir;
pub mod output;
mod run;
pub mod summary;

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// The result of a subcommand, mapped to the exit code by `main`.
#[derive(Debug)]
pub enum Outcome {
    Ok,
    /// Exit 1: the program or the data is wrong. The message is printed to stderr.
    UserError(String),
    /// Exit 2: the command line is wrong.
    UsageError(String),
}

#[derive(Parser, Debug)]
#[command(name = "tfnc", version, about = "The tfn tensor compiler", propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    Jit,
    Interp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Stage {
    Parsed,
    Lowered,
    Optimized,
    Fused,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Parse and check files; print every diagnostic, then what each file holds (on stderr)
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print only diagnostics, not the `checked FILE: N functions, ...` line
        #[arg(short, long)]
        quiet: bool,
    },
    /// Run a function on .npy or literal arguments
    Run {
        file: PathBuf,
        function: String,
        /// NAME=VALUE: a .npy path or a literal (2, 0.5, true, [0, 1], f64)
        #[arg(long = "arg", value_parser = args::parse_named)]
        args: Vec<(String, String)>,
        /// Where to write each result (.npy), in order; or one .safetensors file holding every
        /// result by name (out0, out1, ...; with --vjp, the parameters' names)
        #[arg(long = "out")]
        outs: Vec<PathBuf>,
        /// A safetensors checkpoint: tensor parameters no --arg gives are bound from it by name
        #[arg(long, value_name = "FILE")]
        weights: Option<PathBuf>,
        /// PARAM=TENSOR[:T]: bind PARAM from TENSOR of --weights; `{i}` in TENSOR stacks
        /// i = 0, 1, ... along a new leading axis, `:T` reads a stored [out, in] as [in, out]
        #[arg(long = "map", value_name = "PARAM=TENSOR")]
        maps: Vec<String>,
        /// Also list, on stderr, the tensors of --weights the function does not use
        #[arg(long)]
        list_unused: bool,
        #[arg(long, value_enum, default_value = "jit")]
        backend: BackendArg,
        #[arg(long)]
        threads: Option<usize>,
        /// Instead of the results: the gradients of <results, cotangents> w.r.t. each tensor
        /// argument. One cotangent (.npy) per result of the function, in order
        #[arg(long = "vjp", value_name = "COTANGENT")]
        vjps: Vec<PathBuf>,
        /// With --vjp: through every `for` loop, keep only each trip's carried values and
        /// recompute its residuals before its backward pass (less memory, one more forward
        /// pass of each body)
        #[arg(long, requires = "vjps")]
        checkpoint_loops: bool,
        /// Skip the egg optimiser
        #[arg(long)]
        no_optimize: bool,
    },
    /// Print the IR of a stage
    Ir {
        file: PathBuf,
        #[arg(long = "fn")]
        function: Option<String>,
        /// The stage to print: `lowered` with `--fn`, else `parsed` (the file's syntax tree)
        #[arg(long, value_enum)]
        stage: Option<Stage>,
        /// NAME=dtype[shape] or NAME=literal
        #[arg(long = "arg", value_parser = args::parse_named)]
        args: Vec<(String, String)>,
        /// Also print the optimiser's report (rules fired, e-graph statistics)
        #[arg(long)]
        explain: bool,
        /// Skip the egg optimiser (for the fused stage: the kernels without rewrites)
        #[arg(long)]
        no_optimize: bool,
    },
    /// Check every derived gradient of a file (or of one function) by finite differences
    Gradcheck {
        file: PathBuf,
        function: Option<String>,
        /// Largest accepted error |analytic - numeric| / max(1, |analytic|, |numeric|)
        #[arg(long, value_parser = parse_tolerance)]
        tolerance: Option<f64>,
    },
    /// Time a function on random inputs of the given shapes
    Bench {
        file: PathBuf,
        function: String,
        /// NAME=dtype[shape] or NAME=literal
        #[arg(long = "arg", value_parser = args::parse_named)]
        args: Vec<(String, String)>,
        #[arg(long, value_enum, default_value = "jit")]
        backend: BackendArg,
        #[arg(long)]
        threads: Option<usize>,
        /// Print one JSON object instead of text
        #[arg(long)]
        json: bool,
        /// Measuring time per configuration, in milliseconds (at least 5 calls, at most
        /// 100000)
        #[arg(long, default_value_t = 1000)]
        millis: u64,
        /// Then profile as many calls: per kernel its time share, µs per call, GB/s, GFLOP/s
        #[arg(long)]
        profile: bool,
    },
    /// Compile a function ahead of time: DIR/P.o (its kernels), DIR/P.h (the C API) and
    /// DIR/libtfn_rt.a (the runtime to link with); no compiler runs when it is called
    Build {
        file: PathBuf,
        /// A function (repeat for several in one module; each takes the --arg of its
        /// parameters' names)
        #[arg(long = "fn", required = true)]
        functions: Vec<String>,
        /// NAME=dtype[sizes] (`?`: a size fixed at the call, a number: a size the call must
        /// have) or NAME=literal
        #[arg(long = "arg", value_parser = args::parse_named)]
        args: Vec<(String, String)>,
        /// The output directory (created if missing)
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
        /// The prefix of the files and of every symbol (default: the function's name)
        #[arg(long)]
        prefix: Option<String>,
        /// Instead of the function: its vector-Jacobian product `<fn>_vjp` (inputs: the
        /// arguments, then one cotangent per result; outputs: the gradients of the float
        /// tensor arguments), as `tfnc run --vjp` computes it
        #[arg(long)]
        vjp: bool,
        /// The CPUs the code is for: `portable` (every x86-64 CPU with SSE4.2: the
        /// x86-64-v2 and -v3 tiers, the runtime runs the widest the CPU has and picks the
        /// AVX-512 or AVX2 math routines), one tier (`x86-64-v2`, `x86-64-v3`), or `host`
        /// (this machine's CPU only)
        #[arg(long)]
        cpu: Option<String>,
        /// The target triple: x86_64-unknown-linux-gnu (the default) or
        /// aarch64-unknown-linux-gnu (a self-contained object, no runtime library: loop
        /// kernels only; see docs/aot.md, "Cross-compiling")
        #[arg(long)]
        target: Option<String>,
    },
    /// Draw the fused graph as Graphviz DOT (stdout), or write it with -o (.dot, .gv, .svg)
    Graph {
        file: PathBuf,
        function: String,
        /// NAME=dtype[shape] or NAME=literal
        #[arg(long = "arg", value_parser = args::parse_named)]
        args: Vec<(String, String)>,
        /// Write to this file instead of stdout: DOT for .dot/.gv, SVG (by Graphviz `dot`)
        /// for .svg
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
        /// Skip the egg optimiser
        #[arg(long)]
        no_optimize: bool,
    },
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Outcome {
    // The environment is part of the command line: a limit that is not a number is refused
    // up front, not silently replaced by the default.
    if let Err(e) = tfn_ir::bind::max_tensor_bytes() {
        return Outcome::UsageError(e.to_string());
    }
    if let Some(name) = cli.command.args().and_then(args::repeated_name) {
        return Outcome::UsageError(format!("argument `{name}` is given twice (--arg {name}=...)"));
    }
    match cli.command {
        Command::Check { files, quiet } => check::check(&files, quiet),
        Command::Run {
            file,
            function,
            args,
            outs,
            weights,
            maps,
            list_unused,
            backend,
            threads,
            vjps,
            checkpoint_loops,
            no_optimize,
        } => run::run(run::RunRequest {
            file,
            function,
            args,
            outs,
            weights,
            maps,
            list_unused,
            backend,
            threads,
            vjps,
            checkpoint_loops,
            optimize: !no_optimize,
        }),
        Command::Ir { file, function, stage, args, explain, no_optimize } => {
            // Without `--fn` there is one stage to show: the whole file, parsed.
            let default = if function.is_some() { Stage::Lowered } else { Stage::Parsed };
            let stage = stage.unwrap_or(default);
            ir::ir(&file, function.as_deref(), stage, &args, explain, !no_optimize)
        }
        Command::Gradcheck { file, function, tolerance } => {
            gradcheck::gradcheck(&file, function.as_deref(), tolerance)
        }
        Command::Bench { file, function, args, backend, threads, json, millis, profile } => {
            bench::bench(bench::BenchRequest {
                file,
                function,
                args,
                backend,
                threads,
                json,
                millis,
                profile,
            })
        }
        Command::Build { file, functions, args, output, prefix, vjp, cpu, target } => {
            build::build(build::BuildRequest {
                file,
                functions,
                args,
                output,
                prefix,
                vjp,
                cpu,
                target,
            })
        }
        Command::Graph { file, function, args, output, no_optimize } => {
            graph::graph(&file, &function, &args, output.as_deref(), !no_optimize)
        }
    }
}

impl Command {
    /// The `--arg NAME=VALUE` pairs of the commands that take them.
    fn args(&self) -> Option<&[(String, String)]> {
        match self {
            Command::Run { args, .. }
            | Command::Ir { args, .. }
            | Command::Bench { args, .. }
            | Command::Build { args, .. }
            | Command::Graph { args, .. } => Some(args),
            Command::Check { .. } | Command::Gradcheck { .. } => None,
        }
    }
}

impl From<crate::Error> for Outcome {
    /// A failed call is the user's error (exit 1). Diagnostics arrive rendered rustc-style
    /// (`error[E0502]: ...`); every other message gets the `error: ` prefix.
    fn from(e: crate::Error) -> Outcome {
        let text = e.to_string();
        if text.starts_with("error") || text.starts_with("warning") {
            Outcome::UserError(text)
        } else {
            Outcome::UserError(format!("error: {text}"))
        }
    }
}

/// A session for `file` with the options of the command line; a load failure is a user error.
fn session_for(
    file: &std::path::Path,
    backend: BackendArg,
    threads: Option<usize>,
    optimize: bool,
    checkpoint_loops: bool,
) -> Result<crate::Session, Outcome> {
    let backend = match backend {
        BackendArg::Jit => crate::Backend::Jit,
        BackendArg::Interp => crate::Backend::Interp,
    };
    let defaults = crate::SessionOptions::default();
    let threads = match threads {
        Some(t) if !(1..=crate::MAX_THREADS).contains(&t) => {
            return Err(Outcome::UsageError(format!(
                "--threads must be at least 1 and at most {}, got {t}",
                crate::MAX_THREADS
            )))
        }
        Some(t) => t,
        None => defaults.threads,
    };
    let options = crate::SessionOptions {
        checkpoint_loops,
        backend,
        threads,
        optimize,
        strict: crate::session::strict_from_env(),
        simd: defaults.simd,
    };
    let session = crate::Session::with_options(options);
    match session.load_file(file) {
        Ok(warnings) => {
            if !warnings.is_empty() {
                let lib = session.library();
                err!("{}", tfn_ir::diagnostic::render_all(&warnings, &lib.sources));
            }
            Ok(session)
        }
        Err(e) => Err(Outcome::from(e)),
    }
}

/// `--tolerance`: a finite, non-negative number (NaN would fail every check, `inf` pass any,
/// a negative one fail all).
fn parse_tolerance(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && t >= 0.0 => Ok(t),
        _ => Err(format!("`{text}` is not a tolerance (a finite number >= 0, such as 1e-3)")),
    }
}
