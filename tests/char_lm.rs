//! The char_lm example's model (`examples/char_lm/model.tfn`) at toy sizes: its loss and
//! gradients agree between the JIT and the interpreter, the gradients agree with central
//! differences (in f64, with dropout on: a fixed key makes the masks fixed). The example itself
//! only runs the same functions bigger (its optimiser, std:optim's `adamw`, is tested in
//! `tests/one_hot.rs` with the rest of the standard library).

use ndarray::{arr0, ArrayD, IxDyn};
use tfn::{Backend, Session, SessionOptions, Tensor, Value};

const MODEL: &str = include_str!("../examples/char_lm/model.tfn");
const VOCAB: usize = 7;
const T: usize = 4;
const C: usize = 8;
const HEADS: usize = 2;
const BATCH: usize = 2;

fn session(backend: Backend) -> Session {
    let s = Session::with_options(SessionOptions { backend, threads: 2, ..Default::default() });
    s.load_str("model.tfn", MODEL).unwrap_or_else(|e| panic!("model.tfn loads: {e}"));
    s
}

/// Parameter shapes in `gpt`'s order (see the model's header).
fn shapes() -> Vec<Vec<usize>> {
    let mut out = vec![vec![VOCAB, C], vec![T, C]];
    for _ in 0..2 {
        out.extend([
            vec![C],
            vec![C],
            vec![C, C],
            vec![C, C],
            vec![C, C],
            vec![C, C],
            vec![C],
            vec![C],
            vec![C],
            vec![C, 4 * C],
            vec![4 * C],
            vec![4 * C, C],
            vec![C],
        ]);
    }
    out.extend([vec![C], vec![C]]);
    out
}

/// Deterministic parameters of a size that makes every path matter (gains near 1).
fn params() -> Vec<ArrayD<f64>> {
    let mut state = 0x1234_5678_u64;
    shapes()
        .into_iter()
        .map(|shape| {
            let n: usize = shape.iter().product();
            let gain = shape.len() == 1 && n == C;
            let values = (0..n)
                .map(|_| {
                    state =
                        state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let u = (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                    if gain {
                        1.0 + 0.2 * u
                    } else {
                        0.6 * u
                    }
                })
                .collect();
            ArrayD::from_shape_vec(IxDyn(&shape), values).expect("shape")
        })
        .collect()
}

fn tokens(offset: i64) -> ArrayD<i64> {
    let values = (0..(BATCH * T) as i64).map(|i| (i * 3 + offset) % VOCAB as i64).collect();
    ArrayD::from_shape_vec(IxDyn(&[BATCH, T]), values).expect("shape")
}

fn kwargs(p: f64) -> Vec<(&'static str, Value<'static>)> {
    vec![
        ("t", Value::from(T as i64)),
        ("heads", Value::from(HEADS as i64)),
        ("hd", Value::from((C / HEADS) as i64)),
        ("scale", Value::from(1.0 / ((C / HEADS) as f64).sqrt())),
        ("p", Value::from(p)),
    ]
}

fn f64_of(v: &Value) -> ArrayD<f64> {
    match v.as_tensor().map(|t| t.to_tensor()) {
        Some(Tensor::F64(a)) => a,
        other => panic!("expected f64, got {other:?}"),
    }
}

/// (loss, gradients) of `loss` at `params`.
fn value_and_grads(s: &Session, params: &[ArrayD<f64>], p: f64) -> (f64, Vec<ArrayD<f64>>) {
    let (x, y) = (tokens(1), tokens(2));
    let key = ArrayD::from_shape_vec(IxDyn(&[2]), vec![7i64, 16]).expect("key");
    let mut args = vec![Value::from(x.view()), Value::from(y.view()), Value::from(key.view())];
    args.extend(params.iter().map(|a| Value::from(a.view())));
    let one = arr0(1.0f64).into_dyn();
    let (values, grads) = s
        .value_and_vjp_kw("loss", &args, &kwargs(p), &[Value::from(one.view())])
        .unwrap_or_else(|e| panic!("value_and_vjp: {e}"));
    let loss = f64_of(&values[0]).iter().copied().next().expect("a loss");
    (loss, grads.iter().map(f64_of).collect())
}

fn loss_only(s: &Session, params: &[ArrayD<f64>], p: f64) -> f64 {
    let (x, y) = (tokens(1), tokens(2));
    let key = ArrayD::from_shape_vec(IxDyn(&[2]), vec![7i64, 16]).expect("key");
    let mut args = vec![Value::from(x.view()), Value::from(y.view()), Value::from(key.view())];
    args.extend(params.iter().map(|a| Value::from(a.view())));
    let out = s.call_kw("loss", &args, &kwargs(p)).unwrap_or_else(|e| panic!("loss: {e}"));
    f64_of(&out[0]).iter().copied().next().expect("a loss")
}

#[test]
fn the_model_agrees_across_backends_and_with_finite_differences() {
    let params = params();
    let (jit, interp) = (session(Backend::Jit), session(Backend::Interp));
    for p in [0.0, 0.25] {
        let (loss_j, grads_j) = value_and_grads(&jit, &params, p);
        let (loss_i, grads_i) = value_and_grads(&interp, &params, p);
        assert!((loss_j - loss_i).abs() < 1e-12, "p={p}: loss {loss_j} vs {loss_i}");
        assert!((loss_j - loss_only(&jit, &params, p)).abs() < 1e-12, "value_and_vjp's value");
        assert_eq!(grads_j.len(), params.len());
        for (k, (gj, gi)) in grads_j.iter().zip(&grads_i).enumerate() {
            let worst = gj.iter().zip(gi).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
            assert!(worst < 1e-10, "p={p}: gradient {k} differs by {worst}");
        }
        // Central differences on a few coordinates of every parameter.
        let h = 1e-5;
        for (k, g) in grads_j.iter().enumerate() {
            for at in [0, g.len() / 2, g.len() - 1] {
                let mut plus = params.clone();
                let mut minus = params.clone();
                plus[k].as_slice_mut().expect("contiguous")[at] += h;
                minus[k].as_slice_mut().expect("contiguous")[at] -= h;
                let numeric = (loss_only(&jit, &plus, p) - loss_only(&jit, &minus, p)) / (2.0 * h);
                let analytic = g.as_slice().expect("contiguous")[at];
                let err = (numeric - analytic).abs();
                assert!(
                    err < 1e-6 + 1e-4 * analytic.abs(),
                    "p={p}: parameter {k}[{at}]: analytic {analytic} vs numeric {numeric}"
                );
            }
        }
    }
}
