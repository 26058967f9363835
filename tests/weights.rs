//! Checkpoints through the `Session` API (`tfn::weights`): safetensors files written by tfn's
//! own writer (hostile ones byte by byte), parameters bound by name, by a mapping with `{i}`
//! (stacked) and `:T` (transposed views), on both backends against explicit arguments; every
//! dtype round-trips; every malformed file is an error, never a panic; missing, mistyped and
//! misshaped tensors name the tensor and the parameter.

use tfn_test_utils::Scratch;

use ndarray::{ArrayD, Axis, Dimension, IxDyn};
use std::path::Path;
use tfn::weights::{Mapping, NamedTensors, Params, Weights};
use tfn::{Backend, Session, Tensor, TensorValue, Value};

const SOURCE: &str = r#"
fn layer(Tensor x, Tensor w, Tensor b) -> Tensor {
    return matmul(x, w) + b
}

fn layers(Tensor x, Tensor ws) -> Tensor {
    return matmul(x, sum(ws, dims=[0]))
}

fn twice(Tensor ws) -> Tensor {
    return ws * 2.0
}

fn scale_f64(Tensor<f64> v) -> Tensor<f64> {
    return v * 2.0
}

fn loss(Tensor x, Tensor w) -> Tensor {
    let y = matmul(x, w)
    return sum(y * y)
}
"#;

const BACKENDS: [Backend; 2] = [Backend::Interp, Backend::Jit];

fn session(backend: Backend) -> Session {
    let s = Session::with_backend(backend);
    s.load_str("weights.tfn", SOURCE).unwrap_or_else(|e| panic!("load: {e}"));
    s
}

fn scratch(test: &str) -> Scratch {
    Scratch::new("weights", test)
}

/// A deterministic f32 array with distinct values.
fn array(shape: &[usize], seed: f32) -> ArrayD<f32> {
    let n: usize = shape.iter().product();
    let values = (0..n).map(|i| ((i as f32 + seed) * 0.731).sin() * 3.0).collect();
    ArrayD::from_shape_vec(IxDyn(shape), values).expect("shape")
}

fn save(path: &Path, tensors: &[(&str, Tensor)]) {
    let named: Vec<(&str, TensorValue)> =
        tensors.iter().map(|(n, t)| (*n, TensorValue::from(t.clone()))).collect();
    tfn::save_safetensors(path, &named).unwrap_or_else(|e| panic!("save: {e}"));
}

fn f32_result(results: Vec<Value<'static>>) -> ArrayD<f32> {
    match results.into_iter().next().and_then(Value::into_tensor) {
        Some(Tensor::F32(a)) => a,
        other => panic!("expected one f32 result, got {other:?}"),
    }
}

fn close(a: &ArrayD<f32>, b: &ArrayD<f32>, what: &str) {
    assert_eq!(a.shape(), b.shape(), "{what}");
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= 1e-4 * (1.0 + y.abs()), "{what}: {x} vs {y}\n{a}\n{b}");
    }
}

#[test]
fn parameters_are_bound_by_name_and_explicit_arguments_win() {
    let dir = scratch("by-name");
    let (x, w, b) = (array(&[2, 3], 0.0), array(&[3, 4], 1.0), array(&[4], 2.0));
    let path = dir.join("m.safetensors");
    save(
        &path,
        &[
            ("w", Tensor::F32(w.clone())),
            ("b", Tensor::F32(b.clone())),
            ("unused.extra", Tensor::I64(ArrayD::zeros(IxDyn(&[5])))),
        ],
    );
    let weights = Weights::open(&path).expect("open");
    for backend in BACKENDS {
        let s = session(backend);
        let explicit = f32_result(
            s.call("layer", &[x.view().into(), w.view().into(), b.view().into()]).unwrap(),
        );
        let bound = f32_result(s.call_with("layer", &[x.view().into()], &weights).unwrap());
        close(&bound, &explicit, "bound by name");
        // A parameter given by keyword wins over the file's tensor of that name.
        let b2 = array(&[4], 7.0);
        let kw = [("b", Value::from(b2.view()))];
        let got = f32_result(s.call_with_kw("layer", &[x.view().into()], &kw, &weights).unwrap());
        let want = f32_result(
            s.call("layer", &[x.view().into(), w.view().into(), b2.view().into()]).unwrap(),
        );
        close(&got, &want, "keyword wins");
        let unused = s.unused_weights("layer", &[x.view().into()], &[], &weights).unwrap();
        assert_eq!(unused, vec!["unused.extra".to_string()]);
    }
}

#[test]
fn a_transposed_mapping_is_a_view_and_matches_the_explicit_transpose() {
    let dir = scratch("transpose");
    let (x, b) = (array(&[2, 3], 0.0), array(&[4], 2.0));
    let stored = array(&[4, 3], 5.0); // PyTorch's [out, in]
    let path = dir.join("m.safetensors");
    save(
        &path,
        &[("lin.weight", Tensor::F32(stored.clone())), ("lin.bias", Tensor::F32(b.clone()))],
    );
    let weights = Weights::open(&path).expect("open");
    let mapping = Mapping::parse(&["w=lin.weight:T", "b=lin.bias"]).unwrap();
    let bound = weights.bind(&mapping).expect("bind");
    let w = bound.param("w").unwrap().expect("w");
    assert_eq!(w.tensor.shape(), &[3, 4]);
    assert!(!w.tensor.is_standard_layout(), "`:T` must be a strided view, not a copy");
    assert!(w.source.contains("lin.weight") && w.source.contains("transposed"), "{}", w.source);
    let w_t = stored.t().as_standard_layout().into_owned();
    for backend in BACKENDS {
        let s = session(backend);
        let explicit = f32_result(
            s.call("layer", &[x.view().into(), w_t.view().into(), b.view().into()]).unwrap(),
        );
        let got = f32_result(s.call_with("layer", &[x.view().into()], &bound).unwrap());
        close(&got, &explicit, "transposed view");
    }
}

#[test]
fn a_stacked_mapping_stacks_layers_as_a_view_or_a_copy() {
    let dir = scratch("stacked");
    let x = array(&[2, 4], 0.0);
    let layers: Vec<ArrayD<f32>> = (0..3).map(|i| array(&[3, 4], i as f32 * 10.0)).collect();
    let views: Vec<_> = layers.iter().map(|a| a.view()).collect();
    let stacked = ndarray::stack(Axis(0), &views).unwrap();
    let transposed = stacked.clone().permuted_axes(vec![0, 2, 1]).as_standard_layout().into_owned();
    let sum_t = transposed.sum_axis(Axis(0));
    let want = x
        .clone()
        .into_dimensionality::<ndarray::Ix2>()
        .unwrap()
        .dot(&sum_t.clone().into_dimensionality::<ndarray::Ix2>().unwrap());
    // Adjacent in the file (a contiguous view), evenly spaced (a strided view), uneven (a copy).
    let layouts: [(&str, Vec<(String, Tensor)>); 3] = [
        (
            "adjacent",
            (0..3).map(|i| (format!("l.{i}.w"), Tensor::F32(layers[i].clone()))).collect(),
        ),
        (
            "evenly spaced",
            (0..3)
                .flat_map(|i| {
                    [
                        (format!("l.{i}.w"), Tensor::F32(layers[i].clone())),
                        (format!("l.{i}.x"), Tensor::F32(array(&[4, 3], 1.0))),
                    ]
                })
                .collect(),
        ),
        (
            "uneven",
            (0..3)
                .map(|i| (format!("l.{i}.w"), Tensor::F32(layers[i].clone())))
                .chain([("l.0.z".to_string(), Tensor::F32(array(&[7], 1.0)))])
                .collect(),
        ),
    ];
    for (what, tensors) in layouts {
        let path = dir.join(format!("{}.safetensors", what.replace(' ', "-")));
        let named: Vec<(&str, Tensor)> =
            tensors.iter().map(|(n, t)| (n.as_str(), t.clone())).collect();
        save(&path, &named);
        let weights = Weights::open(&path).expect("open");
        let plain = weights.bind(&Mapping::parse(&["ws=l.{i}.w"]).unwrap()).expect("bind");
        let t = plain.param("ws").unwrap().expect("ws");
        assert_eq!(t.tensor.shape(), &[3, 3, 4], "{what}");
        assert_eq!(t.tensors, vec!["l.0.w", "l.1.w", "l.2.w"], "{what}");
        assert_eq!(t.tensor.to_tensor(), Tensor::F32(stacked.clone()), "{what}");
        let mapped = weights.bind(&Mapping::parse(&["ws=l.{i}.w:T"]).unwrap()).expect("bind");
        for backend in BACKENDS {
            let s = session(backend);
            let twice = f32_result(s.call_with("twice", &[], &plain).unwrap());
            close(&twice, &(&stacked * 2.0), what);
            let got = f32_result(s.call_with("layers", &[x.view().into()], &mapped).unwrap());
            close(&got, &want.clone().into_dyn(), what);
        }
    }
}

fn every_dtype(shape: &[usize]) -> Vec<Tensor> {
    let n: usize = shape.iter().product();
    let sh = || IxDyn(shape);
    let v = |f: &dyn Fn(usize) -> f64| (0..n).map(f).collect::<Vec<f64>>();
    use tfn::half::{bf16, f16};
    vec![
        Tensor::Bool(ArrayD::from_shape_fn(sh(), |i| i.slice().iter().sum::<usize>() % 2 == 0)),
        Tensor::I8(
            ArrayD::from_shape_vec(sh(), v(&|i| i as f64).iter().map(|&x| x as i8 - 3).collect())
                .unwrap(),
        ),
        Tensor::U8(
            ArrayD::from_shape_vec(sh(), (0..n).map(|i| (i * 37 % 256) as u8).collect()).unwrap(),
        ),
        Tensor::I32(ArrayD::from_shape_vec(sh(), (0..n as i32).map(|i| i - 7).collect()).unwrap()),
        Tensor::I64(
            ArrayD::from_shape_vec(sh(), (0..n as i64).map(|i| i << 40).collect()).unwrap(),
        ),
        Tensor::F16(
            ArrayD::from_shape_vec(sh(), (0..n).map(|i| f16::from_f32(i as f32 * 0.5)).collect())
                .unwrap(),
        ),
        Tensor::BF16(
            ArrayD::from_shape_vec(
                sh(),
                (0..n).map(|i| bf16::from_f32(-(i as f32) * 0.25)).collect(),
            )
            .unwrap(),
        ),
        Tensor::F32(
            ArrayD::from_shape_vec(sh(), (0..n).map(|i| i as f32 / 3.0).collect()).unwrap(),
        ),
        Tensor::F64(ArrayD::from_shape_vec(sh(), v(&|i| -(i as f64) / 7.0)).unwrap()),
    ]
}

#[test]
fn every_dtype_round_trips() {
    let dir = scratch("round-trip");
    for shape in [&[][..], &[1][..], &[5], &[0], &[2, 0, 3], &[2, 3, 4]] {
        let tensors = every_dtype(shape);
        let names: Vec<String> = tensors.iter().map(|t| format!("t.{}", t.dtype())).collect();
        let named: Vec<(&str, Tensor)> =
            names.iter().map(String::as_str).zip(tensors.iter().cloned()).collect();
        let path = dir.join("all.safetensors");
        save(&path, &named);
        let w = Weights::open(&path).expect("open");
        assert_eq!(w.len(), 9);
        for (name, t) in &named {
            let back = w.tensor(name).unwrap().unwrap_or_else(|| panic!("{name} missing"));
            assert_eq!(back.to_tensor(), *t, "{name} {shape:?}");
            if t.dtype() != tfn::DType::Bool {
                assert!(back.is_standard_layout(), "{name}");
            }
        }
    }
    // A strided input is written in C order of its logical shape.
    let a = array(&[3, 5], 0.0);
    let path = dir.join("strided.safetensors");
    tfn::save_safetensors(&path, &[("t", TensorValue::from(a.t()))]).unwrap();
    let back = Weights::open(&path).unwrap().tensor("t").unwrap().unwrap().to_tensor();
    assert_eq!(back, Tensor::F32(a.t().as_standard_layout().into_owned()));
    // Two tensors of one name, and the reserved key, are refused; nothing is written.
    let one = TensorValue::from(a.view());
    let dup = tfn::save_safetensors(
        &dir.join("dup.safetensors"),
        &[("a", one.clone()), ("a", one.clone())],
    );
    assert!(dup.expect_err("duplicate").to_string().contains("two tensors are named `a`"));
    assert!(!dir.join("dup.safetensors").exists());
    let meta = tfn::save_safetensors(&dir.join("m.safetensors"), &[("__metadata__", one)]);
    assert!(meta.expect_err("reserved").to_string().contains("__metadata__"));
}

/// A file: the 8-byte length, the header text as given, the data.
fn raw(header: &str, data: &[u8]) -> Vec<u8> {
    let mut b = (header.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(header.as_bytes());
    b.extend_from_slice(data);
    b
}

#[test]
fn malformed_and_hostile_files_are_errors_not_panics_or_allocations() {
    let dir = scratch("hostile");
    let good = r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", vec![], "fewer than the 8"),
        ("short length", vec![1, 0, 0], "fewer than the 8"),
        (
            "header past the end",
            {
                let mut b = 1000u64.to_le_bytes().to_vec();
                b.extend_from_slice(b"{}");
                b
            },
            "header length says 1000 bytes",
        ),
        ("huge header length", u64::MAX.to_le_bytes().to_vec(), "header length says"),
        (
            "header over the limit",
            {
                let mut b = 200_000_000u64.to_le_bytes().to_vec();
                b.extend_from_slice(&[b' '; 64]);
                b
            },
            "header length says",
        ),
        ("not JSON", raw("{not json", &[0; 8]), "not a valid safetensors header"),
        (
            "not UTF-8",
            {
                let mut b = raw("{ab}", &[]);
                b[9] = 0xff;
                b
            },
            "not UTF-8",
        ),
        (
            "unknown dtype",
            raw(r#"{"a":{"dtype":"F17","shape":[2],"data_offsets":[0,8]}}"#, &[0; 8]),
            "not a valid safetensors header",
        ),
        ("truncated data", raw(good, &[0; 5]), "does not end where the file does"),
        ("trailing bytes", raw(good, &[0; 12]), "does not end where the file does"),
        (
            "size is not shape x dtype",
            raw(r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"w":{"dtype":"F32","shape":[3],"data_offsets":[8,16]}}"#, &[0; 16]),
            "tensor `w`: its shape [3] of F32 is 12 bytes, but its data_offsets [8, 16] hold 8 bytes",
        ),
        (
            "offsets past the end",
            raw(r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8000000000]}}"#, &[0; 8]),
            "",
        ),
        (
            "overlapping",
            raw(
                r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}"#,
                &[0; 12],
            ),
            "offsets of tensor",
        ),
        (
            "a name twice",
            raw(
                r#"{"w":{"dtype":"F32","shape":[3,4],"data_offsets":[0,48]},"w":{"dtype":"F32","shape":[4,3],"data_offsets":[0,48]}}"#,
                &[0; 48],
            ),
            "its header names `w` twice",
        ),
        (
            "a name twice, other offsets",
            raw(
                r#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"w":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}"#,
                &[0; 16],
            ),
            "its header names `w` twice",
        ),
        (
            "gap",
            raw(r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#, &[0; 8]),
            "offsets of tensor",
        ),
        (
            "reversed offsets",
            raw(r#"{"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}}"#, &[0; 8]),
            "offsets of tensor",
        ),
        (
            "huge shape",
            raw(
                r#"{"a":{"dtype":"F64","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}}"#,
                &[0; 8],
            ),
            "tensor `a`'s shape [4294967296, 4294967296, 4294967296] of F64 overflows",
        ),
        (
            "huge claimed size",
            raw(
                r#"{"a":{"dtype":"F64","shape":[1000000000000],"data_offsets":[0,8000000000000]}}"#,
                &[0; 8],
            ),
            "does not end where the file does",
        ),
        (
            "negative dim",
            raw(r#"{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,8]}}"#, &[0; 8]),
            "not a valid",
        ),
    ];
    for (what, bytes, message) in cases {
        let path = dir.join("bad.safetensors");
        std::fs::write(&path, &bytes).unwrap();
        let e = Weights::open(&path).expect_err(what).to_string();
        assert!(e.contains("bad.safetensors"), "{what}: {e}");
        assert!(e.contains(message), "{what}: expected `{message}` in: {e}");
        let e = Weights::from_bytes("mem", bytes).expect_err(what).to_string();
        assert!(e.contains(message), "{what}: {e}");
    }
    // A directory and a missing file.
    assert!(Weights::open(&dir).expect_err("dir").to_string().contains("directory"));
    assert!(Weights::open(dir.join("none.safetensors"))
        .expect_err("missing")
        .to_string()
        .contains("cannot read"));
    // Valid files with tensors tfn cannot use: errors when (and only when) they are read.
    let w = Weights::from_bytes(
        "odd",
        raw(
            r#"{"u":{"dtype":"U16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"BOOL","shape":[2],"data_offsets":[4,6]}}"#,
            &[0, 0, 0, 0, 1, 7],
        ),
    )
    .expect("a valid file");
    let e = w.tensor("u").expect_err("u16").to_string();
    assert!(e.contains("tensor `u`") && e.contains("U16"), "{e}");
    let e = w.tensor("b").expect_err("bool 7").to_string();
    assert!(e.contains("tensor `b`") && e.contains("byte 7"), "{e}");
    // Misaligned data (a header whose length is not a multiple of 4) is read by a copy.
    let header = r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}} "#;
    let header =
        if (8 + header.len()).is_multiple_of(4) { &header[..header.len() - 1] } else { header };
    let data: Vec<u8> = [1.5f32, -2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    let w = Weights::from_bytes("misaligned", raw(header, &data)).expect("valid");
    let a = w.tensor("a").unwrap().unwrap().to_tensor();
    assert_eq!(a, Tensor::F32(ArrayD::from_shape_vec(IxDyn(&[2]), vec![1.5, -2.0]).unwrap()));
}

#[test]
fn missing_mistyped_and_misshaped_tensors_name_the_tensor_and_the_parameter() {
    let dir = scratch("errors");
    let x = array(&[2, 3], 0.0);
    let path = dir.join("m.safetensors");
    save(
        &path,
        &[
            ("w", Tensor::F32(array(&[5, 4], 1.0))),
            ("b", Tensor::F32(array(&[4], 1.0))),
            ("v", Tensor::F32(array(&[4], 1.0))),
            ("lin.weight", Tensor::F32(array(&[4, 3], 1.0))),
            ("vec", Tensor::F32(array(&[4], 1.0))),
            ("l.0.w", Tensor::F32(array(&[3, 4], 1.0))),
            ("l.1.w", Tensor::F32(array(&[3, 5], 1.0))),
            ("X", Tensor::F32(array(&[2, 3], 1.0))),
        ],
    );
    let w = Weights::open(&path).unwrap();
    for backend in BACKENDS {
        let s = session(backend);
        // Missing: `scale_f64` wants `v` (present but f32: mistyped); `layer` with a mapping to
        // a tensor that is not there.
        let e = s.call_with("scale_f64", &[], &w).expect_err("mistyped").to_string();
        assert!(
            e.contains("parameter `v`") && e.contains("tensor `v`") && e.contains("f64"),
            "{e}"
        );
        let e = s.call_with("layer", &[], &w).expect_err("missing x").to_string();
        assert!(e.contains("parameter `x`") && e.contains("no tensor `x`"), "{e}");
        assert!(e.contains("did you mean `X`?"), "the name in another case: {e}");
        // Misshaped: `w` is [5, 4] for an x of [2, 3].
        let e = s.call_with("layer", &[x.view().into()], &w).expect_err("misshaped").to_string();
        assert!(
            e.contains("`w`") && e.contains("tensor `w` of") && e.contains("m.safetensors"),
            "{e}"
        );
    }
    let e = w.bind(&Mapping::parse(&["w=nothing"]).unwrap()).expect_err("no tensor").to_string();
    assert!(
        e.contains("parameter `w`")
            && e.contains("tensor `nothing`")
            && e.contains("does not exist"),
        "{e}"
    );
    let e = w.bind(&Mapping::parse(&["w=vec:T"]).unwrap()).expect_err(":T vector").to_string();
    assert!(e.contains("parameter `w`") && e.contains("tensor `vec`") && e.contains(":T"), "{e}");
    let e = w.bind(&Mapping::parse(&["ws=l.{i}.w"]).unwrap()).expect_err("ragged").to_string();
    assert!(
        e.contains("parameter `ws`") && e.contains("`l.1.w`") && e.contains("must agree"),
        "{e}"
    );
    let e = w.bind(&Mapping::parse(&["ws=k.{i}.w"]).unwrap()).expect_err("no layer 0").to_string();
    assert!(e.contains("`k.0.w`") && e.contains("does not exist"), "{e}");
}

#[test]
fn vjp_with_gives_the_gradients_of_bound_parameters() {
    let dir = scratch("vjp");
    let (x, w) = (array(&[2, 3], 0.0), array(&[3, 4], 1.0));
    let path = dir.join("m.safetensors");
    save(&path, &[("lin.weight", Tensor::F32(w.t().as_standard_layout().into_owned()))]);
    let weights = Weights::open(&path).unwrap();
    let bound = weights.bind(&Mapping::parse(&["w=lin.weight:T"]).unwrap()).unwrap();
    let ct = ArrayD::from_elem(IxDyn(&[]), 1.0f32);
    for backend in BACKENDS {
        let s = session(backend);
        let want = s.vjp("loss", &[x.view().into(), w.view().into()], &[ct.view().into()]).unwrap();
        let got = s.vjp_with("loss", &[x.view().into()], &[ct.view().into()], &bound).unwrap();
        assert_eq!(got.len(), 2);
        for (g, e) in got.into_iter().zip(want) {
            let (g, e) = (g.into_tensor().unwrap(), e.into_tensor().unwrap());
            match (g, e) {
                (Tensor::F32(g), Tensor::F32(e)) => close(&g, &e, "vjp"),
                other => panic!("{other:?}"),
            }
        }
        let names = s.vjp_names("loss", &[x.view().into(), w.view().into()], &[]).unwrap();
        assert_eq!(names, vec!["x", "w"]);
    }
}

#[test]
fn named_tensors_in_memory_bind_like_a_file() {
    let (x, b) = (array(&[2, 3], 0.0), array(&[4], 2.0));
    let stored = array(&[4, 3], 3.0);
    let mut named = NamedTensors::new("the weights dict");
    named.insert("lin.weight", TensorValue::from(stored.view()));
    named.insert("b", TensorValue::from(b.view()));
    let bound = named.bind(&Mapping::parse(&["w=lin.weight:T"]).unwrap()).unwrap();
    let w_t = stored.t().as_standard_layout().into_owned();
    for backend in BACKENDS {
        let s = session(backend);
        let want = f32_result(
            s.call("layer", &[x.view().into(), w_t.view().into(), b.view().into()]).unwrap(),
        );
        close(
            &f32_result(s.call_with("layer", &[x.view().into()], &bound).unwrap()),
            &want,
            "dict",
        );
        let e = s.call_with("layer", &[], &bound).expect_err("no x").to_string();
        assert!(e.contains("the weights dict") && e.contains("parameter `x`"), "{e}");
    }
}
