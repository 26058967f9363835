//! Seeded random op graphs — random broadcast shapes, dtypes, elementwise chains, reductions
//! over either axis with and without `keepdim`, casts — fused, JIT-compiled and compared with
//! the interpreter. Tolerance `rtol = atol = 1e-4`: chains of transcendentals (each within a
//! few ULP) and f32 reduction sums (the interpreter accumulates in f64) compound differences.

mod common;

use common::{check_against_interp, random_inputs, Rng, Tol};
use tfn_ir::{
    BinaryOp, DType, Dim, Graph, GraphParam, Op, ReduceOp, Scalar, Shape, Sym, SymDef, TensorType,
    UnaryOp, ValueId,
};

const S0: Dim = Dim::Sym(Sym(0));
const S1: Dim = Dim::Sym(Sym(1));

fn broadcast(a: &Shape, b: &Shape) -> Shape {
    let r = a.rank().max(b.rank());
    let at = |s: &Shape, i: usize| -> Dim {
        let pad = r - s.rank();
        if i < pad {
            Dim::Const(1)
        } else {
            s.dims()[i - pad]
        }
    };
    Shape((0..r).map(|i| if at(a, i) == Dim::Const(1) { at(b, i) } else { at(a, i) }).collect())
}

fn compatible(a: &Shape, b: &Shape) -> bool {
    let (da, db) = (a.dims(), b.dims());
    da.iter()
        .rev()
        .zip(db.iter().rev())
        .all(|(x, y)| x == y || *x == Dim::Const(1) || *y == Dim::Const(1))
}

fn random_graph(rng: &mut Rng, dtype: DType) -> Graph {
    let shapes = [
        Shape(vec![S0, S1]),
        Shape(vec![S0, Dim::Const(1)]),
        Shape(vec![Dim::Const(1), S1]),
        Shape(vec![S1]),
        Shape::scalar(),
    ];
    let mut g = Graph { name: "random".into(), ..Graph::default() };
    let mut pool: Vec<ValueId> = Vec::new();
    // Parameter 0 is always full, so both symbols are bound.
    let n_params = 1 + rng.below(3);
    for p in 0..n_params {
        let shape =
            if p == 0 { shapes[0].clone() } else { shapes[rng.below(shapes.len())].clone() };
        let ty = TensorType { dtype, shape };
        g.params.push(GraphParam { name: format!("p{p}"), ty: ty.clone() });
        pool.push(g.push(Op::Param(p as u32), vec![], ty, Default::default()));
    }
    let mut s1_sources = vec![(0u32, 1u32)];
    for (p, param) in g.params.iter().enumerate().skip(1) {
        for (a, d) in param.ty.shape.dims().iter().enumerate() {
            if *d == S1 {
                s1_sources.push((p as u32, a as u32));
            }
        }
    }
    let mut s0_sources = vec![(0u32, 0u32)];
    for (p, param) in g.params.iter().enumerate().skip(1) {
        for (a, d) in param.ty.shape.dims().iter().enumerate() {
            if *d == S0 {
                s0_sources.push((p as u32, a as u32));
            }
        }
    }
    g.syms = vec![SymDef::Input { sources: s0_sources }, SymDef::Input { sources: s1_sources }];
    let floats = dtype.is_float();
    for _ in 0..3 + rng.below(8) {
        let pick =
            |rng: &mut Rng, pool: &[ValueId]| pool[pool.len() - 1 - rng.below(pool.len().min(4))];
        let x = pick(rng, &pool);
        let tx = g.ty(x).clone();
        let v = match rng.below(10) {
            0..=2 => {
                let ops: &[UnaryOp] = if floats {
                    &[
                        UnaryOp::Neg,
                        UnaryOp::Abs,
                        UnaryOp::Tanh,
                        UnaryOp::Sigmoid,
                        UnaryOp::Floor,
                        UnaryOp::Sin,
                        UnaryOp::Sign,
                    ]
                } else {
                    &[UnaryOp::Neg, UnaryOp::Abs, UnaryOp::Sign]
                };
                g.push(Op::Unary(ops[rng.below(ops.len())]), vec![x], tx, Default::default())
            }
            3..=6 => {
                let y = if rng.below(4) == 0 {
                    let c = if floats {
                        Scalar::Float(rng.uniform(-2.0, 2.0))
                    } else {
                        Scalar::Int(rng.below(5) as i64 - 2)
                    };
                    g.push(
                        Op::Const(c),
                        vec![],
                        TensorType { dtype, shape: Shape::scalar() },
                        Default::default(),
                    )
                } else {
                    pick(rng, &pool)
                };
                let y = if compatible(&tx.shape, &g.ty(y).shape) { y } else { x };
                let ops = [
                    BinaryOp::Add,
                    BinaryOp::Sub,
                    BinaryOp::Mul,
                    BinaryOp::Maximum,
                    BinaryOp::Minimum,
                ];
                let shape = broadcast(&tx.shape, &g.ty(y).shape);
                let (a, b) = if rng.below(2) == 0 { (x, y) } else { (y, x) };
                g.push(
                    Op::Binary(ops[rng.below(ops.len())]),
                    vec![a, b],
                    TensorType { dtype, shape },
                    Default::default(),
                )
            }
            7 => {
                let y = pick(rng, &pool);
                let y = if compatible(&tx.shape, &g.ty(y).shape) { y } else { x };
                let shape = broadcast(&tx.shape, &g.ty(y).shape);
                let c = g.push(
                    Op::Binary(BinaryOp::Lt),
                    vec![x, y],
                    TensorType { dtype: DType::Bool, shape: shape.clone() },
                    Default::default(),
                );
                g.push(Op::Where, vec![c, x, y], TensorType { dtype, shape }, Default::default())
            }
            _ if tx.shape.rank() == 2 => {
                let axis = rng.below(2) as u32;
                let keepdim = rng.below(2) == 0;
                let ops: &[ReduceOp] = if floats {
                    &[ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Mean]
                } else {
                    &[ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min]
                };
                let mut dims = tx.shape.dims().to_vec();
                if keepdim {
                    dims[axis as usize] = Dim::Const(1);
                } else {
                    dims.remove(axis as usize);
                }
                let op = Op::Reduce { op: ops[rng.below(ops.len())], axes: vec![axis], keepdim };
                g.push(op, vec![x], TensorType { dtype, shape: Shape(dims) }, Default::default())
            }
            _ => {
                let other = if dtype == DType::F32 { DType::F64 } else { DType::F32 };
                let c = g.push(
                    Op::Cast(other),
                    vec![x],
                    TensorType { dtype: other, shape: tx.shape.clone() },
                    Default::default(),
                );
                g.push(Op::Cast(dtype), vec![c], tx, Default::default())
            }
        };
        pool.push(v);
    }
    let last = *pool.last().unwrap_or(&ValueId(0));
    g.outputs = vec![last];
    if pool.len() > 3 && rng.below(2) == 0 {
        g.outputs.push(pool[pool.len() - 2]);
    }
    g
}

#[test]
fn random_graphs_match_the_interpreter() {
    let tol = Tol { rtol: 1e-4, atol: 1e-4 };
    let mut failures = Vec::new();
    for seed in 1..=100u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let dtype = [DType::F32, DType::F64, DType::I32, DType::I64][rng.below(4)];
        let graph = random_graph(&mut rng, dtype);
        for sizes in [[1usize, 1], [5, 9], [3, 37]] {
            let inputs = random_inputs(&mut rng, &graph, &sizes, (-3.0, 3.0));
            if let Err(e) = check_against_interp(&graph, &inputs, tol, 1 + (seed as usize % 2)) {
                failures.push(format!(
                    "seed {seed} sizes {sizes:?}: {e}\n{}",
                    tfn_ir::text::print_graph(&graph)
                ));
                break;
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
