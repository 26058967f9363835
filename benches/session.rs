//! Session-level benchmarks: what a user of `Session` pays per call on a cache hit (1-element
//! tensors, so the kernel itself is negligible), and for the first call of a function (check,
//! instantiate, rewrite, fuse, Cranelift).

use criterion::{criterion_group, criterion_main, Criterion};
use ndarray::{ArrayD, IxDyn};
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

criterion_group!(benches, call_overhead, first_call);
criterion_main!(benches);
