//! Loop plans: how one fused loop kernel maps onto a nest of loops over runtime sizes.
//!
//! A [`LoopPlan`] is built from a kernel's nodes, its external inputs and outputs, its loop
//! domain and (for reductions) the reduced axes — any of them, trailing or not. Every operand
//! is a contiguous row-major buffer that covers the domain *fully* (F) or *broadcast* (B,
//! stride 0) on each domain axis — which one is known at compile time from the symbolic shapes
//! (a broadcast axis is the constant `1`). Adjacent axes on which every operand and node has
//! the same pattern (and the same reduced/kept role) are collapsed into one, so a same-shape
//! elementwise chain becomes one flat loop, a softmax over the last axis becomes rows × one
//! inner axis, and a column sum becomes one reduced outer axis × one kept inner axis.
//!
//! The last collapsed axis is the inner (vectorised) loop. When it is reduced, each kept
//! position is a *row* reduced by passes over the reduced axes ([`LoopPlan::inner_reduced`]);
//! when it is kept, blocks of columns accumulate in vector registers while the reduced (outer)
//! axes are walked (see `crate::codegen`).

use crate::error::CodegenError;
use smallvec::SmallVec;
use tfn_ir::{DType, Dim, Graph, IndexKind, Op, Shape, ValueId};
use tfn_passes::fusion::ViewOp;

/// What a node argument refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Ref {
    /// A node of the plan.
    Node(usize),
    /// An external input operand of the plan.
    Input(usize),
}

#[derive(Clone, Debug)]
pub(crate) struct PlanNode {
    pub op: Op,
    pub args: Vec<Ref>,
    pub dtype: DType,
    /// Constant along the inner axis and every reduced axis (a reduction result, or a value
    /// of broadcast operands and constants only): computed once per row, as a scalar.
    /// Only meaningful when the inner axis is reduced or nothing is.
    pub row: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct Operand {
    pub value: ValueId,
    pub dtype: DType,
    /// Per collapsed axis: true when the operand spans it (F), false when broadcast (B).
    pub full: Vec<bool>,
    /// For outputs: the plan node stored into this operand.
    pub node: Option<usize>,
    /// For an input read in place through a `Slice`/`Transpose` (fusion's folded views):
    /// the view; `value` is then the view's source buffer, read with the view's offset and
    /// strides (`shape` is the view's shape).
    pub view: Option<(ViewOp, Shape)>,
    /// For an operand of an indexed read (`gather`, `index_select`; see `crate::codegen`'s
    /// indexed reads): which one it is.
    pub indexed: Option<IndexedRole>,
    /// An input only read as a `rand_like` key (two words at its base pointer, never an
    /// element per step): it takes no part in the lane dtype or the axis patterns.
    pub key_only: bool,
    /// An index operand: no buffer; `value` is an `Iota` node of the kernel, and the
    /// operand's element offset (it spans only the iota's axis, stride 1) *is* the index
    /// along that axis. The kernel computes it instead of loading (see `crate::codegen`).
    pub index: bool,
}

/// The two operands of an indexed read node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum IndexedRole {
    /// The `x` being read: its buffer, with strides over the read node's axes that skip the
    /// indexed axis (bound per call, [`IndexedRole::source_strides`]); the index adds
    /// `index * stride(axis)` per element. `slot` numbers the sources of the plan (their
    /// ABI slots: axis size and stride).
    /// `inner_unit`: the innermost collapsed axis walks `x`'s last axis (stride 1), so the
    /// source is read with vector loads; otherwise element by element at `inner` strides.
    Source { kind: IndexKind, axis: usize, index_rank: usize, slot: usize, inner_unit: bool },
    /// The index tensor, read in the loop like a contiguous operand (shaped to the read's
    /// axes), loaded as scalars and never as vectors.
    Index,
}

impl IndexedRole {
    /// For a source: its element strides over the read node's axes, given `x`'s shape, and
    /// the axis's (size, stride).
    pub fn source_strides(&self, x: &[usize]) -> Option<(Vec<isize>, usize, usize)> {
        // (The inner stride the kernel needs is the last entry of the collapsed strides.)
        let IndexedRole::Source { kind, axis, index_rank, .. } = self else { return None };
        let (a, r) = (*axis, *index_rank);
        let xs = tfn_ir::interp::row_major_strides(x);
        let strides: Vec<isize> = if kind.elementwise_index() {
            (0..x.len()).map(|k| if k == a { 0 } else { xs[k] as isize }).collect()
        } else {
            let mut v: Vec<isize> = xs[..a].iter().map(|&s| s as isize).collect();
            v.extend(std::iter::repeat_n(0, r));
            v.extend(xs[a + 1..].iter().map(|&s| s as isize));
            v
        };
        Some((strides, *x.get(a)?, *xs.get(a)?))
    }
}

/// The shapes an indexed read `node` (`x`, `index` → `out`) reads its operands as, over the
/// node's axes: `x` with the indexed axes of size 1, the index placed at its axes; and the
/// domain axes (of the node's rank) before which `x`'s layout is not contiguous.
fn indexed_shapes(
    graph: &Graph,
    node: ValueId,
) -> Option<(IndexKind, usize, Shape, Shape, Vec<bool>)> {
    let n = graph.node(node);
    let Op::Index { kind, axis } = n.op else { return None };
    let a = axis as usize;
    let x = &graph.ty(*n.inputs.first()?).shape;
    let index = &graph.ty(*n.inputs.get(1)?).shape;
    let out = &n.ty.shape;
    let rank = out.rank();
    let mut breaks = vec![false; rank];
    let one = Dim::Const(1);
    let (source, index_shape) = if kind.elementwise_index() {
        let mut src = out.clone();
        src.0[a] = one;
        for (k, b) in breaks.iter_mut().enumerate() {
            *b = k == a || x.0.get(k) != out.0.get(k);
        }
        (src, out.clone())
    } else {
        let r = index.rank();
        let mut src = x.0[..a].to_vec();
        src.extend(std::iter::repeat_n(one, r));
        src.extend_from_slice(&x.0[a + 1..]);
        let mut idx = vec![one; a];
        idx.extend_from_slice(&index.0);
        idx.extend(std::iter::repeat_n(one, x.rank() - 1 - a));
        for k in [a, a + r] {
            if let Some(b) = breaks.get_mut(k) {
                *b = true;
            }
        }
        (Shape(src), Shape(idx))
    };
    Some((kind, index.rank(), source, index_shape, breaks))
}

/// A `rand_like`/`randn_like` node of the plan and what its code reads.
#[derive(Clone, Debug)]
pub(crate) struct RandomNode {
    /// The plan node.
    pub node: usize,
    /// The input operand holding its key.
    pub key: usize,
    /// The key has two elements (shape `[2]`), else one.
    pub pair: bool,
    /// The *counter operand*: no buffer (a null pointer in the ABI), but offsets and strides of
    /// a contiguous row-major buffer of the node's shape, so its offset at any loop position
    /// is the element's flat index there — across threads, tiles and row passes alike.
    pub counter: Operand,
}

#[derive(Clone, Debug)]
pub(crate) struct LoopPlan {
    /// Rank of the kernel's domain (before collapsing).
    pub domain_rank: usize,
    /// The domain axes making up each collapsed axis (empty = a synthetic axis of size 1).
    pub axes: Vec<Vec<usize>>,
    /// Per collapsed axis: it is reduced.
    pub reduced: Vec<bool>,
    /// The kernel has reductions.
    pub reduces: bool,
    /// External inputs, in the kernel's input order.
    pub inputs: Vec<Operand>,
    /// Outputs, in the kernel's output order.
    pub outputs: Vec<Operand>,
    pub nodes: Vec<PlanNode>,
    /// The indexed read nodes, by source slot (for error messages).
    pub reads: Vec<ValueId>,
    /// Random nodes; their counter operands follow the outputs in the ABI.
    pub randoms: Vec<RandomNode>,
}

/// Pattern of `shape`, right-aligned into `domain`: true = full, false = broadcast.
fn pattern(shape: &Shape, domain: &Shape) -> Result<Vec<bool>, CodegenError> {
    let rank = domain.rank();
    let dims = shape.dims();
    if dims.len() > rank {
        return Err(CodegenError::Unsupported(format!("shape {shape} does not fit {domain}")));
    }
    let pad = rank - dims.len();
    let mut out = Vec::with_capacity(rank);
    for (a, d) in domain.dims().iter().enumerate() {
        if a < pad {
            out.push(false);
            continue;
        }
        let s = dims[a - pad];
        if s == *d {
            out.push(true);
        } else if s == Dim::Const(1) {
            out.push(false);
        } else {
            return Err(CodegenError::Unsupported(format!(
                "axis {a} of {shape} does not statically match {domain}"
            )));
        }
    }
    Ok(out)
}

impl LoopPlan {
    /// Plans the loop nest of `nodes` (topologically ordered) over `domain`, reducing the
    /// `axes` (empty for elementwise kernels).
    pub fn build(
        graph: &Graph,
        nodes: &[ValueId],
        inputs: &[ValueId],
        outputs: &[ValueId],
        domain: &Shape,
        axes: &[u32],
    ) -> Result<LoopPlan, CodegenError> {
        let rank = domain.rank();
        let reduced = |a: usize| axes.contains(&(a as u32));
        // Views read in place: a `Slice`/`Transpose` node listed in the kernel whose source is
        // a kernel input becomes a strided input operand instead of a computed node.
        let mut views: Vec<(ValueId, ValueId, ViewOp)> = Vec::new();
        for v in nodes {
            let source = graph.node(*v).inputs.first().copied();
            if let (Some(op), Some(source)) = (ViewOp::of_node(graph, *v), source) {
                if inputs.contains(&source) && !nodes.contains(&source) {
                    views.push((*v, source, op));
                }
            }
        }
        let is_view = |v: &ValueId| views.iter().any(|(w, _, _)| w == v);
        let nodes: Vec<ValueId> = nodes.iter().copied().filter(|v| !is_view(v)).collect();
        let nodes = &nodes[..];
        // Indexed reads: their `x` and index become operands of their own.
        let reads: Vec<ValueId> = nodes
            .iter()
            .copied()
            .filter(|v| matches!(graph.node(*v).op, Op::Index { kind, .. } if kind.is_read()))
            .collect();
        let only_indexed = |u: &ValueId| {
            reads.iter().any(|r| graph.node(*r).inputs.contains(u))
                && !nodes.iter().any(|n| {
                    let node = graph.node(*n);
                    !reads.contains(n)
                        && !matches!(node.op, Op::Full { .. } | Op::Iota { .. })
                        && node.inputs.contains(u)
                })
        };
        let read_directly = |u: &ValueId| {
            !only_indexed(u)
                && (nodes.iter().any(|n| {
                    let node = graph.node(*n);
                    !matches!(node.op, Op::Full { .. } | Op::Iota { .. }) && node.inputs.contains(u)
                }) || !views.iter().any(|(_, s, _)| s == u))
        };
        // Iota nodes: each reads an index operand spanning only its axis.
        let iotas: Vec<(ValueId, u32)> = nodes
            .iter()
            .filter_map(|v| match graph.node(*v).op {
                Op::Iota { axis } => Some((*v, axis)),
                _ => None,
            })
            .collect();
        let inputs: Vec<ValueId> = inputs.iter().copied().filter(read_directly).collect();
        let inputs = &inputs[..];
        let row_shape = Shape(
            domain
                .dims()
                .iter()
                .enumerate()
                .map(|(a, d)| if reduced(a) { Dim::Const(1) } else { *d })
                .collect(),
        );
        // Per-domain-axis patterns of inputs and nodes.
        // Inputs read only as random keys: no per-element pattern (all broadcast).
        let key_only = |u: &ValueId| {
            let mut uses = nodes.iter().map(|n| graph.node(*n)).filter(|n| n.inputs.contains(u));
            uses.all(|n| matches!(n.op, Op::Random { .. }) && n.inputs.first() == Some(u))
        };
        let mut input_pat = Vec::new();
        for v in inputs {
            input_pat.push(if key_only(v) {
                vec![false; rank]
            } else {
                pattern(&graph.ty(*v).shape, domain)?
            });
        }
        // Domain axes a view operand forbids merging with the previous axis.
        let mut breaks = vec![false; rank];
        for (v, _, op) in &views {
            let shape = &graph.ty(*v).shape;
            input_pat.push(pattern(shape, domain)?);
            let pad = rank.saturating_sub(shape.rank());
            for (a, b) in op.breaks(shape.rank()).into_iter().enumerate() {
                if let Some(slot) = breaks.get_mut(a + pad) {
                    *slot |= b;
                }
            }
        }
        // Indexed read operands (source, index) per read, after the views.
        let mut indexed: Vec<(ValueId, IndexedRole)> = Vec::new();
        for (q, r) in reads.iter().enumerate() {
            let (kind, index_rank, source, index_shape, bk) = indexed_shapes(graph, *r)
                .ok_or_else(|| CodegenError::Internal(format!("bad indexed read {r}")))?;
            let n = graph.node(*r);
            // Fusion keeps an indexed read's operands out of its kernel.
            if let Some(u) = n.inputs.iter().find(|u| nodes.contains(u)) {
                return Err(CodegenError::Internal(format!(
                    "indexed read {r} computes its operand {u} in the same kernel"
                )));
            }
            let pad = rank.saturating_sub(source.rank());
            input_pat.push(pattern(&source, domain)?);
            input_pat.push(pattern(&index_shape, domain)?);
            for (k, b) in bk.into_iter().enumerate() {
                if let Some(slot) = breaks.get_mut(k + pad) {
                    *slot |= b;
                }
            }
            let axis = match n.op {
                Op::Index { axis, .. } => axis as usize,
                _ => 0,
            };
            let role = IndexedRole::Source { kind, axis, index_rank, slot: q, inner_unit: false };
            indexed.push((n.inputs[0], role));
            indexed.push((n.inputs[1], IndexedRole::Index));
        }
        // An iota's index operand varies only along the iota's axis (after the indexed ones).
        let iota_pattern = |v: ValueId, axis: u32| -> Result<Vec<bool>, CodegenError> {
            let shape = &graph.ty(v).shape;
            let mut p = pattern(shape, domain)?;
            let at = rank - shape.rank() + axis as usize;
            for (a, slot) in p.iter_mut().enumerate() {
                *slot &= a == at;
            }
            Ok(p)
        };
        for (v, axis) in &iotas {
            input_pat.push(iota_pattern(*v, *axis)?);
        }
        let mut node_pat = Vec::new();
        for v in nodes {
            let node = graph.node(*v);
            let shape = match node.op {
                Op::Reduce { .. } => &row_shape,
                _ => &node.ty.shape,
            };
            node_pat.push(pattern(shape, domain)?);
        }
        // Collapse axes: drop constant-1 axes, merge neighbours with identical patterns.
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let signature = |a: usize| -> Vec<bool> {
            let mut s = vec![reduced(a)];
            s.extend(input_pat.iter().map(|p| p[a]));
            s.extend(node_pat.iter().map(|p| p[a]));
            s
        };
        let mut last_sig: Option<Vec<bool>> = None;
        for a in 0..rank {
            if domain.dims()[a] == Dim::Const(1) {
                continue;
            }
            let sig = signature(a);
            match (&last_sig, groups.last_mut()) {
                (Some(prev), Some(group))
                    if *prev == sig
                        && !group.last().is_some_and(|&p| breaks[p + 1..=a].contains(&true)) =>
                {
                    group.push(a)
                }
                _ => groups.push(vec![a]),
            }
            last_sig = Some(sig);
        }
        let reduces = !axes.is_empty();
        let mut roles: Vec<(Vec<usize>, bool)> = groups
            .into_iter()
            .map(|g| {
                let r = g.first().is_some_and(|&a| reduced(a));
                (g, r)
            })
            .collect();
        // Reductions get at least one reduced and one kept collapsed axis (synthetic ones of
        // size 1 where the domain has none).
        if reduces && !roles.iter().any(|(_, r)| *r) {
            roles.push((Vec::new(), true));
        }
        if roles.iter().all(|(_, r)| *r) {
            roles.insert(0, (Vec::new(), false));
        }
        let (groups, reduced_axes): (Vec<Vec<usize>>, Vec<bool>) = roles.into_iter().unzip();
        let collapse = |p: &[bool]| -> Vec<bool> {
            groups.iter().map(|g| g.first().is_some_and(|&a| p[a])).collect()
        };
        let index_of = |v: &ValueId| nodes.iter().position(|n| n == v);
        let mut plan_nodes = Vec::with_capacity(nodes.len());
        for (i, v) in nodes.iter().enumerate() {
            let node = graph.node(*v);
            let mut args = Vec::new();
            // A random node's key is not an element argument: its code loads it whole.
            let data: &[ValueId] = match node.op {
                Op::Full { .. } | Op::Random { .. } => &[],
                Op::Iota { .. } => {
                    let k = iotas.iter().position(|(w, _)| w == v).unwrap_or(0);
                    args.push(Ref::Input(inputs.len() + views.len() + indexed.len() + k));
                    &[]
                }
                _ => &node.inputs,
            };
            if let Some(q) = reads.iter().position(|r| r == v) {
                let base = inputs.len() + views.len() + 2 * q;
                args.push(Ref::Input(base));
                args.push(Ref::Input(base + 1));
            }
            let data = if reads.contains(v) { &[][..] } else { data };
            for u in data {
                if let Some(j) = index_of(u) {
                    args.push(Ref::Node(j));
                } else if let Some(j) = inputs.iter().position(|x| x == u) {
                    args.push(Ref::Input(j));
                } else if let Some(j) = views.iter().position(|(w, _, _)| w == u) {
                    args.push(Ref::Input(inputs.len() + j));
                } else {
                    return Err(CodegenError::Internal(format!("{u} is not available to {v}")));
                }
            }
            let full = collapse(&node_pat[i]);
            let varies = full
                .iter()
                .zip(&reduced_axes)
                .enumerate()
                .any(|(j, (&f, &r))| f && (r || j + 1 == reduced_axes.len()));
            let row = matches!(node.op, Op::Reduce { .. }) || !varies;
            plan_nodes.push(PlanNode { op: node.op.clone(), args, dtype: node.ty.dtype, row });
        }
        // Whether each source's inner axis is `x`'s last (unit stride).
        let inner_axis = groups.last().and_then(|g| g.last()).copied();
        for (q, r) in reads.iter().enumerate() {
            let Some((v, role)) = indexed.get_mut(2 * q) else { continue };
            if let IndexedRole::Source { kind, axis, index_rank, inner_unit, .. } = role {
                let node_rank = graph.ty(*r).shape.rank();
                let pad = rank.saturating_sub(node_rank);
                let x_rank = graph.ty(*v).shape.rank();
                *inner_unit = inner_axis.is_some_and(|a| {
                    a >= pad && {
                        let k = a - pad;
                        if kind.elementwise_index() {
                            k + 1 == x_rank
                        } else {
                            k + 1 == node_rank && k >= *axis + *index_rank
                        }
                    }
                });
            }
        }
        let sources = inputs
            .iter()
            .map(|v| (*v, None, None))
            .chain(
                views
                    .iter()
                    .map(|(v, s, op)| (*s, Some((op.clone(), graph.ty(*v).shape.clone())), None)),
            )
            .chain(indexed.iter().map(|(v, role)| (*v, None, Some(role.clone()))));
        let index_operands = iotas.iter().map(|(v, _)| (*v, None, None));
        let inputs: Vec<Operand> = sources
            .map(|(v, view, indexed)| (v, view, indexed, false))
            .chain(index_operands.map(|(v, view, indexed)| (v, view, indexed, true)))
            .zip(&input_pat)
            .map(|((v, view, indexed, index), p)| Operand {
                value: v,
                dtype: graph.ty(v).dtype,
                full: collapse(p),
                node: None,
                key_only: !index && view.is_none() && key_only(&v),
                view,
                indexed,
                index,
            })
            .collect();
        let mut randoms = Vec::new();
        for (i, v) in nodes.iter().enumerate() {
            let node = graph.node(*v);
            if !matches!(node.op, Op::Random { .. }) {
                continue;
            }
            let key_value = node.inputs.first().copied();
            let key = inputs
                .iter()
                .position(|o| Some(o.value) == key_value && o.view.is_none())
                .ok_or_else(|| CodegenError::Internal(format!("the key of {v} is not an input")))?;
            let pair = key_value.is_some_and(|k| graph.ty(k).shape.rank() == 1);
            let counter = Operand {
                value: *v,
                dtype: DType::I64,
                full: collapse(&node_pat[i]),
                node: Some(i),
                view: None,
                indexed: None,
                key_only: false,
                index: false,
            };
            randoms.push(RandomNode { node: i, key, pair, counter });
        }
        let mut outs = Vec::new();
        for v in outputs {
            let j = index_of(v)
                .ok_or_else(|| CodegenError::Internal(format!("output {v} is not computed")))?;
            outs.push(Operand {
                value: *v,
                dtype: graph.ty(*v).dtype,
                full: collapse(&node_pat[j]),
                node: Some(j),
                view: None,
                indexed: None,
                key_only: false,
                index: false,
            });
        }
        Ok(LoopPlan {
            domain_rank: rank,
            axes: groups,
            reduced: reduced_axes,
            reduces,
            inputs,
            outputs: outs,
            nodes: plan_nodes,
            reads,
            randoms,
        })
    }

    /// Number of indexed-read sources (their ABI slots; see `crate::codegen`).
    pub fn index_sources(&self) -> usize {
        self.inputs.iter().filter(|o| matches!(o.indexed, Some(IndexedRole::Source { .. }))).count()
    }

    /// An indexed source's element stride along the inner collapsed axis, from its strides
    /// over the read node's axes.
    pub fn inner_stride(&self, node_strides: &[isize]) -> isize {
        let pad = self.domain_rank.saturating_sub(node_strides.len());
        match self.axes.last().and_then(|g| g.last()) {
            Some(&a) if a >= pad => node_strides.get(a - pad).copied().unwrap_or(0),
            _ => 0,
        }
    }

    /// Number of collapsed axes (at least 1; at least 2 for reductions).
    pub fn rank(&self) -> usize {
        self.axes.len()
    }

    /// Whether the inner (last) collapsed axis is reduced: row reductions. Otherwise a
    /// reduction kernel accumulates blocks of inner (kept) columns over outer reduced axes.
    pub fn inner_reduced(&self) -> bool {
        self.reduced.last().copied().unwrap_or(false)
    }

    /// The collapsed axis whose range a call covers (`begin..end`, split across threads): the
    /// outermost kept axis.
    pub fn split_axis(&self) -> usize {
        self.reduced.iter().position(|&r| !r).unwrap_or(0)
    }

    /// All operands: inputs, outputs, then the random nodes' counters (the order of pointers
    /// in the kernel arguments).
    pub fn operands(&self) -> impl Iterator<Item = &Operand> {
        self.inputs.iter().chain(self.outputs.iter()).chain(self.randoms.iter().map(|r| &r.counter))
    }

    /// The operands holding element data: every operand but key-only inputs and counters.
    pub fn data_operands(&self) -> impl Iterator<Item = &Operand> {
        // Index operands of indexed reads are only ever loaded as scalars.
        self.inputs
            .iter()
            .filter(|o| !o.key_only && o.indexed != Some(IndexedRole::Index))
            .chain(self.outputs.iter())
    }

    /// Collapsed sizes for a concrete domain shape.
    pub fn sizes(&self, domain: &[usize]) -> SmallVec<[usize; 4]> {
        self.axes
            .iter()
            .map(|g| g.iter().map(|&a| domain.get(a).copied().unwrap_or(1)).product())
            .collect()
    }

    /// Writes the outer-axis strides of an input read through a view (see
    /// [`Operand::view`]), given the view's per-axis element strides (`ViewOp::layout`): each
    /// collapsed axis steps like its innermost domain axis (views only merge contiguous axes),
    /// broadcast axes by 0.
    pub fn write_view_strides(&self, slots: &mut [i64], op: &Operand, view_strides: &[isize]) {
        let pad = self.domain_rank.saturating_sub(view_strides.len());
        for (slot, (j, group)) in slots.iter_mut().zip(self.axes.iter().enumerate()) {
            let full = op.full.get(j).copied().unwrap_or(false);
            let stride = match group.last() {
                Some(&a) if full && a >= pad => view_strides.get(a - pad).copied().unwrap_or(0),
                _ => 0,
            };
            *slot = stride as i64;
        }
    }

    /// Writes one operand's element strides over the collapsed axes, for collapsed `sizes`,
    /// without the innermost axis (the kernel ABI has no slot for it): the
    /// kernel ABI's stride slots, written without allocating.
    pub fn write_outer_strides(slots: &mut [i64], full: &[bool], sizes: &[usize]) {
        slots.fill(0);
        let mut acc: i64 = 1;
        for (j, &size) in sizes.iter().enumerate().rev() {
            if full.get(j).copied().unwrap_or(false) {
                if let Some(slot) = slots.get_mut(j) {
                    *slot = acc;
                }
                acc = acc.saturating_mul(size as i64);
            }
        }
    }
}
