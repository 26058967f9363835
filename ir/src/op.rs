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

/// The elementwise unary ops, declared once. Each row is
/// `Variant "name" DTYPES Result cost Wrap Sign`:
///
/// - `"name"`: the prelude's and the IR text format's name ([`UnaryOp::name`],
///   [`UnaryOp::from_name`]); the e-graph language and the prelude lookup derive from it;
/// - `DTYPES`: the [`DTypeSet`] the operand may have ([`UnaryOp::dtypes`]); the prelude's
///   constraint on the op must be this set (`frontend/tests/op_table.rs` checks it);
/// - `Result`: `Same` (the operand's dtype) or `Bool` (a predicate);
/// - `cost`: arithmetic per element in simple instructions, for the optimiser's cost model;
/// - `Wrap`: `Wraps` where the low 8 bits of an integer result depend only on the low 8 bits
///   of the operands (ring operations modulo 2⁸, bitwise logic), so the op may read a wide
///   `i32` value of an `i8`/`u8` computation; else `NoWrap`;
/// - `Sign`: what the optimiser may assume of the result's sign ([`UnarySign`]).
///
/// The callback receives the rows after its own arguments; [`UnaryOp`] and its facts are
/// `define_unary!`'s expansion, and the interpreter's per-op monomorphisation expands the
/// same table, so a new row reaches every `match` on [`UnaryOp`] and the compiler lists the
/// places that must say what the op does (`ARCHITECTURE.md`, "Adding an op").
macro_rules! unary_ops {
    ($callback:ident ! ($($args:tt)*)) => {
        $callback! { $($args)*
            Neg "neg" NUMERIC Same 1.0 Wraps Unknown,
            Abs "abs" NUMERIC Same 1.0 NoWrap NonNegative,
            Exp "exp" FLOAT Same 16.0 NoWrap NonNegative,
            Log "log" FLOAT Same 16.0 NoWrap Unknown,
            /// `log2(x)`, the base-2 logarithm (NumPy `log2`).
            Log2 "log2" FLOAT Same 16.0 NoWrap Unknown,
            Sqrt "sqrt" FLOAT Same 4.0 NoWrap NonNegative,
            Rsqrt "rsqrt" FLOAT Same 4.0 NoWrap KeepsNonNegative,
            Tanh "tanh" FLOAT Same 16.0 NoWrap Unknown,
            Sigmoid "sigmoid" FLOAT Same 16.0 NoWrap NonNegative,
            Sin "sin" FLOAT Same 16.0 NoWrap Unknown,
            Cos "cos" FLOAT Same 16.0 NoWrap Unknown,
            Erf "erf" FLOAT Same 16.0 NoWrap Unknown,
            Floor "floor" FLOAT Same 1.0 NoWrap Unknown,
            Ceil "ceil" FLOAT Same 1.0 NoWrap Unknown,
            /// Round half to even, like NumPy.
            Round "round" FLOAT Same 1.0 NoWrap Unknown,
            Sign "sign" NUMERIC Same 1.0 NoWrap Unknown,
            Reciprocal "reciprocal" FLOAT Same 4.0 NoWrap KeepsNonNegative,
            Log1p "log1p" FLOAT Same 16.0 NoWrap Unknown,
            Expm1 "expm1" FLOAT Same 16.0 NoWrap Unknown,
            LogicalNot "logical_not" BOOL Same 1.0 NoWrap Unknown,
            /// `isnan`, `isinf`, `isfinite`: predicates, `bool` results. NumPy semantics on
            /// every dtype: an integer or bool is never NaN or infinite.
            IsNan "isnan" COMPUTE Bool 1.0 NoWrap Unknown,
            IsInf "isinf" COMPUTE Bool 1.0 NoWrap Unknown,
            IsFinite "isfinite" COMPUTE Bool 1.0 NoWrap Unknown,
            /// Bitwise complement (`~x`); on `bool`, logical not.
            BitwiseNot "bitwise_not" INT_BOOL Same 1.0 Wraps Unknown,
            Asin "asin" FLOAT Same 16.0 NoWrap Unknown,
            Acos "acos" FLOAT Same 16.0 NoWrap Unknown,
            Atan "atan" FLOAT Same 16.0 NoWrap Unknown,
            Sinh "sinh" FLOAT Same 16.0 NoWrap Unknown,
            Cosh "cosh" FLOAT Same 16.0 NoWrap Unknown,
        }
    };
}

/// The elementwise binary ops, declared once: rows `Variant "name" DTYPES Result cost Wrap`, as
/// [`unary_ops!`] (both operands have the same dtype; `Bool` marks the comparisons).
macro_rules! binary_ops {
    ($callback:ident ! ($($args:tt)*)) => {
        $callback! { $($args)*
            Add "add" NUMERIC Same 1.0 Wraps,
            Sub "sub" NUMERIC Same 1.0 Wraps,
            Mul "mul" NUMERIC Same 1.0 Wraps,
            Div "div" FLOAT Same 4.0 NoWrap,
            Pow "pow" FLOAT Same 24.0 NoWrap,
            Maximum "maximum" NUMERIC Same 1.0 NoWrap,
            Minimum "minimum" NUMERIC Same 1.0 NoWrap,
            Eq "eq" COMPUTE Bool 1.0 NoWrap,
            Ne "ne" COMPUTE Bool 1.0 NoWrap,
            Lt "lt" NUMERIC Bool 1.0 NoWrap,
            Le "le" NUMERIC Bool 1.0 NoWrap,
            Gt "gt" NUMERIC Bool 1.0 NoWrap,
            Ge "ge" NUMERIC Bool 1.0 NoWrap,
            LogicalAnd "logical_and" BOOL Same 1.0 NoWrap,
            LogicalOr "logical_or" BOOL Same 1.0 NoWrap,
            /// Python `//` (NumPy `floor_divide`): the floor of the quotient. Integers:
            /// `x // 0 == 0` (NumPy's value, without its warning), `MIN // -1 == MIN` (wraps).
            /// No vector instruction for integers; floats take `fmod`'s loop.
            FloorDiv "floor_div" NUMERIC Same 8.0 NoWrap,
            /// Python `%` (NumPy `remainder`): the sign of the divisor,
            /// `x - floor_div(x, y) * y`. Integers: `x % 0 == 0`.
            Remainder "remainder" NUMERIC Same 8.0 NoWrap,
            BitwiseAnd "bitwise_and" INT_BOOL Same 1.0 Wraps,
            BitwiseOr "bitwise_or" INT_BOOL Same 1.0 Wraps,
            BitwiseXor "bitwise_xor" INT_BOOL Same 1.0 Wraps,
            /// `x << y`; a count outside `[0, bits)` gives 0 (NumPy).
            ShiftLeft "shift_left" INT Same 1.0 NoWrap,
            /// Arithmetic `x >> y`; a count outside `[0, bits)` gives the sign fill, 0 or -1
            /// (NumPy).
            ShiftRight "shift_right" INT Same 1.0 NoWrap,
            /// `atan2(y, x)`: the angle of the point `(x, y)`, in `[-π, π]`.
            Atan2 "atan2" FLOAT Same 24.0 NoWrap,
        }
    };
}

/// What the optimiser may assume of a unary op's result sign, NaN aside (a column of
/// [`unary_ops!`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnarySign {
    /// Nothing.
    Unknown,
    /// Every element is NaN or `>= 0` (`exp` may underflow to 0).
    NonNegative,
    /// Non-negative where the operand is (`reciprocal`, `rsqrt` of `>= 0` or `> 0`).
    KeepsNonNegative,
}

/// The 8-bit wrapping column of [`unary_ops!`], [`binary_ops!`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wrap {
    /// Commutes with wrapping to 8 bits.
    Wraps,
    /// Does not (or is not an integer op).
    NoWrap,
}

/// The result dtype rule of an elementwise op (a column of [`unary_ops!`], [`binary_ops!`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResultDType {
    /// The operands' dtype.
    Same,
    /// `bool`: predicates and comparisons.
    Bool,
}

/// Expands an op table into its enum, the `ALL` list, names and per-op facts.
macro_rules! define_elementwise {
    (($enum:ident, $all:ident)
        $($(#[doc = $doc:literal])* $v:ident $name:literal $dtypes:ident $result:ident
          $cost:literal $wrap:ident $($sign:ident)?,)*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $enum {
            $($(#[doc = $doc])* $v,)*
        }

        /// Every op of the table, in declaration order.
        pub const $all: &[$enum] = &[$($enum::$v),*];

        impl $enum {
            /// Every op of the table, in declaration order.
            pub const ALL: &'static [$enum] = $all;

            /// The prelude's and the IR text format's name.
            pub fn name(self) -> &'static str {
                match self {
                    $($enum::$v => $name,)*
                }
            }

            /// The op of a prelude / IR text name.
            pub fn from_name(name: &str) -> Option<Self> {
                match name {
                    $($name => Some($enum::$v),)*
                    _ => None,
                }
            }

            /// The dtypes the op accepts. The prelude's constraint on the op of the same name
            /// must be this set: a test checks it.
            pub fn dtypes(self) -> DTypeSet {
                match self {
                    $($enum::$v => DTypeSet::$dtypes,)*
                }
            }

            /// Whether the result is `bool` whatever the operands' dtype.
            pub fn result_is_bool(self) -> bool {
                match self {
                    $($enum::$v => ResultDType::$result == ResultDType::Bool,)*
                }
            }

            /// The result dtype for operands of dtype `x` (in the op table).
            pub fn result_dtype(self, x: DType) -> DType {
                if self.result_is_bool() {
                    DType::Bool
                } else {
                    x
                }
            }

            /// Whether the low 8 bits of an integer result depend only on the low 8 bits of
            /// the operands ([`Wrap`]).
            pub fn wraps_to_8_bits(self) -> bool {
                match self {
                    $($enum::$v => Wrap::$wrap == Wrap::Wraps,)*
                }
            }

            /// Arithmetic per element in simple instructions (the optimiser's cost model).
            pub fn cost_weight(self) -> f64 {
                match self {
                    $($enum::$v => $cost,)*
                }
            }
        }

        impl fmt::Display for $enum {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

unary_ops!(define_elementwise!((UnaryOp, ALL_UNARY)));
binary_ops!(define_elementwise!((BinaryOp, ALL_BINARY)));

/// The sign column of [`unary_ops!`].
macro_rules! define_unary_sign {
    (() $($(#[doc = $doc:literal])* $v:ident $name:literal $dtypes:ident $result:ident
          $cost:literal $wrap:ident $sign:ident,)*) => {
        impl UnaryOp {
            /// What the optimiser may assume of the result's sign.
            pub fn sign(self) -> UnarySign {
                match self {
                    $(UnaryOp::$v => UnarySign::$sign,)*
                }
            }
        }
    };
}
unary_ops!(define_unary_sign!(()));

/// Expands `$body` once per variant of an op table with `$o` bound to that variant as a
/// constant, so a per-element closure is compiled for one op (a `match` on `$o` folds away):
/// `unary_ops!(per_variant_table!(UnaryOp, op, OP, body))`. Exhaustive by construction.
macro_rules! per_variant_table {
    (($enum:ident, $op:expr, $o:ident, $body:expr)
        $($(#[doc = $doc:literal])* $v:ident $name:literal $dtypes:ident $result:ident
          $cost:literal $wrap:ident $($sign:ident)?,)*) => {
        match $op {
            $($crate::op::$enum::$v => {
                const $o: $crate::op::$enum = $crate::op::$enum::$v;
                $body
            })*
        }
    };
}

pub(crate) use {binary_ops, per_variant_table, unary_ops};

impl UnaryOp {
    /// Predicates produce `bool` whatever their operand's dtype.
    pub fn is_predicate(self) -> bool {
        self.result_is_bool()
    }
}

impl BinaryOp {
    /// Comparisons produce `bool` whatever their operands' dtype.
    pub fn is_comparison(self) -> bool {
        self.result_is_bool()
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

impl RandomDist {
    /// The distribution of a prelude / IR text name.
    pub fn from_name(name: &str) -> Option<Self> {
        ALL_RANDOM.iter().copied().find(|r| r.name() == name)
    }
}

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
        match self {
            Op::Unary(_) | Op::Binary(_) | Op::Where | Op::MulAdd | Op::Cast(_) | Op::Const(_) => {
                true
            }
            Op::Param(_)
            | Op::Reduce { .. }
            | Op::ArgMax { .. }
            | Op::ArgMin { .. }
            | Op::Iota { .. }
            | Op::Scan { .. }
            | Op::CumprodGrad { .. }
            | Op::MatMul
            | Op::Reshape
            | Op::Transpose { .. }
            | Op::BroadcastTo
            | Op::Concat { .. }
            | Op::Slice { .. }
            | Op::Full { .. }
            | Op::Random { .. }
            | Op::Extern { .. }
            | Op::Index { .. }
            | Op::Window { .. } => false,
        }
    }

    /// The op's name in the IR text format.
    pub fn name(&self) -> String {
        match self {
            Op::Param(_) => "param".into(),
            Op::Const(_) => "const".into(),
            Op::Unary(u) => u.name().into(),
            Op::Binary(b) => b.name().into(),
            Op::Where => "where".into(),
            Op::MulAdd => "mul_add".into(),
            Op::Cast(_) => "cast".into(),
            Op::Reduce { op, .. } => op.name().into(),
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

impl ReduceOp {
    /// Every reduction, in declaration order.
    pub const ALL: &'static [ReduceOp] =
        &[ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod];

    /// The prelude's and the IR text format's name.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Mean => "mean",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::Prod => "prod",
        }
    }

    /// The reduction of a prelude / IR text name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|r| r.name() == name)
    }
}

/// Every reduction, in declaration order ([`ReduceOp::ALL`]).
pub const ALL_REDUCE: &[ReduceOp] = ReduceOp::ALL;
