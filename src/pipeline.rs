//! The middle of the pipeline for `tfnc ir` and the file tests, through the same
//! [`tfn_passes::pipeline::plan`] the session uses: egg optimisation, then fusion into kernels.

use std::fmt;
use tfn_ir::{Graph, Library};
use tfn_passes::optimize::{Report, RuleSet};
use tfn_passes::pipeline::{PipelineOptions, Planned};

/// Why the optimiser could not run (always a bug in tfn, never in the user's program: user
/// rules are checked when they are loaded).
#[derive(Debug, thiserror::Error)]
#[error("optimiser failed: {0}")]
pub struct PipelineError(pub String);

/// The report of an optimisation, printed by `tfnc ir --explain`.
pub struct Explain(pub Report);

impl fmt::Display for Explain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.0;
        writeln!(
            f,
            "// egg: {} iterations, {} e-nodes, {} e-classes, stopped: {}, {:.3} ms",
            r.iterations,
            r.egraph_nodes,
            r.egraph_classes,
            r.stop_reason,
            r.time.as_secs_f64() * 1e3
        )?;
        if r.rules_fired.is_empty() {
            write!(f, "// rules fired: none")
        } else {
            let fired: Vec<String> =
                r.rules_fired.iter().map(|(n, c)| format!("{n} ×{c}")).collect();
            write!(f, "// rules fired: {}", fired.join(", "))
        }
    }
}

/// Runs the pass pipeline ([`tfn_passes::pipeline::plan`]) on `graph` with the built-in rules
/// and the library's checked `rewrite` rules, as a session would (strict when `TFN_STRICT`
/// says so).
pub fn plan(library: &Library, graph: &Graph, optimize: bool) -> Result<Planned, PipelineError> {
    let rules = RuleSet::with_user(library)
        .map_err(|diags| PipelineError(tfn_ir::diagnostic::render_all(&diags, &library.sources)))?;
    let options = PipelineOptions {
        optimize,
        strict: crate::session::strict_from_env(),
        ..PipelineOptions::default()
    };
    tfn_passes::pipeline::plan(graph.clone(), &rules, &options)
        .map_err(|e| PipelineError(e.to_string()))
}

/// Optimises `graph` (strictly: an optimiser failure is an error here).
pub fn optimize(library: &Library, graph: &Graph) -> Result<(Graph, Explain), PipelineError> {
    let planned = plan(library, graph, true)?;
    match (planned.optimizer_fallback, planned.report) {
        (None, Some(report)) => Ok((planned.graph, Explain(report))),
        (Some(why), _) => Err(PipelineError(why)),
        (None, None) => Err(PipelineError("the optimiser did not run".into())),
    }
}

/// The fused kernels of a planned graph as text, with every fallback the compile would take
/// (optimiser failure, kernels the code generator rejects) and the kernels that run a
/// reference kernel by design. Compiles the kernels to find out (not run).
pub fn print_fused(planned: &Planned) -> String {
    let mut text = tfn_passes::fusion::print_fused(&planned.fused, &planned.graph);
    if let Some(why) = &planned.optimizer_fallback {
        text.push_str(&format!(
            "\n// FALLBACK: the optimiser failed; the unoptimised graph runs: {why}\n"
        ));
    }
    let compiler = tfn_backend::JitCompiler::new(tfn_backend::CompileOptions::default());
    match compiler.and_then(|c| c.compile_fused(&planned.graph, planned.fused.clone())) {
        Ok(compiled) => {
            for (i, why) in compiled.reference_kernels() {
                text.push_str(&format!("\n// kernel {i} runs in the interpreter by design: {why}"));
            }
            for (i, why) in compiled.interpreted_kernels() {
                text.push_str(&format!(
                    "\n// FALLBACK: kernel {i} was rejected by the code generator and runs in the \
                     interpreter: {why}"
                ));
            }
        }
        Err(e) => text.push_str(&format!("\n// code generation failed: {e}")),
    }
    text
}

/// What running a planned graph's kernels costs in memory traffic, for inputs of the given
/// shapes: the number of kernels and the bytes they move (each kernel reads each of its inputs
/// once and writes each of its outputs once; views move nothing).
pub fn traffic(planned: &Planned, input_shapes: &[Vec<usize>]) -> Option<(usize, u64)> {
    let graph = &planned.graph;
    let shapes: Vec<&[usize]> = input_shapes.iter().map(Vec::as_slice).collect();
    // (Nothing is allocated: no size limit.)
    let none = tfn_ir::bind::Allocated::Only(&[]);
    let sizes = tfn_ir::bind::bind_sizes_allocating(graph, &shapes, none).ok()?;
    let bytes_of = |v: tfn_ir::ValueId| -> u64 {
        let ty = graph.ty(v);
        let n: usize = tfn_ir::bind::concrete_shape(&ty.shape, &sizes).iter().product();
        (n * ty.dtype.size_bytes()) as u64
    };
    let moving =
        planned.fused.kernels.iter().filter(|k| k.kind != tfn_passes::fusion::KernelKind::View);
    let (mut kernels, mut bytes) = (0, 0);
    for k in moving {
        kernels += 1;
        bytes += k.inputs.iter().chain(&k.outputs).map(|&v| bytes_of(v)).sum::<u64>();
    }
    Some((kernels, bytes))
}

/// The fused graph of a planned function as Graphviz DOT (`tfnc graph`): with the shapes of
/// the call's tensor inputs, types show concrete sizes; otherwise (or when they do not bind)
/// the symbolic ones (`f32[s0]`).
pub fn graph_dot(planned: &Planned, input_shapes: Option<&[Vec<usize>]>) -> String {
    let graph = &planned.graph;
    let sizes = input_shapes.and_then(|shapes| {
        let shapes: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
        let none = tfn_ir::bind::Allocated::Only(&[]);
        tfn_ir::bind::bind_sizes_allocating(graph, &shapes, none).ok()
    });
    let shape_text = |shape: &tfn_ir::Shape| -> String {
        match sizes.as_deref().and_then(|s| tfn_ir::bind::try_concrete_shape(shape, s)) {
            Some(dims) => {
                let dims: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
                format!("[{}]", dims.join(", "))
            }
            None => shape.to_string(),
        }
    };
    tfn_passes::fusion::print_dot(&planned.fused, graph, &shape_text)
}
