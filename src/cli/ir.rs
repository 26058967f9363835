//! `tfnc ir FILE [--fn FN] [--stage parsed|lowered|optimized|fused] [--arg NAME=dtype[shape]]`:
//! the IR of each stage as text.

use super::args::{parse_value, ArgValue};
use super::{session_for, BackendArg, Outcome, Stage};
use std::path::Path;
use tfn_ir::lower::{ArgSpec, DimSpec, ParamSource};

/// The signature `--arg` describes: a tensor type or a literal.
pub(super) fn arg_specs(args: &[(String, String)]) -> Result<Vec<(String, ArgSpec)>, Outcome> {
    args.iter()
        .map(|(name, text)| {
            let spec = match parse_value(text)
                .map_err(|e| Outcome::UsageError(format!("--arg {name}: {e}")))?
            {
                ArgValue::TensorType(dtype, dims) => ArgSpec::Tensor {
                    dtype,
                    dims: dims.iter().map(|&d| if d == 1 { DimSpec::One } else { DimSpec::Dyn }).collect(),
                },
                ArgValue::Literal(a) => ArgSpec::Attr(a),
                ArgValue::NpyPath(p) => {
                    return Err(Outcome::UsageError(format!(
                        "--arg {name}: expected a tensor type like f32[1024, 1024] or a literal, got `{p}`"
                    )))
                }
            };
            Ok((name.clone(), spec))
        })
        .collect()
}

/// Refuses a call of `function` that leaves a parameter without a default unset: every
/// argument of a command comes from its command line, so the omission is the command line's
/// (exit 2). `what` and `example` say how this command takes a tensor (`NAME` in `example`
/// stands for the first missing parameter). Functions with several
/// overloads are left to dispatch, which names the candidates.
pub(super) fn missing_args(
    library: &tfn_ir::Library,
    function: &str,
    given: &[&str],
    what: &str,
    example: &str,
) -> Result<(), Outcome> {
    let [only] = library.overloads(function) else { return Ok(()) };
    let missing: Vec<&str> = only
        .params
        .iter()
        .filter(|p| p.default.is_none() && !given.contains(&p.name.as_str()))
        .map(|p| p.name.as_str())
        .collect();
    let Some(first) = missing.first() else { return Ok(()) };
    let list: Vec<String> = missing.iter().map(|n| format!("`{n}`")).collect();
    let example = example.replace("NAME", first);
    Err(Outcome::UsageError(format!(
        "`{function}` needs {}: give each with --arg, {what} (--arg {first}={example}) or a value \
         (--arg {first}=2)",
        list.join(", ")
    )))
}

/// The concrete shapes `--arg` gives for each graph parameter (`None` when one is missing).
pub(super) fn concrete_shapes(
    args: &[(String, String)],
    params: &[ParamSource],
) -> Option<Vec<Vec<usize>>> {
    params.iter().map(|p| arg_shape(args, p)).collect()
}

/// Refuses `--arg` shapes that no call could pass (`x + y` with `[3]` and `[4]`): with every
/// shape given, the sizes must bind as a call's would. `signature` is the function's graph
/// (a program's signature when it has loops).
pub(super) fn check_arg_shapes(
    function: &str,
    args: &[(String, String)],
    params: &[ParamSource],
    signature: &tfn_ir::Graph,
) -> Result<(), Outcome> {
    let Some(shapes) = concrete_shapes(args, params) else { return Ok(()) };
    let refs: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
    let none = tfn_ir::bind::Allocated::Only(&[]);
    tfn_ir::bind::bind_sizes_allocating(signature, &refs, none).map(|_| ()).map_err(|e| {
        Outcome::UserError(format!("error: the --arg shapes do not fit `{function}`: {e}"))
    })
}

/// The concrete shape `--arg` gives for one graph parameter.
pub(super) fn arg_shape(args: &[(String, String)], param: &ParamSource) -> Option<Vec<usize>> {
    let ParamSource::Keyword(name) = param else { return None };
    let (_, text) = args.iter().find(|(n, _)| n == name)?;
    match parse_value(text) {
        Ok(ArgValue::TensorType(_, dims)) => Some(dims),
        _ => None,
    }
}

pub(super) fn ir(
    file: &Path,
    function: Option<&str>,
    stage: Stage,
    args: &[(String, String)],
    explain: bool,
    optimize: bool,
) -> Outcome {
    let session = match session_for(file, BackendArg::Interp, None, true, false) {
        Ok(s) => s,
        Err(o) => return o,
    };
    let library = session.library();
    if stage == Stage::Parsed {
        if let Some((name, _)) = args.first() {
            return Outcome::UsageError(format!(
                "--arg {name}: the parsed stage is the whole file, not a call; give --fn and \
                 --stage lowered, optimized or fused to describe a call's arguments"
            ));
        }
        let user_files: Vec<_> = library
            .sources
            .files()
            .filter(|(_, f)| !f.name.starts_with('<'))
            .map(|(id, _)| id)
            .collect();
        out!("{}", tfn_frontend::print_library(&library, Some(&user_files)));
        return Outcome::Ok;
    }
    let Some(function) = function else {
        return Outcome::UsageError(
            "--fn is required for the lowered, optimized and fused stages".into(),
        );
    };
    let specs = match arg_specs(args) {
        Ok(s) => s,
        Err(o) => return o,
    };
    // The given sizes decide whether derived sizes are 1, as for a call.
    // The IR is of one call signature: every parameter without a default needs an `--arg`.
    let given: Vec<&str> = args.iter().map(|(n, _)| n.as_str()).collect();
    if let Err(o) =
        missing_args(&library, function, &given, "a tensor's dtype and shape", "f32[4, 8]")
    {
        return o;
    }
    let sizes = |p: &ParamSource| arg_shape(args, p);
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
    if instance.has_loops() {
        let program = match instance.program() {
            Ok(p) => p,
            Err(e) => return Outcome::UserError(format!("error: {e}")),
        };
        if let Err(o) = check_arg_shapes(function, args, &instance.params, &program.signature) {
            return o;
        }
        let mut text = String::new();
        if let Err(e) = print_program(&library, &program, stage, optimize, 0, &mut text) {
            return Outcome::UserError(format!("error: {e}"));
        }
        out!("{}\n", text.trim_end());
        return Outcome::Ok;
    }
    if let Err(o) = check_arg_shapes(function, args, &instance.params, &instance.graph) {
        return o;
    }
    let text = match stage {
        Stage::Parsed | Stage::Lowered => tfn_ir::text::print_graph(&instance.graph),
        Stage::Optimized | Stage::Fused => {
            let planned = match crate::pipeline::plan(&library, &instance.graph, optimize) {
                Ok(p) => p,
                Err(e) => return Outcome::UserError(format!("error: {e}")),
            };
            let mut text = if stage == Stage::Optimized {
                let mut text = tfn_ir::text::print_graph(&planned.graph);
                if let Some(why) = &planned.optimizer_fallback {
                    text.push_str(&format!(
                        "\n// FALLBACK: the optimiser failed; this is the unoptimised graph: {why}\n"
                    ));
                }
                text
            } else {
                let mut text = crate::pipeline::print_fused(&planned);
                let traffic = concrete_shapes(args, &instance.params)
                    .and_then(|shapes| crate::pipeline::traffic(&planned, &shapes));
                if let Some((kernels, bytes)) = traffic {
                    text.push_str(&format!(
                        "\n// {kernels} kernel(s) moving {bytes} bytes for the given shapes\n"
                    ));
                }
                text
            };
            if let (true, Some(report)) = (explain, planned.report) {
                text.push_str(&format!("\n{}\n", crate::pipeline::Explain(report)));
            }
            text
        }
    };
    out!("{}\n", text.trim_end());
    Outcome::Ok
}

/// A function with loops, step by step: each stage graph at `stage`, each loop's header and
/// its body (indented), recursively.
fn print_program(
    library: &tfn_ir::Library,
    program: &tfn_ir::program::Program,
    stage: Stage,
    optimize: bool,
    depth: usize,
    out: &mut String,
) -> Result<(), String> {
    use tfn_ir::program::Step;
    let indent = "    ".repeat(depth);
    let push = |text: &str, out: &mut String| {
        for line in text.lines() {
            out.push_str(&indent);
            out.push_str(line);
            out.push('\n');
        }
    };
    for step in &program.steps {
        match step {
            Step::Graph { graph, reads, writes, .. } => {
                let list = |vs: &[tfn_ir::ValueId]| {
                    vs.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ")
                };
                push(&format!("// stage: reads [{}], writes [{}]", list(reads), list(writes)), out);
                let text = match stage {
                    Stage::Parsed | Stage::Lowered => tfn_ir::text::print_graph(graph),
                    Stage::Optimized | Stage::Fused => {
                        let planned = crate::pipeline::plan(library, graph, optimize)
                            .map_err(|e| e.to_string())?;
                        if stage == Stage::Optimized {
                            tfn_ir::text::print_graph(&planned.graph)
                        } else {
                            crate::pipeline::print_fused(&planned)
                        }
                    }
                };
                push(&text, out);
            }
            Step::Loop { spec, body } => {
                let kind = &spec.kind;
                let list = |vs: &[tfn_ir::ValueId]| {
                    vs.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ")
                };
                push(
                    &format!(
                        "// loop `{}` ({kind}): carried [{}] -> [{}], invariant [{}], sliced [{}]; its body, compiled once:",
                        spec.label,
                        list(&spec.carried),
                        list(&spec.results),
                        list(&spec.invariants),
                        list(&spec.sliced)
                    ),
                    out,
                );
                print_program(library, body, stage, optimize, depth + 1, out)?;
            }
        }
    }
    Ok(())
}
