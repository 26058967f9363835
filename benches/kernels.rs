//! Kernel benchmarks: interpreter vs JIT (owned outputs) vs JIT into a preallocated output vs a
//! hand-written Rust loop, for saxpy, gelu (tanh form), bias_relu, softmax and layer norm
//! (rows of 1024, no affine), a full sum, and relu(A@B + bias). One thread.
//!
//! `jit` includes allocating the output (zeroed by `calloc`); `jit_into` writes into a buffer
//! allocated once. Graphs are IR text until the front end's `Session` drives them.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ndarray::{ArrayD, IxDyn};
use std::hint::black_box;
use tfn_backend::{CompileOptions, CompiledFunction, TensorView, TensorViewMut};
use tfn_ir::Tensor;

const ROW: usize = 1024;

fn graph(src: &str) -> tfn_ir::Graph {
    tfn_ir::text::parse_graph(src).expect("benchmark graph parses")
}

fn saxpy() -> tfn_ir::Graph {
    graph(
        "func saxpy(x: f32[s0], z: f32[s0]) -> (f32[s0]) {
  sym s0 = input(param 0 axis 0, param 1 axis 0)
  %0 = param 0 : f32[s0]
  %1 = param 1 : f32[s0]
  %2 = const 2.5 : f32[]
  %3 = mul %2, %0 : f32[s0]
  %4 = const -1.25 : f32[]
  %5 = mul %4, %1 : f32[s0]
  %6 = add %3, %5 : f32[s0]
  %7 = const 0.5 : f32[]
  %8 = add %6, %7 : f32[s0]
  return %8
}",
    )
}

fn gelu() -> tfn_ir::Graph {
    graph(
        "func gelu(x: f32[s0]) -> (f32[s0]) {
  sym s0 = input(param 0 axis 0)
  %0 = param 0 : f32[s0]
  %1 = mul %0, %0 : f32[s0]
  %2 = mul %1, %0 : f32[s0]
  %3 = const 0.044715 : f32[]
  %4 = mul %3, %2 : f32[s0]
  %5 = add %0, %4 : f32[s0]
  %6 = const 0.7978845608 : f32[]
  %7 = mul %6, %5 : f32[s0]
  %8 = tanh %7 : f32[s0]
  %9 = const 1.0 : f32[]
  %10 = add %9, %8 : f32[s0]
  %11 = const 0.5 : f32[]
  %12 = mul %11, %0 : f32[s0]
  %13 = mul %12, %10 : f32[s0]
  return %13
}",
    )
}

fn bias_relu() -> tfn_ir::Graph {
    graph(
        "func bias_relu(x: f32[s0, s1], b: f32[s1]) -> (f32[s0, s1]) {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1, param 1 axis 0)
  %0 = param 0 : f32[s0, s1]
  %1 = param 1 : f32[s1]
  %2 = add %0, %1 : f32[s0, s1]
  %3 = const 0.0 : f32[]
  %4 = maximum %2, %3 : f32[s0, s1]
  return %4
}",
    )
}

fn softmax() -> tfn_ir::Graph {
    graph(
        "func softmax(x: f32[s0, s1]) -> (f32[s0, s1]) {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1)
  %0 = param 0 : f32[s0, s1]
  %1 = max %0 {axes=[1], keepdim=true} : f32[s0, 1]
  %2 = sub %0, %1 : f32[s0, s1]
  %3 = exp %2 : f32[s0, s1]
  %4 = sum %3 {axes=[1], keepdim=true} : f32[s0, 1]
  %5 = div %3, %4 : f32[s0, s1]
  return %5
}",
    )
}

fn layernorm() -> tfn_ir::Graph {
    graph(
        "func layer_norm(x: f32[s0, s1]) -> (f32[s0, s1]) {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1)
  %0 = param 0 : f32[s0, s1]
  %1 = mean %0 {axes=[1], keepdim=true} : f32[s0, 1]
  %2 = sub %0, %1 : f32[s0, s1]
  %3 = mul %2, %2 : f32[s0, s1]
  %4 = mean %3 {axes=[1], keepdim=true} : f32[s0, 1]
  %5 = const 0.00001 : f32[]
  %6 = add %4, %5 : f32[s0, 1]
  %7 = rsqrt %6 : f32[s0, 1]
  %8 = mul %2, %7 : f32[s0, s1]
  return %8
}",
    )
}

fn sum() -> tfn_ir::Graph {
    graph(
        "func total(x: f32[s0]) -> (f32[]) {
  sym s0 = input(param 0 axis 0)
  %0 = param 0 : f32[s0]
  %1 = sum %0 {axes=[0], keepdim=false} : f32[]
  return %1
}",
    )
}

fn linear_relu() -> tfn_ir::Graph {
    graph(
        "func linear_relu(a: f32[s0, s1], b: f32[s1, s2], bias: f32[s2]) -> (f32[s0, s2]) {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1, param 1 axis 0)
  sym s2 = input(param 1 axis 1, param 2 axis 0)
  %0 = param 0 : f32[s0, s1]
  %1 = param 1 : f32[s1, s2]
  %2 = param 2 : f32[s2]
  %3 = matmul %0, %1 : f32[s0, s2]
  %4 = add %3, %2 : f32[s0, s2]
  %5 = const 0.0 : f32[]
  %6 = maximum %4, %5 : f32[s0, s2]
  return %6
}",
    )
}

fn filled(shape: &[usize], seed: u32) -> Tensor {
    let n: usize = shape.iter().product();
    let data = (0..n).map(|i| {
        ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) >> 8) as f32 / (1u32 << 24) as f32
            * 4.0
            - 2.0
    });
    Tensor::F32(ArrayD::from_shape_vec(IxDyn(shape), data.collect()).expect("shape"))
}

fn as_f32(t: &Tensor) -> &[f32] {
    match t {
        Tensor::F32(a) => a.as_slice().expect("contiguous"),
        _ => &[],
    }
}

/// The hand-written Rust loop for a workload, if there is one.
fn rust_loop(name: &str, inputs: &[Tensor], out: &mut [f32]) -> bool {
    match name {
        "saxpy" => {
            let (x, z) = (as_f32(&inputs[0]), as_f32(&inputs[1]));
            for ((o, &a), &b) in out.iter_mut().zip(x).zip(z) {
                *o = 2.5 * a + -1.25 * b + 0.5;
            }
        }
        "gelu" => {
            for (o, &x) in out.iter_mut().zip(as_f32(&inputs[0])) {
                *o = 0.5 * x * (1.0 + (0.797_884_6 * (x + 0.044715 * x * x * x)).tanh());
            }
        }
        "bias_relu" => {
            let b = as_f32(&inputs[1]);
            for (row, xs) in out.chunks_mut(b.len()).zip(as_f32(&inputs[0]).chunks(b.len())) {
                for ((o, &x), &bb) in row.iter_mut().zip(xs).zip(b) {
                    *o = (x + bb).max(0.0);
                }
            }
        }
        "sum" => {
            let mut acc = [0f32; 16];
            let x = as_f32(&inputs[0]);
            for c in x.chunks_exact(16) {
                for (a, &v) in acc.iter_mut().zip(c) {
                    *a += v;
                }
            }
            out[0] = acc.iter().sum::<f32>() + x.chunks_exact(16).remainder().iter().sum::<f32>();
        }
        _ => return false,
    }
    true
}

fn workload(
    c: &mut Criterion,
    name: &str,
    g: tfn_ir::Graph,
    shapes: &dyn Fn(usize) -> Vec<Vec<usize>>,
) {
    let sizes: Vec<usize> = std::env::var("TFN_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![4 << 10, 256 << 10, 4 << 20, 16 << 20]);
    let f = CompiledFunction::compile(&g, &CompileOptions { threads: 1 }).expect("compiles");
    let mut group = c.benchmark_group(name);
    for n in sizes {
        let inputs: Vec<Tensor> =
            shapes(n).iter().enumerate().map(|(i, s)| filled(s, i as u32)).collect();
        let views: Vec<TensorView<'_>> = inputs.iter().map(TensorView::from).collect();
        let mut outs = f.run(&views).expect("runs");
        group.throughput(Throughput::Elements(n as u64));
        if n <= 4 << 20 {
            group.bench_with_input(BenchmarkId::new("interp", n), &n, |b, _| {
                b.iter(|| black_box(tfn_ir::interp::run(&g, &inputs).expect("interp")))
            });
        }
        group.bench_with_input(BenchmarkId::new("jit", n), &n, |b, _| {
            b.iter(|| black_box(f.run(&views).expect("runs")))
        });
        group.bench_with_input(BenchmarkId::new("jit_into", n), &n, |b, _| {
            b.iter(|| {
                let mut out_views: Vec<TensorViewMut<'_>> =
                    outs.iter_mut().map(Into::into).collect();
                f.run_into(&views, &mut out_views).expect("runs")
            })
        });
        let mut out = vec![0f32; shapes(n)[0].iter().product()];
        if rust_loop(name, &inputs, &mut out) {
            group.bench_with_input(BenchmarkId::new("rust_loop", n), &n, |b, _| {
                b.iter(|| rust_loop(name, black_box(&inputs), black_box(&mut out)))
            });
        }
    }
    group.finish();
}

fn kernels(c: &mut Criterion) {
    workload(c, "saxpy", saxpy(), &|n| vec![vec![n], vec![n]]);
    workload(c, "gelu", gelu(), &|n| vec![vec![n]]);
    workload(c, "bias_relu", bias_relu(), &|n| vec![vec![n / ROW, ROW], vec![ROW]]);
    workload(c, "softmax", softmax(), &|n| vec![vec![n / ROW, ROW]]);
    workload(c, "layernorm", layernorm(), &|n| vec![vec![n / ROW, ROW]]);
    workload(c, "sum", sum(), &|n| vec![vec![n]]);
}

fn matmul(c: &mut Criterion) {
    let g = linear_relu();
    let f = CompiledFunction::compile(&g, &CompileOptions { threads: 1 }).expect("compiles");
    let mut group = c.benchmark_group("linear_relu");
    for n in [256usize, 1024] {
        let inputs = vec![filled(&[n, n], 1), filled(&[n, n], 2), filled(&[n], 3)];
        let views: Vec<TensorView<'_>> = inputs.iter().map(TensorView::from).collect();
        let mut outs = f.run(&views).expect("runs");
        group.throughput(Throughput::Elements((2 * n * n * n) as u64));
        group.bench_with_input(BenchmarkId::new("jit_into", n), &n, |b, _| {
            b.iter(|| {
                let mut out_views: Vec<TensorViewMut<'_>> =
                    outs.iter_mut().map(Into::into).collect();
                f.run_into(&views, &mut out_views).expect("runs")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, kernels, matmul);
criterion_main!(benches);
