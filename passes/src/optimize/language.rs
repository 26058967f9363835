//! The e-graph language of the optimiser: one [`TfnNode`] per IR [`tfn_ir::Op`], with the op's
//! attributes as leaf children.
//!
//! An egg e-node cannot carry both data and children, so attributes (axes, permutations,
//! dtypes, target shapes, constant values) become leaf e-nodes ([`TfnNode::Int`],
//! [`TfnNode::DType`], ...) and lists of them ([`TfnNode::List`], [`TfnNode::Shape`]). Rules
//! can then bind an attribute to a pattern variable (`(transpose (transpose ?x ?p) ?q)`).
//!
//! The s-expression form, used by rule tables and tests:
//!
//! ```text
//! (param 0 f32 (shape s0 3))        tensor parameter 0, dtype, shape
//! (const f32 1.0)                   rank-0 constant
//! (full f32 0.0 (shape s0 3))       constant tensor of a shape
//! (exp ?x) (add ?x ?y) (where ?c ?a ?b) (cast f64 ?x)
//! (mul_add ?a ?b ?c)                a·b + c, one rounding
//! (sum ?x (list 0 1) false)         reduce: input, axes, keepdim
//! (argmax ?x 1 false)               input, axis, keepdim (also argmin)
//! (iota i64 1 (shape s0 3))         dtype, axis, shape (`iota_like` and `arange`)
//! (cumsum ?x 1 false false)         input, axis, exclusive, reverse (also cumprod)
//! (cumprod_grad ?x ?g 1 false false) x, incoming gradient, axis, exclusive, reverse
//! (matmul ?a ?b) (reshape ?x (shape 2 3)) (transpose ?x (list 1 0))
//! (broadcast_to ?x (shape 2 3))
//! (concat 0 (shape 5 3) ?a ?b)      axis, result shape, inputs
//! (slice ?x 0 1 (list) 1 (shape 2)) input, axis, start, end (empty list = none), step, shape
//! (extern 0 f32 (shape 3) ?x)       extern table key, dtype, shape, inputs
//! (rand_like f32 (shape s0) ?key)   random: dtype, shape, key (also `randn_like`)
//! ```
//!
//! Float leaves are [`FloatBits`], compared by bit pattern rather than `NotNan<f64>`: folded
//! constants can be NaN or infinite, and `0.0` and `-0.0` must stay distinct (`1/x` tells them
//! apart), which `OrderedFloat`'s equality would not.

use egg::{Id, Language};
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;
use tfn_ir::op::RandomDist;
use tfn_ir::{BinaryOp, DType, IndexKind, ReduceOp, ScanOp, UnaryOp, WindowKind};

/// An `f64` leaf that is equal, ordered and hashed by its bits (NaN and `-0.0` included).
#[derive(Clone, Copy, Debug)]
pub struct FloatBits(pub f64);

impl PartialEq for FloatBits {
    fn eq(&self, other: &FloatBits) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for FloatBits {}

impl PartialOrd for FloatBits {
    fn partial_cmp(&self, other: &FloatBits) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for FloatBits {
    fn cmp(&self, other: &FloatBits) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl Hash for FloatBits {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state)
    }
}

impl fmt::Display for FloatBits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&tfn_ir::attr::fmt_float(self.0))
    }
}

/// One e-node. Tensor-valued variants are the IR's ops; the rest are attribute leaves.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TfnNode {
    /// An integer attribute, or a constant dimension inside a [`TfnNode::Shape`].
    Int(i64),
    Float(FloatBits),
    Bool(bool),
    DType(DType),
    /// A symbolic dimension `s<n>` inside a [`TfnNode::Shape`].
    Sym(u32),
    /// `(list i...)`: a list of integer attributes (axes, permutation, optional end).
    List(Vec<Id>),
    /// `(shape d...)`: a shape, each child an `Int` or a `Sym` leaf.
    Shape(Vec<Id>),
    /// `(param index dtype shape)`.
    Param([Id; 3]),
    /// `(const dtype value)`.
    Const([Id; 2]),
    Unary(UnaryOp, [Id; 1]),
    Binary(BinaryOp, [Id; 2]),
    /// `(where cond a b)`.
    Where([Id; 3]),
    /// `(mul_add a b c)`: `a·b + c` rounded once.
    MulAdd([Id; 3]),
    /// `(cast dtype x)`.
    Cast([Id; 2]),
    /// `(sum x axes keepdim)` and the other reductions.
    Reduce(ReduceOp, [Id; 3]),
    /// `(argmax x axis keepdim)`.
    ArgMax([Id; 3]),
    /// `(argmin x axis keepdim)`.
    ArgMin([Id; 3]),
    /// `(iota dtype axis shape)`.
    Iota([Id; 3]),
    /// `(cumsum x axis exclusive reverse)`, `(cumprod ...)`.
    Scan(ScanOp, [Id; 4]),
    /// `(cumprod_grad x g axis exclusive reverse)`.
    CumprodGrad([Id; 5]),
    MatMul([Id; 2]),
    /// `(reshape x shape)`.
    Reshape([Id; 2]),
    /// `(transpose x perm)`.
    Transpose([Id; 2]),
    /// `(broadcast_to x shape)`.
    BroadcastTo([Id; 2]),
    /// `(concat axis shape x...)`.
    Concat(Vec<Id>),
    /// `(slice x axis start end step shape)`; `end` is a list of zero or one ints.
    Slice([Id; 6]),
    /// `(full dtype value shape)`.
    Full([Id; 3]),
    /// `(extern key dtype shape x...)`; `key` indexes the optimiser's table of extern ops.
    Extern(Vec<Id>),
    /// `(gather x index axis)`, `(index_select x index axis)`, `(scatter_add x index src
    /// axis)`, `(index_add x index src axis)`.
    Index(IndexKind, Vec<Id>),
    /// `(rand_like dtype shape key)`, `(randn_like dtype shape key)`: the shape operand of the
    /// IR node is dropped, as for `full`.
    Random(RandomDist, [Id; 3]),
    /// `(conv2d attrs shape x w [like])` and the other window ops: `attrs` is the list of
    /// [`super::window::attr_ints`], `shape` the declared result
    /// shape (it has derived sizes, like `slice`'s).
    Window(WindowKind, Vec<Id>),
}

impl Language for TfnNode {
    type Discriminant = std::mem::Discriminant<TfnNode>;

    fn discriminant(&self) -> Self::Discriminant {
        std::mem::discriminant(self)
    }

    fn matches(&self, other: &TfnNode) -> bool {
        use TfnNode::*;
        match (self, other) {
            (Int(a), Int(b)) => a == b,
            (Float(a), Float(b)) => a == b,
            (Bool(a), Bool(b)) => a == b,
            (DType(a), DType(b)) => a == b,
            (Sym(a), Sym(b)) => a == b,
            (Unary(a, _), Unary(b, _)) => a == b,
            (Binary(a, _), Binary(b, _)) => a == b,
            (Reduce(a, _), Reduce(b, _)) => a == b,
            (Scan(a, _), Scan(b, _)) => a == b,
            (Index(a, c), Index(b, d)) => a == b && c.len() == d.len(),
            (Window(a, c), Window(b, d)) => a == b && c.len() == d.len(),
            (Random(a, _), Random(b, _)) => a == b,
            (List(a), List(b))
            | (Shape(a), Shape(b))
            | (Concat(a), Concat(b))
            | (Extern(a), Extern(b)) => a.len() == b.len(),
            _ => std::mem::discriminant(self) == std::mem::discriminant(other),
        }
    }

    fn children(&self) -> &[Id] {
        use TfnNode::*;
        match self {
            Int(_) | Float(_) | Bool(_) | DType(_) | Sym(_) => &[],
            List(c) | Shape(c) | Concat(c) | Extern(c) | Index(_, c) | Window(_, c) => c,
            Param(c) | Where(c) | Reduce(_, c) | ArgMax(c) | ArgMin(c) | Iota(c) | Full(c) => c,
            MulAdd(c) => c,
            Random(_, c) => c,
            Scan(_, c) => c,
            CumprodGrad(c) => c,
            Const(c)
            | Binary(_, c)
            | Cast(c)
            | MatMul(c)
            | Reshape(c)
            | Transpose(c)
            | BroadcastTo(c) => c,
            Unary(_, c) => c,
            Slice(c) => c,
        }
    }

    fn children_mut(&mut self) -> &mut [Id] {
        use TfnNode::*;
        match self {
            Int(_) | Float(_) | Bool(_) | DType(_) | Sym(_) => &mut [],
            List(c) | Shape(c) | Concat(c) | Extern(c) | Index(_, c) | Window(_, c) => c,
            Param(c) | Where(c) | Reduce(_, c) | ArgMax(c) | ArgMin(c) | Iota(c) | Full(c) => c,
            MulAdd(c) => c,
            Random(_, c) => c,
            Scan(_, c) => c,
            CumprodGrad(c) => c,
            Const(c)
            | Binary(_, c)
            | Cast(c)
            | MatMul(c)
            | Reshape(c)
            | Transpose(c)
            | BroadcastTo(c) => c,
            Unary(_, c) => c,
            Slice(c) => c,
        }
    }
}

impl TfnNode {
    /// The operator name as written in s-expressions.
    pub fn op_name(&self) -> String {
        use TfnNode::*;
        match self {
            Int(i) => i.to_string(),
            Float(f) => f.to_string(),
            Bool(b) => b.to_string(),
            DType(d) => d.name().to_string(),
            Sym(s) => format!("s{s}"),
            List(_) => "list".into(),
            Shape(_) => "shape".into(),
            Param(_) => "param".into(),
            Const(_) => "const".into(),
            Unary(u, _) => u.name().into(),
            Binary(b, _) => b.name().into(),
            Where(_) => "where".into(),
            MulAdd(_) => "mul_add".into(),
            Cast(_) => "cast".into(),
            Reduce(r, _) => r.name().into(),
            ArgMax(_) => "argmax".into(),
            ArgMin(_) => "argmin".into(),
            Iota(_) => "iota".into(),
            Scan(op, _) => op.name().into(),
            CumprodGrad(_) => "cumprod_grad".into(),
            MatMul(_) => "matmul".into(),
            Reshape(_) => "reshape".into(),
            Transpose(_) => "transpose".into(),
            BroadcastTo(_) => "broadcast_to".into(),
            Concat(_) => "concat".into(),
            Slice(_) => "slice".into(),
            Full(_) => "full".into(),
            Extern(_) => "extern".into(),
            Index(k, _) => k.name().into(),
            Window(k, _) => k.name().into(),
            Random(dist, _) => dist.name().into(),
        }
    }

    /// True for the attribute leaves and lists, which denote no tensor.
    pub fn is_attribute(&self) -> bool {
        use TfnNode::*;
        matches!(self, Int(_) | Float(_) | Bool(_) | DType(_) | Sym(_) | List(_) | Shape(_))
    }
}

impl fmt::Display for TfnNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.op_name())
    }
}

/// Why an s-expression operator is not an e-node of [`TfnNode`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{op}` with {arity} operand(s) is not an e-node of the tfn language")]
pub struct ParseNodeError {
    pub op: String,
    pub arity: usize,
}

fn fixed<const N: usize>(children: &[Id]) -> Option<[Id; N]> {
    <[Id; N]>::try_from(children).ok()
}

fn parse_leaf(op: &str) -> Option<TfnNode> {
    if let Ok(i) = op.parse::<i64>() {
        return Some(TfnNode::Int(i));
    }
    match op {
        "true" => return Some(TfnNode::Bool(true)),
        "false" => return Some(TfnNode::Bool(false)),
        "nan" => return Some(TfnNode::Float(FloatBits(f64::NAN))),
        "inf" => return Some(TfnNode::Float(FloatBits(f64::INFINITY))),
        "-inf" => return Some(TfnNode::Float(FloatBits(f64::NEG_INFINITY))),
        _ => {}
    }
    if let Ok(d) = DType::from_str(op) {
        return Some(TfnNode::DType(d));
    }
    if let Some(n) = op.strip_prefix('s').and_then(|rest| rest.parse::<u32>().ok()) {
        return Some(TfnNode::Sym(n));
    }
    // Only spellings with a decimal point or exponent are floats (`6` is an Int).
    if op.contains(['.', 'e', 'E']) {
        if let Ok(f) = op.parse::<f64>() {
            return Some(TfnNode::Float(FloatBits(f)));
        }
    }
    None
}

impl egg::FromOp for TfnNode {
    type Error = ParseNodeError;

    fn from_op(op: &str, children: Vec<Id>) -> Result<TfnNode, ParseNodeError> {
        use TfnNode::*;
        let err = || ParseNodeError { op: op.to_string(), arity: children.len() };
        if children.is_empty() {
            if let Some(leaf) = parse_leaf(op) {
                return Ok(leaf);
            }
        }
        if let Some(u) = UnaryOp::from_name(op) {
            return fixed(&children).map(|c| Unary(u, c)).ok_or_else(err);
        }
        if let Some(b) = BinaryOp::from_name(op) {
            return fixed(&children).map(|c| Binary(b, c)).ok_or_else(err);
        }
        if let Some(r) = ReduceOp::from_name(op) {
            return fixed(&children).map(|c| Reduce(r, c)).ok_or_else(err);
        }
        if let Some(k) = IndexKind::from_name(op) {
            return if children.len() == k.arity() + 1 {
                Ok(Index(k, children))
            } else {
                Err(err())
            };
        }
        if let Some(k) = WindowKind::from_name(op) {
            let (lo, hi) = k.arity();
            let n = children.len().saturating_sub(2);
            return if (lo..=hi).contains(&n) && children.len() >= 2 {
                Ok(Window(k, children))
            } else {
                Err(err())
            };
        }
        if let Some(r) = RandomDist::from_name(op) {
            return fixed(&children).map(|c| Random(r, c)).ok_or_else(err);
        }
        let node = match op {
            "list" => Some(List(children.clone())),
            "shape" => Some(Shape(children.clone())),
            "param" => fixed(&children).map(Param),
            "const" => fixed(&children).map(Const),
            "where" => fixed(&children).map(Where),
            "mul_add" => fixed(&children).map(MulAdd),
            "cast" => fixed(&children).map(Cast),
            "argmax" => fixed(&children).map(ArgMax),
            "argmin" => fixed(&children).map(ArgMin),
            "iota" => fixed(&children).map(Iota),
            "cumsum" => fixed(&children).map(|c| Scan(ScanOp::Sum, c)),
            "cumprod" => fixed(&children).map(|c| Scan(ScanOp::Prod, c)),
            "cumprod_grad" => fixed(&children).map(CumprodGrad),
            "matmul" => fixed(&children).map(MatMul),
            "reshape" => fixed(&children).map(Reshape),
            "transpose" => fixed(&children).map(Transpose),
            "broadcast_to" => fixed(&children).map(BroadcastTo),
            "concat" if children.len() >= 3 => Some(Concat(children.clone())),
            "slice" => fixed(&children).map(Slice),
            "full" => fixed(&children).map(Full),
            "extern" if children.len() >= 3 => Some(Extern(children.clone())),
            _ => None,
        };
        node.ok_or_else(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use egg::RecExpr;

    #[test]
    fn s_expressions_round_trip() {
        let cases = [
            "(add (param 0 f32 (shape s0 3)) (const f32 1.0))",
            "(sum (exp (param 0 f64 (shape 2 3))) (list 0 1) false)",
            "(transpose (param 0 i32 (shape 2 3)) (list 1 0))",
            "(full f32 -0.0 (shape s1))",
            "(randn_like f64 (shape s0 3) (param 0 i64 (shape)))",
            "(const f32 nan)",
            "(slice (param 0 f32 (shape 5)) 0 1 (list) -1 (shape 2))",
            "(mul_add (param 0 f32 (shape 3)) (const f32 2.0) (param 1 f32 (shape 1)))",
        ];
        for text in cases {
            let expr: RecExpr<TfnNode> = text.parse().expect("parses");
            let again: RecExpr<TfnNode> = expr.to_string().parse().expect("reparses");
            assert_eq!(again, expr, "{text}");
        }
    }

    /// Every elementwise op of the op table parses and prints under its IR name.
    #[test]
    fn every_elementwise_op_round_trips() {
        let x = "(param 0 f64 (shape 3))";
        let texts = UnaryOp::ALL
            .iter()
            .map(|u| format!("({u} {x})"))
            .chain(BinaryOp::ALL.iter().map(|b| format!("({b} {x} {x})")));
        for text in texts {
            let expr: RecExpr<TfnNode> = text.parse().expect("parses");
            assert_eq!(expr.to_string(), text);
        }
    }

    #[test]
    fn leaves_distinguish_ints_floats_and_signed_zero() {
        assert_eq!(parse_leaf("6"), Some(TfnNode::Int(6)));
        assert_eq!(parse_leaf("6.0"), Some(TfnNode::Float(FloatBits(6.0))));
        assert_ne!(parse_leaf("0.0"), parse_leaf("-0.0"));
        assert_eq!(parse_leaf("s12"), Some(TfnNode::Sym(12)));
        assert_eq!(parse_leaf("f64"), Some(TfnNode::DType(DType::F64)));
        assert_eq!(parse_leaf("sum"), None);
    }
}
