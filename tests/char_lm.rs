//! The char_lm example's model (`examples/char_lm/model.tfn`) at toy sizes: its loss and
//! gradients agree between the JIT and the interpreter, the gradients agree with central
//! differences (in f64, with dropout on: a fixed key makes the masks fixed), the loop over its
//! blocks computes what the blocks called one after the other compute (values and gradients),
//! and a new depth is not a new compile. The example itself only runs the same functions bigger
//! (its optimiser, std:optim's `adamw`, is tested in `tests/one_hot.rs` with the rest of the
//! standard library).

use ndarray::{arr0, ArrayD, IxDyn};
use tfn::{Backend, Session, SessionOptions, Tensor, Value};

const MODEL: &str = include_str!("../examples/char_lm/model.tfn");
const VOCAB: usize = 7;
const T: usize = 4;
const C: usize = 8;
const HEADS: usize = 2;
const BATCH: usize = 2;

/// The two blocks of the looped model called one after the other, with `w[0]` and `w[1]`
/// written out: the reference of the loop in `gpt`.
const UNROLLED: &str = r#"
use "std:nn"

fn gpt2(Tensor tokens, Tensor key, Tensor wte, Tensor wpe,
        Tensor ln1_g, Tensor ln1_b, Tensor wq, Tensor wk, Tensor wv, Tensor wo, Tensor bo,
        Tensor ln2_g, Tensor ln2_b, Tensor w1, Tensor b1, Tensor w2, Tensor b2,
        Tensor lnf_g, Tensor lnf_b, *, Int heads, Float scale, Float p = 0.0) -> Tensor {
    let x0 = index_select(wte, tokens) + index_select(wpe, iota_like(tokens, dim=-1))
    let x1 = block(dropout(x0, key, p=p), key + 2, ln1_g[0], ln1_b[0], wq[0], wk[0], wv[0],
                   wo[0], bo[0], ln2_g[0], ln2_b[0], w1[0], b1[0], w2[0], b2[0],
                   heads=heads, scale=scale, p=p)
    let x2 = block(x1, key + 4, ln1_g[1], ln1_b[1], wq[1], wk[1], wv[1], wo[1], bo[1],
                   ln2_g[1], ln2_b[1], w1[1], b1[1], w2[1], b2[1],
                   heads=heads, scale=scale, p=p)
    return matmul(layer_norm(x2, lnf_g, lnf_b), transpose(wte, [1, 0]))
}

fn loss2(Tensor tokens, Tensor targets, Tensor key, Tensor wte, Tensor wpe,
         Tensor ln1_g, Tensor ln1_b, Tensor wq, Tensor wk, Tensor wv, Tensor wo, Tensor bo,
         Tensor ln2_g, Tensor ln2_b, Tensor w1, Tensor b1, Tensor w2, Tensor b2,
         Tensor lnf_g, Tensor lnf_b, *, Int heads, Float scale, Float p = 0.0) -> Tensor {
    return cross_entropy(gpt2(tokens, key, wte, wpe, ln1_g, ln1_b, wq, wk, wv, wo, bo,
                              ln2_g, ln2_b, w1, b1, w2, b2, lnf_g, lnf_b,
                              heads=heads, scale=scale, p=p), targets)
}
"#;

fn session(backend: Backend) -> Session {
    session_with(backend, false)
}

fn session_with(backend: Backend, checkpoint_loops: bool) -> Session {
    let options = SessionOptions { backend, threads: 2, checkpoint_loops, ..Default::default() };
    let s = Session::with_options(options);
    s.load_str("model.tfn", MODEL).unwrap_or_else(|e| panic!("model.tfn loads: {e}"));
    s.load_str("unrolled.tfn", UNROLLED).unwrap_or_else(|e| panic!("unrolled.tfn loads: {e}"));
    s
}

/// Parameter shapes in `gpt`'s order (see the model's header) for `layers` blocks.
fn shapes(layers: usize) -> Vec<Vec<usize>> {
    let l = layers;
    vec![
        vec![VOCAB, C],
        vec![T, C],
        vec![l, C],
        vec![l, C],
        vec![l, C, C],
        vec![l, C, C],
        vec![l, C, C],
        vec![l, C, C],
        vec![l, C],
        vec![l, C],
        vec![l, C],
        vec![l, C, 4 * C],
        vec![l, 4 * C],
        vec![l, 4 * C, C],
        vec![l, C],
        vec![C],
        vec![C],
    ]
}

/// Deterministic parameters of a size that makes every path matter (gains near 1).
fn params() -> Vec<ArrayD<f64>> {
    params_of(2)
}

fn params_of(layers: usize) -> Vec<ArrayD<f64>> {
    let mut state = 0x1234_5678_u64;
    // Gains: the layer norms' (ln1_g, ln2_g, lnf_g).
    let gains = [2, 9, 15];
    shapes(layers)
        .into_iter()
        .enumerate()
        .map(|(k, shape)| {
            let n: usize = shape.iter().product();
            let gain = gains.contains(&k);
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
        ("heads", Value::from(HEADS as i64)),
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
    value_and_grads_of(s, "loss", params, p)
}

/// (loss, gradients) of the loss function `f` at `params`.
fn value_and_grads_of(
    s: &Session,
    f: &str,
    params: &[ArrayD<f64>],
    p: f64,
) -> (f64, Vec<ArrayD<f64>>) {
    let (x, y) = (tokens(1), tokens(2));
    let key = ArrayD::from_shape_vec(IxDyn(&[2]), vec![7i64, 16]).expect("key");
    let mut args = vec![Value::from(x.view()), Value::from(y.view()), Value::from(key.view())];
    args.extend(params.iter().map(|a| Value::from(a.view())));
    let one = arr0(1.0f64).into_dyn();
    let (values, grads) = s
        .value_and_vjp_kw(f, &args, &kwargs(p), &[Value::from(one.view())])
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

/// The loop's gradients, stored or recomputed (checkpointed; dropout's masks are recomputed
/// from the same keys), are the unrolled blocks' on both backends.
#[test]
fn the_loop_over_blocks_is_the_blocks_called_in_turn() {
    let params = params();
    for backend in [Backend::Jit, Backend::Interp] {
        for checkpoint in [false, true] {
            let s = session_with(backend, checkpoint);
            let what = format!("{backend:?} checkpoint={checkpoint}");
            for p in [0.0, 0.25] {
                let (loss, grads) = value_and_grads_of(&s, "loss", &params, p);
                let (want, want_grads) = value_and_grads_of(&s, "loss2", &params, p);
                assert!((loss - want).abs() < 1e-12, "{what} p={p}: loss {loss} vs {want}");
                assert_eq!(grads.len(), want_grads.len());
                for (k, (g, w)) in grads.iter().zip(&want_grads).enumerate() {
                    assert_eq!(g.shape(), w.shape(), "gradient {k}");
                    let worst = g.iter().zip(w).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
                    assert!(worst < 1e-12, "{what} p={p}: gradient {k} differs by {worst}");
                }
            }
        }
    }
}

#[test]
fn a_new_depth_is_not_a_new_compile() {
    let s = session(Backend::Jit);
    let (loss, grads) = value_and_grads(&s, &params_of(2), 0.25);
    assert!(loss.is_finite() && grads.len() == 17);
    let compiles = s.stats().compiles;
    for layers in [3, 5] {
        let params = params_of(layers);
        let (loss, grads) = value_and_grads(&s, &params, 0.25);
        assert!(loss.is_finite(), "{layers} layers: loss {loss}");
        for (g, p) in grads.iter().zip(&params) {
            assert_eq!(g.shape(), p.shape(), "{layers} layers");
        }
        assert!((loss - loss_only(&s, &params, 0.25)).abs() < 1e-12, "{layers} layers");
    }
    // The forward-only calls compile `loss` once; the depth changes nothing else.
    assert_eq!(s.stats().compiles, compiles + 1, "one compile per function for every depth");
    // One block: an axis of size 1 is part of the signature (a new instance), same results.
    let (loss, grads) = value_and_grads(&s, &params_of(1), 0.25);
    assert!(loss.is_finite() && grads[4].shape() == [1, C, C]);
}
