//! The peer workloads of notes/performance.md (`benches/workloads.tfn`) through `Session`:
//! the interpreter vs the JIT (`call`, which allocates its output) vs the JIT into a
//! preallocated output (`call_into`) vs a hand-written Rust loop, at 4K, 256K, 4M and 16M
//! elements, one thread; then relu(A@B + bias), an MLP forward and backward, and 1 vs 2
//! threads on gelu.
//!
//! `TFN_BENCH_SIZES=262144` picks sizes; `TFN_BENCH_ONLY=gelu,softmax` picks workloads. The
//! interpreter is skipped above 4M elements (it takes seconds).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ndarray::{ArrayD, IxDyn};
use std::hint::black_box;
use tfn::{Backend, OutputMut, Session, SessionOptions, Tensor, Value};

const SOURCE: &str = include_str!("workloads.tfn");
const ROW: usize = 1024;

fn session(backend: Backend, threads: usize) -> Session {
    let s = Session::with_options(SessionOptions { backend, threads, ..SessionOptions::default() });
    s.load_str("workloads.tfn", SOURCE).expect("workloads.tfn loads");
    s
}

/// Deterministic standard-normal-ish data (a sum of uniforms), different per input.
fn filled(shape: &[usize], seed: u64) -> ArrayD<f32> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let n: usize = shape.iter().product();
    let data = (0..n)
        .map(|_| {
            let mut acc = 0.0f32;
            for _ in 0..4 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                acc += (state >> 40) as f32 / (1u64 << 24) as f32;
            }
            (acc - 2.0) * 1.7
        })
        .collect();
    ArrayD::from_shape_vec(IxDyn(shape), data).expect("shape matches data")
}

fn selected(name: &str) -> bool {
    std::env::var("TFN_BENCH_ONLY").map_or(true, |only| only.split(',').any(|w| w == name))
}

fn sizes() -> Vec<usize> {
    std::env::var("TFN_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![4 << 10, 256 << 10, 4 << 20, 16 << 20])
}

/// A vectorisable tanh (rational approximation, |err| < 2e-7 on [-9, 9]) like the notes'
/// hand-written baseline: a libm call per element would not be a fair loop.
fn tanh_rational(x: f32) -> f32 {
    let x = x.clamp(-9.0, 9.0);
    let x2 = x * x;
    let p = x
        * (-8.604_672e-11f32
            .mul_add(x2, 5.122_297e-8)
            .mul_add(x2, 1.485_722_4e-5)
            .mul_add(x2, 6.372_619_3e-4)
            .mul_add(x2, 4.893_524_6e-3));
    let q = 1.198_258_4e-6f32
        .mul_add(x2, 1.185_347e-4)
        .mul_add(x2, 2.268_434_6e-3)
        .mul_add(x2, 4.893_525e-3);
    p / q
}

/// The hand-written loop of a workload, if it has one; `out` is preallocated.
fn rust_loop(name: &str, inputs: &[ArrayD<f32>], out: &mut [f32]) -> bool {
    let data = |i: usize| inputs[i].as_slice().unwrap_or(&[]);
    match name {
        "saxpy" => {
            for ((o, &a), &b) in out.iter_mut().zip(data(0)).zip(data(1)) {
                *o = 2.5 * a + -1.25 * b + 0.5;
            }
        }
        "gelu" => {
            for (o, &x) in out.iter_mut().zip(data(0)) {
                *o = 0.5 * x * (1.0 + tanh_rational(0.797_884_6 * (x + 0.044715 * x * x * x)));
            }
        }
        "bias_relu" => {
            let b = data(1);
            for (row, xs) in out.chunks_mut(b.len()).zip(data(0).chunks(b.len())) {
                for ((o, &x), &bb) in row.iter_mut().zip(xs).zip(b) {
                    *o = (x + bb).max(0.0);
                }
            }
        }
        "total" => {
            let mut acc = [0f32; 64];
            let x = data(0);
            for c in x.chunks_exact(64) {
                for (a, &v) in acc.iter_mut().zip(c) {
                    *a += v;
                }
            }
            out[0] = acc.iter().sum::<f32>() + x.chunks_exact(64).remainder().iter().sum::<f32>();
        }
        _ => return false,
    }
    true
}

fn workload(c: &mut Criterion, name: &str, shapes: &dyn Fn(usize) -> Vec<Vec<usize>>) {
    if !selected(name) {
        return;
    }
    let params = ["x", "z", "bias"];
    let (jit, interp) = (session(Backend::Jit, 1), session(Backend::Interp, 1));
    let mut group = c.benchmark_group(name);
    for n in sizes() {
        let inputs: Vec<ArrayD<f32>> =
            shapes(n).iter().enumerate().map(|(i, s)| filled(s, i as u64 + 1)).collect();
        let names: Vec<&str> =
            if name == "bias_relu" { vec!["x", "bias"] } else { params[..inputs.len()].to_vec() };
        let kwargs: Vec<(&str, Value)> =
            names.iter().zip(&inputs).map(|(n, a)| (*n, Value::from(a.view()))).collect();
        let mut out = match jit.call_kw(name, &[], &kwargs).expect("runs").remove(0).into_tensor() {
            Some(Tensor::F32(a)) => a,
            _ => panic!("{name} returns an f32 tensor"),
        };
        group.throughput(Throughput::Elements(n as u64));
        if n <= 4 << 20 {
            group.bench_with_input(BenchmarkId::new("interp", n), &n, |b, _| {
                b.iter(|| black_box(interp.call_kw(name, &[], &kwargs).expect("runs")))
            });
        }
        group.bench_with_input(BenchmarkId::new("jit", n), &n, |b, _| {
            b.iter(|| black_box(jit.call_kw(name, &[], &kwargs).expect("runs")))
        });
        group.bench_with_input(BenchmarkId::new("jit_into", n), &n, |b, _| {
            b.iter(|| {
                jit.call_into_kw(name, &[], &kwargs, &mut [OutputMut::from(out.view_mut())])
                    .expect("runs")
            })
        });
        let mut buf = vec![0f32; out.len()];
        if rust_loop(name, &inputs, &mut buf) {
            group.bench_with_input(BenchmarkId::new("rust_loop", n), &n, |b, _| {
                b.iter(|| rust_loop(name, black_box(&inputs), black_box(&mut buf)))
            });
        }
    }
    group.finish();
}

fn elementwise_and_rows(c: &mut Criterion) {
    workload(c, "saxpy", &|n| vec![vec![n], vec![n]]);
    workload(c, "gelu", &|n| vec![vec![n]]);
    workload(c, "bias_relu", &|n| vec![vec![n / ROW, ROW], vec![ROW]]);
    workload(c, "softmax", &|n| vec![vec![n / ROW, ROW]]);
    workload(c, "layernorm", &|n| vec![vec![n / ROW, ROW]]);
    workload(c, "total", &|n| vec![vec![n]]);
}

fn matmul(c: &mut Criterion) {
    if !selected("matmul_bias_relu") {
        return;
    }
    let jit = session(Backend::Jit, 1);
    let mut group = c.benchmark_group("matmul_bias_relu");
    group.sample_size(20);
    for n in [256usize, 1024] {
        let (a, b, bias) = (filled(&[n, n], 1), filled(&[n, n], 2), filled(&[n], 3));
        let args = [Value::from(a.view()), Value::from(b.view()), Value::from(bias.view())];
        let mut out = ArrayD::<f32>::zeros(IxDyn(&[n, n]));
        group.throughput(Throughput::Elements((2 * n * n * n) as u64));
        group.bench_with_input(BenchmarkId::new("jit_into", n), &n, |bch, _| {
            bch.iter(|| {
                jit.call_into("matmul_bias_relu", &args, &mut [OutputMut::from(out.view_mut())])
                    .expect("runs")
            })
        });
    }
    group.finish();
}

fn mlp(c: &mut Criterion) {
    if !selected("mlp") {
        return;
    }
    let mut group = c.benchmark_group("mlp_256x1024");
    group.sample_size(10);
    let (x, w1, b1, w2, b2) = (
        filled(&[256, 1024], 1),
        filled(&[1024, 1024], 2),
        filled(&[1024], 3),
        filled(&[1024, 1024], 4),
        filled(&[1024], 5),
    );
    let w1 = w1.mapv(|v| v * 0.03);
    let w2 = w2.mapv(|v| v * 0.03);
    let args = [x.view(), w1.view(), b1.view(), w2.view(), b2.view()].map(Value::from);
    let ct = filled(&[256, 1024], 6);
    for (label, backend) in [("jit", Backend::Jit), ("interp", Backend::Interp)] {
        let s = session(backend, 1);
        group.bench_function(format!("{label}/forward"), |b| {
            b.iter(|| black_box(s.call("mlp", &args).expect("runs")))
        });
        group.bench_function(format!("{label}/vjp"), |b| {
            b.iter(|| black_box(s.vjp("mlp", &args, &[Value::from(ct.view())]).expect("runs")))
        });
    }
    group.finish();
}

fn threads(c: &mut Criterion) {
    if !selected("threads") {
        return;
    }
    let mut group = c.benchmark_group("gelu_4M_threads");
    let x = filled(&[4 << 20], 1);
    let mut out = ArrayD::<f32>::zeros(IxDyn(&[4 << 20]));
    for t in [1usize, 2] {
        let s = session(Backend::Jit, t);
        let args = [Value::from(x.view())];
        group.bench_function(format!("{t}"), |b| {
            b.iter(|| {
                s.call_into("gelu", &args, &mut [OutputMut::from(out.view_mut())]).expect("runs")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, elementwise_and_rows, matmul, mlp, threads);
criterion_main!(benches);
