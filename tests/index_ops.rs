//! The indexed ops (`gather`, `index_select`, `scatter_add`, `index_add`) through the
//! `Session` API and `tfnc`, where file tests cannot reach: out-of-range indices (the error
//! names the op, the axis and the index, on both backends, alone or fused, for any thread
//! count), strided and broadcast views as `x`, index and `src`, and `tfnc run`'s exit code.

use tfn_test_utils::Scratch;

use ndarray::{s, ArrayD, IxDyn};
use std::path::Path;
use std::process::Command;
use tfn::{Backend, Error, Session, SessionOptions, Tensor, Value};

const SOURCE: &str = r#"
fn gather1(Tensor x, Tensor i, *, Int dim) -> Tensor {
    return gather(x, i, dim=dim)
}

fn take(Tensor x, Tensor i, *, Int dim = 0) -> Tensor {
    return index_select(x, i, dim=dim)
}

fn scatter(Tensor x, Tensor i, Tensor src, *, Int dim) -> Tensor {
    return scatter_add(x, i, src, dim=dim)
}

fn add_index(Tensor x, Tensor i, Tensor src, *, Int dim = 0) -> Tensor {
    return index_add(x, i, src, dim=dim)
}

fn embed(Tensor table, Tensor tokens, Tensor positional) -> Tensor {
    return index_select(table, tokens) + positional
}

fn cross_entropy(Tensor z, Tensor t) -> Tensor {
    let m = max(z, dims=[-1], keepdim=true)
    let logp = z - m - log(sum(exp(z - m), dims=[-1], keepdim=true))
    return -mean(gather(logp, unsqueeze(t, -1), dim=-1))
}

fn scaled_gather(Tensor x, Tensor i) -> Tensor {
    return gather(x, i, dim=1) * 2.0 + 1.0
}
"#;

const BACKENDS: [Backend; 2] = [Backend::Interp, Backend::Jit];

fn session_with(backend: Backend, threads: usize) -> Session {
    let s = Session::with_options(SessionOptions { backend, threads, ..SessionOptions::default() });
    s.load_str("index.tfn", SOURCE).unwrap_or_else(|e| panic!("load: {e}"));
    s
}

fn session(backend: Backend) -> Session {
    session_with(backend, 1)
}

fn floats(shape: &[usize], seed: f32) -> ArrayD<f32> {
    let n: usize = shape.iter().product();
    let values = (0..n).map(|i| ((i as f32 + seed) * 0.731).sin() * 3.0).collect();
    ArrayD::from_shape_vec(IxDyn(shape), values).expect("shape")
}

fn ints(shape: &[usize], values: &[i64]) -> ArrayD<i64> {
    ArrayD::from_shape_vec(IxDyn(shape), values.to_vec()).expect("shape")
}

fn only(results: Vec<Value<'static>>) -> Tensor {
    results.into_iter().next().and_then(Value::into_tensor).expect("one tensor result")
}

/// The call's error, which must be a run-time error naming `op` and `index`.
fn expect_index_error(result: Result<Vec<Value<'static>>, Error>, op: &str, index: i64) -> String {
    match result {
        Err(Error::Runtime(message)) => {
            assert!(message.contains(&format!("`{op}`")), "names the op `{op}`: {message}");
            assert!(message.contains(&format!("index {index} ")), "names index {index}: {message}");
            message
        }
        other => panic!("expected an index error of `{op}` (index {index}), got {other:?}"),
    }
}

#[test]
fn out_of_range_indices_are_errors_naming_the_op_and_the_index() {
    for backend in BACKENDS {
        let s = session(backend);
        let x = floats(&[3, 4], 0.0);
        let dim = |d: i64| ("dim", Value::from(d));
        for bad in [4, -5, i64::MAX, i64::MIN] {
            let i = ints(&[3, 2], &[0, 1, 2, bad, 3, -4]);
            let src = floats(&[3, 2], 1.0);
            let args = [Value::from(x.view()), Value::from(i.view())];
            let message = expect_index_error(s.call_kw("gather1", &args, &[dim(1)]), "gather", bad);
            assert!(message.contains("axis 1") && message.contains("size 4"), "{message}");
            let args = [Value::from(x.view()), Value::from(i.view()), Value::from(src.view())];
            expect_index_error(s.call_kw("scatter", &args, &[dim(1)]), "scatter_add", bad);
            // index_select / index_add along axis 1 (size 4): an index of any rank.
            let args = [Value::from(x.view()), Value::from(i.view())];
            expect_index_error(s.call_kw("take", &args, &[dim(1)]), "index_select", bad);
            let src = floats(&[3, 3, 2], 2.0);
            let args = [Value::from(x.view()), Value::from(i.view()), Value::from(src.view())];
            expect_index_error(s.call_kw("add_index", &args, &[dim(1)]), "index_add", bad);
        }
        // Fused: an embedding lookup feeding an add, a gather inside a row kernel.
        let table = floats(&[5, 8], 0.0);
        let tokens = ints(&[2, 3], &[0, 4, 1, 2, -6, 3]);
        let positional = floats(&[3, 8], 1.0);
        let args =
            [Value::from(table.view()), Value::from(tokens.view()), Value::from(positional.view())];
        expect_index_error(s.call("embed", &args), "index_select", -6);
        let z = floats(&[4, 6], 0.0);
        let t = ints(&[4], &[0, 5, 6, 1]);
        expect_index_error(
            s.call("cross_entropy", &[Value::from(z.view()), Value::from(t.view())]),
            "gather",
            6,
        );
        // i32 indices.
        let i32s = ArrayD::from_shape_vec(IxDyn(&[2]), vec![1i32, -9]).expect("shape");
        let args = [Value::from(x.view()), Value::from(i32s.view())];
        expect_index_error(s.call("take", &args), "index_select", -9);
    }
}

#[test]
fn a_gather_index_larger_than_x_on_another_axis_is_an_error() {
    for backend in BACKENDS {
        let s = session(backend);
        let x = floats(&[3, 4], 0.0);
        // 4 rows of indices for 3 rows of x: torch.gather refuses it, and so does tfn.
        let i = ints(&[4, 2], &[0; 8]);
        let src = floats(&[4, 2], 0.0);
        let dim = [("dim", Value::from(1i64))];
        for (f, op, args) in [
            ("gather1", "gather", vec![Value::from(x.view()), Value::from(i.view())]),
            (
                "scatter",
                "scatter_add",
                vec![Value::from(x.view()), Value::from(i.view()), Value::from(src.view())],
            ),
        ] {
            match s.call_kw(f, &args, &dim) {
                Err(Error::Shape(m)) => {
                    assert!(m.contains(&format!("`{op}`")) && m.contains("size 4 on axis 0"), "{m}")
                }
                other => panic!("{backend:?} {f}: expected a shape error, got {other:?}"),
            }
        }
    }
}

#[test]
fn the_reported_index_does_not_depend_on_the_thread_count() {
    // 1024 tokens x 1024 features: large enough to be split across threads. Three bad
    // tokens, two in the first half: every configuration names the first one (row-major),
    // as the interpreter does.
    let (rows, width) = (1024usize, 1024usize);
    let table = floats(&[8, width], 0.0);
    let mut tokens: Vec<i64> = (0..rows as i64).map(|k| k % 8).collect();
    tokens[100] = -20;
    tokens[300] = 11;
    tokens[700] = 9;
    let tokens = ints(&[rows], &tokens);
    let positional = floats(&[width], 1.0);
    let args =
        [Value::from(table.view()), Value::from(tokens.view()), Value::from(positional.view())];
    let reference =
        expect_index_error(session(Backend::Interp).call("embed", &args), "index_select", -20);
    for threads in [1, 2, 3, 4] {
        let s = session_with(Backend::Jit, threads);
        let message = expect_index_error(s.call("embed", &args), "index_select", -20);
        assert_eq!(message, reference, "{threads} threads");
    }
    // A gather along the last axis (lane by lane), split across threads.
    let x = floats(&[rows, 16], 0.0);
    let mut i: Vec<i64> = (0..(rows * 16) as i64).map(|k| k % 16).collect();
    i[5 * 16 + 3] = 16;
    i[9 * 16 + 1] = -17;
    i[900 * 16] = 99;
    let i = ints(&[rows, 16], &i);
    let args = [Value::from(x.view()), Value::from(i.view())];
    let reference =
        expect_index_error(session(Backend::Interp).call("scaled_gather", &args), "gather", 16);
    for threads in [1, 2, 3] {
        let s = session_with(Backend::Jit, threads);
        let message = expect_index_error(s.call("scaled_gather", &args), "gather", 16);
        assert_eq!(message, reference, "{threads} threads");
    }
}

#[test]
fn strided_and_broadcast_operands_give_the_contiguous_result() {
    let base = floats(&[6, 8], 0.0);
    let index_base = ints(&[16, 16], &(0..256).map(|k| (k * 7 % 11) - 5).collect::<Vec<_>>());
    let row = base.slice(s![0..1, 2..6]);
    let xs = [
        ("transposed", base.view().reversed_axes().into_dyn()), // [8, 6]
        ("stepped", base.slice(s![.., ..;2]).into_dyn()),       // [6, 4]
        ("reversed", base.slice(s![..;-1, 1..5]).into_dyn()),   // [6, 4]
        ("broadcast", row.broadcast(IxDyn(&[6, 4])).expect("broadcast")),
    ];
    // Indices in [-4, 4): valid on an axis of size 4 (and of 6 or 8).
    let index_views = [
        ("index transposed", index_base.mapv(|v| v.rem_euclid(8) - 4)),
        ("index stepped", index_base.mapv(|v| v.rem_euclid(8) - 4)),
    ];
    for backend in BACKENDS {
        let s = session(backend);
        for (what, x) in &xs {
            let xd = x.as_standard_layout().into_owned();
            for (iwhat, ib) in &index_views {
                // An index of x's rank, as a non-contiguous view.
                let shape = x.shape();
                let view = if *iwhat == "index transposed" {
                    ib.slice(s![..shape[1], ..shape[0]]).reversed_axes().into_dyn()
                } else {
                    ib.slice(s![..;2, ..]).slice_move(s![..shape[0], ..shape[1]]).into_dyn()
                };
                let dense_i = view.as_standard_layout().into_owned();
                for dim in [0i64, 1] {
                    // Keep the index in range for the gathered axis.
                    let n = shape[dim as usize] as i64;
                    if !dense_i.iter().all(|&v| -n <= v && v < n) {
                        continue;
                    }
                    let src = floats(view.shape(), 3.0);
                    let kw = [("dim", Value::from(dim))];
                    let strided = [Value::from(x.view()), Value::from(view.view())];
                    let dense = [Value::from(xd.view()), Value::from(dense_i.view())];
                    for f in ["gather1", "take"] {
                        let a = only(s.call_kw(f, &strided, &kw).expect("strided call"));
                        let b = only(s.call_kw(f, &dense, &kw).expect("dense call"));
                        assert_eq!(a, b, "{backend:?} {f} {what} {iwhat} dim {dim}");
                    }
                    // scatter_add with a strided x, index and src (src transposed twice is
                    // strided: a reversed view of a reversed copy).
                    let src_t = src.t().as_standard_layout().into_owned();
                    let src_view = src_t.t().into_dyn();
                    let strided =
                        [Value::from(x.view()), Value::from(view.view()), Value::from(src_view)];
                    let dense = [
                        Value::from(xd.view()),
                        Value::from(dense_i.view()),
                        Value::from(src.view()),
                    ];
                    let a = only(s.call_kw("scatter", &strided, &kw).expect("strided scatter"));
                    let b = only(s.call_kw("scatter", &dense, &kw).expect("dense scatter"));
                    assert_eq!(a, b, "{backend:?} scatter_add {what} {iwhat} dim {dim}");
                }
            }
        }
    }
    // Broadcast index (a stride-0 view): every row of tokens is the same.
    let table = floats(&[5, 8], 0.0);
    let row = ints(&[1, 3], &[4, -1, 0]);
    let tokens = row.broadcast(IxDyn(&[4, 3])).expect("broadcast");
    let positional = floats(&[3, 8], 1.0);
    let dense = tokens.as_standard_layout().into_owned();
    let mut results = Vec::new();
    for backend in BACKENDS {
        let s = session(backend);
        for t in [tokens.view(), dense.view()] {
            let args = [Value::from(table.view()), Value::from(t), Value::from(positional.view())];
            results.push(only(s.call("embed", &args).expect("embed")));
        }
    }
    assert!(results.windows(2).all(|w| w[0] == w[1]), "broadcast tokens: {results:?}");
}

fn scratch(test: &str) -> Scratch {
    Scratch::new("index", test)
}

fn write(path: &Path, t: Tensor) {
    tfn::npy::write(path, &t).expect("write npy");
}

#[test]
fn tfnc_run_exits_1_on_an_index_out_of_range() {
    let dir = scratch("run");
    std::fs::write(dir.join("index.tfn"), SOURCE).expect("write source");
    write(&dir.join("x.npy"), Tensor::F32(floats(&[3, 4], 0.0)));
    write(&dir.join("i.npy"), Tensor::I64(ints(&[2], &[1, -4])));
    write(&dir.join("ok.npy"), Tensor::I64(ints(&[2], &[1, -3])));
    for backend in ["jit", "interp"] {
        let run = |index: &str| {
            Command::new(env!("CARGO_BIN_EXE_tfnc"))
                .args(["run", "index.tfn", "take", "--arg", "x=x.npy", "--arg", index])
                .args(["--backend", backend])
                .current_dir(&dir)
                .output()
                .expect("run tfnc")
        };
        let bad = run("i=i.npy");
        let stderr = String::from_utf8_lossy(&bad.stderr);
        assert_eq!(bad.status.code(), Some(1), "{backend}: {stderr}");
        assert!(
            stderr.contains("`index_select`") && stderr.contains("index -4 "),
            "{backend}: {stderr}"
        );
        let good = run("i=ok.npy");
        assert_eq!(
            good.status.code(),
            Some(0),
            "{backend}: {}",
            String::from_utf8_lossy(&good.stderr)
        );
    }
}

#[test]
fn tfnc_gradcheck_passes_on_the_index_grad_cases() {
    // Finite differences at random inputs (integer tensors from 0..3: duplicates are likely).
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases/grad");
    let o = Command::new(env!("CARGO_BIN_EXE_tfnc"))
        .args(["gradcheck", "index_grads.tfn"])
        .current_dir(&dir)
        .output()
        .expect("run tfnc");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    for f in ["g_last", "g_first", "embed", "take_cols", "scatter", "add_rows"] {
        assert!(stdout.contains(&format!("ok     {f} ")), "`{f}` checked:\n{stdout}");
    }
}

#[test]
fn an_index_of_x_sizes_then_a_smaller_one_both_run() {
    // The first call's index has x's sizes: the instance assumes it (a guarded equality,
    // which lets the gather move onto z); the second call's smaller index must not reuse it.
    for backend in BACKENDS {
        let s = session(backend);
        let z = floats(&[4, 6], 0.0);
        let reference = session(Backend::Interp);
        for t in [ints(&[4], &[0, 5, -1, 2]), ints(&[2], &[3, -6]), ints(&[4], &[1, 1, 1, 1])] {
            let args = [Value::from(z.view()), Value::from(t.view())];
            let got = only(s.call("cross_entropy", &args).expect("call"));
            let want = only(reference.call("cross_entropy", &args).expect("reference"));
            let (Tensor::F32(a), Tensor::F32(b)) = (&got, &want) else { panic!("f32 results") };
            let close = a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-5 * y.abs().max(1.0));
            assert!(close, "{backend:?} t={t}: {got:?} vs {want:?}");
        }
        let x = floats(&[3, 4], 0.0);
        for rows in [3usize, 2, 3] {
            let i = ints(&[rows, 2], &vec![1; rows * 2]);
            let args = [Value::from(x.view()), Value::from(i.view())];
            let got = only(s.call("scaled_gather", &args).expect("gather"));
            assert_eq!(got.shape(), &[rows, 2], "{backend:?}");
        }
    }
}

/// An empty result still checks its index, as NumPy's `take` does
/// (`np.take(np.zeros((0, 3)), [5], axis=1)` raises): an index_select over an empty axis
/// elsewhere, an embedding of a zero-width table, and one_hot with zero classes.
#[test]
fn an_empty_result_still_checks_its_indices() {
    for backend in BACKENDS {
        let s = session(backend);
        let x = floats(&[0, 3], 0.0);
        let i = ints(&[2], &[1, 5]);
        let args = [Value::from(x.view()), Value::from(i.view())];
        expect_index_error(
            s.call_kw("take", &args, &[("dim", Value::from(1i64))]),
            "index_select",
            5,
        );
        let ok = ints(&[2], &[1, -3]);
        let args = [Value::from(x.view()), Value::from(ok.view())];
        let out = s.call_kw("take", &args, &[("dim", Value::from(1i64))]).expect("in range");
        assert_eq!(only(out).shape(), &[0, 2], "{backend:?}");
        let table = floats(&[0, 4], 0.0);
        let tokens = ints(&[1, 2], &[0, 0]);
        let positional = floats(&[2, 4], 1.0);
        let args =
            [Value::from(table.view()), Value::from(tokens.view()), Value::from(positional.view())];
        expect_index_error(s.call("embed", &args), "index_select", 0);

        let s = Session::with_options(SessionOptions { backend, ..SessionOptions::default() });
        s.load_str("oh.tfn", "use \"std:nn\"\nfn oh(Tensor i, *, Int n) -> Tensor {\n    return one_hot(i, classes=n)\n}\n")
            .expect("loads");
        let i = ints(&[2], &[1, 0]);
        let result = s.call_kw("oh", &[Value::from(i.view())], &[("n", Value::from(0i64))]);
        assert!(
            matches!(result, Err(Error::Runtime(_))),
            "{backend:?}: one_hot(classes=0): {result:?}"
        );
    }
}
