//! Maps a primitive node of the IR back to the prelude call it came from: the op's name and
//! overload, its tensor inputs by parameter name and its attributes by parameter name, so the
//! op's `grad` block can be instantiated for the node.
//!
//! Several prelude ops lower to the same IR op (`unsqueeze`, `squeeze` and `reshape` are all
//! `Op::Reshape`; `add.scalar` is `add` with a constant input): a node maps to the general
//! one, whose gradient covers them all.

use tfn_ir::attr::Attr;
use tfn_ir::library::{FunctionDef, Library, ParamType};
use tfn_ir::{Graph, Op, ValueId, WindowAttrs, WindowKind};

/// A tensor argument of a call: one tensor, or a `Tensor[]` list.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TensorArg {
    One(ValueId),
    List(Vec<ValueId>),
}

impl TensorArg {
    pub fn values(&self) -> Vec<ValueId> {
        match self {
            TensorArg::One(v) => vec![*v],
            TensorArg::List(vs) => vs.clone(),
        }
    }
}

/// A call of a library function with its arguments bound by parameter name.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PrimCall {
    pub name: String,
    pub overload: Option<String>,
    /// Tensor parameters in parameter order.
    pub tensors: Vec<(String, TensorArg)>,
    /// Attribute parameters whose value the node records.
    pub attrs: Vec<(String, Attr)>,
}

impl PrimCall {
    pub fn full_name(&self) -> String {
        match &self.overload {
            Some(o) => format!("{}.{o}", self.name),
            None => self.name.clone(),
        }
    }
}

fn one(name: &str, v: ValueId) -> (String, TensorArg) {
    (name.to_string(), TensorArg::One(v))
}

fn ints(v: &[u32]) -> Attr {
    Attr::IntList(v.iter().map(|&a| i64::from(a)).collect())
}

/// The prelude call a node computes, or `None` for nodes without inputs to differentiate
/// (`param`, `const`, `full`) and for ops that are constant almost everywhere by nature
/// (`argmax`). Inputs must exist (the graph is verified).
pub(crate) fn prim_call(lib: &Library, graph: &Graph, node: ValueId) -> Option<PrimCall> {
    let n = graph.node(node);
    let ins = &n.inputs;
    let input = |i: usize| ins.get(i).copied();
    let plain = |name: &str, tensors: Vec<(String, TensorArg)>, attrs: Vec<(String, Attr)>| {
        Some(PrimCall { name: name.to_string(), overload: None, tensors, attrs })
    };
    match &n.op {
        Op::Param(_)
        | Op::Const(_)
        | Op::Full { .. }
        | Op::Iota { .. }
        | Op::ArgMax { .. }
        | Op::ArgMin { .. } => None,
        // `rand_like`: constant in its shape operand, not differentiable in its (integer) key.
        Op::Random { .. } => None,
        Op::Scan { op, axis, exclusive, reverse } => plain(
            op.name(),
            vec![one("x", input(0)?)],
            vec![
                ("dim".into(), Attr::Int(i64::from(*axis))),
                ("exclusive".into(), Attr::Bool(*exclusive)),
                ("reverse".into(), Attr::Bool(*reverse)),
            ],
        ),
        // No `grad` block: second derivatives of `cumprod` are not supported.
        Op::CumprodGrad { axis, exclusive, reverse } => plain(
            "cumprod_grad",
            vec![one("x", input(0)?), one("g", input(1)?)],
            vec![
                ("dim".into(), Attr::Int(i64::from(*axis))),
                ("exclusive".into(), Attr::Bool(*exclusive)),
                ("reverse".into(), Attr::Bool(*reverse)),
            ],
        ),
        // Inputs by the names the prelude declares (`atan2(y, x)`), else `x` and `y`.
        Op::Unary(u) => extern_call(lib, u.name(), ins, &[])
            .or_else(|| plain(u.name(), vec![one("x", input(0)?)], vec![])),
        Op::Binary(b) => extern_call(lib, b.name(), ins, &[])
            .or_else(|| plain(b.name(), vec![one("x", input(0)?), one("y", input(1)?)], vec![])),
        Op::Where => plain(
            "where",
            vec![one("cond", input(0)?), one("x", input(1)?), one("y", input(2)?)],
            vec![],
        ),
        // Internal (made by the optimiser); declared in `grads.tfn` with its `grad` block.
        Op::MulAdd => plain(
            "mul_add",
            vec![one("x", input(0)?), one("y", input(1)?), one("z", input(2)?)],
            vec![],
        ),
        Op::Cast(d) => {
            plain("cast", vec![one("x", input(0)?)], vec![("dtype".into(), Attr::DType(*d))])
        }
        Op::Reduce { op, axes, keepdim } => plain(
            op.name(),
            vec![one("x", input(0)?)],
            vec![("dims".into(), ints(axes)), ("keepdim".into(), Attr::Bool(*keepdim))],
        ),
        Op::MatMul => plain("matmul", vec![one("a", input(0)?), one("b", input(1)?)], vec![]),
        Op::Reshape => plain("reshape", vec![one("x", input(0)?)], vec![]),
        Op::Transpose { perm } => {
            plain("transpose", vec![one("x", input(0)?)], vec![("perm".into(), ints(perm))])
        }
        Op::BroadcastTo => plain("broadcast_to", vec![one("x", input(0)?)], vec![]),
        Op::Concat { axis } => plain(
            "concat",
            vec![("xs".into(), TensorArg::List(ins.clone()))],
            vec![("dim".into(), Attr::Int(i64::from(*axis)))],
        ),
        Op::Slice { axis, start, end, step } => plain(
            "slice",
            vec![one("x", input(0)?)],
            vec![
                ("dim".into(), Attr::Int(i64::from(*axis))),
                ("start".into(), Attr::Int(*start)),
                ("end".into(), Attr::Int(end.unwrap_or(i64::MAX))),
                ("step".into(), Attr::Int(*step)),
            ],
        ),
        Op::Index { kind, axis } => {
            let mut tensors = vec![one("x", input(0)?), one("index", input(1)?)];
            if !kind.is_read() {
                tensors.push(one("src", input(2)?));
            }
            plain(kind.name(), tensors, vec![("dim".into(), Attr::Int(i64::from(*axis)))])
        }
        Op::Window { kind, attrs } => window_call(*kind, attrs, ins),
        Op::Extern { name, attrs } => extern_call(lib, name, ins, attrs),
    }
}

/// A window op's prelude call (`conv2d`, `conv2d_like`, ..., `avg_pool2d_grad`): its tensors
/// by their declared names and the attributes that prelude op declares.
fn window_call(kind: WindowKind, a: &WindowAttrs, ins: &[ValueId]) -> Option<PrimCall> {
    let pair = |v: [u32; 2]| ints(&v);
    let like = ins.len() == 3;
    let (name, names): (&str, &[&str]) = match kind {
        WindowKind::Conv if like => ("conv2d_like", &["x", "w", "like"]),
        WindowKind::Conv => ("conv2d", &["x", "w"]),
        WindowKind::ConvTranspose if like => ("conv_transpose2d_like", &["x", "w", "like"]),
        WindowKind::ConvTranspose => ("conv_transpose2d", &["x", "w"]),
        WindowKind::ConvWeight => ("conv2d_weight", &["x", "dy", "like"]),
        WindowKind::MaxPool => ("max_pool2d", &["x"]),
        WindowKind::AvgPool => ("avg_pool2d", &["x"]),
        WindowKind::MaxPoolGrad => ("max_pool2d_grad", &["x", "dy"]),
        WindowKind::AvgPoolGrad => ("avg_pool2d_grad", &["dy", "like"]),
    };
    if names.len() != ins.len() {
        return None;
    }
    let tensors = names.iter().zip(ins).map(|(n, v)| one(n, *v)).collect();
    let mut attrs = Vec::new();
    if !kind.is_conv() {
        attrs.push(("kernel".to_string(), pair(a.kernel)));
    }
    attrs.push(("stride".into(), pair(a.stride)));
    attrs.push(("padding".into(), pair(a.padding)));
    if kind == WindowKind::ConvTranspose && !like {
        attrs.push(("output_padding".into(), pair(a.output_padding)));
    }
    if !matches!(kind, WindowKind::AvgPool | WindowKind::AvgPoolGrad) {
        attrs.push(("dilation".into(), pair(a.dilation)));
    }
    if kind.is_conv() {
        attrs.push(("groups".into(), Attr::Int(i64::from(a.groups))));
    } else {
        attrs.push(("ceil_mode".into(), Attr::Bool(a.ceil_mode)));
    }
    if matches!(kind, WindowKind::AvgPool | WindowKind::AvgPoolGrad) {
        attrs.push(("count_include_pad".into(), Attr::Bool(a.count_include_pad)));
    }
    Some(PrimCall { name: name.to_string(), overload: None, tensors, attrs })
}

/// An extern op's (or an elementwise primitive's) call: inputs and attributes are matched to its
/// declaration in order (a `Tensor[]` parameter takes the inputs the other tensor parameters
/// leave over).
fn extern_call(
    lib: &Library,
    full_name: &str,
    ins: &[ValueId],
    attrs: &[Attr],
) -> Option<PrimCall> {
    let (name, overload) = match full_name.split_once('.') {
        Some((b, o)) => (b, Some(o)),
        None => (full_name, None),
    };
    let fdef: &FunctionDef = lib.function(name, overload)?;
    let singles = fdef.params.iter().filter(|p| matches!(p.ty, ParamType::Tensor(_))).count();
    let list_len = ins.len().checked_sub(singles)?;
    let mut next_input = ins.iter().copied();
    let mut next_attr = attrs.iter().cloned();
    let mut tensors = Vec::new();
    let mut bound = Vec::new();
    for p in &fdef.params {
        match p.ty {
            ParamType::Tensor(_) => tensors.push(one(&p.name, next_input.next()?)),
            ParamType::TensorList(_) => {
                let items: Vec<ValueId> = next_input.by_ref().take(list_len).collect();
                tensors.push((p.name.clone(), TensorArg::List(items)));
            }
            _ => bound.push((p.name.clone(), next_attr.next()?)),
        }
    }
    Some(PrimCall {
        name: name.to_string(),
        overload: overload.map(str::to_string),
        tensors,
        attrs: bound,
    })
}
