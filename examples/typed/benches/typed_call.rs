//! What a typed call adds over `Session::call_into` on a cache hit (1-element `gelu`, so the
//! kernel itself is negligible): `typed_into` is `nn::Lib::gelu_into`, `session_call_into`
//! the untyped call it wraps, `typed_call` the allocating `nn::Lib::gelu`.

use criterion::{criterion_group, criterion_main, Criterion};
use ndarray::{ArrayD, IxDyn};
use std::hint::black_box;
use tfn::{OutputMut, SessionOptions, Value};
use tfn_example_typed::nn;

fn overhead(c: &mut Criterion) {
    let mut group = c.benchmark_group("typed_cache_hit_1_element");
    let options = SessionOptions { threads: 1, ..SessionOptions::default() };
    let lib = nn::Lib::with_options(options).expect("nn.tfn loads");
    let x = ArrayD::<f32>::from_elem(IxDyn(&[1]), 0.5);
    let mut out = ArrayD::<f32>::zeros(IxDyn(&[1]));
    lib.gelu_into(x.view(), out.view_mut()).expect("gelu compiles");
    let s = lib.session();
    let args = [Value::from(x.view())];
    group.bench_function("session_call_into", |b| {
        b.iter(|| {
            let mut outs = [OutputMut::from(out.view_mut())];
            s.call_into("gelu", black_box(&args), &mut outs).unwrap()
        })
    });
    group.bench_function("typed_into", |b| {
        b.iter(|| lib.gelu_into(black_box(x.view()), out.view_mut()).unwrap())
    });
    group.bench_function("typed_call", |b| b.iter(|| black_box(lib.gelu(x.view()).unwrap())));
    group.finish();
}

criterion_group!(benches, overhead);
criterion_main!(benches);
