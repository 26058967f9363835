//! Fusion: partitions an optimised [`Graph`] into an ordered list of kernels.
//!
//! # Design: a deterministic pass over the extracted graph
//!
//! The e-graph optimiser decides *what* to compute (algebraic simplification, with a cost that
//! charges materialising non-elementwise results); this pass decides *how to group* the chosen
//! computation into loops. Doing the grouping after extraction rather than as "fused" e-nodes
//! keeps the e-graph language small (no kernel nodes whose legality depends on shapes, loop
//! orders and cycles between groups, which rewrite rules cannot express), keeps extraction a
//! plain tree cost, and makes fusion a greedy, deterministic, linear-ish walk whose result is
//! easy to print and test. The price is that the optimiser cannot trade a rewrite against a
//! better fusion; its cost model approximates that by pricing materialised values.
//!
//! # Rules
//!
//! Nodes are visited in topological order and either join a group of one of their producers or
//! start a new group:
//! - `rand_like`/`randn_like` start an elementwise group that consumers join (so dropout is
//!   one loop with its consumer); their key is always a kernel input, read whole, never
//!   computed in the same kernel, copied in as a constant or read through a view;
//! - elementwise ops (`Unary`, `Binary`, `Where`, `Cast`, `BroadcastTo`, `Full`, `Iota`: an
//!   index computed inside the loop, reading nothing) join producer
//!   groups whose *domain* (loop shape) equals their shape, merging several producer groups
//!   into one loop (so `a*x + b*z + c` is one kernel); rank-0 `Const`s are copied into every
//!   kernel that uses them and never become kernel inputs;
//! - a `Reduce` (over any axes) absorbs its elementwise producers and later keeps absorbing
//!   consumers whose shape is the reduction's domain (element level) or the domain with the
//!   reduced axes set to 1 (row level: `keepdim` results, or results of reductions over
//!   leading axes, which lay out the same): softmax and layer norm become one kernel that runs
//!   several passes over each row, and a column sum absorbs its producers and epilogue;
//! - a `MatMul` absorbs elementwise consumers of its output shape (bias, activation epilogue);
//! - `Reshape` is a zero-copy [`KernelKind::View`]; `Transpose`, `Slice`, `Concat` are
//!   [`KernelKind::Copy`]; `ArgMax` is [`KernelKind::ArgMax`], `ArgMin`
//!   [`KernelKind::ArgMin`]; `Scan` and `CumprodGrad` are [`KernelKind::Scan`]; `Extern` cuts
//!   the graph;
//! - indexed reads (`gather`, `index_select`) are elementwise over their result: the read of
//!   `x` at the computed address happens inside the consuming loop, so a kernel never
//!   contains the producer of an indexed read's `x` or index (both are kernel inputs: the
//!   address of any element of `x` may be needed at any step), and indexed reads do not
//!   join matmul epilogues; `scatter_add`/`index_add` are [`KernelKind::Scatter`];
//! - window ops are [`KernelKind::Window`]; `conv2d` and `conv_transpose2d` absorb
//!   elementwise consumers of their output shape (bias, activation), like a `MatMul`;
//! - shape ops become index arithmetic where they can: a `Slice` or `Transpose` whose
//!   innermost non-size-1 axis is unit-stride in its source ([`ViewOp`]; e.g. a transpose
//!   keeping the last axis) read only by elementwise/reduction kernels, or a last-two-axes
//!   `Transpose` read only as matmul operands, and not returned, has no kernel of its own;
//!   each consuming kernel lists the view node and reads the source with the view's offset
//!   and strides.
//!
//! A merge is taken only when the group graph stays acyclic, so kernels can always be ordered,
//! and when the kernel stays within [`MAX_KERNEL_WEIGHT`] (its nodes plus the constants they
//! read): compile time grows with the square of the values live across a kernel's loops, so
//! a chain of thousands of elementwise `let`s becomes several kernels of bounded size.

mod dot;
mod group;
mod print;
mod verify;
mod view;

pub use dot::{html, param_node, print_dot, quoted, result_node, DotPart, DOT_STYLE};
pub use group::{fuse, MAX_KERNEL_WEIGHT};
pub use print::print_fused;
pub use verify::verify_fused;
pub use view::{
    contiguous_strides, matmul_operand_chain, matmul_operand_view, matmul_operand_widening, ViewOp,
};

use tfn_ir::{Shape, ValueId};

/// How a kernel is computed; the code generator picks a strategy per kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelKind {
    /// One loop nest over `domain` computing a chain of elementwise ops.
    Elementwise,
    /// Reductions of `domain` over `axes` (any of them), with their elementwise producers and
    /// row-level consumers fused in: passes over each row when the last axis is reduced,
    /// blocks of columns accumulated over the reduced outer axes otherwise.
    Reduction,
    /// A matrix product followed by an elementwise epilogue over its output.
    MatMul,
    /// `Reshape`: the output shares the input's (contiguous) buffer.
    View,
    /// Data movement: `Transpose`, `Slice`, `Concat`.
    Copy,
    /// An extern op, run through the session's registered kernel.
    Extern,
    /// `ArgMax`, on its own.
    ArgMax,
    /// `ArgMin`, on its own.
    ArgMin,
    /// A `Scan` (`cumsum`, `cumprod`) or `CumprodGrad`, on its own: sequential along its axis.
    Scan,
    /// `scatter_add` / `index_add`, on its own: a copy of `x` then accumulation of `src` in
    /// row-major order (deterministic).
    Scatter,
    /// A window op (`conv2d`, pooling, their gradients): a native kernel; the forward
    /// convolutions absorb an elementwise epilogue over their output, like a matmul.
    Window,
}

impl KernelKind {
    pub fn name(self) -> &'static str {
        match self {
            KernelKind::Elementwise => "elementwise",
            KernelKind::Reduction => "reduction",
            KernelKind::MatMul => "matmul",
            KernelKind::View => "view",
            KernelKind::Copy => "copy",
            KernelKind::Extern => "extern",
            KernelKind::ArgMax => "argmax",
            KernelKind::ArgMin => "argmin",
            KernelKind::Scan => "scan",
            KernelKind::Scatter => "scatter",
            KernelKind::Window => "window",
        }
    }
}

/// One kernel: a set of graph nodes computed together.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Kernel {
    pub kind: KernelKind,
    /// The loop shape: the output shape for elementwise and matmul kernels, the reduction
    /// input's shape for reductions; the single node's shape otherwise.
    pub domain: Shape,
    /// Reduced axes of the domain (sorted); empty unless `kind` is `Reduction`.
    pub axes: Vec<u32>,
    /// The nodes this kernel computes, in topological order (including copies of the rank-0
    /// constants it uses).
    pub nodes: Vec<ValueId>,
    /// Values read from outside: graph parameters or outputs of earlier kernels (sorted).
    pub inputs: Vec<ValueId>,
    /// Values of this kernel needed by later kernels or returned by the graph (sorted).
    pub outputs: Vec<ValueId>,
}

/// A graph partitioned into kernels, in an order that respects their dependencies.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct FusedGraph {
    pub kernels: Vec<Kernel>,
}
