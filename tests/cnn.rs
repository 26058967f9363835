//! The cnn example's model (`examples/cnn/model.tfn`) at toy sizes: its loss and gradients
//! agree between the JIT and the interpreter, the gradients agree with central differences (in
//! f64), `predict` agrees across backends in f32 on the shipped digits, and the example's data
//! split is the documented one. The example itself only runs the same functions bigger (its
//! optimiser, std:optim's `adamw`, is tested in `tests/one_hot.rs`).

#[path = "../examples/cnn/data.rs"]
#[allow(dead_code)]
mod data;

use ndarray::{arr0, ArrayD, IxDyn};
use tfn::{Backend, Session, SessionOptions, Tensor, Value};
use tfn_test_utils::Rng;

const MODEL: &str = include_str!("../examples/cnn/model.tfn");
const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/cnn/data");
const C1: usize = 3;
const C2: usize = 4;
const BATCH: usize = 3;
const FEAT: usize = C2 * 4;

fn session(backend: Backend) -> Session {
    let s = Session::with_options(SessionOptions { backend, threads: 2, ..Default::default() });
    s.load_str("model.tfn", MODEL).unwrap_or_else(|e| panic!("model.tfn loads: {e}"));
    s
}

/// The images (pixel values in 0..16 like the data's) and then the parameters, in `loss`'s
/// order after the labels (see the model's header).
fn inputs() -> Vec<ArrayD<f64>> {
    let mut rng = Rng::new(0x1234_5678);
    vec![
        rng.array(&[BATCH, 1, 8, 8], 0.0, 16.0),
        rng.array(&[C1, 1, 3, 3], -0.8, 0.8),
        rng.array(&[C1], -0.15, 0.25),
        rng.array(&[C2, C1, 3, 3], -0.5, 0.5),
        rng.array(&[C2], -0.15, 0.25),
        rng.array(&[FEAT, 10], -0.5, 0.5),
        rng.array(&[10], -0.2, 0.2),
    ]
}

fn labels() -> ArrayD<i64> {
    ArrayD::from_shape_vec(IxDyn(&[BATCH]), vec![3, 0, 9]).expect("labels")
}

fn kwargs() -> [(&'static str, Value<'static>); 1] {
    [("feat", Value::from(FEAT as i64))]
}

fn args<'a>(inputs: &'a [ArrayD<f64>], labels: &'a ArrayD<i64>) -> Vec<Value<'a>> {
    let mut args = vec![Value::from(inputs[0].view()), Value::from(labels.view())];
    args.extend(inputs[1..].iter().map(|a| Value::from(a.view())));
    args
}

fn f64_of(v: &Value) -> ArrayD<f64> {
    match v.as_tensor().map(|t| t.to_tensor()) {
        Some(Tensor::F64(a)) => a,
        other => panic!("expected f64, got {other:?}"),
    }
}

/// (loss, gradients of the images and of every parameter) at `inputs`.
fn value_and_grads(s: &Session, inputs: &[ArrayD<f64>]) -> (f64, Vec<ArrayD<f64>>) {
    let labels = labels();
    let one = arr0(1.0f64).into_dyn();
    let (values, grads) = s
        .value_and_vjp_kw("loss", &args(inputs, &labels), &kwargs(), &[Value::from(one.view())])
        .unwrap_or_else(|e| panic!("value_and_vjp: {e}"));
    let loss = f64_of(&values[0]).iter().copied().next().expect("a loss");
    (loss, grads.iter().map(f64_of).collect())
}

fn loss_only(s: &Session, inputs: &[ArrayD<f64>]) -> f64 {
    let labels = labels();
    let out = s
        .call_kw("loss", &args(inputs, &labels), &kwargs())
        .unwrap_or_else(|e| panic!("loss: {e}"));
    f64_of(&out[0]).iter().copied().next().expect("a loss")
}

#[test]
fn the_model_agrees_across_backends_and_with_finite_differences() {
    let inputs = inputs();
    let (jit, interp) = (session(Backend::Jit), session(Backend::Interp));
    let (loss_j, grads_j) = value_and_grads(&jit, &inputs);
    let (loss_i, grads_i) = value_and_grads(&interp, &inputs);
    assert!(loss_j.is_finite() && loss_j > 0.1, "a loss that tests something: {loss_j}");
    assert!((loss_j - loss_i).abs() < 1e-12, "loss {loss_j} vs {loss_i}");
    assert!((loss_j - loss_only(&jit, &inputs)).abs() < 1e-12, "value_and_vjp's value");
    assert_eq!(grads_j.len(), inputs.len(), "a gradient per f32 argument");
    for (k, (gj, gi)) in grads_j.iter().zip(&grads_i).enumerate() {
        assert_eq!(gj.shape(), inputs[k].shape(), "gradient {k}'s shape");
        assert!(gj.iter().any(|&v| v != 0.0), "gradient {k} is all zeros: the test is vacuous");
        let worst = gj.iter().zip(gi).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        assert!(worst < 1e-10, "gradient {k} differs by {worst}");
    }
    // Central differences on spread-out coordinates of the images and of every parameter.
    let h = 1e-6;
    for (k, g) in grads_j.iter().enumerate() {
        let n = g.len();
        for at in [0, n / 3, n / 2, 2 * n / 3, n - 1] {
            let mut plus = inputs.clone();
            let mut minus = inputs.clone();
            plus[k].as_slice_mut().expect("contiguous")[at] += h;
            minus[k].as_slice_mut().expect("contiguous")[at] -= h;
            let numeric = (loss_only(&jit, &plus) - loss_only(&jit, &minus)) / (2.0 * h);
            let analytic = g.as_slice().expect("contiguous")[at];
            let err = (numeric - analytic).abs();
            assert!(
                err < 1e-6 + 1e-4 * analytic.abs(),
                "argument {k}[{at}]: analytic {analytic} vs numeric {numeric}"
            );
        }
    }
}

/// `predict` on the first 64 shipped digits with random f32 weights: the JIT's logits (implicit
/// GEMM convolutions with the bias+relu epilogue) match the interpreter's.
#[test]
fn predict_agrees_across_backends_on_the_digits() {
    let (train, _) = data::load(std::path::Path::new(DATA)).expect("the shipped digits load");
    let batch = train.select(&(0..64).collect::<Vec<_>>());
    let (c1, c2) = (16, 32);
    let mut rng = Rng::new(99);
    let f32s = |a: ArrayD<f64>| a.mapv(|v| v as f32);
    let params = [
        f32s(rng.array(&[c1, 1, 3, 3], -0.8, 0.8)),
        f32s(rng.array(&[c1], -0.1, 0.1)),
        f32s(rng.array(&[c2, c1, 3, 3], -0.2, 0.2)),
        f32s(rng.array(&[c2], -0.1, 0.1)),
        f32s(rng.array(&[c2 * 4, 10], -0.2, 0.2)),
        f32s(rng.array(&[10], -0.1, 0.1)),
    ];
    let mut args = vec![Value::from(batch.images.view())];
    args.extend(params.iter().map(|a| Value::from(a.view())));
    let kw = [("feat", Value::from((c2 * 4) as i64))];
    let logits = |backend, function: &str| match session(backend)
        .call_kw(function, &args, &kw)
        .unwrap_or_else(|e| panic!("{backend:?}: {e}"))[0]
        .as_tensor()
        .map(|t| t.to_tensor())
    {
        Some(Tensor::F32(a)) => a,
        other => panic!("{other:?}"),
    };
    let (jit, interp) = (logits(Backend::Jit, "predict"), logits(Backend::Interp, "predict"));
    assert_eq!(jit.shape(), [64, 10]);
    let scale = interp.iter().fold(1.0f32, |m, v| m.max(v.abs()));
    let worst = jit.iter().zip(&interp).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
    assert!(worst <= 1e-5 * scale, "logits differ by {worst} (largest {scale})");
    // bf16 inference: the same network stored in bf16 is close to f32 (bf16 keeps 8 bits), and
    // its rounded values agree across backends within one bf16 step of the largest logit.
    let (bj, bi) = (logits(Backend::Jit, "predict_bf16"), logits(Backend::Interp, "predict_bf16"));
    let step = scale / 128.0;
    let worst = bj.iter().zip(&bi).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
    assert!(worst <= step, "bf16 logits differ across backends by {worst}");
    let off = bj.iter().zip(&interp).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
    assert!(off > 0.0 && off <= 8.0 * step, "bf16 vs f32 logits: {off} (largest {scale})");
    assert_eq!(data::correct(&jit, &batch.labels), data::correct(&interp, &batch.labels));
}

/// The split README.md documents: 1438 training and 359 test images, disjoint, every digit in
/// both, the same on every load, and the test set is the tail of the seeded permutation.
#[test]
fn the_split_is_the_documented_one() {
    let dir = std::path::Path::new(DATA);
    let (train, test) = data::load(dir).expect("the shipped digits load");
    assert_eq!((train.len(), test.len()), (1438, 359));
    let (again, _) = data::load(dir).expect("loads twice");
    assert_eq!(train.labels, again.labels);
    let order = data::permutation(1797, &mut data::SplitMix64(data::SPLIT_SEED));
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..1797).collect::<Vec<_>>(), "a permutation");
    let all = match tfn::npy::read(&dir.join("labels.npy")).expect("labels") {
        Tensor::I64(a) => a,
        other => panic!("{other:?}"),
    };
    let tail: Vec<i64> = order[1438..].iter().map(|&i| all[i]).collect();
    assert_eq!(test.labels.iter().copied().collect::<Vec<_>>(), tail);
    for digit in 0..10 {
        assert!(
            train.labels.iter().any(|&l| l == digit) && test.labels.iter().any(|&l| l == digit)
        );
    }
    // Epochs cover every training image once, in batches of at most the batch size.
    let batches = data::epoch(train.len(), 32, &mut data::SplitMix64(1));
    let mut seen: Vec<usize> = batches.iter().flatten().copied().collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..train.len()).collect::<Vec<_>>());
    assert!(batches.iter().all(|b| b.len() <= 32) && batches.len() == train.len().div_ceil(32));
}

#[test]
fn correct_counts_the_first_largest_logit() {
    let logits = ArrayD::from_shape_vec(
        IxDyn(&[3, 3]),
        vec![1.0f32, 3.0, 2.0, 5.0, 5.0, 0.0, 0.0, 0.0, 1.0],
    )
    .expect("logits");
    let labels = ArrayD::from_shape_vec(IxDyn(&[3]), vec![1i64, 1, 2]).expect("labels");
    // Row 1 ties classes 0 and 1: the first wins, so it counts as wrong.
    assert_eq!(data::correct(&logits, &labels), 2);
}
