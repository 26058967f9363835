//! Standard-library functions with behaviour of their own, on both backends:
//! - `one_hot` (std:nn): negative indices count from the end, and an index outside
//!   `[-classes, classes)` fails the call naming the op and the index (the check of the
//!   `index_select` it is written with), never a silent row of zeros;
//! - `gelu` (std:nn): the tanh form by default, the exact erf form with `approximate=false`;
//! - std:optim: `adamw` and `sgd` are their formulas (with the documented defaults),
//!   `init_normal` and `init_uniform` are `randn_like`/`rand_like` scaled, in the dtype asked;
//! - std:nn's attention pieces (`to_heads`, `from_heads`, `scaled_dot_product_attention` with a
//!   padding or causal mask, `multi_head_attention`) and pooling (`mean_pool`, `normalize`)
//!   against loops written here, in f32 and f64, one compile for every batch and length.

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

const ATTENTION: &str = r#"
use "std:nn"

fn heads(Tensor x, *, Int heads) -> (Tensor, Tensor) {
    let h = to_heads(x, heads=heads)
    return (h, from_heads(h))
}

fn sdpa(Tensor q, Tensor k, Tensor v, Tensor mask) -> Tensor {
    return scaled_dot_product_attention(q, k, v, unsqueeze(unsqueeze(mask != 0, 1), 1))
}

// std:nn's attention as it read before a float of a size took the dtype it meets: the scale
// through a zero of q's dtype. The results must be bit for bit the same.
fn sdpa_zero_plus_size(Tensor q, Tensor k, Tensor v, Tensor mask) -> Tensor {
    let scale = rsqrt(zeros_like(q[0][0][0][0]) + size(q, -1))
    let scores = matmul(q, transpose.swap(k, -2, -1)) * scale
    let visible = unsqueeze(unsqueeze(mask != 0, 1), 1)
    return matmul(softmax(where(visible, scores, -inf)), v)
}

fn causal(Tensor q, Tensor k, Tensor v) -> Tensor {
    let grid = full([size(q, 2), size(k, 2)], 0, dtype=i64)
    return scaled_dot_product_attention(q, k, v, iota_like(grid, dim=1) <= iota_like(grid, dim=0))
}

fn mha(Tensor q, Tensor k, Tensor v, Tensor mask, *, Int heads) -> Tensor {
    return multi_head_attention(q, k, v, unsqueeze(unsqueeze(mask != 0, 1), 1), heads=heads)
}

fn pool(Tensor x, Tensor mask) -> (Tensor, Tensor) {
    let p = mean_pool(x, mask)
    return (p, normalize(p))
}
"#;

/// Deterministic values in [-1, 1).
fn filled(shape: &[usize], seed: u64) -> ArrayD<f64> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    ArrayD::from_shape_fn(IxDyn(shape), |_| {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    })
}

fn as_dtype(a: &ArrayD<f64>, dtype: tfn::DType) -> Value<'static> {
    match dtype {
        tfn::DType::F32 => Value::from(a.mapv(|v| v as f32)),
        _ => Value::from(a.clone()),
    }
}

/// softmax(q·kᵀ/√d over the visible keys)·v for q [B, H, Tq, D], k, v [B, H, Tk, D].
fn attention_reference(
    q: &ArrayD<f64>,
    k: &ArrayD<f64>,
    v: &ArrayD<f64>,
    visible: &dyn Fn(usize, usize, usize) -> bool,
) -> Vec<f64> {
    let (b, h, tq, d) = (q.shape()[0], q.shape()[1], q.shape()[2], q.shape()[3]);
    let tk = k.shape()[2];
    let mut out = Vec::new();
    for bi in 0..b {
        for hi in 0..h {
            for i in 0..tq {
                let scores: Vec<Option<f64>> = (0..tk)
                    .map(|j| {
                        visible(bi, i, j).then(|| {
                            let dot: f64 =
                                (0..d).map(|m| q[[bi, hi, i, m]] * k[[bi, hi, j, m]]).sum();
                            dot / (d as f64).sqrt()
                        })
                    })
                    .collect();
                let top = scores.iter().flatten().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
                let e: Vec<f64> =
                    scores.iter().map(|s| s.map_or(0.0, |s| (s - top).exp())).collect();
                let total: f64 = e.iter().sum();
                for m in 0..d {
                    out.push((0..tk).map(|j| e[j] / total * v[[bi, hi, j, m]]).sum());
                }
            }
        }
    }
    out
}

fn attention_session(backend: Backend) -> Session {
    let s = Session::with_backend(backend);
    s.load_str("attention_test.tfn", ATTENTION).unwrap_or_else(|e| panic!("{e}"));
    s
}

fn near(what: &str, have: &[f64], want: &[f64], tol: f64) {
    assert_eq!(have.len(), want.len(), "{what}");
    for (i, (h, w)) in have.iter().zip(want).enumerate() {
        assert!((h - w).abs() <= tol * w.abs().max(1.0), "{what}[{i}]: {h} vs {w}");
    }
}

#[test]
fn to_heads_and_from_heads_split_the_channels_and_join_them_back() {
    for backend in [Backend::Jit, Backend::Interp] {
        let s = attention_session(backend);
        for (b, t) in [(2, 3), (3, 5)] {
            let x = filled(&[b, t, 12], 1);
            let kw = [("heads", Value::from(3i64))];
            let out = s.call_kw("heads", &[as_dtype(&x, tfn::DType::F64)], &kw).expect("runs");
            let mut it = out.into_iter();
            let (h, back) = (it.next(), it.next());
            // Head j of [B, T, 12] is channels 4j..4j+4: h[b, j, t, m] = x[b, t, 4j + m].
            let want: Vec<f64> = ndarray::Array::from_shape_fn((b, 3, t, 4), |(bi, j, ti, m)| {
                x[[bi, ti, 4 * j + m]]
            })
            .iter()
            .copied()
            .collect();
            assert_eq!(values(h, tfn::DType::F64), want, "{backend:?}");
            assert_eq!(values(back, tfn::DType::F64), x.iter().copied().collect::<Vec<_>>());
        }
        if backend == Backend::Jit {
            assert_eq!(s.stats().compiles, 1, "one compile for every batch and length");
        }
    }
}

#[test]
fn scaled_dot_product_attention_with_padding_and_causal_masks() {
    for backend in [Backend::Jit, Backend::Interp] {
        let s = attention_session(backend);
        for dtype in [tfn::DType::F32, tfn::DType::F64] {
            let tol = if dtype == tfn::DType::F32 { 1e-5 } else { 1e-12 };
            let (q, k, v) =
                (filled(&[2, 3, 4, 8], 2), filled(&[2, 3, 5, 8], 3), filled(&[2, 3, 5, 8], 4));
            // Row 0 sees every key, row 1 the first two (three keys are padding).
            let lens = [5usize, 2];
            let mask = ArrayD::from_shape_fn(IxDyn(&[2, 5]), |i| i64::from(i[1] < lens[i[0]]));
            let args =
                [as_dtype(&q, dtype), as_dtype(&k, dtype), as_dtype(&v, dtype), Value::from(mask)];
            let out = s.call("sdpa", &args).expect("sdpa");
            let before = s.call("sdpa_zero_plus_size", &args).expect("sdpa_zero_plus_size");
            assert_eq!(
                values(out.first().cloned(), dtype),
                values(before.into_iter().next(), dtype),
                "{backend:?} {dtype:?}: `q·kᵀ * rsqrt(size(q, -1))` is the former formula exactly"
            );
            let want = attention_reference(&q, &k, &v, &|b, _, j| j < lens[b]);
            near(
                &format!("sdpa {backend:?} {dtype:?}"),
                &values(out.into_iter().next(), dtype),
                &want,
                tol,
            );

            let k4 = filled(&[2, 3, 4, 8], 5);
            let v4 = filled(&[2, 3, 4, 8], 6);
            let args = [as_dtype(&q, dtype), as_dtype(&k4, dtype), as_dtype(&v4, dtype)];
            let out = s.call("causal", &args).expect("causal");
            let want = attention_reference(&q, &k4, &v4, &|_, i, j| j <= i);
            near(
                &format!("causal {backend:?} {dtype:?}"),
                &values(out.into_iter().next(), dtype),
                &want,
                tol,
            );
        }
    }
}

#[test]
fn multi_head_attention_is_attention_per_head_side_by_side() {
    for backend in [Backend::Jit, Backend::Interp] {
        let s = attention_session(backend);
        let (q, k, v) = (filled(&[2, 4, 6], 7), filled(&[2, 4, 6], 8), filled(&[2, 4, 6], 9));
        let mask =
            ArrayD::from_shape_vec(IxDyn(&[2, 4]), vec![1i64, 1, 1, 1, 1, 1, 1, 0]).expect("shape");
        let split = |x: &ArrayD<f64>| {
            ArrayD::from_shape_fn(IxDyn(&[2, 2, 4, 3]), |i| x[[i[0], i[2], 3 * i[1] + i[3]]])
        };
        let per_head =
            attention_reference(&split(&q), &split(&k), &split(&v), &|b, _, j| b == 0 || j < 3);
        // [B, H, T, D] back to [B, T, H·D].
        let heads = ArrayD::from_shape_vec(IxDyn(&[2, 2, 4, 3]), per_head).expect("shape");
        let want: Vec<f64> =
            ndarray::Array::from_shape_fn((2, 4, 6), |(b, t, c)| heads[[b, c / 3, t, c % 3]])
                .iter()
                .copied()
                .collect();
        let args = [Value::from(q), Value::from(k), Value::from(v), Value::from(mask)];
        let out = s.call_kw("mha", &args, &[("heads", Value::from(2i64))]).expect("mha");
        near(
            &format!("mha {backend:?}"),
            &values(out.into_iter().next(), tfn::DType::F64),
            &want,
            1e-12,
        );
    }
}

#[test]
fn mean_pool_averages_the_kept_positions_and_normalize_makes_unit_rows() {
    for backend in [Backend::Jit, Backend::Interp] {
        let s = attention_session(backend);
        let x = filled(&[3, 4, 5], 10);
        // Row 0 keeps 3 positions, row 1 all 4, row 2 none (its mean is 0, its norm stays 0).
        let mask =
            ArrayD::from_shape_vec(IxDyn(&[3, 4]), vec![1i64, 1, 1, 0, 1, 1, 1, 1, 0, 0, 0, 0])
                .expect("shape");
        let kept = [3usize, 4, 0];
        let out = s.call("pool", &[Value::from(x.clone()), Value::from(mask)]).expect("pool");
        let mut it = out.into_iter();
        let (pooled, unit) =
            (values(it.next(), tfn::DType::F64), values(it.next(), tfn::DType::F64));
        let mut want_pooled = Vec::new();
        let mut want_unit = Vec::new();
        for (b, &n) in kept.iter().enumerate() {
            let row: Vec<f64> = (0..5)
                .map(|c| (0..n).map(|t| x[[b, t, c]]).sum::<f64>() / (n as f64).max(1e-9))
                .collect();
            let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt().max(1e-12);
            want_unit.extend(row.iter().map(|v| v / norm));
            want_pooled.extend(row);
        }
        near(&format!("mean_pool {backend:?}"), &pooled, &want_pooled, 1e-12);
        near(&format!("normalize {backend:?}"), &unit, &want_unit, 1e-12);
        assert!(unit[10..].iter().all(|&v| v == 0.0), "a row with no kept position stays 0");
    }
}
