//! Sizes a function derives (`reshape` with -1, `slice` lengths, `concat` sums) that come out
//! as 1 only at run time: the session compiles one instance per decision (and no more: a new
//! batch size is still a cache hit), handles follow the call's sizes, and the errors that
//! remain name the op, the argument, the shapes and the source location — also when the call
//! hits an instance compiled for other sizes. (The results themselves are checked against
//! NumPy by `tests/cases/{run,grad}/derived_*.tfn`.)

use ndarray::{ArrayD, IxDyn};
use tfn::{Backend, Error, Session, Tensor, Value};

const SOURCE: &str = r#"
fn reshaped_plus(Tensor x, Tensor y) -> Tensor {
    return reshape(x, [4, -1]) + y
}

fn to_square(Tensor x) -> Tensor {
    return reshape(x, [4, 4])
}

fn fives(Tensor x) -> Tensor {
    return reshape(x, [5, -1])
}

fn squeezed(Tensor x) -> Tensor {
    return squeeze(reshape(x, [-1, 4]), dims=[0])
}

fn ambiguous(Tensor x) -> Tensor {
    return reshape(x, [0, -1])
}

fn two_cols_plus(Tensor x) -> Tensor {
    return slice(x, dim=1, start=0, end=2) + x
}
"#;

const BACKENDS: [Backend; 2] = [Backend::Interp, Backend::Jit];

fn session(backend: Backend) -> Session {
    let s = Session::with_backend(backend);
    s.load_str("derived.tfn", SOURCE).unwrap_or_else(|e| panic!("load: {e}"));
    s
}

fn ramp(shape: &[usize]) -> ArrayD<f32> {
    let n: usize = shape.iter().product();
    ArrayD::from_shape_vec(IxDyn(shape), (0..n).map(|i| i as f32).collect()).expect("shape")
}

fn only_f32(results: Vec<Value<'static>>) -> ArrayD<f32> {
    match results.into_iter().next().and_then(Value::into_tensor) {
        Some(Tensor::F32(a)) => a,
        other => panic!("expected one f32 result, got {other:?}"),
    }
}

/// `reshape(x, [4, -1]) + y` computed directly, broadcasting as NumPy does.
fn reshaped_plus(x: &ArrayD<f32>, y: &ArrayD<f32>) -> ArrayD<f32> {
    let x = x.to_shape(IxDyn(&[4, x.len() / 4])).expect("reshape").to_owned();
    &x + y
}

#[test]
fn one_instance_per_decision_and_none_per_size() {
    for backend in BACKENDS {
        let s = session(backend);
        let call = |n: usize, m: usize| {
            let (x, y) = (ramp(&[n]), ramp(&[4, m]));
            let out = s.call("reshaped_plus", &[Value::from(x.view()), Value::from(y.view())]);
            let out = only_f32(out.unwrap_or_else(|e| panic!("{backend:?} x[{n}] y[4, {m}]: {e}")));
            assert_eq!(out, reshaped_plus(&x, &y), "{backend:?} x[{n}] y[4, {m}]");
            s.stats().compiles
        };
        assert_eq!(call(12, 3), 1, "{backend:?}: first call");
        assert_eq!(call(20, 5), 1, "{backend:?}: a new size reuses the instance");
        assert_eq!(call(4, 3), 2, "{backend:?}: a derived 1 needs its own instance");
        assert_eq!(call(4, 7), 2, "{backend:?}: and reuses it");
        assert_eq!(call(8, 2), 2, "{backend:?}: the first instance is still cached");
    }
}

#[test]
fn a_handle_follows_the_call_sizes() {
    for backend in BACKENDS {
        let s = session(backend);
        let (x, y) = (ramp(&[12]), ramp(&[4, 3]));
        let h = s
            .instantiate("reshaped_plus", &[Value::from(x.view()), Value::from(y.view())], &[])
            .expect("instantiate");
        let x1 = ramp(&[4]);
        let out = only_f32(h.call(&[Value::from(x1.view()), Value::from(y.view())]).expect("call"));
        assert_eq!(out, reshaped_plus(&x1, &y), "{backend:?}");
        let out = only_f32(h.call(&[Value::from(x.view()), Value::from(y.view())]).expect("call"));
        assert_eq!(out, reshaped_plus(&x, &y), "{backend:?}");
    }
}

/// The message of a shape error, which must be one.
fn shape_error(s: &Session, name: &str, x: &ArrayD<f32>) -> String {
    match s.call(name, &[Value::from(x.view())]) {
        Err(Error::Shape(m)) => m,
        other => panic!("{name}{:?}: expected a shape error, got {other:?}", x.shape()),
    }
}

/// A function, sizes that fit, sizes that do not, and what the message must contain.
type Case = (&'static str, &'static [usize], &'static [usize], &'static [&'static str]);

#[test]
fn size_errors_name_the_op_the_argument_and_the_location() {
    let cases: [Case; 5] = [
        ("to_square", &[16], &[12], &["reshape `x` of shape [12] to [4, 4]", "derived.tfn:7:23"]),
        ("to_square", &[2, 8], &[3, 4], &["reshape `x` of shape [3, 4]", "derived.tfn:7:23"]),
        ("fives", &[10], &[12], &["reshape `x` of shape [12] to [5, -1]", "derived.tfn:11:23"]),
        (
            "squeezed",
            &[4],
            &[8],
            &["squeeze axis 0 of `reshape(x, [-1, 4])` of shape [2, 4]", "derived.tfn:15:46"],
        ),
        (
            "two_cols_plus",
            &[3, 2],
            &[3, 5],
            &[
                "broadcast `slice(x, dim=1, start=0, end=2)` of shape [3, 2]",
                "`x` of shape [3, 5]",
                "derived.tfn:23:",
            ],
        ),
    ];
    for backend in BACKENDS {
        for (name, good, bad, expected) in cases {
            // On the first call, and on a call that hits the instance compiled for `good`.
            let fresh = session(backend);
            let warm = session(backend);
            warm.call(name, &[Value::from(ramp(good).view())]).expect("sizes that fit");
            for (when, s) in [("first call", &fresh), ("cached", &warm)] {
                let msg = shape_error(s, name, &ramp(bad));
                for e in expected {
                    assert!(msg.contains(e), "{backend:?} {name} {when}: `{e}` not in\n{msg}");
                }
            }
        }
    }
}

#[test]
fn a_minus_one_next_to_a_zero_is_an_error_as_in_numpy() {
    let s = session(Backend::Interp);
    match s.call("ambiguous", &[Value::from(ramp(&[0, 3]).view())]) {
        Err(Error::Call { rendered, .. }) => {
            assert!(rendered.contains("-1 size is ambiguous"), "{rendered}");
            assert!(rendered.contains("derived.tfn:19:23"), "{rendered}");
        }
        other => panic!("expected an error, got {other:?}"),
    }
}
