//! Loops in the IR: what lowering records for a `for` or `while`, and how a function with loops
//! is cut into straight-line graphs and loop steps that run in order.
//!
//! Lowering emits one [`Graph`] per function as always, and for every loop a [`LoopSpec`]: the
//! body lowered **once** into a graph of its own (parameters: the trip index for a `for`, then
//! the carried values, the loop-invariant captures, and one slice per stacked input `w[i]`),
//! the outer values that feed it, and, as extra parameters of the outer graph after its real
//! ones, the values the loop leaves behind (its carried values after the last trip). The outer
//! graph therefore reads a loop's results as inputs it cannot compute itself;
//! [`split`] turns it into a [`Program`]: straight-line stage graphs (each an ordinary graph
//! the optimiser, fusion and the code generator handle unchanged) and loop steps between them,
//! over one table of values numbered like the outer graph's.
//!
//! Every stage graph has the function's real parameters first, with the outer graph's symbol
//! table, so each size means the same in every stage and is bound from the call's arguments;
//! values a stage takes from an earlier step are parameters after them.

mod dead_carries;
pub mod run;
pub mod text;
pub mod vjp;

use crate::graph::{Graph, GraphParam, Node, Origin, ValueId};
use crate::lower::CallRegion;
use crate::op::Op;
use crate::shape::Dim;
use crate::span::Span;
use std::collections::HashMap;

/// Most trips a `for` may run: about 10^12, beyond any loop that finishes (a `while`'s
/// `at most` has the same bound). A constant range beyond it is `E0511` when lowered, a
/// range of sizes when it runs.
pub const MAX_FOR_TRIPS: u64 = 1 << 40;

/// A loop's trip rule.
#[derive(Clone, Debug, PartialEq)]
pub enum LoopKind {
    /// `for i in start..end`: `end - start` trips (none if negative), the body's parameter 0
    /// is the trip's `i` (an `i64[]`). The bounds are sizes of the outer graph.
    For { start: Dim, end: Dim, checkpoint: bool },
    /// `while cond, at most max_trips`: `cond` (an outer `bool[]`) decides the first trip, the
    /// body's last output each next one; a trip past `max_trips` is an error.
    While { cond: ValueId, max_trips: u64 },
}

/// `for 0..s1`, `for 0..3, checkpoint`, `while %7, at most 50` (`tfnc ir` and `tfnc graph`).
impl std::fmt::Display for LoopKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoopKind::For { start, end, checkpoint } => {
                write!(f, "for {start}..{end}{}", if *checkpoint { ", checkpoint" } else { "" })
            }
            LoopKind::While { cond, max_trips } => write!(f, "while {cond}, at most {max_trips}"),
        }
    }
}

/// A lowered loop (see the module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct LoopSpec {
    /// How errors name the loop: `for l in 0..size(w, 0)` at its source.
    pub label: String,
    pub span: Option<Span>,
    /// Where the loop is written (`nn.tfn:12:5`), for run-time errors.
    pub at: Option<String>,
    pub kind: LoopKind,
    /// The body, lowered once. Outputs: the carried values after the trip (and, for a
    /// `while`, the condition for the next trip).
    pub body: Box<LoopBody>,
    /// The carried values' names (the `var`s the body assigns) and their values before the
    /// first trip, in the body's parameter order.
    pub carried_names: Vec<String>,
    pub carried: Vec<ValueId>,
    /// Outer values the body reads unchanged on every trip.
    pub invariants: Vec<ValueId>,
    /// Outer values indexed by the trip's `i` along their first axis (`w[i]`): the body reads
    /// a view of row `i`, never a copy.
    pub sliced: Vec<ValueId>,
    /// The outer graph's parameters that receive the carried values after the last trip.
    pub results: Vec<ValueId>,
}

/// A function body or loop body as lowering leaves it: a graph whose parameters are its real
/// inputs followed by the results of its loops.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopBody {
    pub graph: Graph,
    /// How many leading parameters are real inputs.
    pub inputs: usize,
    pub regions: Vec<CallRegion>,
    pub loops: Vec<LoopSpec>,
}

impl LoopSpec {
    /// The body's parameter index of the first carried value (after the trip index).
    pub fn first_carried(&self) -> usize {
        usize::from(matches!(self.kind, LoopKind::For { .. }))
    }
}

/// A function cut at its loops: steps run in order over one value table (numbered like the
/// outer graph's values).
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// The outer graph's parameters 0..inputs (the call's tensors) and symbol table: binding
    /// it with the call's shapes gives the value of every size the steps use.
    pub signature: Graph,
    /// The value (node) of each real parameter, in parameter order.
    pub param_values: Vec<ValueId>,
    pub steps: Vec<Step>,
    /// The function's results, as values of the table.
    pub outputs: Vec<ValueId>,
    /// Size of the value table.
    pub values: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// A straight-line graph: parameters `0..inputs` are the call's tensors, the next ones
    /// `reads`; its outputs are `writes`.
    Graph { graph: Graph, regions: Vec<CallRegion>, reads: Vec<ValueId>, writes: Vec<ValueId> },
    /// A loop; its body is a program of its own (over the body's parameters).
    Loop { spec: LoopSpec, body: Box<Program> },
}

/// Why a function with loops could not be cut into steps (a bug in lowering).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("internal error: cannot schedule the loops of `{function}`: {reason}")]
pub struct SplitError {
    pub function: String,
    pub reason: String,
}

/// Cuts a lowered body with loops into a [`Program`] (recursively for the loops' bodies),
/// without the updates of carried values no result reads ([`dead_carries`]).
pub fn split(body: &LoopBody) -> Result<Program, SplitError> {
    split_pruned(&dead_carries::prune(body.clone(), &[]))
}

fn split_pruned(body: &LoopBody) -> Result<Program, SplitError> {
    let graph = &body.graph;
    let err = |reason: String| SplitError { function: graph.name.clone(), reason };
    let n = graph.nodes.len();
    // Which step computes each value: stage k runs before loop k.
    let mut result_of: HashMap<ValueId, usize> = HashMap::new();
    for (j, l) in body.loops.iter().enumerate() {
        for r in &l.results {
            result_of.insert(*r, j);
        }
    }
    let mut stage = vec![0usize; n];
    for (i, node) in graph.nodes.iter().enumerate() {
        let v = ValueId(i as u32);
        stage[i] = match (&node.op, result_of.get(&v)) {
            (Op::Param(_), Some(&j)) => j + 1,
            _ => node.inputs.iter().map(|x| stage[x.index()]).max().unwrap_or(0),
        };
    }
    for (j, l) in body.loops.iter().enumerate() {
        let feeds = loop_inputs(l);
        if let Some(late) = feeds.iter().find(|v| stage[v.index()] > j) {
            return Err(err(format!("loop {j} reads {late}, computed after it")));
        }
    }
    // Values some later step (or the function's result) reads.
    let mut needed = vec![false; n];
    let mut read_later: Vec<bool> = vec![false; n];
    for o in &graph.outputs {
        needed[o.index()] = true;
        read_later[o.index()] = true;
    }
    for l in &body.loops {
        for v in loop_inputs(l) {
            needed[v.index()] = true;
            read_later[v.index()] = true;
        }
    }
    for i in (0..n).rev() {
        if needed[i] {
            for x in &graph.nodes[i].inputs {
                needed[x.index()] = true;
                if stage[x.index()] != stage[i] {
                    read_later[x.index()] = true;
                }
            }
        }
    }
    let is_input =
        |v: usize| matches!(graph.nodes[v].op, Op::Param(p) if (p as usize) < body.inputs);
    // A loop's result is read by the stages after it, never computed by one.
    let is_result = |v: usize| result_of.contains_key(&ValueId(v as u32));
    let mut steps = Vec::new();
    for k in 0..=body.loops.len() {
        let members: Vec<usize> = (0..n)
            .filter(|&i| needed[i] && stage[i] == k && !is_input(i) && !is_result(i))
            .collect();
        let mut g = Graph {
            name: format!("{}.stage{k}", graph.name),
            params: graph.params[..body.inputs].to_vec(),
            nodes: Vec::new(),
            outputs: Vec::new(),
            syms: graph.syms.clone(),
            checks: graph.checks.clone(),
        };
        let mut map: HashMap<ValueId, ValueId> = HashMap::new();
        for (i, node) in graph.nodes.iter().enumerate() {
            if is_input(i) {
                let id = g.push(node.op.clone(), Vec::new(), node.ty.clone(), node.origin.clone());
                map.insert(ValueId(i as u32), id);
            }
        }
        let mut reads = Vec::new();
        let mut writes = Vec::new();
        for &i in &members {
            let node = &graph.nodes[i];
            let mut inputs = Vec::with_capacity(node.inputs.len());
            for x in &node.inputs {
                let id = match map.get(x) {
                    Some(id) => *id,
                    None => {
                        // Computed by an earlier step: a parameter of this stage.
                        let p = g.params.len() as u32;
                        let ty = graph.ty(*x).clone();
                        g.params.push(GraphParam { name: format!("v{}", x.0), ty: ty.clone() });
                        let origin = Origin::default();
                        let id = g.push(Op::Param(p), Vec::new(), ty, origin);
                        map.insert(*x, id);
                        reads.push(*x);
                        id
                    }
                };
                inputs.push(id);
            }
            let Node { op, ty, origin, .. } = node;
            let id = g.push(op.clone(), inputs, ty.clone(), origin.clone());
            map.insert(ValueId(i as u32), id);
            if read_later[i] {
                g.outputs.push(id);
                writes.push(ValueId(i as u32));
            }
        }
        // Regions wholly inside this stage keep their custom gradients.
        let regions = body.regions.iter().filter_map(|r| remap_region(r, &map, &members)).collect();
        if !members.is_empty() {
            steps.push(Step::Graph { graph: g, regions, reads, writes });
        }
        if let Some(spec) = body.loops.get(k) {
            let inner = split_pruned(&spec.body)?;
            steps.push(Step::Loop { spec: spec.clone(), body: Box::new(inner) });
        }
    }
    let signature = Graph {
        name: graph.name.clone(),
        params: graph.params[..body.inputs].to_vec(),
        nodes: Vec::new(),
        outputs: Vec::new(),
        syms: graph.syms.clone(),
        checks: graph.checks.clone(),
    };
    let mut param_values = vec![None; body.inputs];
    for (i, node) in graph.nodes.iter().enumerate() {
        if let Op::Param(p) = node.op {
            if let Some(slot @ None) = param_values.get_mut(p as usize) {
                *slot = Some(ValueId(i as u32));
            }
        }
    }
    let param_values = param_values
        .into_iter()
        .enumerate()
        .map(|(p, v)| v.ok_or_else(|| err(format!("parameter {p} has no node"))))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Program { signature, param_values, steps, outputs: graph.outputs.clone(), values: n })
}

/// The sizes the loops of one graph keep (their bounds), for renumbering with the graph's
/// symbols.
pub fn bounds_mut(loops: &mut [LoopSpec]) -> Vec<&mut Dim> {
    let mut out = Vec::new();
    for l in loops {
        if let LoopKind::For { start, end, .. } = &mut l.kind {
            out.push(start);
            out.push(end);
        }
    }
    out
}

/// The outer values a loop reads.
pub fn loop_inputs(l: &LoopSpec) -> Vec<ValueId> {
    let mut v: Vec<ValueId> =
        l.carried.iter().chain(&l.invariants).chain(&l.sliced).copied().collect();
    if let LoopKind::While { cond, .. } = l.kind {
        v.push(cond);
    }
    v
}

fn remap_region(
    r: &CallRegion,
    map: &HashMap<ValueId, ValueId>,
    members: &[usize],
) -> Option<CallRegion> {
    let (lo, hi) = (r.nodes.0 as usize, r.nodes.1 as usize);
    // Every node of the region must be in this stage, in one contiguous run.
    let first = members.iter().position(|&m| m == lo)?;
    let count = hi - lo;
    if members.get(first..first + count)? != (lo..hi).collect::<Vec<_>>().as_slice() {
        return None;
    }
    let m = |v: &ValueId| map.get(v).copied();
    let inputs = r
        .inputs
        .iter()
        .map(|(name, a)| {
            Some((
                name.clone(),
                match a {
                    crate::lower::RegionArg::One(v) => crate::lower::RegionArg::One(m(v)?),
                    crate::lower::RegionArg::List(vs) => {
                        crate::lower::RegionArg::List(vs.iter().map(m).collect::<Option<Vec<_>>>()?)
                    }
                },
            ))
        })
        .collect::<Option<Vec<_>>>()?;
    let outputs = r.outputs.iter().map(m).collect::<Option<Vec<_>>>()?;
    let start = m(&ValueId(lo as u32))?.0;
    let end = m(&ValueId(hi.checked_sub(1)? as u32))?.0 + 1;
    if (end - start) as usize != count {
        return None;
    }
    Some(CallRegion {
        function: r.function.clone(),
        overload: r.overload.clone(),
        inputs,
        attrs: r.attrs.clone(),
        outputs,
        nodes: (start, start + count as u32),
    })
}
