//! `tfnc run --weights`: parameters bound from a safetensors checkpoint by name and by
//! `--map` (`{i}`, `:T`), `--list-unused`, results and gradients written by name to one
//! `.safetensors` `--out`; a corrupt checkpoint is exit 1, a bad `--map` exit 2.

use super::{expect_exit, read, scratch, stderr, stdout, tfnc, write_f32};
use ndarray::{ArrayD, IxDyn};
use tfn::weights::Weights;
use tfn::{Tensor, TensorValue};

const MODEL: &str = r#"
fn layer(Tensor x, Tensor w, Tensor b) -> Tensor {
    return matmul(x, w) + b
}

fn deep(Tensor x, Tensor ws) -> Tensor {
    return matmul(x, sum(ws, dims=[0]))
}
"#;

fn f32s(shape: &[usize], seed: f32) -> ArrayD<f32> {
    let n: usize = shape.iter().product();
    ArrayD::from_shape_vec(IxDyn(shape), (0..n).map(|i| (i as f32 + seed) * 0.25 - 1.0).collect())
        .unwrap()
}

fn checkpoint(path: &std::path::Path) {
    let tensors = [
        ("lin.weight", f32s(&[4, 3], 0.0)), // [out, in]
        ("lin.bias", f32s(&[4], 1.0)),
        ("b", f32s(&[4], 2.0)),
        ("l.0.w", f32s(&[3, 4], 3.0)),
        ("l.1.w", f32s(&[3, 4], 4.0)),
    ];
    let named: Vec<(&str, TensorValue)> =
        tensors.iter().map(|(n, a)| (*n, TensorValue::from(a.view()))).collect();
    tfn::save_safetensors(path, &named).unwrap();
}

fn f32_of(t: Tensor) -> ArrayD<f32> {
    match t {
        Tensor::F32(a) => a,
        other => panic!("expected f32, got {}", other.dtype()),
    }
}

fn close(a: &ArrayD<f32>, b: &ArrayD<f32>, what: &str) {
    assert_eq!(a.shape(), b.shape(), "{what}");
    assert!(
        a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-4 * (1.0 + y.abs())),
        "{what}: {a} vs {b}"
    );
}

#[test]
fn run_binds_parameters_from_a_checkpoint() {
    let dir = scratch("weights-run");
    std::fs::write(dir.join("m.tfn"), MODEL).unwrap();
    checkpoint(&dir.join("m.safetensors"));
    let x = f32s(&[2, 3], 5.0);
    write_f32(&dir.join("x.npy"), &[2, 3], x.as_slice().unwrap());
    let w_t = f32s(&[4, 3], 0.0).t().as_standard_layout().into_owned();
    let x2 = x.clone().into_dimensionality::<ndarray::Ix2>().unwrap();
    let w2 = w_t.clone().into_dimensionality::<ndarray::Ix2>().unwrap();
    for backend in ["jit", "interp"] {
        // `w` by mapping (transposed), `b` by its own name.
        let o = tfnc(
            &dir,
            &[
                "run",
                "m.tfn",
                "layer",
                "--backend",
                backend,
                "--weights",
                "m.safetensors",
                "--map",
                "w=lin.weight:T",
                "--arg",
                "x=x.npy",
                "--out",
                "y.npy",
                "--list-unused",
            ],
        );
        expect_exit(&o, 0, "layer");
        let want = (x2.dot(&w2) + f32s(&[4], 2.0)).into_dyn();
        close(&f32_of(read(&dir.join("y.npy"))), &want, backend);
        let err = stderr(&o);
        assert!(err.contains("tensors of `m.safetensors` not used by `layer` (3 of 5):"), "{err}");
        for unused in ["  l.0.w", "  l.1.w", "  lin.bias"] {
            assert!(err.contains(unused), "{err}");
        }
        // `{i}` stacks the layers; the results go by name into one .safetensors.
        let o = tfnc(
            &dir,
            &[
                "run",
                "m.tfn",
                "deep",
                "--backend",
                backend,
                "--weights",
                "m.safetensors",
                "--map",
                "ws=l.{i}.w",
                "--arg",
                "x=x.npy",
                "--out",
                "deep.safetensors",
            ],
        );
        expect_exit(&o, 0, "deep");
        let sum = (f32s(&[3, 4], 3.0) + f32s(&[3, 4], 4.0))
            .into_dimensionality::<ndarray::Ix2>()
            .unwrap();
        let out = Weights::open(dir.join("deep.safetensors")).unwrap();
        let y = f32_of(out.tensor("out0").unwrap().expect("out0").to_tensor());
        close(&y, &x2.dot(&sum).into_dyn(), "deep");
    }
    // Gradients go by parameter name.
    write_f32(&dir.join("ct.npy"), &[2, 4], &[1.0; 8]);
    let o = tfnc(
        &dir,
        &[
            "run",
            "m.tfn",
            "layer",
            "--weights",
            "m.safetensors",
            "--map",
            "w=lin.weight:T",
            "--arg",
            "x=x.npy",
            "--vjp",
            "ct.npy",
            "--out",
            "grads.safetensors",
        ],
    );
    expect_exit(&o, 0, "vjp");
    let g = Weights::open(dir.join("grads.safetensors")).unwrap();
    assert_eq!(g.names().collect::<Vec<_>>(), vec!["b", "w", "x"]);
    let gb = f32_of(g.tensor("b").unwrap().unwrap().to_tensor());
    close(&gb, &ArrayD::from_elem(IxDyn(&[4]), 2.0), "grad b");
    assert!(stdout(&o).is_empty());
}

#[test]
fn run_refuses_bad_checkpoints_and_mappings() {
    let dir = scratch("weights-bad");
    std::fs::write(dir.join("m.tfn"), MODEL).unwrap();
    checkpoint(&dir.join("m.safetensors"));
    write_f32(&dir.join("x.npy"), &[2, 3], &[0.5; 6]);
    let good = std::fs::read(dir.join("m.safetensors")).unwrap();
    std::fs::write(dir.join("cut.safetensors"), &good[..good.len() - 3]).unwrap();
    let mut lying = good.clone();
    lying[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    std::fs::write(dir.join("lying.safetensors"), lying).unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "m.tfn", "layer", "--arg", "x=x.npy"];
        args.extend_from_slice(extra);
        tfnc(&dir, &args)
    };
    let cases: [(&[&str], i32, &[&str]); 10] = [
        (
            &["--weights", "cut.safetensors"],
            1,
            &["cut.safetensors", "does not end where the file does"],
        ),
        (
            &["--weights", "lying.safetensors"],
            1,
            &["lying.safetensors", "header length says 1099511627776"],
        ),
        (&["--weights", "none.safetensors"], 1, &["cannot read `none.safetensors`"]),
        // `w` is not in the file under its own name.
        (&["--weights", "m.safetensors"], 1, &["parameter `w` of `layer`", "no tensor `w`"]),
        // Misshaped: lin.weight is [4, 3] without `:T`.
        (
            &["--weights", "m.safetensors", "--map", "w=lin.weight"],
            1,
            &["`w`", "tensor `lin.weight` of `m.safetensors`"],
        ),
        (
            &["--weights", "m.safetensors", "--map", "w=nope"],
            1,
            &["parameter `w`", "tensor `nope`", "does not exist"],
        ),
        (&["--weights", "m.safetensors", "--map", "w"], 2, &["--map", "no `=`"]),
        (
            &["--weights", "m.safetensors", "--map", "q=lin.weight"],
            2,
            &["`layer` has no parameter `q`"],
        ),
        (
            &["--weights", "m.safetensors", "--map", "w=lin.weight", "--map", "w=b"],
            2,
            &["mapped twice"],
        ),
        (&["--map", "w=lin.weight"], 2, &["--map needs --weights"]),
    ];
    for (extra, code, needles) in cases {
        let o = run(extra);
        expect_exit(&o, code, &format!("{extra:?}"));
        let err = stderr(&o);
        for n in needles {
            assert!(err.contains(n), "{extra:?}: expected `{n}` in:\n{err}");
        }
        assert!(!err.contains("panicked"), "{err}");
    }
    let o = run(&[
        "--weights",
        "m.safetensors",
        "--map",
        "w=lin.weight:T",
        "--out",
        "a.safetensors",
        "--out",
        "b.npy",
    ]);
    expect_exit(&o, 2, "two outs");
    assert!(stderr(&o).contains("give it alone"), "{}", stderr(&o));
}

/// A bound tensor an op inside the function refuses (its dtype here) gets a note naming the
/// tensor and file of every bound parameter, before the closing `aborting` line, even where
/// the op's own argument shares a parameter's name (`matmul(x, w)`'s `b` for an i32 `w`); a
/// shape error naming the parameter gets the note for that parameter only.
#[test]
fn errors_about_bound_tensors_say_where_they_came_from() {
    let dir = scratch("weights-notes");
    std::fs::write(dir.join("m.tfn"), MODEL).unwrap();
    write_f32(&dir.join("x.npy"), &[2, 3], &[0.5; 6]);
    let run = |weights: &str, map: &[&str]| {
        let mut argv = vec!["run", "m.tfn", "layer", "--arg", "x=x.npy", "--weights", weights];
        argv.extend(map.iter().flat_map(|m| ["--map", *m]));
        let o = tfnc(&dir, &argv);
        expect_exit(&o, 1, &format!("{weights} {map:?}"));
        stderr(&o)
    };
    let half = ArrayD::from_elem(IxDyn(&[4]), half::f16::ONE);
    let w = f32s(&[3, 4], 0.0);
    let named = [("w", TensorValue::from(w.view())), ("h", TensorValue::from(half.view()))];
    tfn::save_safetensors(&dir.join("m.safetensors"), &named).unwrap();
    // An f16 bias: `add` inside the function refuses it.
    let err = run("m.safetensors", &["b=h"]);
    let notes = "note: parameter `w` was bound from tensor `w` of `m.safetensors`\n\
                 note: parameter `b` was bound from tensor `h` of `m.safetensors`\n\
                 error: aborting due to 1 error";
    assert!(err.contains("no overload of `add`") && err.contains(notes), "{err}");
    // An i32 weight: `matmul`'s own argument `b` is named, `w` is at fault.
    let ints = ArrayD::from_elem(IxDyn(&[3, 4]), 1i32);
    let b = f32s(&[4], 0.0);
    let named = [("w", TensorValue::from(ints.view())), ("b", TensorValue::from(b.view()))];
    tfn::save_safetensors(&dir.join("i.safetensors"), &named).unwrap();
    let err = run("i.safetensors", &[]);
    let note = "note: parameter `w` was bound from tensor `w` of `i.safetensors`";
    assert!(err.contains(note), "{err}");
    // A misshaped `b`: the shape error names `b`, so only its note.
    let err = run("m.safetensors", &["b=w"]);
    assert!(err.contains("note: parameter `b` was bound from tensor `w`"), "{err}");
    assert!(!err.contains("note: parameter `w`"), "{err}");
}
