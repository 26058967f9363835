//! The middle of the pipeline as the session and `tfnc ir` run it: egg optimisation, then
//! fusion into kernels.

use std::fmt;
use tfn_ir::{Graph, Library};
use tfn_passes::optimize::{self, Limits, Report, RuleSet};

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

/// Optimises `graph` with the built-in rules and the library's checked `rewrite` rules.
pub fn optimize(library: &Library, graph: &Graph) -> Result<(Graph, Explain), PipelineError> {
    let rules = RuleSet::with_user(library)
        .map_err(|diags| PipelineError(tfn_ir::diagnostic::render_all(&diags, &library.sources)))?;
    optimize_with(&rules, graph)
}

/// Optimises `graph` with a prepared rule set.
pub fn optimize_with(rules: &RuleSet, graph: &Graph) -> Result<(Graph, Explain), PipelineError> {
    let out = optimize::optimize(graph, rules, &Limits::default())
        .map_err(|e| PipelineError(e.to_string()))?;
    Ok((out.graph, Explain(out.report)))
}

/// The kernels fusion forms for `graph`, as text.
pub fn print_fused(graph: &Graph) -> String {
    let fused = tfn_passes::fusion::fuse(graph);
    tfn_passes::fusion::print_fused(&fused, graph)
}

/// What running `graph` as fused kernels costs in memory traffic, for inputs of the given
/// shapes: the number of kernels and the bytes they move (each kernel reads each of its inputs
/// once and writes each of its outputs once; views move nothing).
pub fn traffic(graph: &Graph, input_shapes: &[Vec<usize>]) -> Option<(usize, u64)> {
    let shapes: Vec<&[usize]> = input_shapes.iter().map(Vec::as_slice).collect();
    let sizes = tfn_ir::bind::bind_sizes(graph, &shapes).ok()?;
    let bytes_of = |v: tfn_ir::ValueId| -> u64 {
        let ty = graph.ty(v);
        let n: usize = tfn_ir::bind::concrete_shape(&ty.shape, &sizes).iter().product();
        (n * ty.dtype.size_bytes()) as u64
    };
    let fused = tfn_passes::fusion::fuse(graph);
    let moving = fused.kernels.iter().filter(|k| k.kind != tfn_passes::fusion::KernelKind::View);
    let (mut kernels, mut bytes) = (0, 0);
    for k in moving {
        kernels += 1;
        bytes += k.inputs.iter().chain(&k.outputs).map(|&v| bytes_of(v)).sum::<u64>();
    }
    Some((kernels, bytes))
}
