//! `rand_like`/`randn_like` through the whole compiler: the JIT equals the interpreter bit for
//! bit (f32 and f64, uniform and normal, 1 and 2 threads, fused consumers, reductions,
//! broadcasting, strided outputs, size 0), a new key is a cache hit, bad keys are clear errors.

use ndarray::{ArrayD, IxDyn};
use tfn::{Backend, Session, SessionOptions, Tensor, Value};
use tfn_test_utils::{assert_close, bits, Tolerance};

const SOURCE: &str = r#"
fn u(Tensor x, Tensor key) -> Tensor {
    return rand_like(x, key)
}
fn n(Tensor x, Tensor key) -> Tensor {
    return randn_like(x, key)
}
fn u64(Tensor x, Tensor key) -> Tensor {
    return rand_like(x, key, dtype=f64)
}
fn n64(Tensor x, Tensor key) -> Tensor {
    return randn_like(x, key, dtype=f64)
}
fn drop(Tensor x, Tensor key) -> Tensor {
    return where(rand_like(x, key) >= 0.25, x * (1.0 / 0.75), 0.0)
}
fn rows(Tensor x, Tensor key) -> (Tensor, Tensor) {
    let r = randn_like(x, key)
    return (sum(r * x, dims=[1]), r)
}
fn cols(Tensor x, Tensor key) -> (Tensor, Tensor) {
    let r = rand_like(x, key, dtype=f32)
    return (sum(r, dims=[0], keepdim=true) + x, r)
}
fn softmax_noise(Tensor x, Tensor key) -> (Tensor, Tensor) {
    let r = randn_like(x, key)
    let y = x + r
    let e = exp(y - max(y, dims=[-1], keepdim=true))
    return (e / sum(e, dims=[-1], keepdim=true), r)
}
fn per_row(Tensor x, Tensor key) -> Tensor {
    return x + rand_like(sum(x, dims=[1], keepdim=true), key)
}
fn per_column(Tensor x, Tensor key) -> Tensor {
    return x * randn_like(sum(x, dims=[0]), key)
}
fn mm(Tensor a, Tensor b, Tensor key) -> (Tensor, Tensor) {
    let y = matmul(a, b)
    let r = randn_like(y, key)
    return (y * r, r)
}
fn mixed(Tensor x, Tensor key) -> Tensor {
    return cast(x, f64) + rand_like(x, key, dtype=f64)
}
fn transposed(Tensor x, Tensor key) -> Tensor {
    return transpose(x) + rand_like(transpose(x), key)
}
fn derived_key(Tensor x, Tensor key) -> Tensor {
    return randn_like(x, key * 3 + 1)
}
fn same_group(Tensor k) -> Tensor {
    return rand_like(cast(k, f32), k + 1) + cast(k + 1, f32)
}
"#;

fn session(backend: Backend, threads: usize) -> Session {
    let options = SessionOptions { backend, threads, ..SessionOptions::default() };
    let s = Session::with_options(options);
    s.load_str("random.tfn", SOURCE).unwrap_or_else(|e| panic!("load: {e}"));
    s
}

fn zeros(shape: &[usize]) -> Value<'static> {
    Value::from(ArrayD::<f32>::zeros(IxDyn(shape)))
}

fn key(k: &[i64]) -> Value<'static> {
    let shape: &[usize] = if k.len() == 1 { &[] } else { &[k.len()] };
    Value::from(ArrayD::from_shape_vec(IxDyn(shape), k.to_vec()).expect("key"))
}

fn call_all(s: &Session, f: &str, args: Vec<Value<'static>>) -> Vec<Tensor> {
    let out = s.call(f, &args).unwrap_or_else(|e| panic!("{f}: {e}"));
    out.into_iter().map(|v| v.into_tensor().expect("a tensor")).collect()
}

fn call(s: &Session, f: &str, args: Vec<Value<'static>>) -> Tensor {
    let out = s.call(f, &args).unwrap_or_else(|e| panic!("{f}: {e}"));
    out.into_iter().next().and_then(Value::into_tensor).expect("one tensor")
}

#[test]
fn jit_equals_interpreter_bit_for_bit() {
    let interp = session(Backend::Interp, 1);
    let jits = [session(Backend::Jit, 1), session(Backend::Jit, 2)];
    for f in ["u", "n", "u64", "n64"] {
        for shape in [&[1003][..], &[7, 13], &[3, 1, 5], &[0, 4], &[], &[300, 1001]] {
            for k in [&[0][..], &[123_456_789_012], &[-1, -1], &[5, 7]] {
                let want = call(&interp, f, vec![zeros(shape), key(k)]);
                for jit in &jits {
                    let got = call(jit, f, vec![zeros(shape), key(k)]);
                    assert_eq!(got.shape(), want.shape());
                    assert!(bits(&got) == bits(&want), "{f} {shape:?} key {k:?}");
                }
            }
        }
    }
}

fn random_f32(shape: &[usize], seed: f32) -> Value<'static> {
    let n: usize = shape.iter().product();
    let values = (0..n).map(|i| ((i as f32 + seed) * 0.731).sin()).collect();
    Value::from(ArrayD::from_shape_vec(IxDyn(shape), values).expect("shape"))
}

/// Fused consumers (dropout, reductions over rows and columns, a softmax of noisy inputs), a
/// random value broadcast along rows or columns, a matmul epilogue, mixed dtypes (the scalar
/// path), transposes, a key computed in the function, and a key whose computation could have
/// joined the random kernel.
#[test]
fn fused_kernels_equal_the_interpreter() {
    let interp = session(Backend::Interp, 1);
    let jits = [session(Backend::Jit, 1), session(Backend::Jit, 2)];
    let pair = || key(&[99, 3]);
    let cases: Vec<(&str, Vec<Value<'static>>)> = vec![
        ("drop", vec![random_f32(&[257, 33], 0.0), pair()]),
        ("rows", vec![random_f32(&[37, 1029], 1.0), pair()]),
        ("cols", vec![random_f32(&[1029, 37], 2.0), key(&[4])]),
        ("softmax_noise", vec![random_f32(&[16, 515], 3.0), key(&[8])]),
        ("per_row", vec![random_f32(&[61, 70], 4.0), pair()]),
        ("per_column", vec![random_f32(&[61, 70], 5.0), pair()]),
        ("mm", vec![random_f32(&[130, 67], 6.0), random_f32(&[67, 45], 7.0), pair()]),
        ("mm", vec![random_f32(&[1100, 260], 6.0), random_f32(&[260, 300], 7.0), pair()]),
        ("mixed", vec![random_f32(&[333], 8.0), key(&[-5])]),
        ("transposed", vec![random_f32(&[23, 41], 9.0), pair()]),
        ("derived_key", vec![random_f32(&[100], 10.0), pair()]),
        ("same_group", vec![Value::from(ArrayD::from_elem(IxDyn(&[]), 17_i64))]),
    ];
    for (f, args) in cases {
        let want = call_all(&interp, f, args.clone());
        for jit in &jits {
            let got = call_all(jit, f, args.clone());
            for (o, (g, w)) in got.iter().zip(&want).enumerate() {
                // A reduction or product of random values may round differently (summation
                // order); the random values themselves (the second result) never do.
                let exact = got.len() == 1 || o == 1;
                let tol = if exact { Tolerance::EXACT } else { Tolerance::ACCUMULATED };
                assert_close(g, w, tol, &format!("{f} result {o}"));
            }
        }
    }
}

/// Writing into a strided caller buffer gives the values of the contiguous result.
#[test]
fn strided_output_holds_the_same_values() {
    use ndarray::s;
    for backend in [Backend::Interp, Backend::Jit] {
        let sess = session(backend, 2);
        let want = call(&sess, "n", vec![zeros(&[40, 30]), key(&[1, 2])]);
        let mut big = ArrayD::<f32>::zeros(IxDyn(&[80, 30]));
        let view = big.slice_mut(s![..;2, ..]).into_dyn();
        sess.call_into("n", &[zeros(&[40, 30]), key(&[1, 2])], &mut [tfn::OutputMut::from(view)])
            .expect("call_into");
        let got = Tensor::F32(big.slice(s![..;2, ..]).to_owned().into_dyn());
        assert!(bits(&got) == bits(&want), "{backend:?}");
    }
}

/// A new key, or a new size, reuses the compiled function: the key is a run-time value.
#[test]
fn another_key_is_a_cache_hit() {
    let sess = session(Backend::Jit, 1);
    let a = call(&sess, "u", vec![zeros(&[64]), key(&[1, 0])]);
    let b = call(&sess, "u", vec![zeros(&[64]), key(&[1, 1])]);
    let c = call(&sess, "u", vec![zeros(&[65]), key(&[2, 0])]);
    let stats = sess.stats();
    assert_eq!((stats.compiles, stats.cache_hits), (1, 2), "{stats:?}");
    assert!(bits(&a) != bits(&b));
    assert_eq!(c.shape(), &[65]);
    // The same key gives the same values, whatever the size: element i depends on (key, i).
    let (a2, c2) = (bits(&call(&sess, "u", vec![zeros(&[64]), key(&[2, 0])])), bits(&c));
    assert_eq!(a2[..], c2[..64]);
}

/// A key of the wrong dtype, rank or length is an error that names the key.
#[test]
fn bad_keys_are_clear_errors() {
    for backend in [Backend::Interp, Backend::Jit] {
        let sess = session(backend, 1);
        let wrong: Vec<(Value<'static>, &str)> = vec![
            (Value::from(ArrayD::from_elem(IxDyn(&[]), 3_i32)), "i64"),
            (Value::from(ArrayD::from_elem(IxDyn(&[2, 2]), 3_i64)), "[] or [2]"),
            (Value::from(ArrayD::from_elem(IxDyn(&[3]), 3_i64)), "key"),
        ];
        for (k, expect) in wrong {
            let err = sess.call("u", &[zeros(&[4]), k]).expect_err("a bad key fails").to_string();
            assert!(err.contains(expect), "{backend:?}: {err}");
        }
    }
}
