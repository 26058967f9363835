//! Size guards: what an instance assumes about sizes that are only known at call time.
//!
//! A function is instantiated per signature, and the signature says which *input* axes have
//! size 1. A size the graph *derives* (`reshape(x, [4, -1])`, a `slice` length, a `concat`
//! sum) may also come out as 1, and where it meets another size in broadcasting, `squeeze` or
//! `broadcast_to`, NumPy's answer depends on it: a size 1 broadcasts. Lowering decides each
//! such size from the shapes of the call being compiled (a 1 becomes the constant 1, checked;
//! anything else stays symbolic) and records the decision here. A later call with the same
//! signature may reuse the instance only if [`SizeGuards::hold`] for its shapes; otherwise the
//! caller instantiates again for that call (and keeps both). Most graphs have no guards, so a
//! new batch size is still a plain cache hit.
//!
//! The same holds for two sizes an op allows to differ but which are usually equal: a
//! `gather`/`scatter_add` index may be smaller than `x` on the axes it does not index
//! (torch), but an index of `x`'s sizes is what lets the optimiser move a `gather` through
//! elementwise ops onto its operands (cross-entropy). Lowering unifies the two when the
//! call's sizes are equal and records the equality here ([`SizeGuards::equal`]).

use crate::bind::Binder;
use crate::graph::GraphParam;
use crate::shape::{Dim, SymDef};

/// The assumptions of one instance, evaluable from a call's input shapes alone.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct SizeGuards {
    /// The instance graph's parameters (their symbols are bound from the inputs).
    pub params: Vec<GraphParam>,
    /// The instance graph's symbol table, plus any definitions only the guards use.
    pub syms: Vec<SymDef>,
    /// Each guarded size, and whether it must be 1 (`true`) or must not be 1 (`false`).
    pub conds: Vec<(Dim, bool)>,
    /// Pairs of sizes that must be equal (each evaluated from its own input axes).
    pub equal: Vec<(Dim, Dim)>,
}

impl SizeGuards {
    pub fn is_empty(&self) -> bool {
        self.conds.is_empty() && self.equal.is_empty()
    }

    /// Whether inputs of these shapes (in parameter order) satisfy every assumption. When a
    /// guarded size cannot be evaluated (the shapes do not fit the parameters, a division is
    /// not exact, ...), the answer is `true`: running the instance reports that error.
    pub fn hold(&self, input_shapes: &[&[usize]]) -> bool {
        if self.is_empty() {
            return true;
        }
        let fits = self.params.len() == input_shapes.len()
            && self.params.iter().zip(input_shapes).all(|(p, s)| p.ty.shape.rank() == s.len());
        if !fits {
            return true;
        }
        let mut binder = Binder {
            params: &self.params,
            syms: &self.syms,
            input_shapes,
            values: smallvec::smallvec![None; self.syms.len()],
        };
        let mut value = |d: Dim| match d {
            Dim::Const(c) => Ok(usize::try_from(c).unwrap_or(usize::MAX)),
            Dim::Sym(s) => binder.eval_sym(s.0, 0),
        };
        let ones = self.conds.iter().all(|&(d, one)| value(d).map_or(true, |v| (v == 1) == one));
        ones && self.equal.iter().all(|&(a, b)| match (value(a), value(b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => true,
        })
    }

    /// The guards as users read them: each size in the language's spelling (`size(x, 0) / 2
    /// != 1`, `size(e, 1) == size(ids, 1)`), for messages.
    pub fn readable(&self) -> String {
        let names = crate::bind::Describe { params: &self.params, syms: &self.syms };
        let dim = |d: &Dim| match d {
            Dim::Const(c) => c.to_string(),
            Dim::Sym(s) => names.describe(s.0),
        };
        let parts: Vec<String> = self
            .conds
            .iter()
            .map(|(d, one)| format!("{} {} 1", dim(d), if *one { "==" } else { "!=" }))
            .chain(self.equal.iter().map(|(a, b)| format!("{} == {}", dim(a), dim(b))))
            .collect();
        parts.join(", ")
    }

    /// The guards as text, e.g. `s2 != 1, s3 == 1` (for logs).
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .conds
            .iter()
            .map(|(d, one)| format!("{d} {} 1", if *one { "==" } else { "!=" }))
            .chain(self.equal.iter().map(|(a, b)| format!("{a} == {b}")))
            .collect();
        parts.join(", ")
    }
}
