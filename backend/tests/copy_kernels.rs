//! Property tests of the native data-movement kernels (`transpose`, `slice`, `concat`): seeded
//! random permutations, slices and concats of every dtype over random shapes of rank 0 to 5,
//! with sizes chosen around the transpose tile edges (8, 16 and 64 elements for 8-, 4- and
//! 1-byte elements) and 0 and 1, run natively and compared exactly with the interpreter (also
//! through caller-provided outputs).

use crate::common;

use common::check_against_interp;
use tfn_ir::{
    DType, Dim, DimExpr, Graph, GraphParam, Op, Shape, Sym, SymDef, Tensor, TensorType, ValueId,
};
use tfn_test_utils::{random_tensor, Rng, Tolerance};

const DTYPES: [DType; 5] = [DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool];

/// Sizes near the tile edges of every element size, plus the degenerate ones.
const SIZES: [usize; 14] = [0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 33, 63, 64, 65];

/// At most this many elements per operand: keeps the suite fast in debug builds.
const MAX_ELEMENTS: usize = 1 << 16;

fn sym(i: usize) -> Dim {
    Dim::Sym(Sym(i as u32))
}

/// `rank` random sizes from [`SIZES`], shrunk until the tensor is small enough.
fn random_shape(rng: &mut Rng, rank: usize) -> Vec<usize> {
    let mut shape: Vec<usize> = (0..rank).map(|_| SIZES[rng.index(SIZES.len())]).collect();
    while shape.iter().product::<usize>() > MAX_ELEMENTS {
        let big = (0..rank).max_by_key(|&a| shape[a]).unwrap_or(0);
        shape[big] /= 2;
    }
    shape
}

fn random_perm(rng: &mut Rng, rank: usize) -> Vec<u32> {
    let mut perm: Vec<u32> = (0..rank as u32).collect();
    for i in (1..rank).rev() {
        perm.swap(i, rng.index(i + 1));
    }
    perm
}

/// A graph of `params` parameters of `dtype`, with one symbol per entry of `sources`.
fn graph_with_params(dtype: DType, shapes: &[Shape], sources: Vec<Vec<(u32, u32)>>) -> Graph {
    let mut g = Graph { name: "copies".into(), ..Graph::default() };
    g.syms = sources.into_iter().map(|sources| SymDef::Input { sources }).collect();
    for (p, shape) in shapes.iter().enumerate() {
        let ty = TensorType { dtype, shape: shape.clone() };
        g.params.push(GraphParam { name: format!("p{p}"), ty: ty.clone() });
        g.push(Op::Param(p as u32), vec![], ty, Default::default());
    }
    g
}

/// `transpose(p0, perm)` with every input size symbolic.
fn transpose_graph(dtype: DType, perm: &[u32]) -> Graph {
    let rank = perm.len();
    let input = Shape((0..rank).map(sym).collect());
    let mut g =
        graph_with_params(dtype, &[input], (0..rank).map(|a| vec![(0, a as u32)]).collect());
    let out = Shape(perm.iter().map(|&p| sym(p as usize)).collect());
    let v = g.push(
        Op::Transpose { perm: perm.to_vec() },
        vec![ValueId(0)],
        TensorType { dtype, shape: out },
        Default::default(),
    );
    g.outputs = vec![v];
    g
}

/// `slice(p0, axis, start, end, step)`; the sliced length is a derived symbol.
fn slice_graph(
    dtype: DType,
    rank: usize,
    axis: u32,
    start: i64,
    end: Option<i64>,
    step: i64,
) -> Graph {
    let input = Shape((0..rank).map(sym).collect());
    let mut g =
        graph_with_params(dtype, &[input], (0..rank).map(|a| vec![(0, a as u32)]).collect());
    let size = Box::new(DimExpr::Dim(sym(axis as usize)));
    g.syms.push(SymDef::Derived(DimExpr::SliceLen { size, start, end, step }));
    let mut dims: Vec<Dim> = (0..rank).map(sym).collect();
    dims[axis as usize] = sym(rank);
    let op = Op::Slice { axis, start, end, step };
    let v =
        g.push(op, vec![ValueId(0)], TensorType { dtype, shape: Shape(dims) }, Default::default());
    g.outputs = vec![v];
    g
}

/// `concat(p0, …, p{n-1}, axis)`: the operands share every size but their own along `axis`.
fn concat_graph(dtype: DType, rank: usize, axis: usize, n: usize) -> Graph {
    // Symbols 0..rank are the shared sizes (symbol `axis` unused), rank..rank+n the operands'.
    let own = |p: usize| sym(rank + p);
    let shapes: Vec<Shape> = (0..n)
        .map(|p| Shape((0..rank).map(|a| if a == axis { own(p) } else { sym(a) }).collect()))
        .collect();
    let mut sources: Vec<Vec<(u32, u32)>> =
        (0..rank).map(|a| (0..n as u32).map(|p| (p, a as u32)).collect()).collect();
    sources[axis] = vec![(0, axis as u32)];
    sources.extend((0..n as u32).map(|p| vec![(p, axis as u32)]));
    let mut g = graph_with_params(dtype, &shapes, sources);
    let total = (1..n).fold(DimExpr::Dim(own(0)), |acc, p| {
        DimExpr::Add(Box::new(acc), Box::new(DimExpr::Dim(own(p))))
    });
    g.syms.push(SymDef::Derived(total));
    let mut dims: Vec<Dim> = (0..rank).map(sym).collect();
    dims[axis] = sym(rank + n);
    let v = g.push(
        Op::Concat { axis: axis as u32 },
        (0..n as u32).map(ValueId).collect(),
        TensorType { dtype, shape: Shape(dims) },
        Default::default(),
    );
    g.outputs = vec![v];
    g
}

/// Runs `graph` natively and in the interpreter on `inputs`; the kernel must not fall back.
fn check(graph: &Graph, inputs: &[Tensor]) -> Result<(), String> {
    let f = check_against_interp(graph, inputs, Tolerance::EXACT, 1)?;
    match f.interpreted_kernels().as_slice() {
        [] => Ok(()),
        slow => Err(format!("kernels run by the interpreter: {slow:?}")),
    }
}

fn report(failures: Vec<String>) {
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn random_transposes_match_the_interpreter() {
    let mut failures = Vec::new();
    for seed in 1..=120u64 {
        let mut rng = Rng::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let dtype = DTYPES[rng.index(DTYPES.len())];
        let rank = [0, 1, 2, 2, 2, 3, 3, 3, 4, 5][rng.index(10)];
        let perm = random_perm(&mut rng, rank);
        let graph = transpose_graph(dtype, &perm);
        for _ in 0..3 {
            let shape = random_shape(&mut rng, rank);
            let x = random_tensor(&mut rng, dtype, &shape, (-100.0, 100.0));
            if let Err(e) = check(&graph, &[x]) {
                failures.push(format!("seed {seed}: {dtype} {shape:?} perm {perm:?}: {e}"));
            }
        }
    }
    report(failures);
}

#[test]
fn large_transposes_cross_many_tiles() {
    let cases: [(DType, &[usize], &[u32]); 5] = [
        (DType::F32, &[257, 300], &[1, 0]),
        (DType::F64, &[130, 67], &[1, 0]),
        (DType::Bool, &[129, 200], &[1, 0]),
        (DType::I32, &[5, 33, 130], &[2, 0, 1]),
        (DType::I64, &[17, 40, 3, 35], &[3, 1, 0, 2]),
    ];
    let mut failures = Vec::new();
    let mut rng = Rng::new(7);
    for (dtype, shape, perm) in cases {
        let x = random_tensor(&mut rng, dtype, shape, (-100.0, 100.0));
        if let Err(e) = check(&transpose_graph(dtype, perm), &[x]) {
            failures.push(format!("{dtype} {shape:?} perm {perm:?}: {e}"));
        }
    }
    report(failures);
}

#[test]
fn random_slices_match_the_interpreter() {
    let mut failures = Vec::new();
    for seed in 1..=100u64 {
        let mut rng = Rng::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let dtype = DTYPES[rng.index(DTYPES.len())];
        let rank = 1 + rng.index(4);
        let axis = rng.index(rank) as u32;
        let bound = |rng: &mut Rng| rng.index(41) as i64 - 20;
        let step = [1, 1, 2, 3, -1, -2][rng.index(6)];
        let end = if rng.index(3) == 0 { None } else { Some(bound(&mut rng)) };
        let start = bound(&mut rng);
        let graph = slice_graph(dtype, rank, axis, start, end, step);
        for _ in 0..3 {
            let shape = random_shape(&mut rng, rank);
            let x = random_tensor(&mut rng, dtype, &shape, (-100.0, 100.0));
            if let Err(e) = check(&graph, &[x]) {
                let slice = format!("axis {axis} {start}:{end:?}:{step}");
                failures.push(format!("seed {seed}: {dtype} {shape:?} {slice}: {e}"));
            }
        }
    }
    report(failures);
}

#[test]
fn random_concats_match_the_interpreter() {
    let mut failures = Vec::new();
    for seed in 1..=80u64 {
        let mut rng = Rng::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let dtype = DTYPES[rng.index(DTYPES.len())];
        let rank = 1 + rng.index(4);
        let axis = rng.index(rank);
        let n = 1 + rng.index(3);
        let graph = concat_graph(dtype, rank, axis, n);
        for _ in 0..3 {
            let shared = random_shape(&mut rng, rank);
            let inputs: Vec<Tensor> = (0..n)
                .map(|_| {
                    let mut shape = shared.clone();
                    shape[axis] = SIZES[rng.index(6)];
                    random_tensor(&mut rng, dtype, &shape, (-100.0, 100.0))
                })
                .collect();
            let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
            if let Err(e) = check(&graph, &inputs) {
                failures.push(format!("seed {seed}: {dtype} {shapes:?} axis {axis}: {e}"));
            }
        }
    }
    report(failures);
}
