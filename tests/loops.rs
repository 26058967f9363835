//! Loops (`for`, `while`, `var`, `w[i]`) through `Session`, on both backends: a loop computes
//! what its unrolled form computes, its body is compiled once whatever the trip count, and
//! its reverse mode (stored or checkpointed) gives the unrolled form's gradients.

use ndarray::{ArrayD, IxDyn};
use tfn::{Backend, Session, SessionOptions, Tensor, Value};
use tfn_test_utils::Rng;

const SOURCE: &str = r#"
use "std:nn"

// One residual block; w is [C, C], g and b are [C].
fn block(Tensor h, Tensor w, Tensor g, Tensor b) -> Tensor {
    return layer_norm(h + gelu(matmul(h, w)), g, b)
}

// Stacked weights: w is [L, C, C], g and b are [L, C]; the loop indexes the leading axis as a view.
fn stack(Tensor x, Tensor w, Tensor g, Tensor b) -> Tensor {
    var h = x
    for l in 0..size(w, 0) {
        h = block(h, w[l], g[l], b[l])
    }
    return h
}

fn stack_ckpt(Tensor x, Tensor w, Tensor g, Tensor b) -> Tensor {
    var h = x
    for l in 0..size(w, 0), checkpoint {
        h = block(h, w[l], g[l], b[l])
    }
    return h
}

fn stack3(Tensor x, Tensor w, Tensor g, Tensor b) -> Tensor {
    let h1 = block(x, w[0], g[0], b[0])
    let h2 = block(h1, w[1], g[1], b[1])
    return block(h2, w[2], g[2], b[2])
}

// A recurrence over time: xs is [T, B, I], h0 is [B, H].
fn rnn(Tensor xs, Tensor h0, Tensor wx, Tensor wh) -> Tensor {
    var h = h0
    for t in 0..size(xs, 0) {
        h = tanh(matmul(xs[t], wx) + matmul(h, wh))
    }
    return h
}

fn rnn3(Tensor xs, Tensor h0, Tensor wx, Tensor wh) -> Tensor {
    let h1 = tanh(matmul(xs[0], wx) + matmul(h0, wh))
    let h2 = tanh(matmul(xs[1], wx) + matmul(h1, wh))
    return tanh(matmul(xs[2], wx) + matmul(h2, wh))
}

fn newton_sqrt(Tensor a) -> Tensor {
    var x = a
    while max(abs(x * x - a)) > 1e-6, at most 50 {
        x = 0.5 * (x + a / x)
    }
    return x
}

fn spin(Tensor a) -> Tensor {
    var x = a
    while max(x) > 0.0, at most 5 {
        x = x + 1.0
    }
    return x
}

// Two carried values, the index in arithmetic, a loop after a loop, statements before and after.
fn two(Tensor x, *, Int n) -> (Tensor, Tensor) {
    let y = x * 2.0
    var a = y
    var s = sum(x) * 0.0
    for i in 0..n {
        a = a * 0.5 + sin(a) * i
        s = s + sum(a)
    }
    var c = a
    for j in 1..3 {
        c = c + j
    }
    return (c + y, s)
}

// The loop variable in arithmetic with sizes: the layers in reverse, then offset by a size.
fn reversed(Tensor x, Tensor w) -> Tensor {
    var h = x
    for i in 0..size(w, 0) {
        h = h * 0.5 + w[size(w, 0) - 1 - i] + (i + size(w, 1) - 2 * size(w, 1))
    }
    return h
}

// Floats of the loop variable take the dtype they meet (f64 here), as floats of sizes do.
fn float_of_index(Tensor x) -> Tensor {
    var h = x
    for i in 0..4 {
        let c = i * i * 0.5 + 0.25
        h = h * 0.5 + c + sqrt(i) - 0.5 * i
    }
    return h
}
"#;

fn session(backend: Backend, checkpoint: bool) -> Session {
    let options = SessionOptions { backend, checkpoint_loops: checkpoint, ..Default::default() };
    let s = Session::with_options(options);
    s.load_str("loops_test.tfn", SOURCE).unwrap_or_else(|e| panic!("{e}"));
    s
}

fn randn(rng: &mut Rng, shape: &[usize], scale: f32) -> Tensor {
    let s = f64::from(scale);
    rng.tensor(tfn::DType::F32, shape, (-s, s))
}

fn f32s(t: &Value) -> Vec<f32> {
    match t.as_tensor().map(|t| t.to_tensor()) {
        Some(Tensor::F32(a)) => a.iter().copied().collect(),
        other => panic!("not f32: {other:?}"),
    }
}

fn close(a: &[f32], b: &[f32], tol: f32, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{what}[{i}]: {x} vs {y}");
    }
}

fn stack_args(rng: &mut Rng, layers: usize) -> Vec<Value<'static>> {
    let c = 8;
    vec![
        Value::from(randn(rng, &[5, c], 1.0)),
        Value::from(randn(rng, &[layers, c, c], 0.3)),
        Value::from(randn(rng, &[layers, c], 1.0)),
        Value::from(randn(rng, &[layers, c], 0.1)),
    ]
}

#[test]
fn a_for_loop_over_stacked_weights_is_its_unrolled_form() {
    let mut rng = Rng::new(1);
    let args = stack_args(&mut rng, 3);
    for backend in [Backend::Jit, Backend::Interp] {
        let s = session(backend, false);
        let looped = s.call("stack", &args).unwrap_or_else(|e| panic!("{e}"));
        let unrolled = s.call("stack3", &args).unwrap_or_else(|e| panic!("{e}"));
        close(&f32s(&looped[0]), &f32s(&unrolled[0]), 1e-5, &format!("{backend:?}"));
    }
}

#[test]
fn the_body_compiles_once_whatever_the_trip_count() {
    let mut rng = Rng::new(2);
    let s = session(Backend::Jit, false);
    for layers in [2, 12, 5] {
        let args = stack_args(&mut rng, layers);
        s.call("stack", &args).unwrap_or_else(|e| panic!("{e}"));
    }
    assert_eq!(s.stats().compiles, 1, "one compile for every depth");
}

#[test]
fn a_recurrence_over_time() {
    let mut rng = Rng::new(3);
    let args = vec![
        Value::from(randn(&mut rng, &[3, 4, 6], 1.0)),
        Value::from(randn(&mut rng, &[4, 5], 1.0)),
        Value::from(randn(&mut rng, &[6, 5], 0.5)),
        Value::from(randn(&mut rng, &[5, 5], 0.5)),
    ];
    for backend in [Backend::Jit, Backend::Interp] {
        let s = session(backend, false);
        let looped = s.call("rnn", &args).unwrap_or_else(|e| panic!("{e}"));
        let unrolled = s.call("rnn3", &args).unwrap_or_else(|e| panic!("{e}"));
        close(&f32s(&looped[0]), &f32s(&unrolled[0]), 1e-6, &format!("{backend:?}"));
        // Gradients of every input, stored and checkpointed.
        let cot = vec![Value::from(randn(&mut rng, &[4, 5], 1.0))];
        let want = s.vjp("rnn3", &args, &cot).unwrap_or_else(|e| panic!("{e}"));
        for checkpoint in [false, true] {
            let s = session(backend, checkpoint);
            let got = s.vjp("rnn", &args, &cot).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(got.len(), want.len());
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                close(&f32s(g), &f32s(w), 1e-5, &format!("{backend:?} ckpt={checkpoint} grad {k}"));
            }
        }
    }
}

#[test]
fn gradients_through_stacked_weights_stored_and_checkpointed() {
    let mut rng = Rng::new(4);
    let args = stack_args(&mut rng, 3);
    let cot = vec![Value::from(randn(&mut rng, &[5, 8], 1.0))];
    for backend in [Backend::Jit, Backend::Interp] {
        let s = session(backend, false);
        let want = s.vjp("stack3", &args, &cot).unwrap_or_else(|e| panic!("{e}"));
        for f in ["stack", "stack_ckpt"] {
            let (vals, got) = s.value_and_vjp(f, &args, &cot).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(vals.len(), 1);
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                close(&f32s(g), &f32s(w), 1e-4, &format!("{backend:?} {f} grad {k}"));
            }
        }
    }
}

#[test]
fn a_while_loop_runs_to_its_condition_and_fails_past_its_bound() {
    let a = Tensor::F32(ArrayD::from_shape_vec(IxDyn(&[3]), vec![4.0, 2.0, 9.0]).expect("shape"));
    for backend in [Backend::Jit, Backend::Interp] {
        let s = session(backend, false);
        let got =
            s.call("newton_sqrt", &[Value::from(a.clone())]).unwrap_or_else(|e| panic!("{e}"));
        close(&f32s(&got[0]), &[2.0, std::f32::consts::SQRT_2, 3.0], 1e-6, "sqrt");
        let e = s.call("spin", &[Value::from(a.clone())]).expect_err("never ends");
        assert!(e.to_string().contains("at most 5"), "{e}");
        let e = s.vjp("newton_sqrt", &[Value::from(a.clone())], &[Value::from(a.clone())]);
        let e = e.expect_err("while is not differentiable").to_string();
        assert!(e.contains("while") && e.contains("for"), "{e}");
    }
}

#[test]
fn carried_values_index_arithmetic_and_loops_in_sequence() {
    let mut rng = Rng::new(5);
    let x = randn(&mut rng, &[7], 1.0);
    let xs: Vec<f32> = match &x {
        Tensor::F32(a) => a.iter().copied().collect(),
        _ => unreachable!(),
    };
    // The same computation in Rust, in f32.
    let n = 4;
    let y: Vec<f32> = xs.iter().map(|v| v * 2.0).collect();
    let mut a = y.clone();
    let mut s = 0.0f32;
    for i in 0..n {
        a = a.iter().map(|v| v * 0.5 + v.sin() * i as f32).collect();
        s += a.iter().sum::<f32>();
    }
    let c: Vec<f32> = a.iter().zip(&y).map(|(v, y)| v + 1.0 + 2.0 + y).collect();
    for backend in [Backend::Jit, Backend::Interp] {
        let sess = session(backend, false);
        let kw = [("n", Value::Attr(tfn::Attr::Int(n)))];
        let out =
            sess.call_kw("two", &[Value::from(x.clone())], &kw).unwrap_or_else(|e| panic!("{e}"));
        close(&f32s(&out[0]), &c, 1e-5, "c");
        close(&f32s(&out[1]), &[s], 1e-4, "s");
        // Zero trips: the values before the loop.
        let kw = [("n", Value::Attr(tfn::Attr::Int(0)))];
        let out =
            sess.call_kw("two", &[Value::from(x.clone())], &kw).unwrap_or_else(|e| panic!("{e}"));
        let c0: Vec<f32> = y.iter().map(|v| v + 3.0 + v).collect();
        close(&f32s(&out[0]), &c0, 1e-6, "c0");
    }
}

#[test]
fn a_stacked_input_shorter_than_the_loop_is_an_error_naming_it() {
    let s = session(Backend::Jit, false);
    let src = "fn f(Tensor x, Tensor w, *, Int n) -> Tensor {\n    var h = x\n    for i in 0..n {\n        h = h + w[i]\n    }\n    return h\n}\n";
    s.load_str("short.tfn", src).unwrap_or_else(|e| panic!("{e}"));
    let x = Tensor::F32(ArrayD::zeros(IxDyn(&[3])));
    let w = Tensor::F32(ArrayD::zeros(IxDyn(&[2, 3])));
    let kw = [("n", Value::Attr(tfn::Attr::Int(3)))];
    let e = s.call_kw("f", &[Value::from(x), Value::from(w)], &kw).expect_err("too short");
    assert!(e.to_string().contains("`w[i]`") && e.to_string().contains("2 row"), "{e}");
}

/// A `for` runs at most 2^40 trips, as a `while`'s `at most` allows: a constant range beyond
/// that is E0511 at the bound (it ran until killed), a range of sizes an error when it runs.
#[test]
fn a_for_loop_of_more_than_2_to_the_40_trips_is_an_error() {
    let src = "fn f(Tensor x, *, Int n) -> Tensor {\n    var h = x\n    for i in 0..n {\n        h = h + 1.0\n    }\n    return h\n}\n\
               fn g(Tensor x) -> Tensor {\n    var h = x\n    for i in 0..size(x, 0) * size(x, 0) * size(x, 0) * size(x, 0) {\n        h = h + 1.0\n    }\n    return h\n}\n";
    for backend in [Backend::Jit, Backend::Interp] {
        let s = session(backend, false);
        s.load_str("huge.tfn", src).unwrap_or_else(|e| panic!("{e}"));
        let x = || Value::from(Tensor::F32(ArrayD::zeros(IxDyn(&[2]))));
        for (n, ok) in [(i64::MAX, false), ((1 << 40) + 1, false), (3, true)] {
            let kw = [("n", Value::Attr(tfn::Attr::Int(n)))];
            match s.call_kw("f", &[x()], &kw) {
                Ok(r) => assert!(ok && f32s(&r[0]) == [3.0, 3.0], "{backend:?} n={n}"),
                Err(e) => {
                    let e = e.to_string();
                    assert!(!ok && e.contains("E0511") && e.contains("huge.tfn:3:17"), "{e}");
                }
            }
        }
        // 1100^4 > 2^40 trips from sizes: refused before the first trip.
        let wide = Value::from(Tensor::F32(ArrayD::zeros(IxDyn(&[1100]))));
        let e = s.call("g", &[wide]).expect_err("too many trips").to_string();
        assert!(e.contains("1464100000000 trips") && e.contains("at most 1099511627776"), "{e}");
    }
}

/// A body refused because it depends on how derived sizes compare names those sizes as
/// users write them (`size(ids, 1)`), not as the compiler's symbols.
#[test]
fn a_body_that_depends_on_derived_sizes_names_them() {
    let src = "fn f(Tensor x, Tensor e, Tensor ids) -> Tensor {\n    var h = x\n    for t in 0..size(ids, 0) {\n        let g = reshape(index_select(e, ids[t], dim=0), [-1, 4])\n        h = h + g + gather(h, ids[t] * 0 + 1, dim=1)\n    }\n    return h\n}\n";
    let s = session(Backend::Interp, false);
    s.load_str("derived.tfn", src).unwrap_or_else(|e| panic!("{e}"));
    let x = Value::from(Tensor::F64(ArrayD::zeros(IxDyn(&[3, 4]))));
    let e = Value::from(Tensor::F64(ArrayD::zeros(IxDyn(&[7, 4]))));
    let ids = Value::from(Tensor::I64(ArrayD::zeros(IxDyn(&[5, 3, 1]))));
    let err = s.call("f", &[x, e, ids]).expect_err("refused").to_string();
    assert!(err.contains("E0511") && err.contains("size(ids, 1)"), "{err}");
    let symbol =
        |w: &str| w.len() > 1 && w.starts_with('s') && w[1..].bytes().all(|b| b.is_ascii_digit());
    assert!(!err.split(|c: char| !c.is_alphanumeric()).any(symbol), "no internal symbol: {err}");
}

const MORE: &str = r#"
// Nested loops: the inner one over columns of a stacked weight, the outer over layers.
fn nested(Tensor x, Tensor w) -> Tensor {
    var h = x
    for l in 0..size(w, 0) {
        var inner = h
        for k in 0..2 {
            inner = tanh(inner * 0.5 + w[l])
        }
        h = h + inner
    }
    return h
}

fn nested_unrolled(Tensor x, Tensor w) -> Tensor {
    let a = tanh(tanh(x * 0.5 + w[0]) * 0.5 + w[0])
    let h1 = x + a
    let b = tanh(tanh(h1 * 0.5 + w[1]) * 0.5 + w[1])
    return h1 + b
}

// A loop inside a called function, an `if` on an attribute inside the body, a size from
// outside the loop used inside it, and `shape(x)[0]` as a bound.
fn inner_fn(Tensor h, Tensor w, *, Bool twice) -> Tensor {
    var y = h
    for i in 0..shape(w)[0] {
        if twice {
            y = y + w[i] * 2.0
        } else {
            y = y + w[i]
        }
    }
    return y
}

fn outer_fn(Tensor x, Tensor w) -> Tensor {
    let n = size(x, 0)
    var acc = x
    for j in 0..3 {
        acc = reshape(inner_fn(acc, w, twice=true), [n, -1])
    }
    return acc
}

// The loop variable as an index into a tensor the body computes (a copy), and as a float.
fn computed_index(Tensor x) -> Tensor {
    var s = x[0] * 0.0
    for i in 0..size(x, 0) {
        let y = x * 2.0
        s = s + y[i] * (i * 1.0 + 1.0)
    }
    return s
}

// A carried value in a storage dtype.
fn half_steps(Tensor<f16> x, *, Int n) -> Tensor<f16> {
    var h = x
    for i in 0..n {
        h = h * 0.5 + 1.0
    }
    return h
}

fn shape_change(Tensor x, Tensor y) -> Tensor {
    var h = x
    for i in 0..2 {
        h = h + y
    }
    return h
}
"#;

fn more(backend: Backend) -> Session {
    let s = Session::with_backend(backend);
    s.load_str("loops_more.tfn", MORE).unwrap_or_else(|e| panic!("{e}"));
    s
}

fn t(shape: &[usize], v: Vec<f32>) -> Value<'static> {
    Value::from(Tensor::F32(ArrayD::from_shape_vec(IxDyn(shape), v).expect("shape")))
}

#[test]
fn nested_loops_and_loops_in_called_functions() {
    let mut rng = Rng::new(6);
    let x = Value::from(randn(&mut rng, &[3, 4], 1.0));
    let w = Value::from(randn(&mut rng, &[2, 4], 1.0));
    for backend in [Backend::Jit, Backend::Interp] {
        let s = more(backend);
        let a = s.call("nested", &[x.clone(), w.clone()]).unwrap_or_else(|e| panic!("{e}"));
        let b =
            s.call("nested_unrolled", &[x.clone(), w.clone()]).unwrap_or_else(|e| panic!("{e}"));
        close(&f32s(&a[0]), &f32s(&b[0]), 1e-6, &format!("{backend:?} nested"));
        let cot = vec![Value::from(randn(&mut rng, &[3, 4], 1.0))];
        let ga = s.vjp("nested", &[x.clone(), w.clone()], &cot).unwrap_or_else(|e| panic!("{e}"));
        let gb = s
            .vjp("nested_unrolled", &[x.clone(), w.clone()], &cot)
            .unwrap_or_else(|e| panic!("{e}"));
        for (k, (p, q)) in ga.iter().zip(&gb).enumerate() {
            close(&f32s(p), &f32s(q), 1e-5, &format!("{backend:?} nested grad {k}"));
        }
        // outer_fn: acc + 3 * 2 * sum_i w[i].
        let xv = t(&[2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let wv = t(&[2, 3], vec![0.5, 0.25, 1.0, 1.0, 0.0, -1.0]);
        let out = s.call("outer_fn", &[xv, wv]).unwrap_or_else(|e| panic!("{e}"));
        let want = [10.0, 3.5, 3.0, 13.0, 6.5, 6.0];
        close(&f32s(&out[0]), &want, 1e-6, &format!("{backend:?} outer_fn"));
    }
}

#[test]
fn a_run_time_index_into_a_computed_tensor_and_the_index_as_a_float() {
    for backend in [Backend::Jit, Backend::Interp] {
        let s = more(backend);
        let x = t(&[3, 2], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let out = s.call("computed_index", &[x]).unwrap_or_else(|e| panic!("{e}"));
        // sum_i 2 x[i] (i + 1)
        let want = [2.0 * (1.0 + 2.0 * 3.0 + 3.0 * 5.0), 2.0 * (2.0 + 2.0 * 4.0 + 3.0 * 6.0)];
        close(&f32s(&out[0]), &want, 1e-6, &format!("{backend:?}"));
    }
}

#[test]
fn a_storage_dtype_carried_value_rounds_each_trip_like_its_unrolled_form() {
    use tfn::half::f16;
    let x: Vec<f16> = [0.1f32, 3.7, -2.2].iter().map(|v| f16::from_f32(*v)).collect();
    let xv =
        Value::from(Tensor::F16(ArrayD::from_shape_vec(IxDyn(&[3]), x.clone()).expect("shape")));
    let mut want = x;
    for _ in 0..5 {
        want = want.iter().map(|v| f16::from_f32(v.to_f32() * 0.5 + 1.0)).collect();
    }
    for backend in [Backend::Jit, Backend::Interp] {
        let s = more(backend);
        let kw = [("n", Value::Attr(tfn::Attr::Int(5)))];
        let out = s
            .call_kw("half_steps", std::slice::from_ref(&xv), &kw)
            .unwrap_or_else(|e| panic!("{e}"));
        match out[0].as_tensor().map(|t| t.to_tensor()) {
            Some(Tensor::F16(a)) => assert_eq!(a.iter().copied().collect::<Vec<_>>(), want),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_carried_value_that_changes_shape_is_an_error_naming_it() {
    for backend in [Backend::Jit, Backend::Interp] {
        let s = more(backend);
        let x = t(&[1], vec![1.0]);
        let y = t(&[3], vec![1.0, 2.0, 3.0]);
        let e = s.call("shape_change", &[x, y]).expect_err("h grows from [1] to [3]");
        let e = e.to_string();
        assert!(e.contains("`h`") && e.contains("[1]") && e.contains("[3]"), "{e}");
    }
}

const HEADS: &str = r#"
use "std:nn"

// Attention-like bodies: reshapes and matmuls over a derived size (the head size,
// size(h, 2) / heads), whatever it is.
fn heads_loop(Tensor x, Tensor w, *, Int heads) -> Tensor {
    var h = x
    for l in 0..size(w, 0) {
        let q = to_heads(h * w[l], heads=heads)
        h = h + 0.1 * from_heads(matmul(matmul(q, transpose.swap(q, -2, -1)), q))
    }
    return h
}

// A body that broadcasts a derived size (size(y, 0) / 2 rows) against h's rows: whether it is
// 1 decides what the body computes, so the decision is a guard of the function, checked at
// every call (neither argument has an axis of size 1: the signature alone cannot tell).
fn bcast_loop(Tensor x, Tensor y, Tensor w) -> Tensor {
    var h = x
    for l in 0..size(w, 0) {
        h = h * w[l] + reshape(y, [size(y, 0) / 2, 2])
    }
    return h
}
"#;

/// `heads_loop` in plain Rust: x [B, T, C], w [L, C].
fn heads_loop_reference(x: &ArrayD<f32>, w: &ArrayD<f32>, heads: usize) -> Vec<f32> {
    let (b, t, c) = (x.shape()[0], x.shape()[1], x.shape()[2]);
    let d = c / heads;
    let mut h = x.clone();
    for l in 0..w.shape()[0] {
        let q = ArrayD::from_shape_fn(h.raw_dim(), |i| h[[i[0], i[1], i[2]]] * w[[l, i[2]]]);
        let mut next = h.clone();
        for bi in 0..b {
            for hd in 0..heads {
                let at = |ti: usize, k: usize| q[[bi, ti, hd * d + k]];
                for i in 0..t {
                    for k in 0..d {
                        let mut acc = 0.0f32;
                        for j in 0..t {
                            let s: f32 = (0..d).map(|m| at(i, m) * at(j, m)).sum();
                            acc += s * at(j, k);
                        }
                        next[[bi, i, hd * d + k]] += 0.1 * acc;
                    }
                }
            }
        }
        h = next;
    }
    h.iter().copied().collect()
}

#[test]
fn a_body_deciding_on_a_derived_size_guards_the_function() {
    let mut rng = Rng::new(21);
    for backend in [Backend::Jit, Backend::Interp] {
        let s = Session::with_options(SessionOptions { backend, threads: 2, ..Default::default() });
        s.load_str("heads.tfn", HEADS).unwrap_or_else(|e| panic!("{e}"));
        // Head sizes 4, then 1 (the guard fails: another instance), then 4 again (cached).
        for c in [8usize, 2, 8] {
            let Tensor::F32(x) = randn(&mut rng, &[2, 3, c], 0.5) else { unreachable!() };
            let Tensor::F32(w) = randn(&mut rng, &[2, c], 0.5) else { unreachable!() };
            let args = [Value::from(x.clone()), Value::from(w.clone())];
            let out = s.call_kw("heads_loop", &args, &[("heads", Value::from(2i64))]);
            let out = out.unwrap_or_else(|e| panic!("{backend:?}, C = {c}: {e}"));
            let want = heads_loop_reference(&x, &w, 2);
            close(&f32s(&out[0]), &want, 1e-4, &format!("{backend:?}, C = {c}"));
        }
        // h [3, 2] plus y as [3, 2] (no guard fails), then as [1, 2] (broadcast: the guard
        // fails, another instance), then [3, 2] again (the first instance).
        let x = ArrayD::from_shape_vec(IxDyn(&[3, 2]), vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let w = ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![0.5f32, 2.0, -1.0, 0.25]);
        let (x, w) = (x.expect("shape"), w.expect("shape"));
        for n in [6usize, 2, 6] {
            let y = ArrayD::from_shape_fn(IxDyn(&[n]), |i| i[0] as f32 - 1.5);
            let args = [Value::from(x.clone()), Value::from(y.clone()), Value::from(w.clone())];
            let out = s.call("bcast_loop", &args);
            let out = out.unwrap_or_else(|e| panic!("{backend:?}, y of {n}: {e}"));
            let mut h = x.clone();
            for l in 0..2 {
                for ((r, c), v) in
                    h.clone().into_dimensionality::<ndarray::Ix2>().expect("2-d").indexed_iter()
                {
                    let row = if n == 2 { 0 } else { r };
                    h[[r, c]] = v * w[[l, c]] + y[[row * 2 + c]];
                }
            }
            let want: Vec<f32> = h.iter().copied().collect();
            close(&f32s(&out[0]), &want, 1e-6, &format!("{backend:?}, y of {n}"));
        }
        if backend == Backend::Jit {
            assert_eq!(s.stats().compiles, 3, "heads_loop once, bcast_loop twice: {:?}", s.stats());
        }
    }
}

#[test]
fn the_loop_variable_meets_sizes_in_index_arithmetic() {
    let mut rng = Rng::new(23);
    let (layers, c) = (3, 4);
    let x = randn(&mut rng, &[c], 1.0);
    let w = randn(&mut rng, &[layers, c], 1.0);
    let (Tensor::F32(xa), Tensor::F32(wa)) = (&x, &w) else { unreachable!() };
    let mut want: Vec<f32> = xa.iter().copied().collect();
    for i in 0..layers {
        let row = wa.index_axis(ndarray::Axis(0), layers - 1 - i);
        for (h, w) in want.iter_mut().zip(row.iter()) {
            *h = *h * 0.5 + w + (i as f32 - c as f32);
        }
    }
    for backend in [Backend::Interp, Backend::Jit] {
        let got = session(backend, false)
            .call("reversed", &[Value::from(x.clone()), Value::from(w.clone())])
            .unwrap_or_else(|e| panic!("{backend:?}: {e}"));
        close(&f32s(&got[0]), &want, 1e-6, &format!("{backend:?}"));
    }
}

/// `0.5 * i`, `sqrt(i)` and `i * i * 0.5 + 0.25` meet an f64 (and an f32) carried value in its
/// dtype: they were computed in f32 whatever they met, so an f64 function was refused.
#[test]
fn floats_of_the_loop_variable_take_the_dtype_they_meet() {
    let want = |x: f64| {
        let mut h = x;
        for i in 0..4 {
            let i = f64::from(i);
            h = h * 0.5 + (i * i * 0.5 + 0.25) + i.sqrt() - 0.5 * i;
        }
        h
    };
    for backend in [Backend::Jit, Backend::Interp] {
        let s = session(backend, false);
        let x = ndarray::ArrayD::from_elem(ndarray::IxDyn(&[3]), 1.5f64);
        let out =
            s.call("float_of_index", &[Value::from(x.view())]).unwrap_or_else(|e| panic!("{e}"));
        match out[0].as_tensor().map(|t| t.to_tensor()) {
            Some(Tensor::F64(a)) => {
                assert!(a.iter().all(|&v| (v - want(1.5)).abs() < 1e-12), "{backend:?}: {a}")
            }
            other => panic!("{backend:?}: not f64: {other:?}"),
        }
        let x = ndarray::ArrayD::from_elem(ndarray::IxDyn(&[3]), 1.5f32);
        let out =
            s.call("float_of_index", &[Value::from(x.view())]).unwrap_or_else(|e| panic!("{e}"));
        close(&f32s(&out[0]), &[want(1.5) as f32; 3], 1e-6, &format!("{backend:?} f32"));
    }
}

/// `cast(i, f32)` of the loop variable is a rank-0 tensor (it was E0217, "cannot infer the
/// dtype of a literal"); `at most size(x, 0)` says a size is not a compile-time `Int` (it said
/// "takes an `Int`, found `Int`"); `x[3]` past the leading axis says the index is out of range
/// (it was the squeeze of an empty slice).
#[test]
fn casts_of_the_loop_variable_and_clear_errors_about_indices_and_bounds() {
    let source = "fn f(Tensor x) -> Tensor {\n    var h = x\n    for i in 0..3 {\n        h = h + cast(i, f32)\n    }\n    return h\n}\n\
                  fn past(Tensor x) -> Tensor {\n    return x[3]\n}\n";
    for backend in [Backend::Jit, Backend::Interp] {
        let s = Session::with_backend(backend);
        s.load_str("cast_i.tfn", source).unwrap_or_else(|e| panic!("{e}"));
        let x = ndarray::ArrayD::from_elem(ndarray::IxDyn(&[3, 2]), 1.0f32);
        let out = s.call("f", &[Value::from(x.view())]).unwrap_or_else(|e| panic!("{e}"));
        close(&f32s(&out[0]), &[4.0; 6], 0.0, &format!("{backend:?}"));
        let e = s.call("past", &[Value::from(x.view())]).expect_err("x[3] of 3 rows").to_string();
        assert!(e.contains("index 3 is out of range for `x`, whose axis 0 has 3"), "{e}");
        assert!(e.contains("cast_i.tfn:9:14"), "{e}");
    }
    let s = Session::with_backend(Backend::Interp);
    let bad = "fn w(Tensor x) -> Tensor {\n    var h = x\n    while max(h) > 0.0, at most size(x, 0) {\n        h = h - 1.0\n    }\n    return h\n}\n";
    let e = s.load_str("bound.tfn", bad).expect_err("a size as a bound").to_string();
    assert!(e.contains("`at most` takes a compile-time `Int`, found a size"), "{e}");
}

#[test]
fn division_and_power_of_the_loop_variable_are_floats() {
    // `i / 2` of Ints is a Float (as between attributes), `i ** 2` too: both were an i64
    // tensor that no `div`/`pow` overload took (E0502 naming a tensor the user never wrote).
    let source = "fn f(Tensor x, Int n) -> Tensor {\n    var h = x\n    for i in 0..n {\n        \
                  h = h * 0.5 + i / 2 + i ** 2 + 1 / (i + 1)\n    }\n    return h\n}\n";
    let x = ArrayD::from_shape_vec(IxDyn(&[2]), vec![1.0f64, 2.0]).expect("shape");
    let mut want = x.clone();
    for i in 0..5 {
        let i = i as f64;
        want.mapv_inplace(|h| h * 0.5 + i / 2.0 + i * i + 1.0 / (i + 1.0));
    }
    for backend in [Backend::Interp, Backend::Jit] {
        let s = Session::with_backend(backend);
        s.load_str("idiv.tfn", source).unwrap_or_else(|e| panic!("load: {e}"));
        let out = s
            .call_kw("f", &[Value::from(x.view())], &[("n", Value::from(5i64))])
            .unwrap_or_else(|e| panic!("{backend:?}: {e}"));
        match out.into_iter().next().and_then(Value::into_tensor) {
            Some(Tensor::F64(a)) => {
                for (g, w) in a.iter().zip(&want) {
                    assert!((g - w).abs() <= 1e-12 * w.abs(), "{backend:?}: {g} vs {w}");
                }
            }
            other => panic!("{backend:?}: {other:?}"),
        }
    }
}

/// Stages that no gradient reaches (a constant after the loop, `h * 2.0`; a parameter read
/// only as `w[i]` beside the whole `w`) are left out of the reverse pass: the gradients are
/// still every argument's, zeros where nothing reaches, and a wrong cotangent is named before
/// any trip runs.
#[test]
fn gradients_skip_what_no_gradient_reaches() {
    let source = r#"
fn tail(Tensor x, Tensor w, Tensor _unused) -> Tensor {
    var h = x
    for l in 0..size(w, 0) { h = tanh(h * w[l]) }
    return h * 2.0
}
fn two_results(Tensor x, Tensor w) -> (Tensor, Tensor) {
    var h = x
    for l in 0..size(w, 0) { h = tanh(h * w[l]) }
    return (exp(x), h)
}
"#;
    let x = ArrayD::from_shape_vec(IxDyn(&[3]), vec![0.5f64, -0.25, 1.0]).expect("shape");
    let w = ArrayD::from_shape_fn(IxDyn(&[2, 3]), |i| 0.3 + 0.1 * (i[0] * 3 + i[1]) as f64);
    let unused = ArrayD::from_elem(IxDyn(&[4]), 7.0f64);
    for backend in [Backend::Jit, Backend::Interp] {
        let s = session(backend, false);
        s.load_str("tail.tfn", source).unwrap_or_else(|e| panic!("{e}"));
        let args = [Value::from(x.clone()), Value::from(w.clone()), Value::from(unused.clone())];
        let cot = [Value::from(ArrayD::from_elem(IxDyn(&[3]), 1.0f64))];
        let g = s.vjp("tail", &args, &cot).unwrap_or_else(|e| panic!("{backend:?}: {e}"));
        // By hand: h1 = tanh(x w0), h2 = tanh(h1 w1), result 2 h2.
        let (mut gx, mut gw) = (vec![0.0; 3], vec![0.0; 6]);
        for k in 0..3 {
            let h1 = (x[k] * w[[0, k]]).tanh();
            let h2 = (h1 * w[[1, k]]).tanh();
            let d2 = 2.0 * (1.0 - h2 * h2);
            let d1 = d2 * w[[1, k]] * (1.0 - h1 * h1);
            gw[3 + k] = d2 * h1;
            gw[k] = d1 * x[k];
            gx[k] = d1 * w[[0, k]];
        }
        let f64s = |t: &Value| match t.as_tensor() {
            Some(tfn::TensorValue::F64(a)) => a.iter().copied().collect::<Vec<f64>>(),
            other => panic!("{other:?}"),
        };
        let near = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(a, b)| (a - b).abs() < 1e-12);
        assert!(near(&f64s(&g[0]), &gx), "{backend:?} d/dx {:?} {gx:?}", f64s(&g[0]));
        assert!(near(&f64s(&g[1]), &gw), "{backend:?} d/dw {:?} {gw:?}", f64s(&g[1]));
        assert_eq!(f64s(&g[2]), vec![0.0; 4], "{backend:?}: nothing reaches `unused`");

        let args = [Value::from(x.clone()), Value::from(w.clone())];
        let ok = Value::from(ArrayD::from_elem(IxDyn(&[3]), 1.0f64));
        let bad = Value::from(ArrayD::from_elem(IxDyn(&[2, 3]), 1.0f64));
        let e = s
            .vjp("two_results", &args, &[ok.clone(), bad])
            .expect_err("a wrong cotangent")
            .to_string();
        assert!(e.contains("`cotangent1` has shape [2, 3]") && !e.contains("trip"), "{e}");
        let f32s = Value::from(ArrayD::from_elem(IxDyn(&[3]), 1.0f32));
        let e = s.vjp("two_results", &args, &[ok, f32s]).expect_err("a wrong dtype");
        assert!(matches!(e, tfn::Error::DType(_)), "{e}");
    }
}

const DEAD: &str = r#"
fn dead_var(Tensor x, Tensor w) -> Tensor {
    var h = x
    var g = x
    for i in 0..size(w, 0) {
        g = sqrt(g) * w[i] + w[i]
        h = h * 2.0
    }
    return h
}

fn dead_in_nested(Tensor x, Tensor w) -> Tensor {
    var h = x
    for i in 0..size(w, 0) {
        var g = h
        var k = h
        for j in 0..2 {
            g = log(g) * w[i]
            k = k * w[i]
        }
        h = k + h
    }
    return h
}

fn feeds_a_live_one(Tensor x, Tensor w) -> Tensor {
    var h = x
    var g = x
    for i in 0..size(w, 0) {
        h = h * 2.0 + g
        g = sqrt(g) * w[i]
    }
    return h
}

// Two trips (`w` has 2 rows); the second trip's `g` is not read.
fn feeds_a_live_one_unrolled(Tensor x, Tensor w) -> Tensor {
    let h1 = x * 2.0 + x
    let g1 = sqrt(x) * w[0]
    let h2 = h1 * 2.0 + g1
    return h2
}
"#;

/// A `var` the result never reads is not updated at all (`ir::program::dead_carries`): its
/// update once ran in the reverse pass with a zero cotangent, and `0 · ∂sqrt(g)` = NaN at a
/// negative `g` reached the gradients of `x` and `w`. One that feeds a live `var` is kept.
#[test]
fn a_var_no_result_reads_leaves_gradients_exact() {
    let x = t(&[3], vec![-1.0, 2.0, -3.0]);
    let w = t(&[2, 3], vec![0.5, -1.0, 2.0, 1.5, 0.25, -2.0]);
    let cot = [t(&[3], vec![1.0, 1.0, 1.0])];
    for backend in [Backend::Jit, Backend::Interp] {
        for checkpoint in [false, true] {
            let options =
                SessionOptions { backend, checkpoint_loops: checkpoint, ..Default::default() };
            let s = Session::with_options(options);
            s.load_str("dead.tfn", DEAD).unwrap_or_else(|e| panic!("{e}"));
            let what = format!("{backend:?} checkpoint={checkpoint}");
            let args = [x.clone(), w.clone()];
            let out = s.call("dead_var", &args).unwrap_or_else(|e| panic!("{e}"));
            close(&f32s(&out[0]), &[-4.0, 8.0, -12.0], 0.0, &what);
            let g = s.vjp("dead_var", &args, &cot).unwrap_or_else(|e| panic!("{e}"));
            close(&f32s(&g[0]), &[4.0, 4.0, 4.0], 0.0, &format!("{what} d/dx"));
            close(&f32s(&g[1]), &[0.0; 6], 0.0, &format!("{what} d/dw"));
            // Nested: the inner `g` is dead, `k` is live (log of a negative `h`).
            let g = s.vjp("dead_in_nested", &args, &cot).unwrap_or_else(|e| panic!("{e}"));
            assert!(g.iter().flat_map(|v| f32s(v)).all(f32::is_finite), "{what}: {g:?}");
            // `g` feeds `h`: kept, and the gradient is the unrolled program's.
            let pos =
                [t(&[3], vec![1.0, 2.0, 3.0]), t(&[2, 3], vec![0.5, 1.0, 2.0, 1.5, 0.25, 2.0])];
            let got = s.vjp("feeds_a_live_one", &pos, &cot).unwrap_or_else(|e| panic!("{e}"));
            let want =
                s.vjp("feeds_a_live_one_unrolled", &pos, &cot).unwrap_or_else(|e| panic!("{e}"));
            for (k, (a, b)) in got.iter().zip(&want).enumerate() {
                close(&f32s(a), &f32s(b), 1e-6, &format!("{what} feeds_a_live_one d/d{k}"));
            }
        }
    }
}
