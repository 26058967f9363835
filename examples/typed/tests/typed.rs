//! Typed calls against the untyped `Session` calls by name that `tfnc run` makes, on the same
//! file: results bit for bit equal (JIT and interpreter), `Args` defaults equal to the `.tfn`
//! defaults, `_into` equal to the call, `vjp_` equal to `Session::vjp`, explicit overloads,
//! generic dtypes, strided and `Array2` views, and typed errors instead of panics.

use ndarray::{array, Array2, ArrayD, IxDyn};
use tfn::{Backend, Session, SessionOptions, Tensor, Value};
use tfn_example_typed::{api, nn};

fn by_name(lib: &Session, name: &str, args: &[Value], kwargs: &[(&str, Value)]) -> Vec<Tensor> {
    let out = lib.call_kw(name, args, kwargs).unwrap_or_else(|e| panic!("{name}: {e}"));
    out.into_iter().map(|v| v.into_tensor().unwrap()).collect()
}

fn x() -> Array2<f32> {
    array![[-1.5f32, 0.0, 0.5, 3.0], [2.0, -0.5, 1.0, -2.25], [0.1, 0.2, -0.3, 0.4]]
}

fn options(backend: Backend) -> SessionOptions {
    SessionOptions { backend, threads: 2, ..SessionOptions::default() }
}

#[test]
fn nn_calls_equal_the_session_by_name() {
    for backend in [Backend::Jit, Backend::Interp] {
        let lib = nn::Lib::with_options(options(backend)).unwrap();
        let s = lib.session();
        let x = x();
        let xd = x.clone().into_dyn();
        let v = || Value::from(xd.view());

        assert_eq!(vec![lib.gelu(x.view()).unwrap()], by_name(s, "gelu", &[v()], &[]));
        // The `.tfn` default (`dim = -1`) is what `SoftmaxArgs::default()` holds.
        assert_eq!(
            vec![lib.softmax(x.view(), nn::SoftmaxArgs::default()).unwrap()],
            by_name(s, "softmax", &[v()], &[])
        );
        assert_eq!(
            vec![lib.softmax(x.view(), nn::SoftmaxArgs { dim: 0 }).unwrap()],
            by_name(s, "softmax", &[v()], &[("dim", 0i64.into())])
        );
        let (m, var) = lib.moments(x.view(), &[0]).unwrap();
        let dims = || Value::from(vec![0i64]);
        assert_eq!(vec![m, var], by_name(s, "moments", &[v()], &[("dims", dims())]));

        let w = ArrayD::<f32>::from_shape_fn(IxDyn(&[4, 2]), |i| i[0] as f32 - i[1] as f32);
        let b = array![0.5f32, -1.0];
        let h = lib.linear(x.view(), w.view(), b.view(), nn::LinearArgs::default()).unwrap();
        let args = [v(), Value::from(w.view()), Value::from(b.view().into_dyn())];
        assert_eq!(vec![Tensor::F32(h)], by_name(s, "linear", &args, &[]));
        let relu = lib.linear(x.view(), w.view(), b.view(), nn::LinearArgs { activate: true });
        assert!(relu.unwrap().iter().all(|&e| e >= 0.0));

        // `Tensor<T>` with T = f64, and a `Scalar` keyword given as an int and as a float.
        let x64 = x.mapv(f64::from);
        let x64d = x64.clone().into_dyn();
        let v64 = || Value::from(x64d.view());
        let a = lib.axpy(x64.view(), x64.view(), nn::AxpyArgs::default()).unwrap();
        assert_eq!(vec![Tensor::F64(a)], by_name(s, "axpy", &[v64(), v64()], &[]));
        let a = lib.axpy(x64.view(), x64.view(), nn::AxpyArgs { a: 0.5.into() }).unwrap();
        let kw = [("a", Value::from(0.5f64))];
        assert_eq!(vec![Tensor::F64(a)], by_name(s, "axpy", &[v64(), v64()], &kw));

        // Each overload is its own method.
        let sc = lib.scale_scalar(x.view(), 3).unwrap();
        assert_eq!(vec![sc], by_name(s, "scale", &[v(), 3i64.into()], &[]));
        let t = lib.scale(x.view(), b.view().insert_axis(ndarray::Axis(0))).unwrap_err();
        assert!(t.to_string().contains('4') && t.to_string().contains('2'), "{t}");
    }
}

#[test]
fn strided_views_and_into_and_vjp() {
    let lib = nn::Lib::new().unwrap();
    let x = x();
    // A transposed (non-contiguous) view: the same as its contiguous copy.
    let t = x.t();
    let tc = t.to_owned();
    assert_eq!(lib.gelu(t).unwrap(), lib.gelu(tc.view()).unwrap());

    let mut out = Array2::<f32>::zeros((3, 4));
    lib.gelu_into(x.view(), out.view_mut()).unwrap();
    assert_eq!(Tensor::F32(out.clone().into_dyn()), lib.gelu(x.view()).unwrap());
    let mut wrong = Array2::<f32>::zeros((4, 3));
    assert!(lib.gelu_into(x.view(), wrong.view_mut()).is_err());

    let ct = Array2::<f32>::from_elem((3, 4), 0.5);
    let dx = lib.vjp_gelu(x.view(), ct.view()).unwrap();
    let xd = x.clone().into_dyn();
    let expected = lib
        .session()
        .vjp("gelu", &[Value::from(xd.view())], &[Value::from(ct.view().into_dyn())])
        .unwrap();
    assert_eq!(dx, expected.into_iter().map(|v| v.into_tensor().unwrap()).collect::<Vec<_>>());

    // All-f32 signature: typed gradients, one per tensor parameter.
    let w = Array2::<f32>::from_elem((4, 2), 0.25);
    let b = ndarray::Array1::<f32>::from_elem(2, 0.5);
    let ct = Array2::<f32>::ones((3, 2));
    let (dx, dw, db) =
        lib.vjp_linear(x.view(), w.view(), b.view(), nn::LinearArgs::default(), ct.view()).unwrap();
    assert_eq!(dx.shape(), &[3, 4]);
    assert_eq!(dw.shape(), &[4, 2]);
    assert_eq!(db, ArrayD::from_elem(IxDyn(&[2]), 3.0));
}

#[test]
fn wrong_dtypes_are_errors_not_panics() {
    let lib = nn::Lib::new().unwrap();
    let xi = array![[1i32, 2], [3, 4]];
    // `axpy<T: {f32, f64}>`: an i32 compiles (Element) but the dispatcher rejects it.
    let e = lib.axpy(xi.view(), xi.view(), nn::AxpyArgs::default()).unwrap_err();
    assert!(e.to_string().contains("f32"), "{e}");
}

#[test]
fn api_calls_equal_the_session_by_name() {
    let lib = api::Lib::new().unwrap();
    let s = lib.session();
    let x = x();
    let xd = x.clone().into_dyn();
    let v = || Value::from(xd.view());

    let g = ArrayD::<f32>::ones(IxDyn(&[4]));
    let got = lib.layer_norm(x.view(), g.view(), g.view(), api::LayerNormArgs::default()).unwrap();
    let gv = || Value::from(g.view());
    assert_eq!(vec![got], by_name(s, "layer_norm", &[v(), gv(), gv()], &[]));

    let got = lib.to_dtype(x.view(), api::ToDtypeArgs::default()).unwrap();
    assert_eq!(got.dtype(), tfn::DType::F64);
    assert_eq!(vec![got], by_name(s, "to_dtype", &[v()], &[]));

    assert_eq!(lib.count_positive(x.view()).unwrap(), ArrayD::from_elem(IxDyn(&[]), 7i64));

    let x64 = x.mapv(f64::from);
    let idx = array![2i64, 0, 2];
    let got = lib.gather_rows(x64.view(), idx.view(), api::GatherRowsArgs::default()).unwrap();
    let (x64d, idxd) = (x64.clone().into_dyn(), idx.clone().into_dyn());
    let args = [Value::from(x64d.view()), Value::from(idxd.view())];
    assert_eq!(vec![Tensor::F64(got)], by_name(s, "gather_rows", &args, &[]));

    let parts = [tfn::TensorValue::from(x.view()), tfn::TensorValue::from(x.view())];
    let got = lib.stack(&parts, api::StackArgs { dim: 1 }).unwrap();
    assert_eq!(got.shape(), &[3, 8]);

    let m = x.mapv(|e| e > 0.0);
    let got = lib.pick(x.view(), x.mapv(|e| -e).view(), m.view()).unwrap();
    assert!(got.iter().all(|&e| e >= 0.0));

    let got = lib.r#type(x.view(), api::TypeArgs::default()).unwrap();
    assert_eq!(vec![got], by_name(s, "type", &[v()], &[("match", 2i64.into())]));

    let (mean, max, argmax) = lib.stats(x.view(), &[1]).unwrap();
    let expected = by_name(s, "stats", &[v(), Value::from(vec![1i64])], &[]);
    assert_eq!(vec![Tensor::F32(mean), Tensor::F32(max), Tensor::I64(argmax)], expected);

    // From the `use`d file.
    assert_eq!(lib.square(x.view()).unwrap(), (&x * &x).into_dyn());
}

/// `examples/typed_aot`: the same functions built ahead of time (kernels compiled in its
/// `build.rs` by `tfn-build`'s AOT mode, run by `tfn-rt`) give the JIT session's bits for
/// every built signature, on 1 and 2 threads; arguments of a signature the object was not
/// built for are an error naming the built ones.
mod aot {
    use super::*;
    use tfn_example_typed_aot::nn as aot_nn;

    /// Dtype, shape and the bits of every element.
    fn bits(t: &Tensor) -> (tfn::DType, Vec<usize>, Vec<u64>) {
        let b: Vec<u64> = match t {
            Tensor::F32(a) => a.iter().map(|v| u64::from(v.to_bits())).collect(),
            Tensor::F64(a) => a.iter().map(|v| v.to_bits()).collect(),
            other => panic!("unexpected dtype {}", other.dtype()),
        };
        (t.dtype(), t.shape().to_vec(), b)
    }

    fn same(what: &str, aot: &[Tensor], jit: &[Tensor]) {
        assert_eq!(aot.len(), jit.len(), "{what}: result count");
        for (k, (a, j)) in aot.iter().zip(jit).enumerate() {
            assert!(bits(a) == bits(j), "{what}: result {k} differs from the JIT's");
        }
    }

    /// Sizes that split across threads (rows of a few kernels' chunks), values of both signs.
    fn input(rows: usize, cols: usize, seed: f32) -> ArrayD<f32> {
        ArrayD::from_shape_fn(IxDyn(&[rows, cols]), |i| {
            ((i[0] * cols + i[1]) as f32 * 0.37 + seed).sin() * 3.0
        })
    }

    fn v(a: &ArrayD<f32>) -> Value<'_> {
        Value::from(a.view())
    }

    #[test]
    fn aot_module_gives_the_sessions_bits_on_1_and_2_threads() {
        let x = input(67, 523, 0.0);
        let y = input(67, 523, 1.0);
        let w = input(523, 19, 2.0);
        let b = ArrayD::from_shape_fn(IxDyn(&[19]), |i| i[0] as f32 * 0.1 - 1.0);
        let ct = input(67, 523, 3.0);
        let f32s = |a: ArrayD<f32>| Tensor::F32(a);
        for threads in [1, 2] {
            let jit =
                nn::Lib::with_options(SessionOptions { threads, ..Default::default() }).unwrap();
            let s = jit.session();
            let aot = aot_nn::Lib::with_options(tfn_rt::Options { threads }).unwrap();
            let what = |f: &str| format!("{f} on {threads} thread(s)");

            same(&what("gelu"), &[aot.gelu(x.view()).unwrap()], &by_name(s, "gelu", &[v(&x)], &[]));
            let p = aot.softmax(x.view(), aot_nn::SoftmaxArgs::default()).unwrap();
            same(&what("softmax"), &[p], &by_name(s, "softmax", &[v(&x)], &[]));
            let p = aot.softmax(x.view(), aot_nn::SoftmaxArgs { dim: 0 }).unwrap();
            let jp = by_name(s, "softmax", &[v(&x)], &[("dim", 0i64.into())]);
            same(&what("softmax(dim=0)"), &[p], &jp);
            let h = aot
                .linear(x.view(), w.view(), b.view(), aot_nn::LinearArgs { activate: true })
                .unwrap();
            let jh = by_name(s, "linear", &[v(&x), v(&w), v(&b)], &[("activate", true.into())]);
            same(&what("linear"), &[f32s(h)], &jh);
            let (m, var) = aot.moments(x.view(), &[-1]).unwrap();
            let jm = by_name(s, "moments", &[v(&x)], &[("dims", vec![-1i64].into())]);
            same(&what("moments"), &[m, var], &jm);
            let z = aot.axpy(x.view(), y.view(), aot_nn::AxpyArgs { a: 2.into() }).unwrap();
            let jz = by_name(s, "axpy", &[v(&x), v(&y)], &[("a", 2i64.into())]);
            same(&what("axpy"), &[f32s(z)], &jz);
            let sc = aot.scale_scalar(x.view(), 0.5).unwrap();
            same(
                &what("scale.scalar"),
                &[sc],
                &by_name(s, "scale.scalar", &[v(&x), 0.5.into()], &[]),
            );

            // `_into` (a strided output) and `vjp_`.
            let mut out = ArrayD::<f32>::zeros(IxDyn(&[523, 67]));
            let mut t = out.view_mut().reversed_axes();
            aot.gelu_into(x.view(), t.view_mut()).unwrap();
            same(&what("gelu_into"), &[f32s(t.to_owned())], &by_name(s, "gelu", &[v(&x)], &[]));
            let dx = aot.vjp_gelu(x.view(), ct.view()).unwrap();
            let jdx = s.vjp("gelu", &[v(&x)], &[v(&ct)]).unwrap();
            let jdx: Vec<Tensor> = jdx.into_iter().map(|v| v.into_tensor().unwrap()).collect();
            same(&what("vjp gelu"), &dx, &jdx);
        }
    }

    #[test]
    fn unbuilt_signatures_are_errors_naming_the_built_ones() {
        let aot = aot_nn::Lib::new().unwrap();
        let x = input(3, 4, 0.0);
        let e = aot.gelu(x.mapv(f64::from).view()).unwrap_err();
        assert!(matches!(e, tfn_rt::Error::Signature(_)), "{e:?}");
        let text = e.to_string();
        assert!(text.contains("`x` is f64[3, 4]") && text.contains("gelu(x: f32[?, ?])"), "{text}");
        // A keyword value the object holds no signature for.
        let e = aot.softmax(x.view(), aot_nn::SoftmaxArgs { dim: 1 }).unwrap_err().to_string();
        assert!(e.contains("`dim` is Int 1") && e.contains("dim: Int 0"), "{e}");
        let e = aot.moments(x.view(), &[0]).unwrap_err().to_string();
        assert!(e.contains("built for moments(x: f32[?, ?], dims: Int[] [-1])"), "{e}");
        // A rank the signature does not have; sizes that do not fit each other.
        let e = aot.gelu(x.index_axis(ndarray::Axis(0), 0)).unwrap_err().to_string();
        assert!(e.contains("`x` is f32[4]"), "{e}");
        let w = input(5, 2, 0.0);
        let b = ArrayD::<f32>::zeros(IxDyn(&[2]));
        let e = aot.linear(x.view(), w.view(), b.view(), aot_nn::LinearArgs { activate: true });
        assert!(matches!(e, Err(tfn_rt::Error::Argument(_))), "{e:?}");
        // An `_into` output of the wrong shape.
        let mut out = ArrayD::<f32>::zeros(IxDyn(&[4, 3]));
        let e = aot.gelu_into(x.view(), out.view_mut()).unwrap_err();
        assert!(matches!(e, tfn_rt::Error::Argument(_)), "{e:?}");
    }
}
