//! `one_hot` (std:nn) on both backends: negative indices count from the end, and an index
//! outside `[-classes, classes)` fails the call naming the op and the index (the check of the
//! `index_select` it is written with), never a silent row of zeros.

use ndarray::{ArrayD, IxDyn};
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
