//! The closed set of primitive operations of the graph IR.
//!
//! Adding an op means adding a variant here and then following the compiler's exhaustiveness
//! errors through shape inference, the interpreter, the text format, the e-graph language, the
//! gradient table and the code generator. Attributes are fields of the variant; tensor operands
//! are the node's `inputs`.
//!
//! Elementwise ops broadcast their inputs implicitly, NumPy style: the input and output
//! [`crate::TensorType`]s say how.

use crate::attr::Scalar;
use crate::dtype::{DType, DTypeSet};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UnaryOp {
    Neg,
    Abs,
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Tanh,
    Sigmoid,
    Sin,
    Cos,
    Erf,
    Floor,
    Ceil,
    /// Round half to even, like NumPy.
    Round,
    Sign,
    Reciprocal,
    Log1p,
    Expm1,
    LogicalNot,
    /// `isnan`, `isinf`, `isfinite`: predicates, `bool` results. NumPy semantics on every dtype:
    /// an integer or bool is never NaN or infinite.
    IsNan,
    IsInf,
    IsFinite,
    /// Bitwise complement (`~x`); on `bool`, logical not.
    BitwiseNot,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Maximum,
    Minimum,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    LogicalAnd,
    LogicalOr,
    /// Python `//` (NumPy `floor_divide`): the floor of the quotient. Integers: `x // 0 == 0`
    /// (NumPy's value, without its warning), `MIN // -1 == MIN` (wraps).
    FloorDiv,
    /// Python `%` (NumPy `remainder`): the sign of the divisor, `x - floor_div(x, y) * y`.
    /// Integers: `x % 0 == 0`.
    Remainder,
    BitwiseAnd,
    BitwiseOr,
    BitwiseXor,
    /// `x << y`; a count outside `[0, bits)` gives 0 (NumPy).
    ShiftLeft,
    /// Arithmetic `x >> y`; a count outside `[0, bits)` gives the sign fill, 0 or -1 (NumPy).
    ShiftRight,
    /// `atan2(y, x)`: the angle of the point `(x, y)`, in `[-π, π]`.
    Atan2,
}

impl UnaryOp {
    /// The dtypes the op accepts (its result has the operand's dtype). The prelude's
    /// constraint on the op of the same name must be this set: a test checks it.
    pub fn dtypes(self) -> DTypeSet {
        use UnaryOp::*;
        match self {
            Neg | Abs | Sign => DTypeSet::NUMERIC,
            Exp | Log | Sqrt | Rsqrt | Tanh | Sigmoid | Sin | Cos | Erf | Floor | Ceil | Round
            | Reciprocal | Log1p | Expm1 => DTypeSet::FLOAT,
            LogicalNot => DTypeSet::BOOL,
            Asin | Acos | Atan | Sinh | Cosh => DTypeSet::FLOAT,
            IsNan | IsInf | IsFinite => DTypeSet::COMPUTE,
            BitwiseNot => DTypeSet::INT_BOOL,
        }
    }

    /// Predicates produce `bool` whatever their operand's dtype.
    pub fn is_predicate(self) -> bool {
        matches!(self, UnaryOp::IsNan | UnaryOp::IsInf | UnaryOp::IsFinite)
    }

    /// The result dtype for an operand of dtype `x` (in the op table).
    pub fn result_dtype(self, x: DType) -> DType {
        if self.is_predicate() {
            DType::Bool
        } else {
            x
        }
    }
}

impl BinaryOp {
    /// The dtypes the op accepts (both operands have the same dtype). See [`UnaryOp::dtypes`].
    pub fn dtypes(self) -> DTypeSet {
        use BinaryOp::*;
        match self {
            Add | Sub | Mul | Maximum | Minimum | Lt | Le | Gt | Ge => DTypeSet::NUMERIC,
            Div | Pow => DTypeSet::FLOAT,
            Eq | Ne => DTypeSet::COMPUTE,
            LogicalAnd | LogicalOr => DTypeSet::BOOL,
            Atan2 => DTypeSet::FLOAT,
            FloorDiv | Remainder => DTypeSet::NUMERIC,
            BitwiseAnd | BitwiseOr | BitwiseXor => DTypeSet::INT_BOOL,
            ShiftLeft | ShiftRight => DTypeSet::INT,
        }
    }

    /// The result dtype for operands of dtype `x` (in the op table).
    pub fn result_dtype(self, x: DType) -> DType {
        if self.is_comparison() {
            DType::Bool
        } else {
            x
        }
    }

    /// Comparisons produce `bool` whatever their operands' dtype.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReduceOp {
    Sum,
    Mean,
    Max,
    Min,
    Prod,
}

impl ReduceOp {
    /// The dtypes the reduction accepts. See [`UnaryOp::dtypes`].
    pub fn dtypes(self) -> DTypeSet {
        match self {
            ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min | ReduceOp::Prod => DTypeSet::NUMERIC,
            ReduceOp::Mean => DTypeSet::FLOAT,
        }
    }
}

/// The combining op of a scan (`cumsum`, `cumprod`). See [`Op::Scan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScanOp {
    Sum,
    Prod,
}

impl ScanOp {
    /// The dtypes the scan accepts (its result has the operand's dtype). Integers wrap.
    pub fn dtypes(self) -> DTypeSet {
        DTypeSet::NUMERIC
    }

    /// The prelude name (`cumsum`, `cumprod`).
    pub fn name(self) -> &'static str {
        match self {
            ScanOp::Sum => "cumsum",
            ScanOp::Prod => "cumprod",
        }
    }
}

/// The distribution of [`Op::Random`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RandomDist {
    /// `rand_like`: uniform on `[0, 1)`.
    Uniform,
    /// `randn_like`: standard normal.
    Normal,
}

impl RandomDist {
    /// The primitive's name (prelude and IR text format).
    pub fn name(self) -> &'static str {
        match self {
            RandomDist::Uniform => "rand_like",
            RandomDist::Normal => "randn_like",
        }
    }
}

pub const ALL_RANDOM: [RandomDist; 2] = [RandomDist::Uniform, RandomDist::Normal];

/// A primitive operation. Each node of a [`crate::Graph`] holds one.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// The `index`-th tensor parameter of the graph. No inputs.
    Param(u32),
    /// A rank-0 constant of the node's dtype. No inputs.
    Const(Scalar),
    /// Elementwise; 1 input.
    Unary(UnaryOp),
    /// Elementwise with NumPy broadcasting; 2 inputs. Comparisons give `bool`.
    Binary(BinaryOp),
    /// `where(cond, a, b)`, elementwise with broadcasting; 3 inputs, `cond` is `bool`.
    Where,
    /// `mul_add(a, b, c) = a·b + c` with ONE rounding (IEEE fused multiply-add), elementwise
    /// with broadcasting; 3 float inputs. Internal: made by the optimiser's FMA rules
    /// (`passes/src/optimize/rules/fma.rs`), never written by users.
    MulAdd,
    /// Elementwise conversion to `dtype`; 1 input.
    Cast(DType),
    /// Reduction over `axes` (sorted, unique, non-negative; empty never occurs after lowering:
    /// `dims = []` is lowered to all axes). 1 input.
    Reduce { op: ReduceOp, axes: Vec<u32>, keepdim: bool },
    /// Index of the maximum along `axis` (first on ties), `i64`. 1 input.
    ArgMax { axis: u32, keepdim: bool },
    /// Index of the minimum along `axis` (first on ties; a NaN is the minimum), `i64`. 1 input.
    ArgMin { axis: u32, keepdim: bool },
    /// The index along `axis` of every element of the node's shape, in the node's (numeric)
    /// dtype. No inputs (`arange`), or 1 input whose shape it copies and which is only read
    /// for its shape (`iota_like`), like [`Op::Full`].
    Iota { axis: u32 },
    /// Inclusive (or `exclusive`: the element itself left out) running sum or product along
    /// `axis`, from the end when `reverse`. Same shape and dtype; integers wrap. 1 input.
    Scan { op: ScanOp, axis: u32, exclusive: bool, reverse: bool },
    /// The gradient of `cumprod(x, axis, exclusive, reverse)` for an incoming gradient `g`:
    /// 2 inputs `(x, g)`, float. Exact where elements of `x` are zero (no division) and linear
    /// in the size: `dx_i = E_i · S_i` with `E` the exclusive cumprod and `S` the suffix
    /// recurrence `S_i = g_i + x_{i+1} S_{i+1}` (directions mirrored for `reverse`).
    CumprodGrad { axis: u32, exclusive: bool, reverse: bool },
    /// NumPy `matmul`: 2-D, or batched over leading axes with broadcasting. 2 inputs.
    /// (1-D operands are reshaped to 2-D by lowering, so the IR only sees rank >= 2.)
    MatMul,
    /// Same elements in row-major order, new shape (the node's shape). 1 input.
    /// `unsqueeze` and `squeeze` lower to this.
    Reshape,
    /// Permutes axes: output axis `i` is input axis `perm[i]`. 1 input.
    Transpose { perm: Vec<u32> },
    /// Broadcasts to the node's shape, NumPy rules. 1 input.
    BroadcastTo,
    /// Concatenation along `axis`; n >= 1 inputs.
    Concat { axis: u32 },
    /// Python slicing `start:end:step` along `axis` (negative indices count from the end,
    /// out-of-range bounds clamp, `step != 0`). 1 input.
    Slice { axis: u32, start: i64, end: Option<i64>, step: i64 },
    /// A tensor of the node's shape and dtype filled with `value`. No inputs, or 1 input whose
    /// shape it copies (`zeros_like`, `ones_like`; the input is then only read for its shape).
    Full { value: Scalar },
    /// Counter-based random numbers of the node's (float) dtype and shape (`rand_like`,
    /// `randn_like`): element `i` (flat, row-major) is a function of the key and `i` only
    /// ([`crate::philox`]). Inputs: the key (`i64`, shape `[]` or `[2]`, read at run time),
    /// then optionally the tensor whose shape it copies (only read for its shape, like `full`).
    Random { dist: RandomDist },
    /// A kernel registered from Rust (`Session::register_extern`). Fusion cuts the graph around
    /// it. `attrs` are the op's non-tensor arguments in parameter order.
    Extern { name: String, attrs: Vec<crate::attr::Attr> },
    /// Indexed reads and writes along `axis` (`ir/src/op_index.rs` documents the semantics):
    /// `gather(x, index)` (torch.gather), `index_select(x, index)` (np.take), and the
    /// out-of-place accumulations `scatter_add(x, index, src)` and `index_add(x, index, src)`.
    /// The index is `i32` or `i64`; negative indices count from the end.
    Index { kind: IndexKind, axis: u32 },
    /// Sliding-window ops on NCHW images (`ir/src/op_window.rs` documents the semantics):
    /// `conv2d`, `conv_transpose2d`, `max_pool2d`, `avg_pool2d` and the internal ops of
    /// their gradients. Float operands; attributes are compile-time, sizes run-time.
    Window { kind: WindowKind, attrs: WindowAttrs },
}

pub use crate::op_index::IndexKind;
pub use crate::op_window::{WindowAttrs, WindowKind};

impl Op {
    /// The op-table row for dtypes: what the op's data operands may be (for `where`, the two
    /// branches; its condition is `bool`). Shape and result-type inference,
    /// [`crate::lower::infer::infer`], enforces it for lowering, the verifier and the optimiser.
    pub fn operand_dtypes(&self) -> DTypeSet {
        match self {
            Op::Unary(u) => u.dtypes(),
            Op::Binary(b) => b.dtypes(),
            Op::Reduce { op, .. } => op.dtypes(),
            Op::ArgMax { .. } | Op::ArgMin { .. } | Op::MatMul => DTypeSet::NUMERIC,
            Op::Scan { op, .. } => op.dtypes(),
            Op::CumprodGrad { .. } | Op::MulAdd => DTypeSet::FLOAT,
            Op::Iota { .. } => DTypeSet::ALL,
            Op::Index { kind, .. } => kind.dtypes(),
            Op::Window { kind, .. } => kind.dtypes(),
            Op::Param(_)
            | Op::Const(_)
            | Op::Where
            | Op::Cast(_)
            | Op::Reshape
            | Op::Transpose { .. }
            | Op::BroadcastTo
            | Op::Concat { .. }
            | Op::Slice { .. }
            | Op::Full { .. }
            | Op::Random { .. }
            | Op::Extern { .. } => DTypeSet::ALL,
        }
    }

    /// The op-table row for the dtypes an op *creates* from no data: `iota` counts in the
    /// numeric dtypes, `rand_like`/`randn_like` draw floats; every other op's result dtype
    /// follows from its operands or its declaration (all dtypes here). What a user may ask
    /// for is [`Op::accepted_created_dtypes`].
    pub fn created_dtypes(&self) -> DTypeSet {
        match self {
            Op::Iota { .. } => DTypeSet::NUMERIC,
            Op::Random { .. } => DTypeSet::FLOAT,
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
            | Op::Full { .. }
            | Op::Extern { .. }
            | Op::Index { .. }
            | Op::Window { .. } => DTypeSet::ALL,
        }
    }

    /// The `dtype` a user may ask a creating op for: the IR row ([`Op::created_dtypes`]) plus
    /// the storage dtypes whose compute dtype it contains (lowering creates the value in the
    /// compute dtype and casts it: integers wrap, floats round). The prelude's constraint on
    /// `iota_like`'s, `arange`'s and `rand_like`'s `dtype` says this set, so `tfnc check`
    /// accepts exactly what runs.
    pub fn accepted_created_dtypes(&self) -> DTypeSet {
        self.created_dtypes().with_storage()
    }

    /// What a user may pass: the IR row ([`Op::operand_dtypes`]) plus the storage dtypes whose
    /// compute dtype it contains (lowering widens those, `ir::storage`). The prelude's
    /// constraints say this set.
    pub fn accepted_dtypes(&self) -> DTypeSet {
        self.operand_dtypes().with_storage()
    }

    /// True for ops computed independently per output element from the same-index elements
    /// of their (broadcast) inputs.
    pub fn is_elementwise(&self) -> bool {
        matches!(
            self,
            Op::Unary(_) | Op::Binary(_) | Op::Where | Op::MulAdd | Op::Cast(_) | Op::Const(_)
        )
    }

    /// The op's name in the IR text format.
    pub fn name(&self) -> String {
        match self {
            Op::Param(_) => "param".into(),
            Op::Const(_) => "const".into(),
            Op::Unary(u) => unary_name(*u).into(),
            Op::Binary(b) => binary_name(*b).into(),
            Op::Where => "where".into(),
            Op::MulAdd => "mul_add".into(),
            Op::Cast(_) => "cast".into(),
            Op::Reduce { op, .. } => reduce_name(*op).into(),
            Op::ArgMax { .. } => "argmax".into(),
            Op::ArgMin { .. } => "argmin".into(),
            Op::Iota { .. } => "iota".into(),
            Op::Scan { op, .. } => op.name().into(),
            Op::CumprodGrad { .. } => "cumprod_grad".into(),
            Op::MatMul => "matmul".into(),
            Op::Reshape => "reshape".into(),
            Op::Transpose { .. } => "transpose".into(),
            Op::BroadcastTo => "broadcast_to".into(),
            Op::Concat { .. } => "concat".into(),
            Op::Slice { .. } => "slice".into(),
            Op::Full { .. } => "full".into(),
            Op::Random { dist } => dist.name().into(),
            Op::Extern { name, .. } => format!("extern.{name}"),
            Op::Index { kind, .. } => kind.name().into(),
            Op::Window { kind, .. } => kind.name().into(),
        }
    }
}

pub fn unary_name(u: UnaryOp) -> &'static str {
    use UnaryOp::*;
    match u {
        Neg => "neg",
        Abs => "abs",
        Exp => "exp",
        Log => "log",
        Sqrt => "sqrt",
        Rsqrt => "rsqrt",
        Tanh => "tanh",
        Sigmoid => "sigmoid",
        Sin => "sin",
        Cos => "cos",
        Erf => "erf",
        Floor => "floor",
        Ceil => "ceil",
        Round => "round",
        Sign => "sign",
        Reciprocal => "reciprocal",
        Log1p => "log1p",
        Expm1 => "expm1",
        LogicalNot => "logical_not",
        IsNan => "isnan",
        IsInf => "isinf",
        IsFinite => "isfinite",
        BitwiseNot => "bitwise_not",
        Asin => "asin",
        Acos => "acos",
        Atan => "atan",
        Sinh => "sinh",
        Cosh => "cosh",
    }
}

pub fn binary_name(b: BinaryOp) -> &'static str {
    use BinaryOp::*;
    match b {
        Add => "add",
        Sub => "sub",
        Mul => "mul",
        Div => "div",
        Pow => "pow",
        Maximum => "maximum",
        Minimum => "minimum",
        Eq => "eq",
        Ne => "ne",
        Lt => "lt",
        Le => "le",
        Gt => "gt",
        Ge => "ge",
        LogicalAnd => "logical_and",
        LogicalOr => "logical_or",
        FloorDiv => "floor_div",
        Remainder => "remainder",
        BitwiseAnd => "bitwise_and",
        BitwiseOr => "bitwise_or",
        BitwiseXor => "bitwise_xor",
        ShiftLeft => "shift_left",
        ShiftRight => "shift_right",
        Atan2 => "atan2",
    }
}

pub fn reduce_name(r: ReduceOp) -> &'static str {
    match r {
        ReduceOp::Sum => "sum",
        ReduceOp::Mean => "mean",
        ReduceOp::Max => "max",
        ReduceOp::Min => "min",
        ReduceOp::Prod => "prod",
    }
}

pub const ALL_UNARY: [UnaryOp; 28] = {
    use UnaryOp::*;
    [
        Neg, Abs, Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Sin, Cos, Erf, Floor, Ceil, Round, Sign,
        Reciprocal, Log1p, Expm1, LogicalNot, // Predicates and bitwise.
        IsNan, IsInf, IsFinite, BitwiseNot, // Inverse trigonometric and hyperbolic.
        Asin, Acos, Atan, Sinh, Cosh,
    ]
};

pub const ALL_BINARY: [BinaryOp; 23] = {
    use BinaryOp::*;
    [
        Add, Sub, Mul, Div, Pow, Maximum, Minimum, Eq, Ne, Lt, Le, Gt, Ge, LogicalAnd, LogicalOr,
        // Integer division and bitwise.
        FloorDiv, Remainder, BitwiseAnd, BitwiseOr, BitwiseXor, ShiftLeft, ShiftRight, Atan2,
    ]
};

pub const ALL_REDUCE: [ReduceOp; 5] =
    [ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod];

impl fmt::Display for UnaryOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(unary_name(*self))
    }
}

impl fmt::Display for BinaryOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(binary_name(*self))
    }
}
