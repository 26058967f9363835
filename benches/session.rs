//! Session-level benchmarks: what a user of `Session` pays per call on a cache hit (1-element
//! tensors, so the kernel itself is negligible), and for the first call of a function (check,
//! instantiate, rewrite, fuse, Cranelift).

use criterion::{criterion_group, criterion_main, Criterion};
use ndarray::{ArrayD, Dimension, IxDyn};
use std::hint::black_box;
use tfn::{Backend, OutputMut, Session, SessionOptions, Value};

const SOURCE: &str = include_str!("workloads.tfn");

fn session(backend: Backend) -> Session {
    let options = SessionOptions { backend, threads: 1, ..SessionOptions::default() };
    let s = Session::with_options(options);
    s.load_str("workloads.tfn", SOURCE).expect("workloads.tfn loads");
    s
}

fn call_overhead(c: &mut Criterion) {
    let mut group = c.benchmark_group("cache_hit_1_element");
    let x = ArrayD::<f32>::from_elem(IxDyn(&[1]), 0.5);
    let mut out = ArrayD::<f32>::zeros(IxDyn(&[1]));
    for (name, backend) in [("jit", Backend::Jit), ("interp", Backend::Interp)] {
        let s = session(backend);
        let args = [Value::from(x.view())];
        group.bench_function(format!("{name}/call"), |b| {
            b.iter(|| black_box(s.call("gelu", &args).unwrap()))
        });
        group.bench_function(format!("{name}/call_into"), |b| {
            b.iter(|| {
                let mut outs = [OutputMut::from(out.view_mut())];
                s.call_into("gelu", &args, &mut outs).unwrap()
            })
        });
        let handle = s.instantiate("gelu", &args, &[]).unwrap();
        group.bench_function(format!("{name}/handle_call_into"), |b| {
            b.iter(|| {
                let mut outs = [OutputMut::from(out.view_mut())];
                handle.call_into(&args, &mut outs).unwrap()
            })
        });
    }
    group.finish();
}

fn first_call(c: &mut Criterion) {
    let mut group = c.benchmark_group("first_call");
    group.sample_size(20);
    let x = ArrayD::<f32>::from_elem(IxDyn(&[4, 1024]), 0.5);
    for function in ["gelu", "softmax", "layernorm"] {
        group.bench_function(function, |b| {
            b.iter_with_setup(
                || session(Backend::Jit),
                |s| black_box(s.call(function, &[Value::from(x.view())]).unwrap()),
            )
        });
    }
    group.finish();
}

/// Loops: the cost of a trip on top of its body's kernels, a looped model against its
/// unrolled form, and the first call (compile) of a 12-layer loop against a 2-layer one.
const LOOPS: &str = r#"
use "std:nn"
fn step(Tensor h, Tensor w) -> Tensor {
    return h + w
}
fn trips(Tensor x, Tensor w) -> Tensor {
    var h = x
    for l in 0..size(w, 0) {
        h = h + w[l]
    }
    return h
}
fn block(Tensor h, Tensor w, Tensor g, Tensor b) -> Tensor {
    return layer_norm(h + gelu(matmul(h, w)), g, b)
}
fn looped(Tensor x, Tensor w, Tensor g, Tensor b) -> Tensor {
    var h = x
    for l in 0..size(w, 0) {
        h = block(h, w[l], g[l], b[l])
    }
    return h
}
fn unrolled2(Tensor x, Tensor w, Tensor g, Tensor b) -> Tensor {
    let h = block(x, w[0], g[0], b[0])
    return block(h, w[1], g[1], b[1])
}
fn unrolled12(Tensor x, Tensor w, Tensor g, Tensor b) -> Tensor {
    let h1 = block(x, w[0], g[0], b[0])
    let h2 = block(h1, w[1], g[1], b[1])
    let h3 = block(h2, w[2], g[2], b[2])
    let h4 = block(h3, w[3], g[3], b[3])
    let h5 = block(h4, w[4], g[4], b[4])
    let h6 = block(h5, w[5], g[5], b[5])
    let h7 = block(h6, w[6], g[6], b[6])
    let h8 = block(h7, w[7], g[7], b[7])
    let h9 = block(h8, w[8], g[8], b[8])
    let h10 = block(h9, w[9], g[9], b[9])
    let h11 = block(h10, w[10], g[10], b[10])
    return block(h11, w[11], g[11], b[11])
}
"#;

fn loop_session() -> Session {
    let options = SessionOptions { threads: 1, ..SessionOptions::default() };
    let s = Session::with_options(options);
    s.load_str("loops.tfn", LOOPS).expect("the loop benchmark source loads");
    s
}

fn loops(c: &mut Criterion) {
    let mut group = c.benchmark_group("loops");
    let s = loop_session();
    // A trip's overhead: 1-element tensors, so the body's kernel is negligible.
    let x = ArrayD::<f32>::from_elem(IxDyn(&[1]), 0.5);
    let one = ArrayD::<f32>::from_elem(IxDyn(&[1]), 0.25);
    group.bench_function("body_call_1_element", |b| {
        let args = [Value::from(x.view()), Value::from(one.view())];
        b.iter(|| black_box(s.call("step", &args).unwrap()))
    });
    for n in [1usize, 101] {
        let w = ArrayD::<f32>::from_elem(IxDyn(&[n, 1]), 0.25);
        let args = [Value::from(x.view()), Value::from(w.view())];
        group.bench_function(format!("for_{n}_trips_1_element"), |b| {
            b.iter(|| black_box(s.call("trips", &args).unwrap()))
        });
    }
    // A 12-layer model (rows 32, channels 64) looped and unrolled.
    let (rows, ch, layers) = (32usize, 64usize, 12usize);
    let fill = |shape: &[usize], scale: f32| {
        ArrayD::<f32>::from_shape_fn(IxDyn(shape), |i| {
            let k: usize = i.slice().iter().fold(7, |a, &d| a * 31 + d);
            ((k % 97) as f32 / 97.0 - 0.5) * scale
        })
    };
    let (xs, w, g, bias) = (
        fill(&[rows, ch], 2.0),
        fill(&[layers, ch, ch], 0.2),
        fill(&[layers, ch], 1.0),
        fill(&[layers, ch], 0.1),
    );
    let args = [
        Value::from(xs.view()),
        Value::from(w.view()),
        Value::from(g.view()),
        Value::from(bias.view()),
    ];
    for f in ["looped", "unrolled12"] {
        group.bench_function(format!("{f}_12_layers"), |b| {
            b.iter(|| black_box(s.call(f, &args).unwrap()))
        });
    }
    // Reverse mode: the unrolled graph's vjp (stores every residual), the loop's (stores each
    // trip's carried value) and the checkpointed loop's (every ⌈√12⌉-th, recomputing).
    let cot = [Value::from(fill(&[rows, ch], 1.0))];
    let ckpt = {
        let options =
            SessionOptions { threads: 1, checkpoint_loops: true, ..SessionOptions::default() };
        let s = Session::with_options(options);
        s.load_str("loops.tfn", LOOPS).expect("the loop benchmark source loads");
        s
    };
    for (name, sess, f) in [
        ("unrolled12_vjp", &s, "unrolled12"),
        ("looped_vjp", &s, "looped"),
        ("looped_checkpointed_vjp", &ckpt, "looped"),
    ] {
        group.bench_function(format!("{name}_12_layers"), |b| {
            b.iter(|| black_box(sess.value_and_vjp(f, &args, &cot).unwrap()))
        });
    }
    group.finish();
    // Compile time: a fresh session's first call.
    let mut group = c.benchmark_group("loops_first_call");
    group.sample_size(10);
    let w2 = fill(&[2, ch, ch], 0.2);
    let (g2, b2) = (fill(&[2, ch], 1.0), fill(&[2, ch], 0.1));
    let args2 = [
        Value::from(xs.view()),
        Value::from(w2.view()),
        Value::from(g2.view()),
        Value::from(b2.view()),
    ];
    for (name, f, a) in [
        ("looped_2_layers", "looped", &args2),
        ("looped_12_layers", "looped", &args),
        ("unrolled_2_layers", "unrolled2", &args2),
        ("unrolled_12_layers", "unrolled12", &args),
    ] {
        group.bench_function(name, |b| {
            b.iter_with_setup(loop_session, |s| black_box(s.call(f, a).unwrap()))
        });
    }
    group.finish();
}

criterion_group!(benches, call_overhead, first_call, loops);
criterion_main!(benches);
