//! `tfnc graph FILE FN --arg NAME=dtype[shape]... [-o graph.svg|graph.dot]`: the fused graph
//! of a function instantiated for those arguments, as Graphviz DOT
//! ([`crate::pipeline::graph_dot`]) on stdout, in a `.dot`/`.gv` file, or as SVG drawn by
//! Graphviz's `dot` (found on `PATH`). Files are written atomically (a temporary file in the
//! same directory, renamed), so a failure never leaves a partial picture.

use super::ir::{arg_specs, check_arg_shapes, concrete_shapes};
use super::{session_for, BackendArg, Outcome};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use tfn_ir::lower::ParamSource;

/// What `-o` asks for, from its extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Dot,
    Svg,
}

fn format_of(path: &Path) -> Result<Format, Outcome> {
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("dot" | "gv") => Ok(Format::Dot),
        Some("svg") => Ok(Format::Svg),
        _ => Err(Outcome::UsageError(format!(
            "-o {}: the picture's format comes from the extension: .dot or .gv (DOT), .svg (SVG)",
            path.display()
        ))),
    }
}

pub(super) fn graph(
    file: &Path,
    function: &str,
    args: &[(String, String)],
    output: Option<&Path>,
    optimize: bool,
) -> Outcome {
    let format = match output.map(format_of).transpose() {
        Ok(f) => f,
        Err(o) => return o,
    };
    let specs = match arg_specs(args) {
        Ok(s) => s,
        Err(o) => return o,
    };
    let session = match session_for(file, BackendArg::Interp, None, true, false) {
        Ok(s) => s,
        Err(o) => return o,
    };
    let library = session.library();
    let given: Vec<&str> = args.iter().map(|(n, _)| n.as_str()).collect();
    let shape_text = "a tensor's dtype and shape";
    if let Err(o) = super::ir::missing_args(&library, function, &given, shape_text, "f32[4, 8]") {
        return o;
    }
    let sizes = |p: &ParamSource| super::ir::arg_shape(args, p);
    let instance =
        match tfn_ir::lower::instantiate_for_sizes(&library, function, &[], &specs, &sizes) {
            Ok(i) => i,
            Err(e) => {
                return Outcome::UserError(tfn_ir::diagnostic::render_all(
                    &e.diagnostics,
                    &library.sources,
                ))
            }
        };
    let shapes = concrete_shapes(args, &instance.params);
    let signature = match instance.has_loops() {
        true => instance.program().map(|p| p.signature).ok(),
        false => Some(instance.graph.clone()),
    };
    if let Some(signature) = &signature {
        if let Err(o) = check_arg_shapes(function, args, &instance.params, signature) {
            return o;
        }
    }
    let drawn = if instance.has_loops() {
        instance.program().map_err(|e| e.to_string()).and_then(|program| {
            let shape_text = crate::pipeline::shape_printer(&program.signature, shapes.as_deref());
            crate::pipeline::program_dot(&library, &program, optimize, &shape_text)
                .map_err(|e| e.to_string())
        })
    } else {
        crate::pipeline::plan(&library, &instance.graph, optimize)
            .map(|planned| crate::pipeline::graph_dot(&planned, shapes.as_deref()))
            .map_err(|e| e.to_string())
    };
    let dot = match drawn {
        Ok(dot) => dot,
        Err(e) => return Outcome::UserError(format!("error: {e}")),
    };
    let (path, format) = match (output, format) {
        (Some(path), Some(format)) => (path, format),
        _ => {
            out!("{dot}");
            return Outcome::Ok;
        }
    };
    let bytes = match format {
        Format::Dot => dot.into_bytes(),
        Format::Svg => match run_dot(&dot, path) {
            Ok(svg) => svg,
            Err(o) => return o,
        },
    };
    match write_atomic(path, &bytes) {
        Ok(()) => Outcome::Ok,
        Err(e) => Outcome::UserError(format!("error: cannot write `{}`: {e}", path.display())),
    }
}

/// Runs `dot -Tsvg` on `dot`; its SVG, or a user error (exit 1) saying what to do instead.
fn run_dot(dot: &str, path: &Path) -> Result<Vec<u8>, Outcome> {
    let mut child = match Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            let why = if e.kind() == std::io::ErrorKind::NotFound {
                "Graphviz is not installed (no `dot` on PATH)".to_string()
            } else {
                format!("cannot run Graphviz's `dot`: {e}")
            };
            let dot_path = path.with_extension("dot");
            return Err(Outcome::UserError(format!(
                "error: cannot write `{}`: {why}; write DOT instead with `-o {}` \
                 (and draw it elsewhere), or install Graphviz",
                path.display(),
                dot_path.display()
            )));
        }
    };
    // Feed stdin from another thread: `dot` may fill its stdout before it has read all input.
    let stdin = child.stdin.take();
    let input = dot.as_bytes().to_vec();
    let writer = std::thread::spawn(move || {
        if let Some(mut stdin) = stdin {
            // A write error shows up as `dot`'s failure below.
            let _ = stdin.write_all(&input);
        }
    });
    // Reads stdout and stderr together (neither pipe can fill up and stall `dot`).
    let output = child.wait_with_output();
    let _ = writer.join();
    match output {
        Ok(o) if o.status.success() && !o.stdout.is_empty() => Ok(o.stdout),
        Ok(o) => {
            let errors = String::from_utf8_lossy(&o.stderr);
            let errors: String = errors.trim().chars().take(4000).collect();
            Err(Outcome::UserError(format!(
                "error: Graphviz's `dot -Tsvg` failed ({}){}",
                o.status,
                if errors.is_empty() { String::new() } else { format!(":\n{errors}") }
            )))
        }
        Err(e) => Err(Outcome::UserError(format!("error: Graphviz's `dot` did not finish: {e}"))),
    }
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename: the
/// destination is either left as it was or fully replaced.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let name = path.file_name().ok_or("not a file name")?;
    if path.is_dir() {
        return Err("it is a directory".into());
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tfnc-{}.tmp", std::process::id()));
    let tmp = dir.join(tmp_name);
    let written = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|_| f.sync_all()))
        .and_then(|_| std::fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e.to_string());
    }
    Ok(())
}
