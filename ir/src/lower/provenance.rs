//! Where a dtype comes from: when a call fails on dtypes (`s + bias(mask)` with an `i64`
//! mask in an `f32` model), the error is found where the dtypes meet, often several inlined
//! calls below the argument that brought the wrong dtype in. For each tensor argument of the
//! failing call, lowering follows the values it was computed from that have its dtype back to
//! the top-level function's parameters, and names them: a note saying which argument of the
//! call gave the dtype, and a secondary label at that parameter.

use super::call::Val;
use super::instantiate::Lowerer;
use crate::diagnostic::Diagnostic;
use crate::dispatch::{ArgRef, Rejection, RejectionKind};
use crate::graph::ValueId;
use crate::op::Op;
use crate::span::Span;

impl Lowerer<'_> {
    /// Adds to `d` (a call no overload accepts) where the dtypes of the arguments in conflict
    /// come from, when they come from the top-level function's arguments.
    pub(super) fn with_dtype_origins(
        &self,
        mut d: Diagnostic,
        positional: &[(Val, Span)],
        keywords: &[(String, Val, Span)],
        rejections: &[Rejection],
    ) -> Diagnostic {
        let arg = |r: ArgRef| match r {
            ArgRef::Positional(i) => positional.get(i).map(|(v, s)| (v, *s)),
            ArgRef::Keyword(i) => keywords.get(i).map(|(_, v, s)| (v, *s)),
        };
        let dtype_of = |v: &Val| match v {
            Val::Tensor(t) => Some(self.graph.ty(*t).dtype),
            _ => None,
        };
        // The blamed arguments, or when their dtype comes from no argument of the call, the
        // tensors whose dtype differs from theirs (the other side of a mismatch).
        let blamed: Vec<(&Val, Span)> = rejections
            .iter()
            .filter(|r| {
                matches!(
                    r.kind,
                    RejectionKind::DTypeMismatch
                        | RejectionKind::DTypeConstraint
                        | RejectionKind::FixedDType
                )
            })
            .filter_map(|r| r.culprit.and_then(arg))
            .filter(|(v, _)| matches!(v, Val::Tensor(_)))
            .collect();
        let Some(first) = blamed.first().and_then(|(v, _)| dtype_of(v)) else { return d };
        let traced = |v: &Val| match v {
            Val::Tensor(t) => !self.dtype_sources(*t).is_empty(),
            _ => false,
        };
        let candidates: Vec<(&Val, Span)> = if blamed.iter().any(|(v, _)| traced(v)) {
            blamed
        } else {
            let all = positional.iter().map(|(v, s)| (v, *s));
            let all = all.chain(keywords.iter().map(|(_, v, s)| (v, *s)));
            all.filter(|(v, _)| dtype_of(v).is_some_and(|t| t != first)).collect()
        };
        let mut seen: Vec<u32> = Vec::new();
        for (v, span) in candidates {
            let Val::Tensor(t) = v else { continue };
            let dtype = self.graph.ty(*t).dtype;
            let label = self.label(span, "the argument");
            for param in self.dtype_sources(*t) {
                let Some(p) = self.graph.params.get(param as usize) else { continue };
                let obvious = self.inlined.is_empty() && label == p.name;
                if seen.contains(&param) || obvious {
                    continue;
                }
                seen.push(param);
                let top = self.active.first().map_or("the function", String::as_str);
                let through = if self.inlined.is_empty() {
                    String::new()
                } else {
                    let chain: Vec<String> =
                        self.inlined.iter().map(|f| format!("`{f}`")).collect();
                    format!(", and reaches this call through {}", chain.join(" → "))
                };
                d = d.with_note(format!(
                    "`{label}` is {dtype} because argument `{}` of `{top}` was given as \
                     {dtype}{through}",
                    p.name
                ));
                if let Some(at) = self.param_span(param) {
                    d = d.with_secondary(at, format!("`{}` is given as {dtype}", p.name));
                }
            }
        }
        d
    }

    /// The top-level parameters `v`'s dtype comes from: the parameters reached from `v`
    /// through inputs of the same dtype.
    fn dtype_sources(&self, v: ValueId) -> Vec<u32> {
        let dtype = self.graph.ty(v).dtype;
        let mut stack = vec![v];
        let mut visited = vec![false; self.graph.nodes.len()];
        let mut params = Vec::new();
        while let Some(v) = stack.pop() {
            let Some(seen) = visited.get_mut(v.0 as usize) else { continue };
            if std::mem::replace(seen, true) {
                continue;
            }
            let node = self.graph.node(v);
            if let Op::Param(i) = node.op {
                if !params.contains(&i) {
                    params.push(i);
                }
                continue;
            }
            stack.extend(node.inputs.iter().filter(|i| self.graph.ty(**i).dtype == dtype));
        }
        params.sort_unstable();
        params
    }

    /// Where parameter `index` of the top-level function is declared.
    fn param_span(&self, index: u32) -> Option<Span> {
        self.graph.nodes.iter().find(|n| n.op == Op::Param(index)).and_then(|n| n.origin.span)
    }
}
