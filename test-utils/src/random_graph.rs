//! Random op graphs, the programs of the JIT-vs-interpreter differential test
//! (`tfn-backend`'s `random_graphs`) and of the ahead-of-time differential test (the root
//! crate's `tests/cli/aot.rs`): [`random_graph`] draws one from a seed, [`graph_source`]
//! writes it as a `.tfn` function and [`graph_signature`] as `tfnc build --arg`s.
//!
//! A graph has 1–3 parameters of broadcast shapes of rank 2 or 3 (size-1 axes, lower ranks,
//! scalars) and a chain of elementwise ops (every unary op of the table for its dtype, binary
//! ops with constants, `where` of a comparison, multiply-adds), reductions over any non-empty
//! set of axes with and without `keepdim`, and round-trip casts.

use crate::Rng;
use tfn_ir::{
    BinaryOp, DType, Dim, Graph, GraphParam, Op, ReduceOp, Scalar, Shape, Sym, SymDef, TensorType,
    UnaryOp, ValueId,
};

const S0: Dim = Dim::Sym(Sym(0));
const S1: Dim = Dim::Sym(Sym(1));
const S2: Dim = Dim::Sym(Sym(2));
const ONE: Dim = Dim::Const(1);

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

/// A random graph of `ops` operations (after its parameters). Every choice comes from `rng`
/// in order, so the graph of `ops - 1` operations is the same graph minus its last operation:
/// shrinking `ops` shrinks a failing graph to its shortest failing prefix.
pub fn random_graph(rng: &mut Rng, dtype: DType, rank: usize, ops: usize) -> Graph {
    let shapes: Vec<Shape> = if rank == 3 {
        vec![
            Shape(vec![S0, S1, S2]),
            Shape(vec![S0, ONE, S2]),
            Shape(vec![ONE, S1, ONE]),
            Shape(vec![S0, S1, ONE]),
            Shape(vec![S1, S2]),
            Shape(vec![S2]),
            Shape::scalar(),
        ]
    } else {
        vec![
            Shape(vec![S0, S1]),
            Shape(vec![S0, ONE]),
            Shape(vec![ONE, S1]),
            Shape(vec![S1]),
            Shape::scalar(),
        ]
    };
    let mut g = Graph { name: "random".into(), ..Graph::default() };
    let mut pool: Vec<ValueId> = Vec::new();
    // Parameter 0 is always full, so every symbol is bound.
    let n_params = 1 + rng.index(3);
    for p in 0..n_params {
        let shape =
            if p == 0 { shapes[0].clone() } else { shapes[rng.index(shapes.len())].clone() };
        let ty = TensorType { dtype, shape };
        g.params.push(GraphParam { name: format!("p{p}"), ty: ty.clone() });
        pool.push(g.push(Op::Param(p as u32), vec![], ty, Default::default()));
    }
    g.syms = [S0, S1, S2][..rank]
        .iter()
        .map(|sym| {
            let mut sources = Vec::new();
            for (p, param) in g.params.iter().enumerate() {
                for (a, d) in param.ty.shape.dims().iter().enumerate() {
                    if d == sym {
                        sources.push((p as u32, a as u32));
                    }
                }
            }
            SymDef::Input { sources }
        })
        .collect();
    let floats = dtype.is_float();
    for _ in 0..ops {
        let pick =
            |rng: &mut Rng, pool: &[ValueId]| pool[pool.len() - 1 - rng.index(pool.len().min(4))];
        let x = pick(rng, &pool);
        let tx = g.ty(x).clone();
        let v = match rng.index(10) {
            0..=2 => {
                // Every op of the table that keeps the dtype: a new row is tested here
                // without being listed.
                let ops: Vec<UnaryOp> = UnaryOp::ALL
                    .iter()
                    .copied()
                    .filter(|u| u.dtypes().contains(dtype) && !u.is_predicate())
                    .collect();
                g.push(Op::Unary(ops[rng.index(ops.len())]), vec![x], tx, Default::default())
            }
            3..=6 => {
                let y = if rng.index(4) == 0 {
                    let c = if floats {
                        Scalar::Float(rng.uniform(-2.0, 2.0))
                    } else {
                        Scalar::Int(rng.index(5) as i64 - 2)
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
                let (a, b) = if rng.index(2) == 0 { (x, y) } else { (y, x) };
                g.push(
                    Op::Binary(ops[rng.index(ops.len())]),
                    vec![a, b],
                    TensorType { dtype, shape },
                    Default::default(),
                )
            }
            7 => {
                let y = pick(rng, &pool);
                let y = if compatible(&tx.shape, &g.ty(y).shape) { y } else { x };
                let shape = broadcast(&tx.shape, &g.ty(y).shape);
                if floats && x.index() % 2 == 1 {
                    // `x*y + x` rounded once (the optimiser's FMAs).
                    let ty = TensorType { dtype, shape };
                    g.push(Op::MulAdd, vec![x, y, x], ty, Default::default())
                } else {
                    let c = g.push(
                        Op::Binary(BinaryOp::Lt),
                        vec![x, y],
                        TensorType { dtype: DType::Bool, shape: shape.clone() },
                        Default::default(),
                    );
                    g.push(
                        Op::Where,
                        vec![c, x, y],
                        TensorType { dtype, shape },
                        Default::default(),
                    )
                }
            }
            _ if tx.shape.rank() >= 1 => {
                let r = tx.shape.rank();
                // A random non-empty subset of the axes.
                let mask = 1 + rng.index((1 << r) - 1);
                let axes: Vec<u32> = (0..r as u32).filter(|a| mask & (1 << a) != 0).collect();
                let keepdim = rng.index(2) == 0;
                let ops: &[ReduceOp] = if floats {
                    &[ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Mean]
                } else {
                    &[ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min]
                };
                let dims: Vec<Dim> = tx
                    .shape
                    .dims()
                    .iter()
                    .enumerate()
                    .filter_map(|(a, d)| match axes.contains(&(a as u32)) {
                        true if keepdim => Some(ONE),
                        true => None,
                        false => Some(*d),
                    })
                    .collect();
                let op = Op::Reduce { op: ops[rng.index(ops.len())], axes, keepdim };
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
    if pool.len() > 3 && rng.index(2) == 0 {
        g.outputs.push(pool[pool.len() - 2]);
    }
    g
}

/// `graph` (a float graph of [`random_graph`]) with its parameters stored as `storage` (`f16`,
/// `bf16`): each is widened back to the graph's dtype where the graph reads it, and every
/// output is narrowed to `storage`. The same computation as users write it on 16-bit
/// tensors, so the kernels take their widened (convert-while-blocking) paths.
pub fn stored_in(graph: &Graph, storage: DType) -> Graph {
    let mut g = Graph {
        name: graph.name.clone(),
        syms: graph.syms.clone(),
        checks: graph.checks.clone(),
        ..Graph::default()
    };
    g.params = graph
        .params
        .iter()
        .map(|p| GraphParam {
            name: p.name.clone(),
            ty: TensorType { dtype: storage, shape: p.ty.shape.clone() },
        })
        .collect();
    let mut map: Vec<ValueId> = Vec::with_capacity(graph.nodes.len());
    for node in &graph.nodes {
        let v = match node.op {
            Op::Param(p) => {
                let ty = g.params[p as usize].ty.clone();
                let raw = g.push(Op::Param(p), vec![], ty, node.origin.clone());
                g.push(Op::Cast(node.ty.dtype), vec![raw], node.ty.clone(), node.origin.clone())
            }
            _ => {
                let inputs = node.inputs.iter().map(|i| map[i.index()]).collect();
                g.push(node.op.clone(), inputs, node.ty.clone(), node.origin.clone())
            }
        };
        map.push(v);
    }
    g.outputs = graph
        .outputs
        .iter()
        .map(|&o| {
            let from = &graph.node(o).ty;
            let ty = TensorType { dtype: storage, shape: from.shape.clone() };
            g.push(Op::Cast(storage), vec![map[o.index()]], ty, Default::default())
        })
        .collect();
    g
}

/// The dtypes [`random_graph`] is drawn in by the differential tests.
pub const GRAPH_DTYPES: [DType; 4] = [DType::F32, DType::F64, DType::I32, DType::I64];

/// The reduction's prelude name.
fn reduce_name(op: ReduceOp) -> &'static str {
    match op {
        ReduceOp::Sum => "sum",
        ReduceOp::Mean => "mean",
        ReduceOp::Max => "max",
        ReduceOp::Min => "min",
        ReduceOp::Prod => "prod",
    }
}

/// A literal of `c` that reads back as the same value.
fn literal(c: Scalar) -> String {
    match c {
        Scalar::Float(f) => format!("{f:?}"),
        Scalar::Int(i) => i.to_string(),
        Scalar::Bool(b) => b.to_string(),
    }
}

/// `graph` (of the ops [`random_graph`] draws) as the `.tfn` function `name`: one `let` per
/// op, constants as literals, parameters named as the graph's (`p0`, `p1`, ...), the outputs
/// returned. A multiply-add is written `x * y + z` (the optimiser fuses it again). `None` for
/// an op it does not write.
pub fn graph_source(graph: &Graph, name: &str) -> Option<String> {
    let mut exprs: Vec<String> = Vec::with_capacity(graph.nodes.len());
    let mut body = String::new();
    for (i, node) in graph.nodes.iter().enumerate() {
        let a = |k: usize| exprs[node.inputs[k].index()].clone();
        let expr = match &node.op {
            Op::Param(p) => {
                exprs.push(graph.params[*p as usize].name.clone());
                continue;
            }
            Op::Const(c) => {
                exprs.push(literal(*c));
                continue;
            }
            Op::Unary(u) => format!("{}({})", u.name(), a(0)),
            Op::Binary(b) => format!("{}({}, {})", b.name(), a(0), a(1)),
            Op::MulAdd => format!("{} * {} + {}", a(0), a(1), a(2)),
            Op::Where => format!("where({}, {}, {})", a(0), a(1), a(2)),
            Op::Cast(d) => format!("cast({}, {d})", a(0)),
            Op::Reduce { op, axes, keepdim } => {
                format!("{}({}, dims={axes:?}, keepdim={keepdim})", reduce_name(*op), a(0))
            }
            _ => return None,
        };
        body.push_str(&format!("    let v{i} = {expr}\n"));
        exprs.push(format!("v{i}"));
    }
    let params: Vec<String> = graph.params.iter().map(|p| format!("Tensor {}", p.name)).collect();
    let outs: Vec<String> = graph.outputs.iter().map(|o| exprs[o.index()].clone()).collect();
    let (ret_ty, ret) = match outs.len() {
        1 => ("Tensor".to_string(), outs[0].clone()),
        n => (format!("({})", vec!["Tensor"; n].join(", ")), format!("({})", outs.join(", "))),
    };
    Some(format!("fn {name}({}) -> {ret_ty} {{\n{body}    return {ret}\n}}\n", params.join(", ")))
}

/// The `tfnc build --arg`s of `graph`'s signature: per parameter `p0=f32[?, 1, ?]`, `?` for a
/// symbol and the size for a constant axis.
pub fn graph_signature(graph: &Graph) -> Vec<String> {
    graph
        .params
        .iter()
        .map(|p| {
            let dims: Vec<String> =
                p.ty.shape
                    .dims()
                    .iter()
                    .map(|d| match d {
                        Dim::Const(c) => c.to_string(),
                        Dim::Sym(_) => "?".to_string(),
                    })
                    .collect();
            format!("{}={}[{}]", p.name, p.ty.dtype, dims.join(", "))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_graph_is_written_as_a_function_and_a_signature() {
        let mut rng = Rng::new(7);
        let g = random_graph(&mut rng, DType::F32, 2, 6);
        let src = graph_source(&g, "f").expect("every op is written");
        assert!(src.starts_with("fn f(Tensor p0"), "{src}");
        assert_eq!(src.matches("let v").count(), g.nodes.len() - g.params.len() - consts(&g));
        let sig = graph_signature(&g);
        assert_eq!(sig.len(), g.params.len());
        assert!(sig[0].starts_with("p0=f32["), "{sig:?}");
        // The same seed draws the same graph.
        assert_eq!(g, random_graph(&mut Rng::new(7), DType::F32, 2, 6));
    }

    fn consts(g: &Graph) -> usize {
        g.nodes.iter().filter(|n| matches!(n.op, Op::Const(_))).count()
    }
}
