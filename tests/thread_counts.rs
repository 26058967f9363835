//! The thread count never changes a result, through the whole compiler: every workload of
//! `benches/workloads.tfn` (and convolutions, pooling, copies, scans, arg-reductions, full
//! reductions, f64 matmuls on the `gemm` crate path, and gradients) runs on sessions with 1,
//! 2, 3 and 4 threads at odd sizes above the parallel thresholds, and every output must be the
//! same bits as on one thread.

use ndarray::{ArrayD, IxDyn};
use tfn::{Session, SessionOptions, Tensor, Value};
use tfn_test_utils::Rng;

const WORKLOADS: &str = include_str!("../benches/workloads.tfn");

const MORE: &str = r#"
fn conv_relu(Tensor x, Tensor w) -> Tensor {
    return maximum(conv2d(x, w, padding=[1, 1]), 0.0)
}
fn conv_loss(Tensor x, Tensor w) -> Tensor {
    return sum(conv2d(x, w, padding=[1, 1]) * conv2d(x, w, padding=[1, 1]))
}
fn pool(Tensor x) -> Tensor {
    return max_pool2d(x, kernel=[2, 2])
}
fn moves(Tensor x) -> Tensor {
    let t = transpose(x, [1, 0])
    return concat([t, slice(t, dim=0, start=1, step=2)], dim=0)
}
fn scans(Tensor x) -> Tensor {
    return cumsum(x, dim=0) + cumsum(x, dim=1, reverse=true)
}
fn picks(Tensor x) -> Tensor {
    return argmax(x, dim=1)
}
fn stats(Tensor x) -> Tensor {
    return sum(x, dims=[0]) + max(x, dims=[0]) + mean(x)
}
fn mm(Tensor a, Tensor b) -> Tensor {
    return matmul(a, b)
}
fn rows(Tensor table, Tensor index) -> Tensor {
    return index_select(table, index, dim=0) * 2.0
}
"#;

fn f32s(a: ArrayD<f64>) -> Value<'static> {
    a.mapv(|x| x as f32).into()
}

fn bits(v: &Value<'static>) -> Vec<u64> {
    match v.clone().into_tensor() {
        Some(Tensor::F32(a)) => a.iter().map(|x| u64::from(x.to_bits())).collect(),
        Some(Tensor::F64(a)) => a.iter().map(|x| x.to_bits()).collect(),
        Some(Tensor::I64(a)) => a.iter().map(|&x| x as u64).collect(),
        other => panic!("unexpected output {other:?}"),
    }
}

fn session(threads: usize) -> Session {
    let s = Session::with_options(SessionOptions { threads, ..Default::default() });
    s.load_str("workloads.tfn", WORKLOADS).expect("workloads load");
    s.load_str("more.tfn", MORE).expect("more loads");
    s
}

/// Calls (or, with cotangents, differentiates) `name` on sessions of 1 to 4 threads.
fn check(name: &str, args: &[Value], cotangents: Option<&[Value]>) {
    let mut first: Option<Vec<Vec<u64>>> = None;
    for threads in 1..=4 {
        let s = session(threads);
        let outs = match cotangents {
            None => s.call(name, args),
            Some(c) => s.vjp(name, args, c),
        }
        .unwrap_or_else(|e| panic!("{name} on {threads} threads: {e}"));
        let got: Vec<Vec<u64>> = outs.iter().map(bits).collect();
        match &first {
            None => first = Some(got),
            Some(want) => {
                for (o, (a, b)) in want.iter().zip(&got).enumerate() {
                    assert!(a == b, "{name}: output {o} differs between 1 and {threads} threads");
                }
            }
        }
    }
}

#[test]
fn workloads_are_bit_identical_on_1_to_4_threads() {
    let mut rng = Rng::new(0x2545_f491_4f6c_dd1d);
    // Odd sizes above the 64K-element threshold: 70_001 and 1_000_003 elements, 263 × 1031.
    for n in [70_001usize, 1_000_003] {
        let (x, z) = (f32s(rng.array(&[n], -1.0, 1.0)), f32s(rng.array(&[n], -1.0, 1.0)));
        check("saxpy", &[x.clone(), z], None);
        check("gelu", std::slice::from_ref(&x), None);
        check("total", &[x], None);
    }
    let x = f32s(rng.array(&[263, 1031], -1.0, 1.0));
    check("bias_relu", &[x.clone(), f32s(rng.array(&[1031], -1.0, 1.0))], None);
    check("softmax", std::slice::from_ref(&x), None);
    check("layernorm", std::slice::from_ref(&x), None);
    check("stats", std::slice::from_ref(&x), None);
    check("scans", std::slice::from_ref(&x), None);
    check("picks", std::slice::from_ref(&x), None);
    check("moves", std::slice::from_ref(&x), None);
    check("softmax", std::slice::from_ref(&x), Some(&[f32s(rng.array(&[263, 1031], -1.0, 1.0))]));
    check("layernorm", &[x], Some(&[f32s(rng.array(&[263, 1031], -1.0, 1.0))]));
}

#[test]
fn matmuls_and_window_ops_are_bit_identical_on_1_to_4_threads() {
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
    let (a, b) = (rng.array(&[301, 257], -1.0, 1.0), rng.array(&[257, 199], -1.0, 1.0));
    check("mm", &[a.clone().into(), b.clone().into()], None); // f64: the `gemm` crate path
    check("mm", &[f32s(a.clone()), f32s(b.clone())], None); // f32: the packed GEMM
    check("matmul_bias_relu", &[f32s(a), f32s(b), f32s(rng.array(&[199], -1.0, 1.0))], None);
    let mlp = [
        f32s(rng.array(&[129, 65], -1.0, 1.0)),
        f32s(rng.array(&[65, 255], -1.0, 1.0)),
        f32s(rng.array(&[255], -1.0, 1.0)),
        f32s(rng.array(&[255, 33], -1.0, 1.0)),
        f32s(rng.array(&[33], -1.0, 1.0)),
    ];
    check("mlp", &mlp, None);
    check("mlp", &mlp, Some(&[f32s(rng.array(&[129, 33], -1.0, 1.0))]));
    let (x, w) = (rng.array(&[3, 8, 33, 35], -1.0, 1.0), rng.array(&[16, 8, 3, 3], -1.0, 1.0));
    check("conv_relu", &[f32s(x.clone()), f32s(w.clone())], None);
    check("conv_relu", &[x.clone().into(), w.clone().into()], None);
    check(
        "conv_loss",
        &[f32s(x.clone()), f32s(w.clone())],
        Some(&[f32s(ArrayD::from_elem(IxDyn(&[]), 1.0))]),
    );
    check("pool", &[f32s(x)], None);
}

/// An index out of range in a kernel split across threads (each chunk has its own error
/// record) is reported as the first bad index in row-major order, whatever the thread count.
#[test]
fn index_errors_are_the_same_on_1_to_4_threads() {
    let table = f32s(Rng::new(0x5151).array(&[300, 257], -1.0, 1.0));
    let mut index: Vec<i64> = (0..1001).map(|i| (i * 7) % 300 - 150).collect();
    let valid: Value = ArrayD::from_shape_vec(IxDyn(&[1001]), index.clone()).expect("shape").into();
    check("rows", &[table.clone(), valid], None);
    index[900] = 300; // in the last chunk on any thread count
    index[950] = -301;
    let index: Value = ArrayD::from_shape_vec(IxDyn(&[1001]), index).expect("shape").into();
    let errors: Vec<String> = (1..=4)
        .map(|threads| match session(threads).call("rows", &[table.clone(), index.clone()]) {
            Ok(_) => panic!("{threads} threads: index 300 of an axis of 300 accepted"),
            Err(e) => e.to_string(),
        })
        .collect();
    assert!(errors[0].contains("300"), "{}", errors[0]);
    assert!(errors.iter().all(|e| *e == errors[0]), "{errors:#?}");
}
