//! The grouping walk behind [`fuse`]: assigns every node to a group, then orders the groups.

use super::view::{matmul_operand_view, matmul_operand_widening, ViewOp};
use super::{FusedGraph, Kernel, KernelKind};
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use tfn_ir::{Dim, Graph, Op, Shape, ValueId, WindowKind};

/// Partitions `graph` into kernels (see the module documentation for the rules).
pub fn fuse(graph: &Graph) -> FusedGraph {
    let mut walk = Walk {
        graph,
        group_of: vec![None; graph.nodes.len()],
        groups: Vec::new(),
        folded: vec![false; graph.nodes.len()],
    };
    for index in 0..graph.nodes.len() {
        walk.place(index);
    }
    walk.materialise_constants();
    walk.fold_widening_casts();
    walk.fold_views();
    walk.into_fused()
}

/// Per node, the nodes that read it as data ([`data_inputs`]).
fn consumers(graph: &Graph) -> Vec<Vec<usize>> {
    let mut consumers: Vec<Vec<usize>> = vec![Vec::new(); graph.nodes.len()];
    for index in 0..graph.nodes.len() {
        for v in data_inputs(graph, index) {
            consumers[v.index()].push(index);
        }
    }
    consumers
}

/// Data inputs of a node: `Full` and `Iota` only read their input's shape, which the sizes
/// already give; `rand_like` reads its key and the shape of its second operand.
pub(crate) fn data_inputs(graph: &Graph, index: usize) -> &[ValueId] {
    match graph.nodes.get(index) {
        Some(node) => match node.op {
            Op::Full { .. } | Op::Iota { .. } => &[],
            Op::Random { .. } => node.inputs.get(..1).unwrap_or(&[]),
            Op::Param(_)
            | Op::Const(_)
            | Op::Unary(_)
            | Op::Binary(_)
            | Op::Where
            | Op::MulAdd
            | Op::Cast(_)
            | Op::Reduce { .. }
            | Op::ArgMax { .. }
            | Op::ArgMin { .. }
            | Op::Scan { .. }
            | Op::CumprodGrad { .. }
            | Op::MatMul
            | Op::Reshape
            | Op::Transpose { .. }
            | Op::BroadcastTo
            | Op::Concat { .. }
            | Op::Slice { .. }
            | Op::Extern { .. }
            | Op::Index { .. }
            | Op::Window { .. } => &node.inputs,
        },
        None => &[],
    }
}

/// The key of a `rand_like` node, which its kernel reads as a whole (two words loaded once per
/// call, not an element per loop step): it is always an input of the kernel, never computed
/// in it, copied into it as a constant, or read through a view.
pub(crate) fn random_key(graph: &Graph, index: usize) -> Option<ValueId> {
    match graph.nodes.get(index) {
        Some(node) if matches!(node.op, Op::Random { .. }) => node.inputs.first().copied(),
        _ => None,
    }
}

/// `gather` and `index_select`: loop nodes reading their `x` at computed addresses.
pub(crate) fn is_indexed_read(op: &Op) -> bool {
    matches!(op, Op::Index { kind, .. } if kind.is_read())
}

/// The shape with the reduced `axes` set to 1 (what `keepdim` gives).
pub(crate) fn keepdim_shape(domain: &Shape, axes: &[u32]) -> Shape {
    let dims = domain.dims().iter().enumerate();
    Shape(dims.map(|(i, d)| if axes.contains(&(i as u32)) { Dim::Const(1) } else { *d }).collect())
}

/// Whether `shape` is the reduction row `row`, possibly without its leading unit axes (a
/// `keepdim = false` reduction over leading axes: `sum(x, dims=[0])` of `[n, m]` is `[m]`).
/// Both lay out the same elements and broadcast the same way against the domain.
fn is_row_shape(shape: &Shape, row: &Shape) -> bool {
    if shape == row {
        return true;
    }
    let dims = row.dims();
    let lead = dims.iter().take_while(|d| **d == Dim::Const(1)).count();
    lead > 0 && shape.dims() == &dims[lead..]
}

/// The most a kernel may weigh: each node counts one, plus one per constant it reads (a
/// constant is copied into the kernel, where it is a value live across the kernel's loops).
/// Compile time grows with the square of the values live across a loop (regalloc2), so a
/// chain of thousands of elementwise `let`s is split into kernels of this size: a chain of
/// 2000 `y * c + d` took 19 s to compile as one kernel. Real kernels weigh tens.
pub const MAX_KERNEL_WEIGHT: usize = 256;

struct Group {
    kind: KernelKind,
    domain: Shape,
    axes: Vec<u32>,
    nodes: Vec<usize>,
    /// The sum of the nodes' weights (see [`MAX_KERNEL_WEIGHT`]).
    weight: usize,
    alive: bool,
    /// No node may join (single-op kernels, reductions the row scheme cannot express).
    closed: bool,
}

struct Walk<'g> {
    graph: &'g Graph,
    group_of: Vec<Option<usize>>,
    groups: Vec<Group>,
    /// View nodes read in place by their consumers (no group of their own; see `fold_views`).
    folded: Vec<bool>,
}

impl Walk<'_> {
    fn new_group(&mut self, index: usize, kind: KernelKind, axes: Vec<u32>, closed: bool) {
        let domain = match (&self.graph.nodes[index].op, self.graph.nodes[index].inputs.first()) {
            (Op::Reduce { .. }, Some(x)) => self.graph.ty(*x).shape.clone(),
            _ => self.graph.nodes[index].ty.shape.clone(),
        };
        let weight = self.weight(index);
        let nodes = vec![index];
        self.groups.push(Group { kind, domain, axes, nodes, weight, alive: true, closed });
        self.group_of[index] = Some(self.groups.len() - 1);
    }

    fn place(&mut self, index: usize) {
        let node = &self.graph.nodes[index];
        // Every op is listed: a new op must say how it is scheduled.
        match &node.op {
            Op::Param(_) | Op::Const(_) => {}
            Op::Unary(_)
            | Op::Binary(_)
            | Op::Where
            | Op::MulAdd
            | Op::Cast(_)
            | Op::BroadcastTo
            | Op::Full { .. }
            | Op::Iota { .. } => self.place_elementwise(index),
            // An elementwise loop of its own that consumers join; never its key's group.
            Op::Random { .. } => self.new_group(index, KernelKind::Elementwise, Vec::new(), false),
            Op::Reduce { axes, .. } => self.place_reduce(index, axes.clone()),
            Op::MatMul => self.new_group(index, KernelKind::MatMul, Vec::new(), false),
            Op::Reshape => self.new_group(index, KernelKind::View, Vec::new(), true),
            Op::Transpose { .. } | Op::Slice { .. } | Op::Concat { .. } => {
                self.new_group(index, KernelKind::Copy, Vec::new(), true)
            }
            Op::Extern { .. } => self.new_group(index, KernelKind::Extern, Vec::new(), true),
            Op::ArgMax { .. } => self.new_group(index, KernelKind::ArgMax, Vec::new(), true),
            Op::ArgMin { .. } => self.new_group(index, KernelKind::ArgMin, Vec::new(), true),
            Op::Scan { .. } | Op::CumprodGrad { .. } => {
                self.new_group(index, KernelKind::Scan, Vec::new(), true)
            }
            // An indexed read starts a loop of its result's shape that consumers join; it
            // never joins the groups computing its operands (see `indexed_conflict`).
            Op::Index { kind, .. } if kind.is_read() => {
                self.new_group(index, KernelKind::Elementwise, Vec::new(), false)
            }
            Op::Index { .. } => self.new_group(index, KernelKind::Scatter, Vec::new(), true),
            Op::Window { kind, .. } => {
                let epilogue = matches!(kind, WindowKind::Conv | WindowKind::ConvTranspose);
                self.new_group(index, KernelKind::Window, Vec::new(), !epilogue)
            }
        }
    }

    /// Node `index`'s weight (see [`MAX_KERNEL_WEIGHT`]).
    fn weight(&self, index: usize) -> usize {
        let graph = self.graph;
        let consts = data_inputs(graph, index)
            .iter()
            .filter(|v| matches!(graph.nodes[v.index()].op, Op::Const(_)))
            .count();
        1 + consts
    }

    /// Adds node `index` to group `g`.
    fn push(&mut self, g: usize, index: usize) {
        self.groups[g].weight += self.weight(index);
        self.groups[g].nodes.push(index);
        self.group_of[index] = Some(g);
    }

    fn input_groups(&self, index: usize) -> Vec<usize> {
        let mut out = Vec::new();
        for v in data_inputs(self.graph, index) {
            if let Some(g) = self.group_of.get(v.index()).copied().flatten() {
                if !out.contains(&g) {
                    out.push(g);
                }
            }
        }
        out
    }

    fn place_elementwise(&mut self, index: usize) {
        let shape = &self.graph.nodes[index].ty.shape;
        let mut target: Option<usize> = None;
        let mut elementwise = Vec::new();
        for g in self.input_groups(index) {
            let group = &self.groups[g];
            if group.closed {
                continue;
            }
            match group.kind {
                KernelKind::Elementwise if &group.domain == shape => elementwise.push(g),
                KernelKind::Reduction if self.fits_reduction(g, index) => match target {
                    None => target = Some(g),
                    // A reduction over the product's result (softmax over attention scores):
                    // joining the product would be a cycle, joining the reduction saves a pass.
                    Some(t)
                        if matches!(
                            self.groups[t].kind,
                            KernelKind::MatMul | KernelKind::Window
                        ) && self.reaches(t, g) =>
                    {
                        target = Some(g)
                    }
                    Some(t)
                        if self.groups[t].kind == KernelKind::Reduction
                            && self.groups[t].domain == group.domain
                            && self.groups[t].axes == group.axes =>
                    {
                        elementwise.push(g)
                    }
                    Some(_) => {}
                },
                KernelKind::MatMul | KernelKind::Window
                    if &group.domain == shape && target.is_none() =>
                {
                    target = Some(g)
                }
                _ => {}
            }
        }
        if let Some(t) = target {
            let domain = self.groups[t].domain.clone();
            let row = keepdim_shape(&domain, &self.groups[t].axes);
            // Elementwise groups joining a reduction must live on its domain or its rows; those
            // joining a matmul must not feed it (that would be a prologue).
            elementwise.retain(|&g| {
                let d = &self.groups[g].domain;
                match self.groups[t].kind {
                    KernelKind::MatMul | KernelKind::Window => {
                        !self.reaches(g, t) && !self.has_indexed_read(g)
                    }
                    _ => *d == domain || is_row_shape(d, &row),
                }
            });
        }
        let mut candidates: Vec<Vec<usize>> = Vec::new();
        let all: Vec<usize> = target.iter().copied().chain(elementwise.iter().copied()).collect();
        if !all.is_empty() {
            candidates.push(all.clone());
        }
        candidates.extend(all.iter().map(|&g| vec![g]));
        for set in candidates {
            let weight = set.iter().map(|&g| self.groups[g].weight).sum::<usize>();
            if weight + self.weight(index) <= MAX_KERNEL_WEIGHT
                && !self.indexed_conflict(&set)
                && self.acyclic_after_merge(&set, index)
                && !self.joins_random_key(&set)
            {
                let keep = self.merge(&set);
                self.push(keep, index);
                return;
            }
        }
        self.new_group(index, KernelKind::Elementwise, Vec::new(), false);
    }

    /// Whether group `g` computes an indexed read (`gather`, `index_select`).
    fn has_indexed_read(&self, g: usize) -> bool {
        self.groups[g].nodes.iter().any(|&n| is_indexed_read(&self.graph.nodes[n].op))
    }

    /// Whether merging `set` would put an indexed read and the producer of its `x` or index
    /// in one kernel (the read addresses any element, so its operands must be complete).
    fn indexed_conflict(&self, set: &[usize]) -> bool {
        // Only a second group of the set can hold the read's producer.
        set.len() > 1
            && set.iter().any(|&g| {
                self.groups[g].nodes.iter().any(|&n| {
                    let node = &self.graph.nodes[n];
                    is_indexed_read(&node.op)
                        && node.inputs.iter().any(|v| {
                            self.group_of
                                .get(v.index())
                                .copied()
                                .flatten()
                                .is_some_and(|h| h != g && set.contains(&h))
                        })
                })
            })
    }

    /// Whether elementwise node `index` can join reduction group `g` (element or row level).
    fn fits_reduction(&self, g: usize, index: usize) -> bool {
        let group = &self.groups[g];
        let row = keepdim_shape(&group.domain, &group.axes);
        let shape = &self.graph.nodes[index].ty.shape;
        if *shape != group.domain && !is_row_shape(shape, &row) {
            return false;
        }
        data_inputs(self.graph, index).iter().all(|v| {
            if self.group_of.get(v.index()).copied().flatten() != Some(g) {
                return true;
            }
            let s = &self.graph.ty(*v).shape;
            (*s == group.domain && *shape == group.domain) || is_row_shape(s, &row)
        })
    }

    fn place_reduce(&mut self, index: usize, axes: Vec<u32>) {
        let Some(&x) = self.graph.nodes[index].inputs.first() else {
            // Unreachable for a verified graph (a reduction has one input).
            return self.new_group(index, KernelKind::Reduction, axes, true);
        };
        let domain = &self.graph.ty(x).shape;
        if let Some(g) = self.group_of.get(x.index()).copied().flatten() {
            let group = &self.groups[g];
            let joins = !group.closed
                && group.weight + self.weight(index) <= MAX_KERNEL_WEIGHT
                && &group.domain == domain
                && match group.kind {
                    KernelKind::Elementwise => true,
                    KernelKind::Reduction => group.axes == axes,
                    _ => false,
                };
            if joins {
                let group = &mut self.groups[g];
                group.kind = KernelKind::Reduction;
                group.axes = axes;
                self.push(g, index);
                return;
            }
        }
        // A sibling: another reduction of the same domain and axes reading the same value
        // (`mean(x)` beside `max(x)`) shares its passes.
        let sibling = (0..self.groups.len()).rev().find(|&g| {
            let group = &self.groups[g];
            group.alive
                && !group.closed
                && group.kind == KernelKind::Reduction
                && &group.domain == domain
                && group.axes == axes
                && group.nodes.iter().any(|&n| data_inputs(self.graph, n).contains(&x))
        });
        if let Some(g) = sibling {
            if self.groups[g].weight + self.weight(index) <= MAX_KERNEL_WEIGHT
                && self.acyclic_after_merge(&[g], index)
            {
                self.push(g, index);
                return;
            }
        }
        self.new_group(index, KernelKind::Reduction, axes, false);
    }

    /// Successor groups of every live group (edges from producer to consumer group).
    fn successors(&self) -> Vec<BTreeSet<usize>> {
        let mut succ = vec![BTreeSet::new(); self.groups.len()];
        for (index, g) in self.group_of.iter().enumerate() {
            let Some(g) = *g else { continue };
            for v in data_inputs(self.graph, index) {
                if let Some(h) = self.group_of.get(v.index()).copied().flatten() {
                    if h != g {
                        succ[h].insert(g);
                    }
                }
            }
        }
        succ
    }

    /// Whether group `to` is reachable from group `from`.
    fn reaches(&self, from: usize, to: usize) -> bool {
        let succ = self.successors();
        let mut stack = vec![from];
        let mut seen = vec![false; self.groups.len()];
        while let Some(g) = stack.pop() {
            if g == to {
                return true;
            }
            for &s in &succ[g] {
                if !seen[s] {
                    seen[s] = true;
                    stack.push(s);
                }
            }
        }
        false
    }

    /// Whether merging `set` and adding node `index` to it keeps the group graph acyclic:
    /// no group outside the set may be reachable from it and also feed it.
    fn acyclic_after_merge(&self, set: &[usize], index: usize) -> bool {
        // One group (acyclic with the rest, as every group is) taking a node fed only by it
        // or by no group: no new edge, so no cycle. The common case (a chain of elementwise
        // ops) then costs nothing; the general check below walks the whole group graph.
        if let [g] = set {
            if self.input_groups(index).iter().all(|h| h == g) {
                return true;
            }
        }
        let succ = self.successors();
        let mut producers: BTreeSet<usize> = self.input_groups(index).into_iter().collect();
        for (h, s) in succ.iter().enumerate() {
            if set.iter().any(|g| s.contains(g)) {
                producers.insert(h);
            }
        }
        let mut seen = vec![false; self.groups.len()];
        let mut stack: Vec<usize> = set.to_vec();
        while let Some(g) = stack.pop() {
            for &s in &succ[g] {
                if set.contains(&s) || seen[s] {
                    continue;
                }
                if producers.contains(&s) {
                    return false;
                }
                seen[s] = true;
                stack.push(s);
            }
        }
        true
    }

    /// Whether merging `set` would put a `rand_like` node and its key in one group.
    fn joins_random_key(&self, set: &[usize]) -> bool {
        set.len() > 1
            && set.iter().any(|&g| {
                self.groups[g].nodes.iter().any(|&n| {
                    random_key(self.graph, n).is_some_and(|key| {
                        self.group_of
                            .get(key.index())
                            .copied()
                            .flatten()
                            .is_some_and(|h| h != g && set.contains(&h))
                    })
                })
            })
    }

    /// Merges the groups of `set` into its first member and returns it.
    fn merge(&mut self, set: &[usize]) -> usize {
        let keep = set[0];
        for &g in &set[1..] {
            let nodes = std::mem::take(&mut self.groups[g].nodes);
            self.groups[g].alive = false;
            for &n in &nodes {
                self.group_of[n] = Some(keep);
            }
            self.groups[keep].nodes.extend(nodes);
            self.groups[keep].weight += self.groups[g].weight;
        }
        // Nodes are placed in index order, so a group stays sorted until groups merge.
        if set.len() > 1 {
            self.groups[keep].nodes.sort_unstable();
        }
        keep
    }

    /// Gives a constant its own kernel when some consumer cannot copy it in, or it is returned.
    fn materialise_constants(&mut self) {
        let graph = self.graph;
        let mut needed = vec![false; graph.nodes.len()];
        for v in &graph.outputs {
            needed[v.index()] = true;
        }
        for (index, node) in graph.nodes.iter().enumerate() {
            let inlines = match self.group_of[index] {
                Some(g) => {
                    matches!(
                        self.groups[g].kind,
                        KernelKind::Elementwise | KernelKind::Reduction | KernelKind::MatMul
                    ) && !matches!(node.op, Op::MatMul)
                        && !is_indexed_read(&node.op)
                }
                None => false,
            };
            if !inlines {
                for v in data_inputs(graph, index) {
                    needed[v.index()] = true;
                }
            }
            if let Some(key) = random_key(graph, index) {
                needed[key.index()] = true;
            }
        }
        for (index, node) in graph.nodes.iter().enumerate() {
            if matches!(node.op, Op::Const(_)) && needed[index] {
                self.new_group(index, KernelKind::Elementwise, Vec::new(), true);
            }
        }
    }

    /// The group and source of node `index` if it may be folded into its consumers' kernels:
    /// it has a group and a source that is not a constant, is not a graph output, and some
    /// node reads it.
    fn fold_candidate(&self, index: usize, consumers: &[Vec<usize>]) -> Option<(usize, ValueId)> {
        let graph = self.graph;
        let g = self.group_of[index]?;
        let &source = graph.nodes[index].inputs.first()?;
        let foldable = !graph.outputs.contains(&ValueId(index as u32))
            && !matches!(graph.node(source).op, Op::Const(_))
            && !consumers[index].is_empty();
        foldable.then_some((g, source))
    }

    /// Lets matmuls read `f16`/`bf16` operands in place ([`matmul_operand_widening`]): a
    /// `cast` to `f32` of a 16-bit value that sits alone in its kernel, is not a graph output,
    /// whose source is not a constant, and whose every consumer is a matmul (in another kernel
    /// than the source's) taking it as an operand loses its kernel and is listed in each
    /// consuming matmul kernel, whose GEMM widens while packing. A transpose between the cast
    /// and the matmuls is allowed when `fold_views` will fold it. Runs before
    /// [`Self::fold_views`], so a transpose read only by such casts folds too.
    fn fold_widening_casts(&mut self) {
        let graph = self.graph;
        let consumers = consumers(graph);
        for index in 0..graph.nodes.len() {
            let v = ValueId(index as u32);
            let Some((g, source)) = self.fold_candidate(index, &consumers) else { continue };
            if !matmul_operand_widening(graph, v)
                || self.groups[g].kind != KernelKind::Elementwise
                || self.groups[g].nodes != [index]
            {
                continue;
            }
            let source_group = self.group_of[source.index()];
            // `c` reads `x` as a matmul operand, in a matmul kernel other than the source's.
            let operand_of = |c: usize, x: ValueId| {
                matches!(graph.nodes[c].op, Op::MatMul)
                    && graph.nodes[c].inputs.iter().take(2).any(|y| *y == x)
                    && self.group_of[c].is_some_and(|h| {
                        Some(h) != source_group && self.groups[h].kind == KernelKind::MatMul
                    })
            };
            // … or is a transpose alone in its copy kernel that only matmuls read as an
            // operand (`fold_views` then folds it too).
            let folding_transpose = |c: usize| {
                let t = ValueId(c as u32);
                matmul_operand_view(graph, t).is_some()
                    && self.group_of[c].is_some_and(|h| {
                        self.groups[h].kind == KernelKind::Copy && self.groups[h].nodes == [c]
                    })
                    && !graph.outputs.contains(&t)
                    && !consumers[c].is_empty()
                    && consumers[c].iter().all(|&d| operand_of(d, t))
            };
            let in_place =
                consumers[index].iter().all(|&c| operand_of(c, v) || folding_transpose(c));
            if in_place {
                self.groups[g].alive = false;
                self.group_of[index] = None;
                self.folded[index] = true;
            }
        }
    }

    /// Lets kernels read eligible `Slice`/`Transpose` results in place (see `view.rs`): a
    /// view that is not a graph output, whose source is not a constant, and whose every
    /// consumer sits in a kernel other than its source's that can read it — an elementwise or
    /// reduction kernel (a [`ViewOp`]), or a matmul taking it as an operand (a transpose,
    /// [`matmul_operand_view`]) — loses its copy kernel and is listed in each consuming kernel instead.
    fn fold_views(&mut self) {
        let graph = self.graph;
        let consumers = consumers(graph);
        for index in 0..graph.nodes.len() {
            let v = ValueId(index as u32);
            let Some((g, source)) = self.fold_candidate(index, &consumers) else { continue };
            let loop_view = ViewOp::of_node(graph, v).is_some();
            let operand_view = matmul_operand_view(graph, v).is_some();
            if self.groups[g].kind != KernelKind::Copy || !(loop_view || operand_view) {
                continue;
            }
            let source_group = self.group_of[source.index()];
            let keyed = consumers[index].iter().any(|&c| random_key(graph, c) == Some(v));
            let in_place = !keyed
                && consumers[index].iter().all(|&c| match self.group_of[c] {
                    _ if is_indexed_read(&graph.nodes[c].op) => false,
                    Some(h) if Some(h) != source_group => match self.groups[h].kind {
                        KernelKind::Elementwise | KernelKind::Reduction => loop_view,
                        KernelKind::MatMul => {
                            operand_view && matches!(graph.nodes[c].op, Op::MatMul)
                        }
                        _ => false,
                    },
                    // A widening cast already folded into the matmuls that read it.
                    None => {
                        operand_view
                            && self.folded[c]
                            && matmul_operand_widening(graph, ValueId(c as u32))
                    }
                    _ => false,
                });
            if in_place {
                self.groups[g].alive = false;
                self.group_of[index] = None;
                self.folded[index] = true;
            }
        }
    }

    fn into_fused(self) -> FusedGraph {
        let graph = self.graph;
        let is_const = |v: &ValueId| matches!(graph.node(*v).op, Op::Const(_));
        let mut kernels: Vec<(usize, Kernel)> = Vec::new();
        for (g, group) in self.groups.iter().enumerate() {
            if !group.alive {
                continue;
            }
            let mut nodes: BTreeSet<ValueId> = BTreeSet::new();
            let mut inputs: BTreeSet<ValueId> = BTreeSet::new();
            for &index in &group.nodes {
                nodes.insert(ValueId(index as u32));
                let inlines = (group.kind != KernelKind::MatMul
                    || !matches!(graph.nodes[index].op, Op::MatMul))
                    && !is_indexed_read(&graph.nodes[index].op);
                for v in data_inputs(graph, index) {
                    if self.group_of[v.index()] == Some(g) {
                        continue;
                    }
                    if self.folded[v.index()] {
                        // Read in place: the view node joins this kernel, its source is read
                        // (through every folded node below it: a transpose of a matmul
                        // operand under a folded widening cast).
                        let mut at = *v;
                        while self.folded[at.index()] {
                            nodes.insert(at);
                            match graph.node(at).inputs.first() {
                                Some(&source) => at = source,
                                None => break,
                            }
                        }
                        if !self.folded[at.index()] {
                            inputs.insert(at);
                        }
                        continue;
                    }
                    let fusable = matches!(
                        group.kind,
                        KernelKind::Elementwise | KernelKind::Reduction | KernelKind::MatMul
                    );
                    let key = random_key(graph, index) == Some(*v);
                    if is_const(v) && inlines && fusable && !key {
                        nodes.insert(*v);
                    } else {
                        inputs.insert(*v);
                    }
                }
            }
            let kernel = Kernel {
                kind: group.kind,
                domain: group.domain.clone(),
                axes: group.axes.clone(),
                nodes: nodes.into_iter().collect(),
                inputs: inputs.into_iter().collect(),
                outputs: Vec::new(),
            };
            kernels.push((g, kernel));
        }
        // Outputs: values another kernel reads, and the graph's results.
        let mut wanted: BTreeSet<ValueId> = graph.outputs.iter().copied().collect();
        for (_, k) in &kernels {
            wanted.extend(k.inputs.iter().copied());
        }
        for (g, k) in &mut kernels {
            k.outputs = k
                .nodes
                .iter()
                .copied()
                .filter(|v| wanted.contains(v) && self.group_of[v.index()] == Some(*g))
                .collect();
        }
        order_kernels(&self.group_of, kernels)
    }
}

/// Orders kernels so producers precede consumers, smallest first node first among ready ones.
fn order_kernels(group_of: &[Option<usize>], kernels: Vec<(usize, Kernel)>) -> FusedGraph {
    let position = |g: usize| kernels.iter().position(|(h, _)| *h == g);
    let n = kernels.len();
    let mut deps = vec![BTreeSet::new(); n];
    for (i, (_, k)) in kernels.iter().enumerate() {
        for v in &k.inputs {
            if let Some(j) = group_of.get(v.index()).copied().flatten().and_then(position) {
                if j != i {
                    deps[i].insert(j);
                }
            }
        }
    }
    let mut remaining: Vec<usize> = deps.iter().map(|d| d.len()).collect();
    let first = |i: usize| kernels[i].1.nodes.first().map_or(0, |v| v.0);
    let mut ready: BinaryHeap<Reverse<(u32, usize)>> =
        (0..n).filter(|&i| remaining[i] == 0).map(|i| Reverse((first(i), i))).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse((_, i))) = ready.pop() {
        order.push(i);
        for j in 0..n {
            if deps[j].contains(&i) {
                remaining[j] -= 1;
                if remaining[j] == 0 {
                    ready.push(Reverse((first(j), j)));
                }
            }
        }
    }
    let mut slots: Vec<Option<Kernel>> = kernels.into_iter().map(|(_, k)| Some(k)).collect();
    FusedGraph { kernels: order.into_iter().filter_map(|i| slots[i].take()).collect() }
}
