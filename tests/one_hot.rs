//! Standard-library functions with behaviour of their own, on both backends:
//! - `one_hot` (std:nn): negative indices count from the end, and an index outside
//!   `[-classes, classes)` fails the call naming the op and the index (the check of the
//!   `index_select` it is written with), never a silent row of zeros;
//! - `gelu` (std:nn): the tanh form by default, the exact erf form with `approximate=false`;
//! - std:optim: `adamw` and `sgd` are their formulas (with the documented defaults),
//!   `init_normal` and `init_uniform` are `randn_like`/`rand_like` scaled, in the dtype asked.

use ndarray::{arr0, ArrayD, IxDyn};
use tfn::{Backend, Session, Tensor, Value};

const SOURCE: &str = r#"
use "std:nn"

fn oh(Tensor index, *, Int classes) -> Tensor {
    return one_hot(index, classes=classes, dtype=f32) * 2.0
}
"#;

fn call(backend: Backend, index: Vec<i64>) -> Result<Tensor, String> {
    let s = Session::with_backend(backend);
    s.load_str("one_hot_test.tfn", SOURCE).map_err(|e| format!("{e:?}"))?;
    let n = index.len();
    let t = Tensor::I64(ArrayD::from_shape_vec(IxDyn(&[n]), index).expect("shape"));
    let args = [Value::from(t)];
    let kw = [("classes", Value::Attr(tfn::Attr::Int(3)))];
    let mut out = s.call_kw("oh", &args, &kw).map_err(|e| e.to_string())?;
    Ok(out.remove(0).into_tensor().expect("a tensor"))
}

#[test]
fn negative_indices_count_from_the_end() {
    for backend in [Backend::Jit, Backend::Interp] {
        let got = call(backend, vec![0, -1, 2, -3]).expect("runs");
        let want = ArrayD::from_shape_vec(
            IxDyn(&[4, 3]),
            vec![2.0f32, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 2.0, 2.0, 0.0, 0.0],
        )
        .expect("shape");
        assert_eq!(got, Tensor::F32(want), "{backend:?}");
    }
}

#[test]
fn an_index_out_of_range_fails_naming_it() {
    for backend in [Backend::Jit, Backend::Interp] {
        for bad in [3i64, -4, 100] {
            let e = call(backend, vec![1, bad, 0]).expect_err("out of range");
            assert!(e.contains("index_select") && e.contains(&format!("index {bad} ")), "{e}");
        }
    }
}

/// A session on `backend` that loaded std:optim.
fn optim(backend: Backend) -> Session {
    let s = Session::with_backend(backend);
    s.load_str("optim_test.tfn", "use \"std:optim\"\n").unwrap_or_else(|e| panic!("{e}"));
    s
}

fn f32s(out: &[Value]) -> Vec<Vec<f32>> {
    out.iter()
        .map(|o| match o.as_tensor().map(|t| t.to_tensor()) {
            Some(Tensor::F32(a)) => a.iter().copied().collect(),
            other => panic!("expected f32, got {other:?}"),
        })
        .collect()
}

fn close(what: &str, have: f32, want: f32) {
    assert!((want - have).abs() <= 1e-6 * want.abs().max(1.0), "{what}: {have} vs {want}");
}

/// erf to about 1.5e-7 (Abramowitz and Stegun 7.1.26): an independent reference.
fn erf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    (1.0 - poly * (-x * x).exp()).copysign(x)
}

#[test]
fn gelu_is_the_tanh_form_by_default_and_the_erf_form_when_exact() {
    let xs = vec![-3.0f32, -1.0, -0.25, 0.0, 0.5, 1.5, 4.0];
    let x = ArrayD::from_shape_vec(IxDyn(&[xs.len()]), xs.clone()).expect("x");
    for backend in [Backend::Jit, Backend::Interp] {
        let s = Session::with_backend(backend);
        s.load_str("gelu_test.tfn", "use \"std:nn\"\n").unwrap_or_else(|e| panic!("{e}"));
        let call = |kw: &[(&str, Value)]| {
            let out = s.call_kw("gelu", &[Value::from(x.view())], kw);
            f32s(&out.unwrap_or_else(|e| panic!("{backend:?}: {e}"))).remove(0)
        };
        let tanh_form = call(&[]);
        let exact = call(&[("approximate", Value::from(false))]);
        for (i, &v) in xs.iter().enumerate() {
            let v = f64::from(v);
            let want_tanh = 0.5 * v * (1.0 + (0.7978845608 * (v + 0.044715 * v * v * v)).tanh());
            let want_erf = 0.5 * v * (1.0 + erf(v / std::f64::consts::SQRT_2));
            close(&format!("{backend:?} tanh gelu({v})"), tanh_form[i], want_tanh as f32);
            let (have, want) = (f64::from(exact[i]), want_erf);
            assert!((have - want).abs() <= 2e-6 * want.abs().max(1.0), "{backend:?} erf gelu({v})");
        }
        // The two forms differ (by up to ~1e-3 near |x| = 2), so the keyword is not ignored.
        assert!(tanh_form.iter().zip(&exact).any(|(a, b)| a != b), "{backend:?}");
    }
}

#[test]
fn adamw_is_the_adamw_formula_with_the_documented_defaults() {
    let p = ArrayD::from_shape_vec(IxDyn(&[3]), vec![1.0f32, -2.0, 0.5]).expect("p");
    let g = ArrayD::from_shape_vec(IxDyn(&[3]), vec![0.1f32, 0.0, -3.0]).expect("g");
    let m = ArrayD::from_shape_vec(IxDyn(&[3]), vec![0.01f32, 0.2, 0.0]).expect("m");
    let v = ArrayD::from_shape_vec(IxDyn(&[3]), vec![0.0f32, 0.04, 1.0]).expect("v");
    let (lr, bc1, bc2) =
        (arr0(0.01f32).into_dyn(), arr0(0.19f32).into_dyn(), arr0(0.02f32).into_dyn());
    // (beta1, beta2, decay) given, and the defaults beta1 = 0.9, beta2 = 0.999, decay = 0.
    type Hyper = (f32, f32, f32);
    let cases: [(Option<Hyper>, Hyper); 2] =
        [(Some((0.8, 0.99, 0.1)), (0.8, 0.99, 0.1)), (None, (0.9, 0.999, 0.0))];
    for backend in [Backend::Jit, Backend::Interp] {
        let s = optim(backend);
        for (given, (beta1, beta2, decay)) in cases {
            let args: Vec<Value> =
                [&p, &g, &m, &v, &lr, &bc1, &bc2].iter().map(|a| Value::from(a.view())).collect();
            let kw: Vec<(&str, Value)> = match given {
                Some((b1, b2, d)) => vec![
                    ("beta1", Value::from(f64::from(b1))),
                    ("beta2", Value::from(f64::from(b2))),
                    ("decay", Value::from(f64::from(d))),
                ],
                None => vec![],
            };
            let out = s.call_kw("adamw", &args, &kw).unwrap_or_else(|e| panic!("{backend:?}: {e}"));
            let got = f32s(&out);
            for i in 0..3 {
                let m1 = beta1 * m[i] + (1.0 - beta1) * g[i];
                let v1 = beta2 * v[i] + (1.0 - beta2) * g[i] * g[i];
                let step = (m1 / 0.19) / ((v1 / 0.02).sqrt() + 1e-8);
                let p1 = p[i] - 0.01 * (step + decay * p[i]);
                let what = |name: &str| format!("{backend:?} {given:?} {name}[{i}]");
                close(&what("p"), got[0][i], p1);
                close(&what("m"), got[1][i], m1);
                close(&what("v"), got[2][i], v1);
            }
        }
    }
}

#[test]
fn sgd_is_the_sgd_formula() {
    let p = ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![1.0f32, -2.0, 0.5, 4.0]).expect("p");
    let g = ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![0.1f32, 0.0, -3.0, 1.0]).expect("g");
    let lr = arr0(0.1f32).into_dyn();
    for backend in [Backend::Jit, Backend::Interp] {
        let s = optim(backend);
        let args = [Value::from(p.view()), Value::from(g.view()), Value::from(lr.view())];
        for decay in [0.0f32, 0.5] {
            let kw: Vec<(&str, Value)> =
                if decay == 0.0 { vec![] } else { vec![("decay", Value::from(f64::from(decay)))] };
            let got = f32s(&s.call_kw("sgd", &args, &kw).unwrap_or_else(|e| panic!("{e}")));
            for (i, ((&pi, &gi), &have)) in p.iter().zip(&g).zip(&got[0]).enumerate() {
                close(
                    &format!("{backend:?} decay {decay} [{i}]"),
                    have,
                    pi - 0.1 * (gi + decay * pi),
                );
            }
        }
    }
}

#[test]
fn initialisers_scale_the_keyed_generators() {
    let like = ArrayD::<f32>::zeros(IxDyn(&[4, 5]));
    let key = ArrayD::from_shape_vec(IxDyn(&[2]), vec![7i64, 1003]).expect("key");
    let reference = Session::with_backend(Backend::Interp);
    reference
        .load_str(
            "ref.tfn",
            "fn n(Tensor x, Tensor k, *, DType dtype) -> Tensor {\n    return randn_like(x, k, dtype=dtype)\n}\n\
             fn u(Tensor x, Tensor k, *, DType dtype) -> Tensor {\n    return rand_like(x, k, dtype=dtype)\n}\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
    for backend in [Backend::Jit, Backend::Interp] {
        let s = optim(backend);
        for dtype in [tfn::DType::F32, tfn::DType::F64] {
            let args = [Value::from(like.view()), Value::from(key.view())];
            let dt = [("dtype", Value::Attr(tfn::Attr::DType(dtype)))];
            let base = |f: &str| -> Vec<f64> {
                let out = reference.call_kw(f, &args, &dt).unwrap_or_else(|e| panic!("{e}"));
                values(out.into_iter().next(), dtype)
            };
            let (normal, uniform) = (base("n"), base("u"));
            let init = |f: &str, scale: &str| -> Vec<f64> {
                let kw = [(scale, Value::from(0.5)), dt[0].clone()];
                let out =
                    s.call_kw(f, &args, &kw).unwrap_or_else(|e| panic!("{backend:?} {f}: {e}"));
                values(out.into_iter().next(), dtype)
            };
            let (got_normal, got_uniform) =
                (init("init_normal", "std"), init("init_uniform", "bound"));
            for i in 0..20 {
                let what = format!("{backend:?} {dtype:?} [{i}]");
                assert!((got_normal[i] - 0.5 * normal[i]).abs() <= 1e-6, "init_normal {what}");
                let want = (2.0 * uniform[i] - 1.0) * 0.5;
                assert!((got_uniform[i] - want).abs() <= 1e-6, "init_uniform {what}");
                assert!((-0.5..0.5).contains(&got_uniform[i]), "init_uniform {what}");
            }
        }
    }
}

/// The values of a result that must have `dtype`, as f64.
fn values(v: Option<Value<'static>>, dtype: tfn::DType) -> Vec<f64> {
    match v.and_then(Value::into_tensor) {
        Some(Tensor::F32(a)) if dtype == tfn::DType::F32 => a.iter().map(|&x| x.into()).collect(),
        Some(Tensor::F64(a)) if dtype == tfn::DType::F64 => a.iter().copied().collect(),
        other => panic!("expected {dtype:?}, got {other:?}"),
    }
}
