//! The SSA graph IR: one instantiated function as a list of typed nodes.
//!
//! A [`Graph`] is what lowering produces for one call signature: composed functions are inlined,
//! overloads resolved, attributes substituted and static `if`s decided, leaving primitive
//! [`Op`]s only. Nodes are in topological order (inputs always precede their users), every
//! value has a dtype and a symbolic shape, and each node remembers the source it came from.

use crate::dtype::DType;
use crate::op::Op;
use crate::shape::{Shape, SymDef};
use crate::span::Span;
use std::fmt;

/// A value of a graph: the output of node number `.0`. Printed `%0`, `%1`, ...
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueId(pub u32);

impl ValueId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for ValueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.0)
    }
}

/// Dtype and symbolic shape of a value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorType {
    pub dtype: DType,
    pub shape: Shape,
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.dtype, self.shape)
    }
}

/// Where a node came from: the source expression, and the chain of inlined functions
/// (outermost first) it was inlined through. Not part of the IR's semantics.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Origin {
    pub span: Option<Span>,
    pub inlined_from: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Node {
    pub op: Op,
    pub inputs: Vec<ValueId>,
    pub ty: TensorType,
    pub origin: Origin,
}

/// A tensor parameter of a graph.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GraphParam {
    pub name: String,
    pub ty: TensorType,
}

/// One instantiated function in SSA form.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Graph {
    /// The function's name with overload suffix, e.g. `add.scalar`; informational.
    pub name: String,
    /// Tensor parameters, in the function's parameter order (attributes are already
    /// substituted and do not appear).
    pub params: Vec<GraphParam>,
    /// Nodes in topological order; `ValueId(i)` is the output of `nodes[i]`.
    pub nodes: Vec<Node>,
    /// The function's results, in order.
    pub outputs: Vec<ValueId>,
    /// Definitions of the symbolic sizes used by the types (`Sym(i)` is `syms[i]`).
    pub syms: Vec<SymDef>,
    /// Pairs of sizes that must be equal at call time, checked by [`crate::bind_sizes`]:
    /// equalities the types rely on that no [`SymDef`] expresses (a derived size that lowering
    /// unified with another size or a constant, the element count of a `reshape` to a static
    /// shape). Types use one side; the verifier compares types modulo these equalities.
    pub checks: Vec<(crate::shape::Dim, crate::shape::Dim)>,
}

impl Graph {
    pub fn node(&self, v: ValueId) -> &Node {
        &self.nodes[v.index()]
    }

    pub fn ty(&self, v: ValueId) -> &TensorType {
        &self.nodes[v.index()].ty
    }

    /// Appends a node and returns its value. Inputs must already exist (not checked here;
    /// [`crate::verify::verify`] checks it).
    pub fn push(
        &mut self,
        op: Op,
        inputs: Vec<ValueId>,
        ty: TensorType,
        origin: Origin,
    ) -> ValueId {
        self.nodes.push(Node { op, inputs, ty, origin });
        ValueId(self.nodes.len() as u32 - 1)
    }
}
