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
pub fn traffic(planned: &Planned, input_shapes: &[Vec<usize>]) -> Option<(usize, u128)> {
    let graph = &planned.graph;
    let shapes: Vec<&[usize]> = input_shapes.iter().map(Vec::as_slice).collect();
    // (Nothing is allocated: no size limit.)
    let none = tfn_ir::bind::Allocated::Only(&[]);
    let sizes = tfn_ir::bind::bind_sizes_allocating(graph, &shapes, none).ok()?;
    // In u128: shapes given to `tfnc ir` need not fit in memory (`f32[2^63-1, 2]`).
    let bytes_of = |v: tfn_ir::ValueId| -> u128 {
        let ty = graph.ty(v);
        let dims = tfn_ir::bind::concrete_shape(&ty.shape, &sizes);
        dims.iter().map(|&d| d as u128).fold(ty.dtype.size_bytes() as u128, u128::saturating_mul)
    };
    let moving =
        planned.fused.kernels.iter().filter(|k| k.kind != tfn_passes::fusion::KernelKind::View);
    let (mut kernels, mut bytes) = (0, 0);
    for k in moving {
        kernels += 1;
        let moved = k.inputs.iter().chain(&k.outputs).map(|&v| bytes_of(v));
        bytes = moved.fold(bytes, u128::saturating_add);
    }
    Some((kernels, bytes))
}

/// The fused graph of a planned function as Graphviz DOT (`tfnc graph`): with the shapes of
/// the call's tensor inputs, types show concrete sizes; otherwise (or when they do not bind)
/// the symbolic ones (`f32[s0]`).
pub fn graph_dot(planned: &Planned, input_shapes: Option<&[Vec<usize>]>) -> String {
    let shape_text = shape_printer(&planned.graph, input_shapes);
    tfn_passes::fusion::print_dot(&planned.fused, &planned.graph, &shape_text)
}

/// Prints the shapes of `graph`'s values: concrete when `input_shapes` bind its sizes,
/// otherwise symbolic (`f32[s0]`).
pub fn shape_printer(
    graph: &Graph,
    input_shapes: Option<&[Vec<usize>]>,
) -> impl Fn(&tfn_ir::Shape) -> String {
    let sizes = input_shapes.and_then(|shapes| {
        let shapes: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
        let none = tfn_ir::bind::Allocated::Only(&[]);
        tfn_ir::bind::bind_sizes_allocating(graph, &shapes, none).ok()
    });
    move |shape: &tfn_ir::Shape| -> String {
        match sizes.as_deref().and_then(|s| tfn_ir::bind::try_concrete_shape(shape, s)) {
            Some(dims) => {
                let dims: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
                format!("[{}]", dims.join(", "))
            }
            None => shape.to_string(),
        }
    }
}

/// The picture of a function with loops (`tfnc graph`): each stage's fused kernels, each loop
/// as a box (a cluster) holding its header and its body's stages, compiled once; edges follow
/// the values from step to step. `shape_text` prints the outer program's shapes (concrete
/// when the call's shapes are known); a body's are symbolic.
pub fn program_dot(
    library: &Library,
    program: &tfn_ir::program::Program,
    optimize: bool,
    shape_text: &dyn Fn(&tfn_ir::Shape) -> String,
) -> Result<String, PipelineError> {
    use std::fmt::Write;
    use tfn_passes::fusion::{quoted, result_node, DOT_STYLE};
    let name = &program.signature.name;
    let mut nodes = String::new();
    let mut edges = String::new();
    let mut kernels = 0;
    let mut drawer = ProgramDot {
        library,
        optimize,
        nodes: &mut nodes,
        edges: &mut edges,
        kernels: &mut kernels,
    };
    let outputs = drawer.program(program, "", shape_text)?;
    for (i, (v, (from, ty))) in program.outputs.iter().zip(&outputs).enumerate() {
        let _ = writeln!(nodes, "{}", result_node(&format!("r{i}"), &format!("result {i}"), ty));
        let _ = writeln!(edges, "  {from} -> r{i} [label={}];", quoted(&format!("{v} {ty}")));
    }
    Ok(format!(
        "// the fused program of `{}`: {kernels} kernel(s) in its stages and loop bodies\ndigraph {} {{\n  compound=true;\n{DOT_STYLE}{nodes}{edges}}}\n",
        name.replace(['\n', '\r'], " "),
        quoted(name)
    ))
}

/// Draws the steps of a program (and, recursively, its loops' bodies) into one picture.
struct ProgramDot<'a> {
    library: &'a Library,
    optimize: bool,
    nodes: &'a mut String,
    edges: &'a mut String,
    kernels: &'a mut usize,
}

impl ProgramDot<'_> {
    /// Draws `program` with node ids starting with `prefix`; returns the node computing each
    /// of its outputs, and the output's type. Its parameters are drawn as nodes `{prefix}p{i}`.
    fn program(
        &mut self,
        program: &tfn_ir::program::Program,
        prefix: &str,
        shape_text: &dyn Fn(&tfn_ir::Shape) -> String,
    ) -> Result<Vec<(String, String)>, PipelineError> {
        use std::collections::HashMap;
        use std::fmt::Write;
        use tfn_ir::program::Step;
        use tfn_passes::fusion::{html, param_node, quoted, DotPart};
        let sig = &program.signature;
        // The node computing each value of the program's table, and the value's type.
        let mut node_of: HashMap<tfn_ir::ValueId, (String, String)> = HashMap::new();
        for (j, (&v, p)) in program.param_values.iter().zip(&sig.params).enumerate() {
            let ty = format!("{}{}", p.ty.dtype, shape_text(&p.ty.shape));
            let _ = writeln!(self.nodes, "{}", param_node(&format!("{prefix}p{j}"), &p.name, &ty));
            node_of.insert(v, (format!("{prefix}p{j}"), ty));
        }
        let of = |node_of: &HashMap<tfn_ir::ValueId, (String, String)>, v: tfn_ir::ValueId| {
            node_of
                .get(&v)
                .cloned()
                .unwrap_or_else(|| (format!("{prefix}v{}", v.index()), String::new()))
        };
        for (s, step) in program.steps.iter().enumerate() {
            match step {
                Step::Graph { graph, reads, writes, .. } => {
                    let planned = plan(self.library, graph, self.optimize)?;
                    *self.kernels += planned.fused.kernels.len();
                    let sources: Vec<String> = program
                        .param_values
                        .iter()
                        .chain(reads)
                        .map(|&v| of(&node_of, v).0)
                        .collect();
                    let inner = format!("{prefix}s{s}_");
                    let _ = writeln!(
                        self.nodes,
                        "  subgraph cluster_{inner} {{\n  label=\"stage\"; style=dotted;"
                    );
                    let part = DotPart {
                        fused: &planned.fused,
                        graph: &planned.graph,
                        shape_text,
                        prefix: &inner,
                        param_source: &|p| sources.get(p).cloned(),
                    };
                    let outputs = part.write(self.nodes, self.edges);
                    self.nodes.push_str("  }\n");
                    let g = &planned.graph;
                    for ((&w, node), &v) in writes.iter().zip(outputs).zip(&g.outputs) {
                        let ty = format!("{}{}", g.ty(v).dtype, shape_text(&g.ty(v).shape));
                        node_of.insert(w, (node, ty));
                    }
                }
                Step::Loop { spec, body } => {
                    let kind = &spec.kind;
                    let inner = format!("{prefix}l{s}_");
                    let head = format!("{inner}head");
                    let _ = writeln!(
                        self.nodes,
                        "  subgraph cluster_{inner} {{\n  label=<{}>; style=rounded; bgcolor=\"#fafafa\";",
                        html(&format!("loop `{}` ({kind}): its body, compiled once", spec.label))
                    );
                    let _ = writeln!(
                        self.nodes,
                        "  {head} [shape=box, style=filled, fillcolor=\"#fef3c7\", label=<<b>{}</b><br/>{}>];",
                        html(&spec.label),
                        html(&format!("carries {}", spec.carried_names.join(", ")))
                    );
                    let body_shapes = |s: &tfn_ir::Shape| s.to_string();
                    let outputs = self.program(body, &inner, &body_shapes)?;
                    self.nodes.push_str("  }\n");
                    let groups = [
                        ("", &spec.carried),
                        ("invariant ", &spec.invariants),
                        ("rows of ", &spec.sliced),
                    ];
                    for (what, values) in groups {
                        for &v in values {
                            let (from, ty) = of(&node_of, v);
                            let label = quoted(&format!("{what}{v} {ty}"));
                            let _ = writeln!(self.edges, "  {from} -> {head} [label={label}];");
                        }
                    }
                    for (j, _) in body.param_values.iter().enumerate() {
                        let _ = writeln!(self.edges, "  {head} -> {inner}p{j} [style=dashed];");
                    }
                    for (from, _) in outputs {
                        let _ = writeln!(
                            self.edges,
                            "  {from} -> {head} [style=dashed, label=\"next trip\"];"
                        );
                    }
                    for (&r, &c) in spec.results.iter().zip(&spec.carried) {
                        let ty = of(&node_of, c).1;
                        node_of.insert(r, (head.clone(), ty));
                    }
                }
            }
        }
        Ok(program.outputs.iter().map(|&v| of(&node_of, v)).collect())
    }
}
