//! Random well-typed programs for property tests: elementwise ops (with constants that
//! trigger rules: 0, 1, 2, 0.5, -1), broadcasting between `[s0, 4]`, `[4]` and `[s0, 1]`,
//! reductions, transposes, casts and `where`, in f32, f64 or i32.

use egg::{Id, RecExpr};
use tfn_ir::{DType, Dim, Graph, GraphParam, Shape, Sym, SymDef, TensorType};
use tfn_passes::optimize::analysis::{node_data, ClassData};
use tfn_passes::optimize::convert::{expr_to_graph, ExternTable};
use tfn_passes::optimize::soundness::SplitMix;
use tfn_passes::optimize::TfnNode;

struct Builder {
    expr: RecExpr<TfnNode>,
    data: Vec<ClassData>,
    /// Tensor values built so far.
    values: Vec<Id>,
}

impl Builder {
    fn add(&mut self, node: TfnNode) -> Option<Id> {
        let d = node_data(&node, |id| &self.data[usize::from(id)]);
        let tensor = d.ty.is_some();
        if !node.is_attribute() && !tensor {
            return None;
        }
        self.data.push(d);
        let id = self.expr.add(node);
        if tensor {
            self.values.push(id);
        }
        Some(id)
    }

    fn leaf(&mut self, node: TfnNode) -> Id {
        self.add(node).unwrap_or_else(|| unreachable!("leaves always type-check"))
    }

    fn shape(&mut self, dims: &[Dim]) -> Id {
        let ids = dims
            .iter()
            .map(|d| match d {
                Dim::Const(c) => self.leaf(TfnNode::Int(*c as i64)),
                Dim::Sym(s) => self.leaf(TfnNode::Sym(s.0)),
            })
            .collect();
        self.leaf(TfnNode::Shape(ids))
    }

    fn ty(&self, id: Id) -> Option<&TensorType> {
        self.data[usize::from(id)].ty.as_ref()
    }

    fn pick(&self, rng: &mut SplitMix) -> Id {
        // Prefer recent values so that chains get deep.
        let n = self.values.len() as u64;
        let back = rng.below(n.min(6));
        self.values[(n - 1 - back) as usize]
    }
}

/// A random program of about `ops` ops over three parameters of `dtype`, returning its last
/// `outputs` values (ops no output uses are dropped).
pub fn random_graph(seed: u64, ops: usize, outputs: usize, dtype: DType) -> Graph {
    use tfn_ir::{BinaryOp as B, ReduceOp as R, UnaryOp as U};
    let mut rng = SplitMix(seed);
    let s0 = Dim::Sym(Sym(0));
    let shapes = [vec![s0, Dim::Const(4)], vec![Dim::Const(4)], vec![s0, Dim::Const(1)]];
    let mut b = Builder { expr: RecExpr::default(), data: Vec::new(), values: Vec::new() };
    let params: Vec<GraphParam> = shapes
        .iter()
        .enumerate()
        .map(|(i, dims)| GraphParam {
            name: format!("p{i}"),
            ty: TensorType { dtype, shape: Shape(dims.clone()) },
        })
        .collect();
    for (i, dims) in shapes.iter().enumerate() {
        let index = b.leaf(TfnNode::Int(i as i64));
        let dt = b.leaf(TfnNode::DType(dtype));
        let shape = b.shape(dims);
        b.add(TfnNode::Param([index, dt, shape]));
    }
    let float = dtype.is_float();
    let unary: &[U] = if float {
        &[U::Neg, U::Abs, U::Tanh, U::Sigmoid, U::Sin, U::Exp, U::Log, U::Sqrt, U::Neg]
    } else {
        &[U::Neg, U::Abs, U::Sign]
    };
    let binary: &[B] = if float {
        &[B::Add, B::Sub, B::Mul, B::Div, B::Maximum, B::Minimum, B::Pow]
    } else {
        &[B::Add, B::Sub, B::Mul, B::Maximum, B::Minimum]
    };
    let constants: &[f64] = &[0.0, 1.0, 2.0, 0.5, -1.0, 4.0];
    let mut attempts = 0;
    while b.values.len() < ops + 3 && attempts < ops * 20 {
        attempts += 1;
        let x = b.pick(&mut rng);
        let choice = rng.below(14);
        let node = match choice {
            0..=3 => TfnNode::Unary(unary[rng.below(unary.len() as u64) as usize], [x]),
            4..=7 => {
                let y = b.values[rng.below(b.values.len() as u64) as usize];
                let op = binary[rng.below(binary.len() as u64) as usize];
                if op == B::Pow && rng.below(2) == 0 {
                    continue;
                }
                TfnNode::Binary(op, [x, y])
            }
            8 | 9 => {
                let value = constants[rng.below(constants.len() as u64) as usize];
                let Some(dt) = b.ty(x).map(|t| t.dtype) else { continue };
                let dtn = b.leaf(TfnNode::DType(dt));
                let v = if dt.is_float() {
                    b.leaf(TfnNode::Float(tfn_passes::optimize::language::FloatBits(value)))
                } else {
                    b.leaf(TfnNode::Int(value as i64))
                };
                let Some(c) = b.add(TfnNode::Const([dtn, v])) else { continue };
                let op = binary[rng.below(binary.len() as u64) as usize];
                if rng.below(2) == 0 {
                    TfnNode::Binary(op, [x, c])
                } else {
                    TfnNode::Binary(op, [c, x])
                }
            }
            10 => {
                let Some(rank) = b.ty(x).map(|t| t.shape.rank()) else { continue };
                if rank == 0 {
                    continue;
                }
                let axis = rng.below(rank as u64) as i64;
                let op = [R::Sum, R::Max, R::Min, R::Mean]
                    [rng.below(if float { 4 } else { 3 }) as usize];
                let axes_leaf = b.leaf(TfnNode::Int(axis));
                let axes = b.leaf(TfnNode::List(vec![axes_leaf]));
                let keep = b.leaf(TfnNode::Bool(rng.below(2) == 0));
                TfnNode::Reduce(op, [x, axes, keep])
            }
            11 => {
                let Some(rank) = b.ty(x).map(|t| t.shape.rank()) else { continue };
                if rank != 2 {
                    continue;
                }
                let (one, zero) = (b.leaf(TfnNode::Int(1)), b.leaf(TfnNode::Int(0)));
                let perm = b.leaf(TfnNode::List(vec![one, zero]));
                TfnNode::Transpose([x, perm])
            }
            12 => {
                let y = b.pick(&mut rng);
                let cmp = b.add(TfnNode::Binary(B::Lt, [x, y]));
                let Some(cmp) = cmp else { continue };
                TfnNode::Where([cmp, x, y])
            }
            _ => {
                let Some(t) = b.ty(x).cloned() else { continue };
                let Some(target) = broadcast_target(&t.shape) else { continue };
                let shape = b.shape(&target);
                TfnNode::BroadcastTo([x, shape])
            }
        };
        b.add(node);
    }
    let n = b.values.len();
    let outputs: Vec<Id> = b.values[n.saturating_sub(outputs)..].to_vec();
    let template = Graph {
        name: format!("random{seed}"),
        params,
        nodes: Vec::new(),
        outputs: Vec::new(),
        syms: vec![SymDef::Input { sources: vec![(0, 0), (2, 0)] }],
        checks: Vec::new(),
    };
    expr_to_graph(&b.expr, &outputs, &template, &[], &ExternTable::default())
        .unwrap_or_else(|e| panic!("generator built a bad graph: {e}"))
}

fn broadcast_target(shape: &Shape) -> Option<Vec<Dim>> {
    let s0 = Dim::Sym(Sym(0));
    match shape.0.as_slice() {
        [] => Some(vec![s0, Dim::Const(4)]),
        [Dim::Const(4)] => Some(vec![s0, Dim::Const(4)]),
        [d, Dim::Const(1)] => Some(vec![*d, Dim::Const(4)]),
        _ => None,
    }
}
