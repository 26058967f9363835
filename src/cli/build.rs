//! `tfnc build FILE --fn NAME... --arg x=f32[?, 1024]... [--vjp] -o DIR [--prefix P]`: the
//! functions' kernels (or, with `--vjp`, those of their vector-Jacobian products), compiled
//! ahead of time, in a relocatable object `DIR/P.o` with a C header `DIR/P.h` and the runtime
//! library `DIR/libtfn_rt.a` (see docs/aot.md).
//!
//! The function is instantiated for the signature `--arg` gives (`?`: a size fixed only at the
//! call; a number: a size the call must have, where 1 specialises the graph as a call with a
//! size-1 axis does), planned as a session plans it and compiled as the JIT compiles it
//! (`tfn_backend::aot`). Every file is written to a temporary name in DIR first and renamed
//! when all of them are complete: a failure leaves nothing behind.

use super::{session_for, BackendArg, Outcome};
use std::path::{Path, PathBuf};
use tfn_backend::aot::{
    CpuChoice, FunctionMeta, ObjectBuilder, ProgramStage, StageGradient, StandaloneBuilder,
};
use tfn_ir::lower::{ArgSpec, DimSpec, ParamSource};
use tfn_ir::program::run::Plan;
use tfn_ir::{DType, Graph, TensorType};
use tfn_passes::fusion::FusedGraph;

/// A stage of a function with loops as `tfnc build` plans it: its planned graph and, for a
/// vjp, its gradient's halves.
type BuildStage = ProgramStage<(Graph, FusedGraph)>;

/// What goes into the object for one function: its planned graph, or (a function with loops)
/// its plan of planned stage graphs, its result types and, for its vjp, the vjp's signature
/// and the gradients' types.
pub(crate) enum Built {
    Graph(tfn_passes::pipeline::Planned),
    Program(Plan<BuildStage>, Vec<TensorType>, Option<(Graph, Vec<TensorType>)>),
}

impl Built {
    /// The parameters and symbols of the function.
    pub(crate) fn signature(&self) -> &Graph {
        match self {
            Built::Graph(p) => &p.graph,
            Built::Program(_, _, Some((signature, _))) => signature,
            Built::Program(plan, _, None) => &plan.signature,
        }
    }

    pub(crate) fn results(&self) -> Vec<TensorType> {
        match self {
            Built::Graph(p) => p.graph.outputs.iter().map(|v| p.graph.ty(*v).clone()).collect(),
            Built::Program(_, _, Some((_, grads))) => grads.clone(),
            Built::Program(_, results, None) => results.clone(),
        }
    }
}

/// Why [`build_object`] failed: a function an object cannot hold (its name and why), or a
/// failure of the code generator or the object writer.
pub(crate) enum ObjectError {
    Unsupported(String, String),
    Internal(String),
}

/// The object of planned `functions` (`tfnc build` and `tfn::aot::ModuleBuilder`): every
/// function's kernels for `cpu`, its descriptor and entry points, prefixed by `prefix`.
pub(crate) fn build_object(
    prefix: &str,
    cpu: &CpuChoice,
    functions: &[(FunctionMeta, Built)],
) -> Result<Vec<u8>, ObjectError> {
    let internal = |e: &dyn std::fmt::Display| ObjectError::Internal(e.to_string());
    let mut object = ObjectBuilder::new(prefix, cpu).map_err(|e| internal(&e))?;
    for (meta, built) in functions {
        let added = match built {
            Built::Graph(planned) => {
                object.add_function(meta, &planned.graph, planned.fused.clone())
            }
            Built::Program(plan, results, vjp) => {
                object.add_program(meta, plan, results, vjp.is_some())
            }
        };
        added.map_err(|e| match e {
            tfn_backend::aot::AotError::Unsupported(why) => {
                ObjectError::Unsupported(meta.name.clone(), why)
            }
            other => internal(&other),
        })?;
    }
    object.finish().map_err(|e| internal(&e))
}

/// The self-contained aarch64 object of planned `functions`: refused (exit 1), naming the
/// function and the step, when one needs the runtime library.
fn build_standalone(prefix: &str, functions: &[(FunctionMeta, Built)]) -> Result<Vec<u8>, Outcome> {
    let target = tfn_backend::aot::AARCH64;
    let internal = |e: &dyn std::fmt::Display| Outcome::UserError(format!("error: {e}"));
    let mut object = StandaloneBuilder::new(prefix, target).map_err(|e| internal(&e))?;
    for (meta, built) in functions {
        let refuse = |why: String| {
            Outcome::UserError(format!(
                "error: `{}` cannot be built for {target}: {why}",
                meta.name
            ))
        };
        let Built::Graph(planned) = built else {
            return Err(refuse(
                "it has a `for` or `while` loop, which only the runtime library runs (x86-64 only)"
                    .into(),
            ));
        };
        object.add_function(meta, &planned.graph, planned.fused.clone()).map_err(|e| match e {
            tfn_backend::aot::AotError::Unsupported(why) => refuse(why),
            other => internal(&other),
        })?;
    }
    object.finish().map_err(|e| internal(&e))
}

/// What `tfnc build` was asked for.
pub struct BuildRequest {
    pub file: PathBuf,
    pub functions: Vec<String>,
    pub args: Vec<(String, String)>,
    pub output: PathBuf,
    pub prefix: Option<String>,
    /// Build the function's vector-Jacobian product instead.
    pub vjp: bool,
    /// `--cpu`: `portable` (the default), `host` or a tier's name.
    pub cpu: Option<String>,
    /// `--target`: a triple of [`TARGETS`] (default: x86-64).
    pub target: Option<String>,
}

/// The triples `--target` takes: x86-64 (objects that run with the runtime library) and
/// aarch64 (self-contained objects, `tfn_backend::aot::StandaloneBuilder`).
pub(crate) const TARGETS: [&str; 2] = ["x86_64-unknown-linux-gnu", tfn_backend::aot::AARCH64];

/// One `--arg`: a tensor type with `?` or fixed sizes, or a literal.
#[derive(Clone)]
pub(crate) enum BuildArg {
    Tensor(DType, Vec<Option<usize>>),
    Literal(tfn_ir::Attr),
}

/// Parses `dtype[d, ...]` with `?` or a number per axis, else a literal.
pub(crate) fn parse_arg(name: &str, text: &str) -> Result<BuildArg, Outcome> {
    let usage = |m: String| Outcome::UsageError(format!("--arg {name}: {m}"));
    let text = text.trim();
    if let Some((dtype, rest)) = text.split_once('[') {
        if let Ok(dtype) = dtype.trim().parse::<DType>() {
            let inner = rest
                .strip_suffix(']')
                .ok_or_else(|| usage(format!("missing `]` in tensor type `{text}`")))?;
            let mut dims = Vec::new();
            if !inner.trim().is_empty() {
                for d in inner.split(',').map(str::trim) {
                    dims.push(match d {
                        "?" => None,
                        n => Some(
                            n.parse::<usize>()
                                .ok()
                                .filter(|_| n.bytes().all(|b| b.is_ascii_digit()))
                                .filter(|&n| i64::try_from(n).is_ok())
                                .ok_or_else(|| {
                                    usage(format!(
                                        "`{d}` is not a size (`?` or a number below 2^63) in `{text}`"
                                    ))
                                })?,
                        ),
                    });
                }
            }
            // The fixed sizes alone must fit in one buffer (the `?` ones count as 1).
            let bytes = dims
                .iter()
                .try_fold(dtype.size_bytes(), |b, d| b.checked_mul(d.unwrap_or(1)))
                .filter(|&b| isize::try_from(b).is_ok());
            if bytes.is_none() {
                return Err(usage(format!(
                    "no buffer can hold a `{text}` tensor (more than {} bytes)",
                    isize::MAX
                )));
            }
            return Ok(BuildArg::Tensor(dtype, dims));
        }
    }
    match super::args::parse_value(text) {
        Ok(super::args::ArgValue::Literal(a)) => Ok(BuildArg::Literal(a)),
        Ok(_) => Err(usage(format!(
            "expected a tensor type like f32[?, 1024] or a literal, got `{text}`"
        ))),
        Err(e) => Err(usage(e.to_string())),
    }
}

/// Whether `s` is a C identifier.
pub(crate) fn is_c_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Where the runtime library is: `TFN_RT_LIB`, else `libtfn_rt.a` beside `tfnc` (where
/// `cargo build -p tfn-rt` puts it, with the same profile).
fn runtime_library() -> Result<PathBuf, Outcome> {
    // (Set but empty is unset, as for PATH-like variables: `TFN_RT_LIB= tfnc build ...`.)
    let path = match std::env::var_os("TFN_RT_LIB").filter(|p| !p.is_empty()) {
        Some(p) if Path::new(&p).is_dir() => {
            return Err(Outcome::UserError(format!(
                "error: TFN_RT_LIB={} is a directory; it must name the runtime library file \
                 itself (libtfn_rt.a)",
                Path::new(&p).display()
            )))
        }
        Some(p) => PathBuf::from(p),
        None => std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(|d| d.join("libtfn_rt.a")))
            .unwrap_or_else(|| PathBuf::from("libtfn_rt.a")),
    };
    if path.is_file() {
        // An `ar` archive starts with this magic; anything else would fail only at link time.
        let mut magic = [0u8; 8];
        let read = std::fs::File::open(&path).and_then(|mut f| {
            use std::io::Read;
            f.read_exact(&mut magic)
        });
        if read.is_err() || &magic != b"!<arch>\n" {
            return Err(Outcome::UserError(format!(
                "error: the runtime library {} is not a static library (an `ar` archive): \
                 point TFN_RT_LIB at libtfn_rt.a (`cargo build -p tfn-rt` builds it)",
                path.display()
            )));
        }
        Ok(path)
    } else if path.exists() {
        Err(Outcome::UserError(format!(
            "error: the runtime library {} is not a regular file: point TFN_RT_LIB at \
             libtfn_rt.a (`cargo build -p tfn-rt` builds it)",
            path.display()
        )))
    } else {
        Err(Outcome::UserError(format!(
            "error: the runtime library {} is missing: build it with `cargo build -p tfn-rt` \
             (the profile of tfnc: `--release` for a release tfnc), or set TFN_RT_LIB",
            path.display()
        )))
    }
}

pub(super) fn build(req: BuildRequest) -> Outcome {
    match build_files(&req) {
        Ok(()) => Outcome::Ok,
        Err(o) => o,
    }
}

/// Why a C symbol of a module is not allowed: a name C reserves (`__x`, `_X`), or one in the
/// runtime's namespace (`tfn_rt_*`, `tfn_wide_*`, the header's `tfn_buffer*`, `tfn_task_fn`,
/// `tfn_parallel_for_fn`), which would clash when the program links `libtfn_rt.a`.
fn reserved_symbol(symbol: &str) -> Option<&'static str> {
    let b = symbol.as_bytes();
    if b.starts_with(b"__")
        || (b.first() == Some(&b'_') && b.get(1).is_some_and(u8::is_ascii_uppercase))
    {
        return Some("reserved by C (`__x`, `_X`)");
    }
    let runtime = ["tfn_rt_", "tfn_wide_", "tfn_buffer", "tfn_task_fn", "tfn_parallel_for_fn"];
    runtime
        .iter()
        .any(|r| symbol.starts_with(r))
        .then_some("in the runtime's namespace (tfn_rt_*, tfn_wide_*, tfn_buffer*)")
}

/// Checks what the C ABI cannot carry: buffers of a dtype without a C code and ranks above
/// `TFN_MAX_RANK`, in the parameters (exit 2: the command line asked for
/// them) and in the results (exit 1: the function makes them).
fn check_c_abi(functions: &[(FunctionMeta, Built)]) -> Result<(), Outcome> {
    use tfn_backend::aot::c_abi::{MAX_RANK, TFN_DTYPES};
    let carried = |d: DType| TFN_DTYPES.iter().any(|(_, t)| *t == d);
    let kinds: Vec<String> = TFN_DTYPES.iter().map(|(_, d)| d.to_string()).collect();
    for (meta, built) in functions {
        let graph = built.signature();
        for ((name, _), p) in meta.params.iter().zip(&graph.params) {
            if !carried(p.ty.dtype) || p.ty.shape.rank() > MAX_RANK {
                return Err(Outcome::UsageError(format!(
                    "--arg {name}: a {} tensor of rank {} cannot cross the C ABI (dtypes {}; \
                     at most {MAX_RANK} axes)",
                    p.ty.dtype,
                    p.ty.shape.rank(),
                    kinds.join(", ")
                )));
            }
        }
        for (k, ty) in built.results().iter().enumerate() {
            if !carried(ty.dtype) || ty.shape.rank() > MAX_RANK {
                return Err(Outcome::UserError(format!(
                    "error: `{}` cannot be built ahead of time: its result {k} is {ty}, which \
                     cannot cross the C ABI (dtypes {}; at most {MAX_RANK} axes)",
                    meta.name,
                    kinds.join(", ")
                )));
            }
        }
    }
    Ok(())
}

fn build_files(req: &BuildRequest) -> Result<(), Outcome> {
    let first = req.functions.first().map(String::as_str).unwrap_or("module");
    let prefix = req.prefix.clone().unwrap_or_else(|| first.replace('.', "_"));
    if !is_c_ident(&prefix) {
        return Err(Outcome::UsageError(match req.prefix {
            Some(_) => format!("--prefix `{prefix}` is not a C identifier (letters, digits, `_`)"),
            None => format!(
                "--fn {first}: the default prefix `{prefix}` is not a C identifier (letters, \
                 digits, `_`); give --prefix"
            ),
        }));
    }
    let standalone = match req.target.as_deref() {
        None => false,
        Some(t) if t == TARGETS[0] => false,
        Some(t) if t == tfn_backend::aot::AARCH64 => true,
        Some(t) => {
            return Err(Outcome::UsageError(format!(
                "--target {t}: not a supported target (supported: {})",
                TARGETS.join(", ")
            )))
        }
    };
    if let (true, Some(cpu)) = (standalone, &req.cpu) {
        return Err(Outcome::UsageError(format!(
            "--cpu {cpu}: CPU tiers are for x86-64 objects; an aarch64 object runs on every \
             aarch64 CPU (NEON and FMA are baseline)"
        )));
    }
    let cpu_name = req.cpu.as_deref().unwrap_or("portable");
    let cpu = CpuChoice::parse(cpu_name).ok_or_else(|| {
        let tiers: Vec<&str> = tfn_backend::aot::TIERS.iter().map(|t| t.name).collect();
        Outcome::UsageError(format!(
            "--cpu {cpu_name}: expected portable, host or a tier ({})",
            tiers.join(", ")
        ))
    })?;
    let mut args = Vec::new();
    for (name, text) in &req.args {
        args.push((name.clone(), parse_arg(name, text)?));
    }
    let session = session_for(&req.file, BackendArg::Interp, None, true, false)?;
    let library = session.library();
    // Each function takes the `--arg`s named as its parameters.
    let params_of = |f: &str| -> Vec<String> {
        let base = f.split_once('.').map_or(f, |(b, _)| b);
        library
            .overloads(base)
            .iter()
            .flat_map(|d| d.params.iter().map(|p| p.name.clone()))
            .collect()
    };
    let all_params: Vec<String> = req.functions.iter().flat_map(|f| params_of(f)).collect();
    if let Some((unused, _)) = args.iter().find(|(n, _)| !all_params.contains(n)) {
        let known: Vec<&String> = req.functions.iter().collect();
        if req.functions.iter().all(|f| !params_of(f).is_empty()) {
            return Err(Outcome::UsageError(format!(
                "--arg {unused}: no parameter of that name in {}",
                known.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
            )));
        }
    }
    let mut functions = Vec::new();
    for f in &req.functions {
        let params = params_of(f);
        let mine: Vec<(String, BuildArg)> =
            args.iter().filter(|(n, _)| params.is_empty() || params.contains(n)).cloned().collect();
        let (meta, planned) = plan_function(&library, f, &mine, req.vjp)?;
        if functions.iter().any(|(m, _): &(FunctionMeta, _)| m.name == meta.name) {
            return Err(Outcome::UsageError(format!(
                "--fn {f} twice: the symbol `{prefix}_{}` would clash",
                meta.name
            )));
        }
        functions.push((meta, planned));
    }
    check_c_abi(&functions)?;
    let mut symbols = vec![format!("{prefix}_module"), format!("{prefix}_error_message")];
    for (meta, _) in &functions {
        for suffix in ["", "_output_shape", "_alloc"] {
            symbols.push(format!("{prefix}_{}{suffix}", meta.name));
        }
    }
    // `--fn g --fn g_alloc`: g's allocating variant and the function g_alloc would be one C
    // name (the header's static inline would shadow the entry point, silently).
    let mut seen = std::collections::HashSet::new();
    if let Some(symbol) = symbols.iter().find(|s| !seen.insert(s.as_str())) {
        return Err(Outcome::UsageError(format!(
            "the C symbol `{symbol}` would name two things (a function and another function's \
             `_output_shape`/`_alloc` variant, or the module's `_module`/`_error_message`); \
             build the functions into separate modules (another --prefix) or rename one"
        )));
    }
    if let Some((symbol, why)) = symbols.iter().find_map(|s| Some((s, reserved_symbol(s)?))) {
        return Err(Outcome::UsageError(format!(
            "--prefix {prefix}: the symbol `{symbol}` is {why}; choose another prefix"
        )));
    }
    if standalone {
        let bytes = build_standalone(&prefix, &functions)?;
        let header = standalone_header(&prefix, &req.file, &functions);
        return write_all(
            &req.output,
            &[(format!("{prefix}.o"), bytes), (format!("{prefix}.h"), header.into_bytes())],
        );
    }
    let bytes = build_object(&prefix, &cpu, &functions).map_err(|e| match e {
        ObjectError::Unsupported(name, why) => {
            Outcome::UserError(format!("error: `{name}` cannot be built ahead of time: {why}"))
        }
        ObjectError::Internal(e) => Outcome::UserError(format!("error: {e}")),
    })?;
    let header = header(&prefix, &req.file, &functions);
    let runtime = runtime_library()?;
    let runtime = std::fs::read(&runtime)
        .map_err(|e| Outcome::UserError(format!("error: reading {}: {e}", runtime.display())))?;
    write_all(
        &req.output,
        &[
            (format!("{prefix}.o"), bytes),
            (format!("{prefix}.h"), header.into_bytes()),
            ("libtfn_rt.a".to_string(), runtime),
        ],
    )
}

/// Instantiates `function` for `args` (or its vjp) and plans it as a session would: its
/// metadata and planned graph, or why it cannot go into an object.
pub(crate) fn plan_function(
    library: &tfn_ir::Library,
    function: &str,
    args: &[(String, BuildArg)],
    vjp: bool,
) -> Result<(FunctionMeta, Built), Outcome> {
    let specs: Vec<(String, ArgSpec)> = args
        .iter()
        .map(|(name, a)| {
            let spec = match a {
                BuildArg::Tensor(dtype, dims) => ArgSpec::Tensor {
                    dtype: *dtype,
                    dims: dims
                        .iter()
                        .map(|d| if *d == Some(1) { DimSpec::One } else { DimSpec::Dyn })
                        .collect(),
                },
                BuildArg::Literal(a) => ArgSpec::Attr(a.clone()),
            };
            (name.clone(), spec)
        })
        .collect();
    let declared = |p: &ParamSource| -> Option<Vec<Option<usize>>> {
        let ParamSource::Keyword(name) = p else { return None };
        args.iter().find(|(n, _)| n == name).and_then(|(_, a)| match a {
            BuildArg::Tensor(_, dims) => Some(dims.clone()),
            BuildArg::Literal(_) => None,
        })
    };
    // Fully fixed sizes are the call's sizes; with any `?`, none are known.
    let sizes = |p: &ParamSource| -> Option<Vec<usize>> { declared(p)?.into_iter().collect() };
    let instance = tfn_ir::lower::instantiate_for_sizes(library, function, &[], &specs, &sizes)
        .map_err(|e| {
            Outcome::UserError(tfn_ir::diagnostic::render_all(&e.diagnostics, &library.sources))
        })?;
    let name = function;
    let refuse = |why: String| {
        Outcome::UserError(format!("error: `{name}` cannot be built ahead of time: {why}"))
    };
    if !instance.guards.is_empty() {
        return Err(refuse(
            "its graph depends on whether sizes it cannot know are 1 (a `squeeze` without \
             `dims` over a `?` axis, or a derived size that broadcasts); give every size of the \
             inputs, or name the axes (`squeeze(x, dims=[..])`)"
                .into(),
        ));
    }
    // The graph that runs: the function's, or (`--vjp`) its vector-Jacobian product's, whose
    // parameters are the function's, then one cotangent per result (as `Session::vjp`).
    let program = if instance.has_loops() {
        let program = instance.program().map_err(|e| refuse(e.to_string()))?;
        if let Some(label) = tfn_ir::program::vjp::first_while(&program).filter(|_| vjp) {
            return Err(refuse(format!(
                "`--vjp`: it runs the `while` loop `{label}`, whose trip count depends on the values"
            )));
        }
        let plan_graph = |graph: &Graph| -> Result<(Graph, FusedGraph), Outcome> {
            let planned = crate::pipeline::plan(library, graph, true)
                .map_err(|e| Outcome::UserError(format!("error: {e}")))?;
            if let Some(why) = &planned.optimizer_fallback {
                return Err(refuse(format!("the optimiser failed: {why}")));
            }
            Ok((planned.graph, planned.fused))
        };
        // Every stage and loop body planned as a session prepares it; for a vjp, with its
        // gradient cut at its residuals (as `Session::vjp` prepares a function with loops).
        let plan = Plan::compile(&program, &mut |graph: &Graph, regions| {
            let forward = plan_graph(graph)?;
            let gradient = if vjp && graph.params.iter().any(|p| p.ty.dtype.is_float()) {
                let v = tfn_passes::autodiff::split_vjp(library, graph, regions).map_err(|e| {
                    Outcome::UserError(tfn_ir::diagnostic::render_all(
                        &e.diagnostics(),
                        &library.sources,
                    ))
                })?;
                // No gradient reaches the stage's parameters: nothing to run backwards.
                if v.differentiated.is_empty() {
                    None
                } else {
                    Some(StageGradient {
                        forward: plan_graph(&v.forward)?,
                        backward: plan_graph(&v.backward)?,
                        differentiated: v.differentiated,
                    })
                }
            } else {
                None
            };
            Ok::<_, Outcome>(ProgramStage { forward, gradient, results: graph.outputs.len() })
        })?;
        let results: Vec<TensorType> =
            program.outputs.iter().map(|o| instance.graph.ty(*o).clone()).collect();
        let signature = vjp.then(|| tfn_ir::program::vjp::vjp_signature(&plan.signature, &results));
        Some((plan, results, signature))
    } else {
        None
    };
    let graph = if let Some((plan, _, signature)) = &program {
        signature.as_ref().map_or(&plan.signature, |(s, _)| s).clone()
    } else if vjp {
        tfn_passes::autodiff::vjp(library, &instance)
            .map_err(|e| {
                Outcome::UserError(tfn_ir::diagnostic::render_all(
                    &e.diagnostics(),
                    &library.sources,
                ))
            })?
            .graph
    } else {
        instance.graph.clone()
    };
    let mut params = Vec::new();
    for (source, p) in instance.params.iter().zip(&graph.params) {
        let ParamSource::Keyword(arg) = source else {
            return Err(refuse(format!("parameter `{}` is not a plain tensor argument", p.name)));
        };
        if !is_c_ident(arg) {
            return Err(refuse(format!("parameter `{arg}` is not a C identifier")));
        }
        let dims = declared(source).unwrap_or_default();
        params.push((arg.clone(), dims));
    }
    for (k, p) in graph.params.iter().enumerate().skip(instance.params.len()) {
        let name = format!("cotangent{}", k - instance.params.len());
        params.push((name, vec![None; p.ty.shape.rank()]));
    }
    let built = match program {
        Some((plan, results, signature)) => Built::Program(plan, results, signature),
        None => {
            let planned = crate::pipeline::plan(library, &graph, true)
                .map_err(|e| Outcome::UserError(format!("error: {e}")))?;
            if let Some(why) = &planned.optimizer_fallback {
                return Err(refuse(format!("the optimiser failed: {why}")));
            }
            Built::Graph(planned)
        }
    };
    let exported = if vjp { format!("{function}_vjp") } else { function.replace('.', "_") };
    if !is_c_ident(&exported) {
        return Err(refuse(format!("`{exported}` is not a C identifier")));
    }
    Ok((FunctionMeta { name: exported, params }, built))
}

/// Writes every file into `dir` (created if missing) under a temporary name, then renames them
/// all; on any failure, removes what it wrote.
fn write_all(dir: &Path, files: &[(String, Vec<u8>)]) -> Result<(), Outcome> {
    let fail = |what: String, e: std::io::Error| {
        Outcome::UserError(format!("error: cannot write {what}: {e}"))
    };
    // The directories this call creates, deepest first: removed again (if still empty) when
    // it fails, so a failure leaves nothing behind.
    let created: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|a| !a.as_os_str().is_empty() && std::fs::symlink_metadata(a).is_err())
        .map(Path::to_path_buf)
        .collect();
    let remove_created = || {
        for d in &created {
            let _ = std::fs::remove_dir(d);
        }
    };
    if dir.exists() && !dir.is_dir() {
        return Err(Outcome::UserError(format!(
            "error: -o {} is not a directory (tfnc build writes P.o, P.h and libtfn_rt.a into \
             the directory -o names)",
            dir.display()
        )));
    }
    if let Err(e) = std::fs::create_dir_all(dir) {
        remove_created();
        return Err(fail(dir.display().to_string(), e));
    }
    remove_stale_temporaries(dir, files);
    let temp = |name: &str| dir.join(format!(".{name}.tmp{}", std::process::id()));
    let mut written: Vec<PathBuf> = Vec::new();
    let cleanup = |written: &[PathBuf]| {
        for p in written {
            let _ = std::fs::remove_file(p);
        }
        remove_created();
    };
    for (name, bytes) in files {
        let path = temp(name);
        if let Err(e) = std::fs::write(&path, bytes) {
            let _ = std::fs::remove_file(&path);
            cleanup(&written);
            return Err(fail(dir.join(name).display().to_string(), e));
        }
        written.push(path);
    }
    for (i, (name, _)) in files.iter().enumerate() {
        if let Err(e) = std::fs::rename(temp(name), dir.join(name)) {
            for (done, _) in &files[..i] {
                let _ = std::fs::remove_file(dir.join(done));
            }
            cleanup(&written[i..]);
            return Err(fail(dir.join(name).display().to_string(), e));
        }
    }
    Ok(())
}

/// Removes the temporary files (`.NAME.tmpPID`) of `files` that a build killed before its
/// renames left in `dir`: those of processes no longer running (read from `/proc`; where
/// there is none, nothing is removed).
fn remove_stale_temporaries(dir: &Path, files: &[(String, Vec<u8>)]) {
    let proc = Path::new("/proc");
    if !proc.join("self").is_dir() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let stale = files.iter().any(|(file, _)| {
            name.strip_prefix(&format!(".{file}.tmp"))
                .and_then(|pid| pid.parse::<u32>().ok())
                .is_some_and(|pid| {
                    pid != std::process::id() && !proc.join(pid.to_string()).exists()
                })
        });
        if stale {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The include guard of module `prefix`'s header: the prefix as written (C identifiers are
/// case-sensitive, so prefixes `gg` and `GG` are two modules one program may include).
fn include_guard(prefix: &str) -> String {
    format!("TFN_MODULE_{prefix}_H")
}

/// `text` (a source path) made safe inside a `/* ... */` comment: a `*/` would end the
/// comment early, and a line break or other control character would break the line.
fn in_comment(text: &str) -> String {
    text.replace("*/", "*\\/").chars().map(|c| if c.is_control() { '?' } else { c }).collect()
}

/// The C header of a module: the runtime's declarations, then per function (its index in the
/// descriptor is its place here) its documented entry point and inline helpers.
pub(crate) fn header(prefix: &str, file: &Path, functions: &[(FunctionMeta, Built)]) -> String {
    let guard = include_guard(prefix);
    let dtype_name = |d: DType| {
        tfn_backend::aot::c_abi::TFN_DTYPES.iter().find(|(_, t)| *t == d).map_or("?", |(n, _)| *n)
    };
    let mut h = format!(
        "/* Generated by `tfnc build` from {} (tfn {}): module `{prefix}`.\n   \
         Link {prefix}.o with libtfn_rt.a (and -lpthread -ldl -lm). See docs/aot.md. */\n\
         #ifndef {guard}\n#define {guard}\n\n",
        in_comment(&file.display().to_string()),
        env!("CARGO_PKG_VERSION")
    );
    h.push_str(tfn_backend::aot::c_abi::C_TYPES);
    // The runtime's functions have C linkage in C++ too: declared inside `extern "C"`.
    h.push_str("\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
    h.push_str(tfn_backend::aot::c_abi::C_DECLARATIONS);
    h.push_str(&format!(
        "/* The module's descriptor (what the runtime reads at the first call). */\n\
         extern const uint64_t {prefix}_module[];\n\n"
    ));
    for (index, (meta, built)) in functions.iter().enumerate() {
        let results = built.results();
        h.push_str(&function_header(prefix, index, meta, built.signature(), &results, &dtype_name));
    }
    h.push_str("\n#ifdef __cplusplus\n}\n#endif\n#endif\n");
    h
}

/// One function's part of the header.
fn function_header(
    prefix: &str,
    index: usize,
    meta: &FunctionMeta,
    graph: &Graph,
    results: &[TensorType],
    dtype_name: &dyn Fn(DType) -> &'static str,
) -> String {
    let n_in = graph.params.len();
    let n_out = results.len();
    let mut h = describe(meta, graph, results, dtype_name);
    h.push_str(&format!(
        "   The caller allocates the outputs: {prefix}_{fname}_output_shape gives each one's\n   \
         dtype, rank, sizes and row-major strides for given inputs. Returns TFN_OK or an error\n   \
         code (message: tfn_rt_error_message()). */\n",
        fname = meta.name
    ));
    h.push_str(&format!(
        "int {prefix}_{f}(const tfn_buffer inputs[{n_in}], tfn_buffer outputs[{n_out}]);\n\n\
         static inline int {prefix}_{f}_output_shape(const tfn_buffer inputs[{n_in}], \
         int64_t output, tfn_buffer *out) {{\n    \
         return tfn_rt_output_shape({prefix}_module, {index}, inputs, {n_in}, output, out);\n}}\n\n\
         /* {prefix}_{f}, allocating every output with malloc (free outputs[k].data). */\n\
         static inline int {prefix}_{f}_alloc(const tfn_buffer inputs[{n_in}], \
         tfn_buffer outputs[{n_out}]) {{\n    \
         return tfn_rt_call_alloc({prefix}_module, {index}, inputs, {n_in}, outputs, {n_out});\n}}\n\n",
        f = meta.name
    ));
    h
}

/// The opening of a function's comment in a header: its signature, inputs, outputs and sizes
/// (the comment is left open).
fn describe(
    meta: &FunctionMeta,
    graph: &Graph,
    results: &[TensorType],
    dtype_name: &dyn Fn(DType) -> &'static str,
) -> String {
    let mut h = String::new();
    // The sizes, named as the IR names them.
    let text = tfn_ir::text::print_graph_without_origins(graph);
    let syms: Vec<&str> =
        text.lines().filter(|l| l.trim_start().starts_with("sym ")).map(str::trim).collect();
    h.push_str(&format!("/* {}(", meta.name));
    let ps: Vec<String> = meta
        .params
        .iter()
        .zip(&graph.params)
        .map(|((name, dims), p)| {
            let dims: Vec<String> =
                dims.iter().map(|d| d.map_or("?".into(), |n| n.to_string())).collect();
            format!("{name}: {}[{}]", p.ty.dtype, dims.join(", "))
        })
        .collect();
    h.push_str(&ps.join(", "));
    h.push_str(")\n");
    for (i, ((name, _), p)) in meta.params.iter().zip(&graph.params).enumerate() {
        h.push_str(&format!(
            "   inputs[{i}]: `{name}`, dtype {}, rank {}, type {}\n",
            dtype_name(p.ty.dtype),
            p.ty.shape.rank(),
            p.ty
        ));
    }
    for (i, ty) in results.iter().enumerate() {
        h.push_str(&format!(
            "   outputs[{i}]: dtype {}, rank {}, type {}\n",
            dtype_name(ty.dtype),
            ty.shape.rank(),
            ty
        ));
    }
    if !syms.is_empty() {
        h.push_str("   where (param P axis A) is inputs[P].sizes[A]:\n");
        for s in &syms {
            h.push_str(&format!("     {s}\n"));
        }
    }
    h
}

/// The C header of a self-contained (aarch64) module: the types, the error getter, and per
/// function its entry point with output sizes computed in C (every size of such a function is
/// an input's size) and an allocating variant. Nothing of the runtime library.
pub(crate) fn standalone_header(
    prefix: &str,
    file: &Path,
    functions: &[(FunctionMeta, Built)],
) -> String {
    let guard = include_guard(prefix);
    let mut h = format!(
        "/* Generated by `tfnc build --target {}` from {} (tfn {}): module `{prefix}`.\n   \
         A self-contained object: link {prefix}.o alone (it calls libc's malloc, free and\n   \
         memcpy). Every call runs on the calling thread; inputs and outputs must be contiguous\n   \
         (row-major strides, as tfn_buffer_row_major sets them). See docs/aot.md,\n   \
         \"Cross-compiling\". */\n#ifndef {guard}\n#define {guard}\n\n#include <stdlib.h>\n",
        tfn_backend::aot::AARCH64,
        in_comment(&file.display().to_string()),
        env!("CARGO_PKG_VERSION")
    );
    h.push_str(tfn_backend::aot::c_abi::C_TYPES);
    h.push_str("\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
    h.push_str(&format!(
        "/* The message of the last failed call of this module's functions, on any thread (a\n   \
         static string, never freed; calls that fail at the same time on several threads\n   \
         leave one of their messages). */\n\
         const char *{prefix}_error_message(void);\n\n"
    ));
    let dtype_name = |d: DType| {
        tfn_backend::aot::c_abi::TFN_DTYPES.iter().find(|(_, t)| *t == d).map_or("?", |(n, _)| *n)
    };
    for (meta, built) in functions {
        let graph = built.signature();
        let results = built.results();
        let (n_in, n_out, f) = (graph.params.len(), results.len(), &meta.name);
        h.push_str(&describe(meta, graph, &results, &dtype_name));
        h.push_str(&format!(
            "   The caller allocates the outputs: {prefix}_{f}_output_shape gives each one's\n   \
             dtype, rank, sizes and row-major strides for given inputs. Returns TFN_OK or an\n   \
             error code (message: {prefix}_error_message()). */\n\
             int {prefix}_{f}(const tfn_buffer inputs[{n_in}], tfn_buffer outputs[{n_out}]);\n\n\
             static inline int {prefix}_{f}_output_shape(const tfn_buffer inputs[{n_in}], \
             int64_t output, tfn_buffer *out) {{\n    \
             if (out == NULL || ({n_in} > 0 && inputs == NULL)) return TFN_ERR_ARGUMENT;\n"
        ));
        for (p, param) in graph.params.iter().enumerate() {
            h.push_str(&format!(
                "    if (inputs[{p}].rank != {}) return TFN_ERR_ARGUMENT;\n",
                param.ty.shape.rank()
            ));
        }
        h.push_str("    switch (output) {\n");
        for (o, ty) in results.iter().enumerate() {
            h.push_str(&format!(
                "    case {o}:\n        out->dtype = {};\n        out->rank = {};\n",
                dtype_name(ty.dtype),
                ty.shape.rank()
            ));
            for (a, d) in ty.shape.dims().iter().enumerate() {
                let size = match *d {
                    tfn_ir::Dim::Const(c) => c.to_string(),
                    tfn_ir::Dim::Sym(s) => match graph.syms.get(s.0 as usize) {
                        Some(tfn_ir::SymDef::Input { sources }) => sources
                            .first()
                            .map_or("-1".into(), |(p, a)| format!("inputs[{p}].sizes[{a}]")),
                        _ => "-1".into(),
                    },
                };
                h.push_str(&format!("        out->sizes[{a}] = {size};\n"));
            }
            h.push_str("        tfn_buffer_row_major(out);\n        return TFN_OK;\n");
        }
        h.push_str(&format!(
            "    default:\n        return TFN_ERR_ARGUMENT;\n    }}\n}}\n\n\
             /* {prefix}_{f}, allocating every output with malloc (free outputs[k].data); on an\n   \
             error no output is left allocated. Its own checks (null pointers and ranks:\n   \
             TFN_ERR_ARGUMENT; sizes past 64 bits, malloc failing: TFN_ERR_RUN) return before\n   \
             the call and leave {prefix}_error_message() as it was. */\n\
             static inline int {prefix}_{f}_alloc(const tfn_buffer inputs[{n_in}], \
             tfn_buffer outputs[{n_out}]) {{\n    \
             int64_t k, a, n;\n    int status = TFN_OK;\n    \
             static const int64_t bytes[{n}] = {{{sizes}}};\n    \
             if ({n_out} > 0 && outputs == NULL) return TFN_ERR_ARGUMENT;\n    \
             for (k = 0; k < {n_out}; k++) outputs[k].data = NULL;\n    \
             for (k = 0; k < {n_out} && status == TFN_OK; k++) {{\n        \
             status = {prefix}_{f}_output_shape(inputs, k, &outputs[k]);\n        \
             for (a = 0, n = bytes[k]; status == TFN_OK && a < outputs[k].rank; a++) {{\n            \
             if (outputs[k].sizes[a] < 0) status = TFN_ERR_ARGUMENT;\n            \
             else if (outputs[k].sizes[a] > 0 && n > INT64_MAX / outputs[k].sizes[a]) \
             status = TFN_ERR_RUN;\n            \
             else n *= outputs[k].sizes[a];\n        }}\n        \
             if (status == TFN_OK && !(outputs[k].data = malloc(n > 0 ? (size_t)n : 1)))\n            \
             status = TFN_ERR_RUN;\n    }}\n    \
             if (status == TFN_OK) status = {prefix}_{f}(inputs, outputs);\n    \
             if (status != TFN_OK)\n        \
             for (k = 0; k < {n_out}; k++) {{ free(outputs[k].data); outputs[k].data = NULL; }}\n    \
             return status;\n}}\n\n",
            n = n_out.max(1),
            sizes = if results.is_empty() {
                "0".to_string()
            } else {
                results
                    .iter()
                    .map(|t| t.dtype.size_bytes().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        ));
    }
    h.push_str("#ifdef __cplusplus\n}\n#endif\n#endif\n");
    h
}
