//! The extraction cost model: what a term will cost *after fusion*, in byte-equivalents.
//!
//! Fusion turns every connected group of elementwise ops (with `broadcast_to`, `reshape`,
//! constants and parameters as free inputs) into one loop that keeps intermediates in
//! registers. So an elementwise op costs only its arithmetic per element, while a
//! non-elementwise op (reduction, matmul, transpose, concat, slice, extern) is a kernel
//! boundary: a fixed [`KERNEL_BOUNDARY`] cost plus the memory traffic of materialising its
//! inputs and its result, plus its own arithmetic. Symbolic dimensions are priced as
//! [`SYM_SIZE`] elements. Every tensor op costs a little more than zero, so extraction never
//! prefers a longer chain of free ops, and cycles through identity ops are never chosen.

use super::analysis::ClassData;
use super::infer::estimated_elements;
use super::language::TfnNode;
use egg::Id;
use tfn_ir::{BinaryOp, ReduceOp, TensorType, UnaryOp};

/// Cost of one kernel launch and its loop set-up, in byte-equivalents.
pub const KERNEL_BOUNDARY: f64 = 4096.0;
/// Assumed size of a symbolic dimension.
pub const SYM_SIZE: f64 = 1024.0;
/// Cost of one unit of arithmetic per element, relative to one byte of memory traffic.
pub const ARITHMETIC: f64 = 0.25;
/// Cost of an op that fusion makes free (constants, shape views).
pub const FREE_OP: f64 = 0.5;

/// Relative arithmetic cost per element of an elementwise unary op (its op-table row).
pub fn unary_weight(u: UnaryOp) -> f64 {
    u.cost_weight()
}

/// Relative arithmetic cost per element of `mul_add`: one instruction (`vfmadd`), where a
/// `mul` and an `add` are two. Not less than one: on the FMA pipes a `mul_add` is a `mul`, and
/// `x*(y + e)` (an add and a multiply) is as cheap as `mul_add(x, y, x*e)` (two FMA-pipe
/// instructions), so ties keep the plain form (`Binary` sorts before `MulAdd`).
pub const MUL_ADD_WEIGHT: f64 = 1.0;

/// Relative arithmetic cost per element of `rand_like`/`randn_like`.
pub const RANDOM_WEIGHT: f64 = 24.0;

/// Relative arithmetic cost per element of an elementwise binary op (its op-table row).
pub fn binary_weight(b: BinaryOp) -> f64 {
    b.cost_weight()
}

fn bytes(ty: Option<&TensorType>) -> f64 {
    ty.map_or(0.0, |t| estimated_elements(&t.shape, SYM_SIZE) * t.dtype.size_bytes() as f64)
}

fn elements(ty: Option<&TensorType>) -> f64 {
    ty.map_or(1.0, |t| estimated_elements(&t.shape, SYM_SIZE))
}

/// The cost of `node` itself (children excluded). `class` is the facts of the node's e-class
/// and `child` gives the facts of a child e-class.
pub fn node_cost<'a>(
    node: &TfnNode,
    class: &ClassData,
    child: impl Fn(Id) -> &'a ClassData,
) -> f64 {
    use TfnNode::*;
    let out = class.ty.as_ref();
    let elementwise = |weight: f64| FREE_OP + elements(out) * weight * ARITHMETIC;
    let boundary = |inputs: &[Id], work: f64| {
        let read: f64 = inputs.iter().map(|&i| bytes(child(i).ty.as_ref())).sum();
        KERNEL_BOUNDARY + read + bytes(out) + work * ARITHMETIC
    };
    match node {
        Int(_) | Float(_) | Bool(_) | DType(_) | Sym(_) | List(_) | Shape(_) => 0.0,
        Param(_) => 0.0,
        Const(_) | Full(_) | Reshape(_) | BroadcastTo(_) => FREE_OP,
        Unary(u, _) => elementwise(unary_weight(*u)),
        Binary(b, _) => elementwise(binary_weight(*b)),
        Where(_) | Cast(_) => elementwise(1.0),
        MulAdd(_) => elementwise(MUL_ADD_WEIGHT),
        // Ten Philox rounds per element, plus `randn`'s log, sqrt and cosine.
        Random(..) => elementwise(RANDOM_WEIGHT),
        Reduce(op, [x, ..]) => {
            let work =
                elements(child(*x).ty.as_ref()) * if *op == ReduceOp::Prod { 2.0 } else { 1.0 };
            boundary(&[*x], work)
        }
        ArgMax([x, ..]) | ArgMin([x, ..]) => boundary(&[*x], elements(child(*x).ty.as_ref())),
        // An index computed inside the consuming loop, like a constant.
        Iota(_) => elementwise(1.0),
        Scan(_, [x, ..]) => boundary(&[*x], elements(child(*x).ty.as_ref())),
        CumprodGrad([x, g, ..]) => boundary(&[*x, *g], 3.0 * elements(out)),
        MatMul([a, b]) => {
            let k = child(*a).ty.as_ref().and_then(|t| t.shape.0.last().copied());
            let k = k.map_or(SYM_SIZE, |d| d.as_const().map_or(SYM_SIZE, |c| c as f64));
            boundary(&[*a, *b], 2.0 * elements(out) * k)
        }
        Transpose([x, _]) => boundary(&[*x], 0.0),
        Slice([x, ..]) => boundary(&[*x], 0.0),
        Concat(c) => boundary(&c[2..], 0.0),
        Extern(c) => KERNEL_BOUNDARY + boundary(&c[3..], 0.0),
        // Reads are an address computation and a load inside the consuming loop; the
        // accumulations are kernels of their own over `src`.
        Index(kind, _) if kind.is_read() => elementwise(4.0),
        // A window op reads its operands and does a window's work per result element.
        Window(_, c) => boundary(&c[2..], elements(out) * SYM_SIZE),
        Index(_, c) => {
            let inputs = &c[..c.len().saturating_sub(1)];
            let work = inputs.last().map_or(1.0, |s| elements(child(*s).ty.as_ref()));
            boundary(inputs, work)
        }
    }
}
