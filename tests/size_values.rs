//! Sizes as values (`size(x, dim)`, `shape(x)`): the spec's `split_heads` as written, sizes in
//! `reshape`, `arange`, `full`, `broadcast_to`, `Int` arguments of functions and as tensor
//! scalars, on both backends against values computed here, one compile for every size, and
//! the errors (an inexact `/`, a size where a compile-time value is needed, an axis out of
//! range); floats of sizes (`rsqrt(size(q, -1))`) in the dtype of the tensor they meet, and
//! the error where that dtype is not a float. Also two diagnostics of the same issue: a dtype that flows from an argument names
//! the argument, and a label of an expression built on a parenthesised one keeps its `(`.
//! `cast(size(x, 0), f32)` works where the size is a constant of the instantiation too.

use ndarray::{ArrayD, Axis, IxDyn};
use tfn::{Backend, Error, Session, Tensor, Value};

const SOURCE: &str = r#"
// The spec's example (docs/language.md, "Sizes as values"), as written.
fn split_heads(Tensor x, *, Int heads) -> Tensor {
    let t = size(x, 1)                       // a size is an Int value, known at the call
    return transpose(reshape(x, [-1, t, heads, size(x, -1) / heads]), [0, 2, 1, 3])
}

fn merge_heads(Tensor x) -> Tensor {
    return reshape(transpose(x, [0, 2, 1, 3]), [size(x, 0), size(x, 2), size(x, 1) * size(x, -1)])
}

fn mean_rows(Tensor x) -> Tensor {
    return sum(x, dims=[0]) / size(x, 0)
}

fn positions(Tensor x) -> Tensor {
    return cast(arange(size(x, 0) * 2 - 1), f32) + 0.0 * sum(x)
}

fn filled(Tensor x) -> Tensor {
    return full(shape(x), 2.0) + x
}

fn spread(Tensor b, Tensor x) -> Tensor {
    return broadcast_to(b, shape(x)) * x
}

fn rows_of(Tensor x, Int n) -> Tensor {
    return reshape(x, [n, -1])
}

fn halves(Tensor x) -> Tensor {
    return rows_of(x, n=size(x, 0) * 2)
}

fn count(Tensor x) -> Tensor {
    return size(x, 0) * size(x, 1) + 0.0 * sum(x)
}

fn slice_to_size(Tensor x) -> Tensor {
    return slice(x, dim=0, start=0, end=size(x, 0) - 1)
}

fn axis_of_size(Tensor x) -> Tensor {
    return sum(x, dims=[size(x, 0)])
}

fn out_of_range(Tensor x) -> Tensor {
    return reshape(x, [size(x, 5), -1])
}

// Floats of sizes: in the dtype of the tensor they meet, f32 alone, `cast`'s dtype.
fn scaled(Tensor q) -> Tensor {
    return q * rsqrt(size(q, -1))
}

fn root_of_count(Tensor q) -> Tensor {
    let n = sqrt(size(q, 0) * size(q, 1))
    return q / (2.0 * n)
}

fn root_alone(Tensor q) -> Tensor {
    return sqrt(size(q, 0))
}

fn size_as(Tensor q) -> (Tensor, Tensor) {
    return (cast(size(q, -1), f64), cast(rsqrt(size(q, 0)), f32))
}

fn root_in_loop(Tensor x, Tensor w) -> Tensor {
    let s = rsqrt(size(x, -1))
    var h = x
    for l in 0..size(w, 0) {
        h = h + w[l] * s
    }
    return h
}

fn int_scaled(Tensor<i32> q) -> Tensor {
    return q * rsqrt(size(q, -1))
}

// `cast` of a size the instantiation knows: a size of 1, or one a literal `reshape` pins.
fn cast_size(Tensor x) -> Tensor {
    return x + cast(size(x, 0), f32)
}

fn cast_pinned(Tensor x) -> Tensor {
    let y = reshape(x, [4])
    return cast(y, f64) * cast(size(y, 0) * 2, f64)
}

// The same through `shape(x)`: its items are sizes, so `/` divides them exactly too.
fn split_heads_of_shape(Tensor x, *, Int heads) -> Tensor {
    let s = shape(x)
    return transpose(reshape(x, [-1, s[1], heads, s[-1] / heads]), [0, 2, 1, 3])
}
"#;

const BACKENDS: [Backend; 2] = [Backend::Interp, Backend::Jit];

fn session(backend: Backend) -> Session {
    let s = Session::with_backend(backend);
    s.load_str("sizes.tfn", SOURCE).unwrap_or_else(|e| panic!("load: {e}"));
    s
}

fn ramp(shape: &[usize]) -> ArrayD<f32> {
    let n: usize = shape.iter().product();
    ArrayD::from_shape_vec(IxDyn(shape), (0..n).map(|i| i as f32 * 0.5 - 3.0).collect())
        .expect("shape")
}

fn only_f32(results: Result<Vec<Value<'static>>, Error>, what: &str) -> ArrayD<f32> {
    match results.map(|r| r.into_iter().next().and_then(Value::into_tensor)) {
        Ok(Some(Tensor::F32(a))) => a,
        other => panic!("{what}: expected one f32 result, got {other:?}"),
    }
}

/// NumPy's `x.reshape(b, t, heads, c // heads).transpose(0, 2, 1, 3)`.
fn split_heads(x: &ArrayD<f32>, heads: usize) -> ArrayD<f32> {
    let (b, t, c) = (x.shape()[0], x.shape()[1], x.shape()[2]);
    let r = x.to_shape(IxDyn(&[b, t, heads, c / heads])).expect("reshape").to_owned();
    r.permuted_axes(IxDyn(&[0, 2, 1, 3])).as_standard_layout().to_owned()
}

#[test]
fn split_heads_as_written_compiles_once_for_every_size() {
    for backend in BACKENDS {
        let s = session(backend);
        for (i, shape) in [[2, 5, 12], [2, 7, 12], [3, 2, 12], [4, 9, 12]].iter().enumerate() {
            let x = ramp(shape);
            let what = format!("{backend:?} split_heads {shape:?}");
            let out = s.call_kw("split_heads", &[Value::from(x.view())], &[("heads", 4i64.into())]);
            let out = only_f32(out, &what);
            assert_eq!(out, split_heads(&x, 4), "{what}");
            let back = only_f32(s.call("merge_heads", &[Value::from(out.view())]), &what);
            assert_eq!(back, x, "{what}: merge_heads undoes split_heads");
            // Two functions, each compiled once whatever the batch and sequence length (a
            // size of 1 is part of the signature, as for every call, so none is 1 here).
            assert_eq!(s.stats().compiles, 2, "{what}: call {i} recompiled");
        }
    }
}

/// A size of 1 is part of the call's signature, so it is a constant when the function is
/// compiled; its `/` is still the sizes' exact division (an `Int`), not `Int / Int`'s `Float`:
/// `split_heads` with one head over a last axis of 1 was refused ("`shape` must be Int[], got
/// Float[]") while every other size worked. Items of `shape(x)` likewise (`shape(x)[-1] /
/// heads` was refused by the checker for every size).
#[test]
fn sizes_of_one_divide_as_sizes() {
    for backend in BACKENDS {
        let s = session(backend);
        for (shape, heads) in [([2, 3, 1], 1), ([1, 1, 1], 1), ([2, 1, 4], 2), ([1, 3, 2], 1)] {
            let x = ramp(&shape);
            let what = format!("{backend:?} split_heads {shape:?}, heads={heads}");
            let kwargs = [("heads", (heads as i64).into())];
            let out = s.call_kw("split_heads", &[Value::from(x.view())], &kwargs);
            assert_eq!(only_f32(out, &what), split_heads(&x, heads), "{what}");
            let out = s.call_kw("split_heads_of_shape", &[Value::from(x.view())], &kwargs);
            assert_eq!(only_f32(out, &what), split_heads(&x, heads), "{what} (shape)");
        }
        // `cast` of a size that folds to a constant (1, or pinned by `reshape(x, [4])`).
        for n in [1usize, 4] {
            let x = ramp(&[n]);
            let got = only_f32(s.call("cast_size", &[Value::from(x.view())]), "cast_size");
            assert_eq!(got, x.mapv(|v| v + n as f32), "{backend:?} cast_size [{n}]");
        }
        let x = ramp(&[4]);
        match s.call("cast_pinned", &[Value::from(x.view())]) {
            Ok(r) => match r.into_iter().next().and_then(Value::into_tensor) {
                Some(Tensor::F64(a)) => assert_eq!(a, x.mapv(|v| v as f64 * 8.0)),
                other => panic!("{backend:?} cast_pinned: {other:?}"),
            },
            Err(e) => panic!("{backend:?} cast_pinned: {e}"),
        }
        // An inexact division of a constant size is the sizes' error, as for any other size.
        let x = ramp(&[2, 3, 1]);
        for f in ["split_heads", "split_heads_of_shape"] {
            let e = call_error(&s, f, &[Value::from(x.view())], &[("heads", 2i64.into())]);
            assert!(e.contains("E0510") && e.contains("1 / 2"), "{f}: {e}");
        }
    }
}

#[test]
fn sizes_in_creation_ops_arguments_and_arithmetic() {
    for backend in BACKENDS {
        let s = session(backend);
        for n in [3usize, 6] {
            let x = ramp(&[n, 4]);
            let call = |name: &str, args: &[Value]| {
                only_f32(s.call(name, args), &format!("{backend:?} {name} [{n}, 4]"))
            };
            let mean = x.sum_axis(Axis(0)) / n as f32;
            let got = call("mean_rows", &[Value::from(x.view())]);
            assert!(got.iter().zip(&mean).all(|(a, b)| (a - b).abs() <= 1e-6), "{got} {mean}");
            let got = call("positions", &[Value::from(x.view())]);
            let want: Vec<f32> = (0..2 * n - 1).map(|i| i as f32).collect();
            assert_eq!(got.iter().copied().collect::<Vec<_>>(), want);
            assert_eq!(call("filled", &[Value::from(x.view())]), x.mapv(|v| v + 2.0));
            let b = ramp(&[4]);
            let got = call("spread", &[Value::from(b.view()), Value::from(x.view())]);
            assert_eq!(got, &x * &b);
            let got = call("halves", &[Value::from(x.view())]);
            assert_eq!(got.shape(), &[2 * n, 2]);
            assert_eq!(got.iter().collect::<Vec<_>>(), x.iter().collect::<Vec<_>>());
            let got = call("count", &[Value::from(x.view())]);
            assert_eq!(got.shape(), &[] as &[usize]);
            assert_eq!(got.iter().copied().collect::<Vec<_>>(), vec![(4 * n) as f32]);
        }
        // Every function above once, for both sizes.
        assert_eq!(s.stats().compiles, 6, "{backend:?}");
    }
}

/// The rendered text of a call's error (a call or shape error).
fn call_error(s: &Session, name: &str, args: &[Value], kwargs: &[(&str, Value)]) -> String {
    match s.call_kw(name, args, kwargs) {
        Err(Error::Call { rendered, .. }) => rendered,
        Err(Error::Shape(m)) => m,
        other => panic!("{name}: expected an error, got {other:?}"),
    }
}

#[test]
fn an_inexact_division_of_sizes_names_the_expression() {
    for backend in BACKENDS {
        let s = session(backend);
        let heads = [("heads", Value::from(4i64))];
        // On a first call, and on one that hits the instance compiled for sizes that divide.
        for first in [false, true] {
            if first {
                let x = ramp(&[1, 2, 8]);
                s.call_kw("split_heads", &[Value::from(x.view())], &heads).expect("8 / 4");
            }
            let x = ramp(&[1, 2, 10]);
            let msg = call_error(&s, "split_heads", &[Value::from(x.view())], &heads);
            for want in ["`size(x, -1) / heads` is 10 / 4", "not a whole number", "sizes.tfn:5:48"]
            {
                assert!(msg.contains(want), "{backend:?}: `{want}` not in\n{msg}");
            }
        }
    }
}

#[test]
fn a_size_where_a_compile_time_value_is_needed_is_a_located_error() {
    let s = session(Backend::Interp);
    let x = ramp(&[3, 4]);
    let cases = [
        ("slice_to_size", "`size(x, 0) - 1` is a size, known only at the call", "sizes.tfn:41:41"),
        ("axis_of_size", "`[size(x, 0)]` holds sizes, known only at the call", "sizes.tfn:45:24"),
        ("out_of_range", "dim 5 is out of range for `x` of rank 2", "sizes.tfn:49:32"),
    ];
    for (name, want, at) in cases {
        let msg = call_error(&s, name, &[Value::from(x.view())], &[]);
        assert!(msg.contains(want), "{name}: `{want}` not in\n{msg}");
        assert!(msg.contains(at), "{name}: `{at}` not in\n{msg}");
    }
    // A static `if` on a size is refused when the file is checked.
    let s = Session::with_backend(Backend::Interp);
    let source = "fn f(Tensor x) -> Tensor {\n    if size(x, 0) > 1 {\n        return x\n    }\n    return -x\n}\n";
    match s.load_str("static_if.tfn", source) {
        Err(Error::Load { rendered, .. }) => {
            assert!(rendered.contains("a size cannot be compared"), "{rendered}");
            assert!(rendered.contains("static_if.tfn:2:19"), "{rendered}");
        }
        other => panic!("expected a load error, got {other:?}"),
    }
}

#[test]
fn a_function_named_size_hides_the_built_in() {
    let s = Session::with_backend(Backend::Interp);
    let source = "fn size(Tensor x, Int k) -> Tensor {\n    return x * 2.0\n}\n\
                  fn f(Tensor x) -> Tensor {\n    return size(x, 1)\n}\n";
    s.load_str("user_size.tfn", source).expect("a user's `size` loads");
    let x = ramp(&[2, 3]);
    assert_eq!(only_f32(s.call("f", &[Value::from(x.view())]), "f"), x.mapv(|v| v * 2.0));
}

/// An `f32` model whose `i64` mask meets an `f32` add three calls down.
const MASKED: &str = r#"
fn bias_of(Tensor mask) -> Tensor {
    return (1.0 - mask) * -1e9
}

fn attend(Tensor s, Tensor mask) -> Tensor {
    return s + bias_of(mask)
}

fn layer(Tensor x, Tensor mask) -> Tensor {
    return attend(x, mask)
}

fn model(Tensor<f32> x, Tensor mask) -> Tensor {
    return layer(x, mask)
}

fn quoted(Tensor<f32> s, Tensor mask) -> Tensor {
    return s + (1.0 - mask) * -1e9
}
"#;

#[test]
fn a_dtype_mismatch_names_the_argument_it_flows_from() {
    let s = Session::with_backend(Backend::Interp);
    s.load_str("masked.tfn", MASKED).expect("load");
    let x = ramp(&[2, 3]);
    let mask = ArrayD::<i64>::ones(IxDyn(&[2, 3]));
    let args = [Value::from(x.view()), Value::from(mask.view())];
    let msg = call_error(&s, "model", &args, &[]);
    let wanted = [
        "masked.tfn:7:16",
        "`bias_of(mask)` is i64 because argument `mask` of `model` was given as i64",
        "reaches this call through `layer` → `attend`",
        // The secondary label at the parameter of `model`.
        "fn model(Tensor<f32> x, Tensor mask) -> Tensor {",
        "`mask` is given as i64",
    ];
    for want in wanted {
        assert!(msg.contains(want), "`{want}` not in\n{msg}");
    }
    // The argument is quoted with its parentheses.
    let msg = call_error(&s, "quoted", &args, &[]);
    assert!(msg.contains("`(1.0 - mask) * -1e9` is i64 because argument `mask`"), "{msg}");
    assert!(msg.contains("masked.tfn:19:16"), "{msg}");
}

#[test]
fn gradients_flow_through_sizes() {
    for backend in BACKENDS {
        let s = session(backend);
        for n in [3usize, 5] {
            let x = ramp(&[n, 4]);
            // d/dx of <sum(x, dims=[0]) / n, ct> is ct / n on every row.
            let ct = ramp(&[4]);
            let grads = s.vjp("mean_rows", &[Value::from(x.view())], &[Value::from(ct.view())]);
            let g = only_f32(grads, &format!("{backend:?} vjp mean_rows [{n}, 4]"));
            let want = ct.broadcast(IxDyn(&[n, 4])).expect("broadcast").mapv(|v| v / n as f32);
            assert!(g.iter().zip(&want).all(|(a, b)| (a - b).abs() <= 1e-6), "{g} {want}");
            // split_heads only moves elements: its gradient moves them back.
            let x = ramp(&[2, n, 8]);
            let ct = split_heads(&ramp(&[2, n, 8]), 4);
            let grads = s.vjp_kw(
                "split_heads",
                &[Value::from(x.view())],
                &[("heads", 4i64.into())],
                &[Value::from(ct.view())],
            );
            let g = only_f32(grads, &format!("{backend:?} vjp split_heads [2, {n}, 8]"));
            assert_eq!(g, ramp(&[2, n, 8]), "{backend:?}");
        }
        assert_eq!(s.stats().compiles, 2, "{backend:?}: one gradient per function");
    }
}

fn ramp64(shape: &[usize]) -> ArrayD<f64> {
    ramp(shape).mapv(f64::from)
}

/// The one tensor a call returns, of any dtype.
fn only(results: Result<Vec<Value<'static>>, Error>, what: &str) -> Tensor {
    match results.map(|r| r.into_iter().next().and_then(Value::into_tensor)) {
        Ok(Some(t)) => t,
        other => panic!("{what}: expected a tensor, got {other:?}"),
    }
}

fn close<T: Copy + Into<f64>>(got: &ArrayD<T>, want: &ArrayD<f64>, tol: f64, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}");
    for (g, w) in got.iter().zip(want) {
        let g: f64 = (*g).into();
        assert!((g - w).abs() <= tol * w.abs().max(1.0), "{what}: {g} vs {w}");
    }
}

#[test]
fn sqrt_and_rsqrt_of_sizes_take_the_dtype_they_meet() {
    for backend in BACKENDS {
        let s = session(backend);
        for shape in [[3usize, 4], [2, 9]] {
            let what = |f: &str, dtype: &str| format!("{backend:?} {f} {dtype}{shape:?}");
            let (r, c) = (shape[0] as f64, shape[1] as f64);
            let (x32, x64) = (ramp(&shape), ramp64(&shape));
            let v32 = [Value::from(x32.view())];
            let v64 = [Value::from(x64.view())];
            // q * rsqrt(size(q, -1)): f32 with f32, f64 with f64 (exact to the dtype).
            match only(s.call("scaled", &v32), &what("scaled", "f32")) {
                Tensor::F32(a) => close(&a, &x64.mapv(|v| v / c.sqrt()), 1e-6, "scaled f32"),
                other => panic!("{}: {other:?}", what("scaled", "f32")),
            }
            match only(s.call("scaled", &v64), &what("scaled", "f64")) {
                Tensor::F64(a) => close(&a, &x64.mapv(|v| v / c.sqrt()), 1e-14, "scaled f64"),
                other => panic!("{}: {other:?}", what("scaled", "f64")),
            }
            match only(s.call("root_of_count", &v64), &what("root_of_count", "f64")) {
                Tensor::F64(a) => {
                    close(&a, &x64.mapv(|v| v / (2.0 * (r * c).sqrt())), 1e-14, "root f64")
                }
                other => panic!("{}: {other:?}", what("root_of_count", "f64")),
            }
            // Alone: f32.
            match only(s.call("root_alone", &v64), &what("root_alone", "")) {
                Tensor::F32(a) => {
                    close(&a, &ArrayD::from_elem(IxDyn(&[]), r.sqrt()), 1e-6, "alone")
                }
                other => panic!("{}: {other:?}", what("root_alone", "")),
            }
            // `cast`: a size as an f64 scalar, a float of a size as f32.
            let out = s.call("size_as", &v32).expect("size_as");
            match (
                out[0].as_tensor().map(|t| t.to_tensor()),
                out[1].as_tensor().map(|t| t.to_tensor()),
            ) {
                (Some(Tensor::F64(n)), Some(Tensor::F32(q))) => {
                    assert_eq!(n.iter().copied().collect::<Vec<_>>(), [c], "{backend:?}");
                    close(&q, &ArrayD::from_elem(IxDyn(&[]), 1.0 / r.sqrt()), 1e-6, "cast rsqrt");
                }
                other => panic!("{backend:?} size_as: {other:?}"),
            }
            // Captured by a loop body: translated into the body's sizes.
            let w = ramp64(&[3, shape[0], shape[1]]);
            let args = [Value::from(x64.view()), Value::from(w.view())];
            match only(s.call("root_in_loop", &args), &what("root_in_loop", "f64")) {
                Tensor::F64(a) => {
                    let mut want = x64.clone();
                    for l in 0..3 {
                        want = want + w.index_axis(Axis(0), l).mapv(|v| v / c.sqrt());
                    }
                    close(&a, &want, 1e-14, "root_in_loop");
                }
                other => panic!("{}: {other:?}", what("root_in_loop", "f64")),
            }
        }
        // One compile per function and dtype whatever the sizes (scaled twice: f32, f64).
        assert_eq!(s.stats().compiles, 6, "{backend:?}");
    }
}

#[test]
fn a_float_of_a_size_meeting_an_integer_tensor_is_a_located_error() {
    let s = session(Backend::Interp);
    let q = ArrayD::<i32>::ones(IxDyn(&[2, 4]));
    let msg = call_error(&s, "int_scaled", &[Value::from(q.view())], &[]);
    let line = SOURCE.lines().position(|l| l.contains("fn int_scaled")).expect("int_scaled") + 2;
    for want in [
        "E0502",
        "`rsqrt(size(q, -1))` is a float computed from a size: it cannot meet a tensor of dtype i32",
        &format!("sizes.tfn:{line}:16"),
    ] {
        assert!(msg.contains(want), "`{want}` not in\n{msg}");
    }
    // Mixing a size with a float literal stays refused when the file is checked.
    let s = Session::with_backend(Backend::Interp);
    let source = "fn f(Tensor x) -> Tensor {\n    return x * (size(x, 0) * 0.5)\n}\n";
    match s.load_str("size_float.tfn", source) {
        Err(Error::Load { rendered, .. }) => {
            assert!(rendered.contains("cannot be mixed with a float"), "{rendered}");
        }
        other => panic!("expected a load error, got {other:?}"),
    }
}

/// A difference of sizes that comes out negative is an error at the expression (it had no
/// location and read "size `x.shape[0] - 3` would be negative").
#[test]
fn a_negative_difference_of_sizes_names_the_expression() {
    for backend in BACKENDS {
        let s = Session::with_backend(backend);
        let src = "fn short(Tensor x) -> Tensor {\n    return full([size(x, 0) - 3, 2], 1.0)\n}\n";
        s.load_str("neg.tfn", src).expect("loads");
        let x = ramp(&[2, 6]);
        let msg = call_error(&s, "short", &[Value::from(x.view())], &[]);
        for want in ["`size(x, 0) - 3` is 2 - 3", "negative", "neg.tfn:2:18"] {
            assert!(msg.contains(want), "{backend:?}: `{want}` not in\n{msg}");
        }
    }
}
