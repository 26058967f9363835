//! The kernel cache: hits on a repeated signature, no recompile for a new size, recompiles for
//! a new dtype or rank; and results through the cache match the interpreter.

use crate::common;

use common::views;
use tfn_backend::{CompileOptions, KernelCache, Signature};
use tfn_ir::{
    BinaryOp, DType, Dim, Graph, GraphParam, Op, Scalar, Shape, SymDef, Tensor, TensorType, UnaryOp,
};
use tfn_test_utils::{compare, random_tensor, Rng, Tolerance};

/// `relu(x) * 2` for a tensor of `dtype` and `rank` (every axis its own input symbol).
fn relu_graph(dtype: DType, rank: usize) -> Graph {
    let shape = Shape((0..rank as u32).map(|i| Dim::Sym(tfn_ir::Sym(i))).collect());
    let ty = TensorType { dtype, shape: shape.clone() };
    let scalar = TensorType { dtype, shape: Shape::scalar() };
    let mut g = Graph {
        name: "relu2".into(),
        params: vec![GraphParam { name: "x".into(), ty: ty.clone() }],
        syms: (0..rank as u32).map(|a| SymDef::Input { sources: vec![(0, a)] }).collect(),
        ..Graph::default()
    };
    let x = g.push(Op::Param(0), vec![], ty.clone(), Default::default());
    let zero = g.push(Op::Const(Scalar::Float(0.0)), vec![], scalar.clone(), Default::default());
    let two = g.push(Op::Const(Scalar::Float(2.0)), vec![], scalar, Default::default());
    let r = g.push(Op::Binary(BinaryOp::Maximum), vec![x, zero], ty.clone(), Default::default());
    let n = g.push(Op::Unary(UnaryOp::Abs), vec![r], ty.clone(), Default::default());
    let y = g.push(Op::Binary(BinaryOp::Mul), vec![n, two], ty, Default::default());
    g.outputs = vec![y];
    g
}

fn call(cache: &KernelCache, rng: &mut Rng, dtype: DType, shape: &[usize]) {
    let x = random_tensor(rng, dtype, shape, (-2.0, 2.0));
    let inputs = vec![x];
    let sig = Signature::new("relu2", vec![], &views(&inputs));
    let f = cache
        .get_or_compile(&sig, || Ok::<_, String>(relu_graph(dtype, shape.len())))
        .expect("compiles");
    let got = f.run(&views(&inputs)).expect("runs");
    let want = tfn_ir::interp::run(f.graph(), &inputs).expect("interprets");
    compare(&got[0], &want[0], Tolerance::ROUNDING).expect("matches");
}

#[test]
fn cache_hits_on_new_sizes_and_misses_on_new_dtype_or_rank() {
    let cache = KernelCache::new(CompileOptions { threads: 1, ..Default::default() }).expect("jit");
    let mut rng = Rng::new(7);
    call(&cache, &mut rng, DType::F32, &[4, 5]);
    assert_eq!((cache.stats().compiles, cache.stats().hits), (1, 0));
    call(&cache, &mut rng, DType::F32, &[4, 5]);
    call(&cache, &mut rng, DType::F32, &[100, 3]);
    assert_eq!(
        (cache.stats().compiles, cache.stats().hits),
        (1, 2),
        "a new size must not recompile"
    );
    call(&cache, &mut rng, DType::F64, &[4, 5]);
    assert_eq!(cache.stats().compiles, 2, "a new dtype recompiles");
    call(&cache, &mut rng, DType::F32, &[4, 5, 6]);
    assert_eq!(cache.stats().compiles, 3, "a new rank recompiles");
    call(&cache, &mut rng, DType::F32, &[1, 5]);
    assert_eq!(cache.stats().compiles, 4, "a newly broadcast axis recompiles");
    assert_eq!(cache.len(), 4);
    assert!(cache.stats().compile_time.as_nanos() > 0);
}

#[test]
fn cache_is_shared_across_threads() {
    let cache = KernelCache::new(CompileOptions { threads: 1, ..Default::default() }).expect("jit");
    std::thread::scope(|s| {
        for seed in 1..=4u64 {
            let cache = &cache;
            s.spawn(move || {
                let mut rng = Rng::new(seed);
                for n in [3usize, 8, 33] {
                    call(cache, &mut rng, DType::F32, &[n]);
                }
            });
        }
    });
    let stats = cache.stats();
    assert_eq!(stats.compiles + stats.hits, 12);
    assert_eq!(cache.len(), 1);
}

#[test]
fn wrong_inputs_are_errors_not_panics() {
    let cache = KernelCache::new(CompileOptions { threads: 1, ..Default::default() }).expect("jit");
    let x = Tensor::F32(ndarray::ArrayD::zeros(ndarray::IxDyn(&[2, 3])));
    let inputs = vec![x];
    let sig = Signature::new("relu2", vec![], &views(&inputs));
    let f = cache
        .get_or_compile(&sig, || Ok::<_, String>(relu_graph(DType::F32, 2)))
        .expect("compiles");
    let wrong_dtype = vec![Tensor::F64(ndarray::ArrayD::zeros(ndarray::IxDyn(&[2, 3])))];
    assert!(f.run(&views(&wrong_dtype)).is_err());
    let wrong_rank = vec![Tensor::F32(ndarray::ArrayD::zeros(ndarray::IxDyn(&[6])))];
    assert!(f.run(&views(&wrong_rank)).is_err());
    assert!(f.run(&[]).is_err());
}

/// The same layer twice in one function, then the whole function again: identical kernels
/// compile once (the JIT's code cache is keyed by the exact Cranelift function), and the
/// shared code still computes each kernel's own values.
#[test]
fn identical_kernels_share_one_compile_and_keep_their_own_values() {
    let src = "func twice(x: f32[s0, s1], w: f32[s1, s1], b: f32[s1]) -> (f32[s0, s1]) {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1, param 1 axis 0, param 1 axis 1, param 2 axis 0)
  %0 = param 0 : f32[s0, s1]
  %1 = param 1 : f32[s1, s1]
  %2 = param 2 : f32[s1]
  %3 = matmul %0, %1 : f32[s0, s1]
  %4 = add %3, %2 : f32[s0, s1]
  %5 = tanh %4 : f32[s0, s1]
  %6 = matmul %5, %1 : f32[s0, s1]
  %7 = add %6, %2 : f32[s0, s1]
  %8 = tanh %7 : f32[s0, s1]
  return %8
}";
    let graph = tfn_ir::text::parse_graph(src).expect("parses");
    let mut rng = Rng::new(3);
    let inputs: Vec<Tensor> = [&[5usize, 7][..], &[7, 7], &[7]]
        .iter()
        .map(|s| random_tensor(&mut rng, DType::F32, s, (-2.0, 2.0)))
        .collect();
    let want = tfn_ir::interp::run(&graph, &inputs).expect("interprets");
    // A function's kernels compile as one batch on up to `threads` threads: the same
    // kernels are compiled and reused, and the results are the same bits, on any count.
    let mut runs = Vec::new();
    for threads in [1, 3] {
        let jit = tfn_backend::JitCompiler::new(CompileOptions { threads, ..Default::default() })
            .expect("jit");
        let first = jit.compile(&graph).expect("compiles");
        let (compiled, reused) = jit.code_stats();
        assert!(reused >= 1, "the second layer reuses the first's kernels: {compiled} + {reused}");
        let again = jit.compile(&graph).expect("compiles again");
        let (compiled2, reused2) = jit.code_stats();
        assert_eq!(compiled2, compiled, "nothing new to compile");
        assert_eq!(reused2, reused + compiled + reused, "every kernel served from the cache");
        for f in [&first, &again] {
            let got = f.run(&views(&inputs)).expect("runs");
            compare(&got[0], &want[0], Tolerance::ROUNDING).expect("matches the interpreter");
            runs.push((threads, compiled, reused, got));
        }
    }
    for (threads, compiled, reused, got) in &runs[1..] {
        let (_, c0, r0, got0) = &runs[0];
        assert_eq!((compiled, reused), (c0, r0), "{threads} compile threads");
        assert_eq!(got, got0, "{threads} threads: the same bits");
    }
}
