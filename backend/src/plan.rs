//! Loop plans: how one fused loop kernel maps onto a nest of loops over runtime sizes.
//!
//! A [`LoopPlan`] is built from a kernel's nodes, its external inputs and outputs, its loop
//! domain and (for reductions) the reduced trailing axes. Every operand is a contiguous
//! row-major buffer that covers the domain *fully* (F) or *broadcast* (B, stride 0) on each
//! domain axis — which one is known at compile time from the symbolic shapes (a broadcast axis
//! is the constant `1`). Adjacent axes on which every operand and node has the same pattern
//! are collapsed into one, so a same-shape elementwise chain becomes one flat loop, and a
//! softmax over the last axis becomes rows × one inner axis. The last collapsed axis is the
//! inner (vectorised) loop; for reductions it holds exactly the reduced axes.

use crate::error::CodegenError;
use tfn_ir::{DType, Dim, Graph, Op, Shape, ValueId};

/// What a node argument refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    /// Constant along the inner axis: computed once per row, as a scalar.
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
}

#[derive(Clone, Debug)]
pub(crate) struct LoopPlan {
    /// The domain axes making up each collapsed axis (empty = a synthetic axis of size 1).
    pub axes: Vec<Vec<usize>>,
    /// The inner axis is reduced (reduction kernels).
    pub reduces: bool,
    /// External inputs, in the kernel's input order.
    pub inputs: Vec<Operand>,
    /// Outputs, in the kernel's output order.
    pub outputs: Vec<Operand>,
    pub nodes: Vec<PlanNode>,
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
    /// trailing `axes` (empty for elementwise kernels).
    pub fn build(
        graph: &Graph,
        nodes: &[ValueId],
        inputs: &[ValueId],
        outputs: &[ValueId],
        domain: &Shape,
        axes: &[u32],
    ) -> Result<LoopPlan, CodegenError> {
        let rank = domain.rank();
        let trailing = axes.iter().enumerate().all(|(i, &a)| a as usize + axes.len() == rank + i);
        if !trailing {
            return Err(CodegenError::Unsupported("reduction over non-trailing axes".into()));
        }
        let reduced = |a: usize| axes.contains(&(a as u32));
        let row_shape = Shape(
            domain
                .dims()
                .iter()
                .enumerate()
                .map(|(a, d)| if reduced(a) { Dim::Const(1) } else { *d })
                .collect(),
        );
        // Per-domain-axis patterns of inputs and nodes.
        let mut input_pat = Vec::new();
        for v in inputs {
            input_pat.push(pattern(&graph.ty(*v).shape, domain)?);
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
                (Some(prev), Some(group)) if *prev == sig => group.push(a),
                _ => groups.push(vec![a]),
            }
            last_sig = Some(sig);
        }
        let reduces = !axes.is_empty();
        if reduces {
            let inner: Vec<&Vec<usize>> =
                groups.iter().filter(|g| g.first().is_some_and(|&a| reduced(a))).collect();
            if inner.len() > 1 {
                return Err(CodegenError::Unsupported(
                    "reduced axes with different broadcast patterns".into(),
                ));
            }
            if inner.is_empty() {
                groups.push(Vec::new());
            }
            if groups.len() == 1 {
                groups.insert(0, Vec::new());
            }
        } else if groups.is_empty() {
            groups.push(Vec::new());
        }
        let collapse = |p: &[bool]| -> Vec<bool> {
            groups.iter().map(|g| g.first().is_some_and(|&a| p[a])).collect()
        };
        let index_of = |v: &ValueId| nodes.iter().position(|n| n == v);
        let mut plan_nodes = Vec::with_capacity(nodes.len());
        for (i, v) in nodes.iter().enumerate() {
            let node = graph.node(*v);
            let mut args = Vec::new();
            let data: &[ValueId] = match node.op {
                Op::Full { .. } => &[],
                _ => &node.inputs,
            };
            for u in data {
                if let Some(j) = index_of(u) {
                    args.push(Ref::Node(j));
                } else if let Some(j) = inputs.iter().position(|x| x == u) {
                    args.push(Ref::Input(j));
                } else {
                    return Err(CodegenError::Internal(format!("{u} is not available to {v}")));
                }
            }
            let full = collapse(&node_pat[i]);
            let row =
                matches!(node.op, Op::Reduce { .. }) || !full.last().copied().unwrap_or(false);
            plan_nodes.push(PlanNode { op: node.op.clone(), args, dtype: node.ty.dtype, row });
        }
        let inputs: Vec<Operand> = inputs
            .iter()
            .zip(&input_pat)
            .map(|(v, p)| Operand {
                value: *v,
                dtype: graph.ty(*v).dtype,
                full: collapse(p),
                node: None,
            })
            .collect();
        let mut outs = Vec::new();
        for v in outputs {
            let j = index_of(v)
                .ok_or_else(|| CodegenError::Internal(format!("output {v} is not computed")))?;
            outs.push(Operand {
                value: *v,
                dtype: graph.ty(*v).dtype,
                full: collapse(&node_pat[j]),
                node: Some(j),
            });
        }
        Ok(LoopPlan { axes: groups, reduces, inputs, outputs: outs, nodes: plan_nodes })
    }

    /// Number of collapsed axes (at least 1; at least 2 for reductions).
    pub fn rank(&self) -> usize {
        self.axes.len()
    }

    /// All operands: inputs then outputs (the order of pointers in the kernel arguments).
    pub fn operands(&self) -> impl Iterator<Item = &Operand> {
        self.inputs.iter().chain(self.outputs.iter())
    }

    /// Collapsed sizes for a concrete domain shape.
    pub fn sizes(&self, domain: &[usize]) -> Vec<usize> {
        self.axes
            .iter()
            .map(|g| g.iter().map(|&a| domain.get(a).copied().unwrap_or(1)).product())
            .collect()
    }

    /// Element strides of one operand over the collapsed axes, for collapsed `sizes`.
    pub fn strides(full: &[bool], sizes: &[usize]) -> Vec<i64> {
        let mut strides = vec![0i64; sizes.len()];
        let mut acc: i64 = 1;
        for j in (0..sizes.len()).rev() {
            if full[j] {
                strides[j] = acc;
                acc = acc.saturating_mul(sizes[j] as i64);
            }
        }
        strides
    }
}
