//! Call regions: where lowering inlined a call of a composed function that has its own `grad`
//! block, so that differentiation can apply the block (a custom VJP) instead of the gradient
//! derived from the inlined body.

use super::call::{BoundCall, Val};
use super::instantiate::Lowerer;
use crate::attr::Attr;
use crate::graph::ValueId;
use crate::op::Op;

/// A tensor argument of a recorded call.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RegionArg {
    One(ValueId),
    /// A `Tensor[]` argument.
    List(Vec<ValueId>),
}

/// One inlined call of a function with a `grad` block. The call's body emitted exactly the
/// nodes `nodes.0 .. nodes.1` of the graph; its inputs were defined before them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CallRegion {
    /// Base name and overload of the called function.
    pub function: String,
    pub overload: Option<String>,
    /// Tensor arguments by parameter name, in parameter order.
    pub inputs: Vec<(String, RegionArg)>,
    /// Attribute arguments by parameter name, in parameter order.
    pub attrs: Vec<(String, Attr)>,
    /// The call's results, flattened.
    pub outputs: Vec<ValueId>,
    /// The half-open range of node indices the call's body emitted.
    pub nodes: (u32, u32),
}

impl Lowerer<'_> {
    /// Records the call just lowered (its body emitted the nodes from `first_node` on) when
    /// its function has a `grad` block and all its results are tensors. A result the body did
    /// not compute (`return x`, a cast to `x`'s own dtype, a loop of no trip) becomes a new
    /// same-shape `Reshape` of it, so that the region has a body computing every result and
    /// the block applies (gradient reversal and stop-gradient are written this way).
    pub(super) fn record_region(&mut self, call: &BoundCall, first_node: usize, out: &mut [Val]) {
        let f = call.fdef;
        if self.lib.grad_of(&f.name, f.overload.as_deref()).is_none() {
            return;
        }
        fn tensors_only(v: &Val) -> bool {
            match v {
                Val::Tensor(_) | Val::List(_) => true,
                Val::Tuple(items) => items.iter().all(tensors_only),
                _ => false,
            }
        }
        if !out.iter().all(tensors_only) {
            return;
        }
        let mut outputs = Vec::new();
        for v in out.iter_mut() {
            self.own_results(v, first_node, Some(f.name_span), &mut outputs);
        }
        let mut inputs = Vec::new();
        let mut attrs = Vec::new();
        for (p, v) in f.params.iter().zip(&call.vals) {
            match v {
                Val::Tensor(t) => inputs.push((p.name.clone(), RegionArg::One(*t))),
                Val::List(ts) => inputs.push((p.name.clone(), RegionArg::List(ts.clone()))),
                Val::Attr(a) => attrs.push((p.name.clone(), a.clone())),
                Val::Tuple(_)
                | Val::Index(_)
                | Val::Size(_)
                | Val::SizeList(_)
                | Val::SizeFloat(_) => return,
            }
        }
        self.regions.push(CallRegion {
            function: f.name.clone(),
            overload: f.overload.clone(),
            inputs,
            attrs,
            outputs,
            nodes: (first_node as u32, self.graph.nodes.len() as u32),
        });
    }

    /// Replaces each tensor of `v` emitted before `first_node` by a same-shape `Reshape` of
    /// it, and lists `v`'s tensors (flattened) in `outputs`.
    fn own_results(
        &mut self,
        v: &mut Val,
        first_node: usize,
        span: Option<crate::span::Span>,
        outputs: &mut Vec<ValueId>,
    ) {
        let mut own = |lowerer: &mut Self, t: &mut ValueId| {
            if t.index() < first_node {
                let ty = lowerer.graph.ty(*t).clone();
                *t = lowerer.emit(Op::Reshape, vec![*t], ty, span);
            }
            outputs.push(*t);
        };
        match v {
            Val::Tensor(t) => own(self, t),
            Val::List(ts) => ts.iter_mut().for_each(|t| own(self, t)),
            Val::Tuple(items) => {
                for item in items.iter_mut() {
                    self.own_results(item, first_node, span, outputs);
                }
            }
            _ => {}
        }
    }
}
