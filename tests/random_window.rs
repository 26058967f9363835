//! Property test: random convolutions and poolings — shapes, strides, padding, dilation,
//! groups (depthwise included), ceil_mode, count_include_pad, f32 and f64, sometimes with a
//! fused bias + relu — and their vjps: the JIT must agree with the interpreter (within float
//! rounding: the GEMM sums in another order), or both must reject the call. Enough output
//! channels per group take the implicit-GEMM path, others the direct loops.

use ndarray::{ArrayD, IxDyn};
use proptest::prelude::*;
use tfn::{Backend, Session, Tensor, Value};
use tfn_test_utils::{compare, proptest_config, Tolerance};

#[derive(Clone, Debug)]
struct Case {
    conv: bool,
    n: usize,
    groups: usize,
    cin_g: usize,
    cout_g: usize,
    h: usize,
    w: usize,
    k: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    ceil: bool,
    max: bool,
    count_pad: bool,
    epilogue: bool,
    f64: bool,
}

fn case_strategy() -> impl Strategy<Value = Case> {
    let pair = |lo: usize, hi: usize| (lo..=hi, lo..=hi).prop_map(|(a, b)| [a, b]);
    (
        (any::<bool>(), 1usize..=2, 1usize..=3, 1usize..=3, prop_oneof![1usize..=3, 8usize..=13]),
        (3usize..=12, 3usize..=12, pair(1, 3), pair(1, 3), pair(0, 2), pair(1, 2)),
        (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
    )
        .prop_map(
            |((conv, n, groups, cin_g, cout_g), (h, w, k, stride, padding, dilation), b)| {
                let (ceil, max, count_pad, epilogue, f64) = b;
                Case {
                    conv,
                    n,
                    groups,
                    cin_g: if conv { cin_g * 3 } else { cin_g },
                    cout_g,
                    h,
                    w,
                    k,
                    stride,
                    padding,
                    dilation,
                    ceil,
                    max,
                    count_pad,
                    epilogue,
                    f64,
                }
            },
        )
}

fn l(v: [usize; 2]) -> String {
    format!("[{}, {}]", v[0], v[1])
}

fn source(c: &Case, name: &str) -> String {
    if c.conv {
        let conv = format!(
            "conv2d(x, w, stride={}, padding={}, dilation={}, groups={})",
            l(c.stride),
            l(c.padding),
            l(c.dilation),
            c.groups
        );
        let body = if c.epilogue { format!("maximum({conv} + b, 0.0)") } else { conv };
        format!("fn {name}(Tensor x, Tensor w, Tensor b) -> Tensor {{\n    return {body} * b\n}}\n")
    } else {
        // Pooling padding is at most half the kernel.
        let padding = [c.padding[0].min(c.k[0] / 2), c.padding[1].min(c.k[1] / 2)];
        let op = if c.max {
            format!(
                "max_pool2d(x, kernel={}, stride={}, padding={}, dilation={}, ceil_mode={})",
                l(c.k),
                l(c.stride),
                l(padding),
                l(c.dilation),
                c.ceil
            )
        } else {
            format!(
                "avg_pool2d(x, kernel={}, stride={}, padding={}, ceil_mode={}, count_include_pad={})",
                l(c.k),
                l(c.stride),
                l(padding),
                c.ceil,
                c.count_pad
            )
        };
        format!("fn {name}(Tensor x) -> Tensor {{\n    return {op}\n}}\n")
    }
}

fn values(shape: &[usize], f64: bool, seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let v = |k: usize| {
        let z = (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(seed) >> 40;
        (z % 1000) as f64 / 250.0 - 2.0
    };
    let shape = IxDyn(shape);
    if f64 {
        Tensor::F64(ArrayD::from_shape_vec(shape, (0..n).map(v).collect()).expect("shape"))
    } else {
        Tensor::F32(
            ArrayD::from_shape_vec(shape, (0..n).map(|k| v(k) as f32).collect()).expect("shape"),
        )
    }
}

thread_local! {
    static SESSIONS: (Session, Session) =
        (Session::with_backend(Backend::Jit), Session::with_backend(Backend::Interp));
    static COUNTER: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

type Outcome = (Result<Tensor, String>, Option<Result<Vec<Tensor>, String>>);

fn run(s: &Session, name: &str, args: &[Value<'static>], f64: bool) -> Outcome {
    let out = s.call(name, args).map_err(|e| e.to_string());
    let out = out.map(|mut v| v.remove(0).into_tensor().expect("tensor result"));
    let g = match &out {
        Ok(y) => {
            let ct = values(y.shape(), f64, 3);
            let g = s.vjp(name, args, &[Value::from(ct)]).map_err(|e| e.to_string());
            Some(g.map(|v| v.into_iter().map(|t| t.into_tensor().expect("tensor")).collect()))
        }
        _ => None,
    };
    (out, g)
}

/// Windows sum in another order on each backend: the toolkit's accumulated tolerance.
fn close(a: &Tensor, b: &Tensor) -> bool {
    compare(a, b, Tolerance::ACCUMULATED).is_ok()
}

fn check(c: &Case) -> Result<(), String> {
    let n = COUNTER.with(|k| {
        k.set(k.get() + 1);
        k.get()
    });
    let name = format!("case_{n}");
    let src = source(c, &name);
    let (cin, cout) = (c.cin_g * c.groups, c.cout_g * c.groups);
    let channels = if c.conv { cin } else { c.cin_g + 1 };
    let x = values(&[c.n, channels, c.h, c.w], c.f64, 0);
    let mut args = vec![Value::from(x)];
    if c.conv {
        args.push(Value::from(values(&[cout, c.cin_g, c.k[0], c.k[1]], c.f64, 1)));
        args.push(Value::from(values(&[cout, 1, 1], c.f64, 2)));
    }
    let (jit, reference) = SESSIONS.with(|(jit, interp)| {
        for s in [jit, interp] {
            s.load_str(&format!("{name}.tfn"), &src).map_err(|e| format!("load: {e}\n{src}"))?;
        }
        Ok::<_, String>((run(jit, &name, &args, c.f64), run(interp, &name, &args, c.f64)))
    })?;
    let context = || format!("\n{src}{c:?}");
    match (&jit.0, &reference.0) {
        (Ok(a), Ok(b)) if close(a, b) => {}
        (Err(_), Err(_)) => return Ok(()),
        (a, b) => return Err(format!("result: JIT {a:?}, interpreter {b:?}{}", context())),
    }
    match (&jit.1, &reference.1) {
        (Some(Ok(a)), Some(Ok(b)))
            if a.len() == b.len() && a.iter().zip(b).all(|(p, q)| close(p, q)) =>
        {
            Ok(())
        }
        (a, b) => Err(format!("gradient: JIT {a:?}, interpreter {b:?}{}", context())),
    }
}

// 100 cases from a fixed seed (deterministic `cargo test`); `PROPTEST_CASES` and
// `PROPTEST_RNG_SEED` explore further.
proptest! {
    #![proptest_config(proptest_config(100, 0xc0_2d5e))]

    #[test]
    fn window_programs_agree_with_the_interpreter(case in case_strategy()) {
        if let Err(e) = check(&case) {
            return Err(TestCaseError::fail(e));
        }
    }
}

/// A valid case on the GEMM path really runs (the property above also accepts two errors).
#[test]
fn a_valid_gemm_case_is_compared() {
    let c = Case {
        conv: true,
        n: 2,
        groups: 1,
        cin_g: 6,
        cout_g: 9,
        h: 7,
        w: 8,
        k: [3, 3],
        stride: [1, 1],
        padding: [1, 1],
        dilation: [1, 1],
        ceil: false,
        max: false,
        count_pad: true,
        epilogue: true,
        f64: false,
    };
    check(&c).expect("agrees");
    let src = source(&c, "valid");
    let s = Session::with_backend(Backend::Jit);
    s.load_str("valid.tfn", &src).expect("loads");
    let args = vec![
        Value::from(values(&[2, 6, 7, 8], false, 0)),
        Value::from(values(&[9, 6, 3, 3], false, 1)),
        Value::from(values(&[9, 1, 1], false, 2)),
    ];
    let (out, grad) = run(&s, "valid", &args, false);
    assert_eq!(out.expect("runs").shape(), &[2, 9, 7, 8]);
    assert_eq!(grad.expect("vjp").expect("runs").len(), 3);
}

/// The f32 adjoints on the GEMM (`backend/src/window/conv_grad.rs`): groups, stride,
/// padding and dilation, sizes above its thresholds, and an image of more than 1024 output
/// positions (the weight gradient's product then spans two depth blocks). The gradients
/// agree with the interpreter and are the same floats on 1 and 2 threads (the weight
/// gradient sums its images in one order whatever the split).
#[test]
fn gemm_adjoints_agree_and_do_not_depend_on_threads() {
    let base = Case {
        conv: true,
        n: 3,
        groups: 2,
        cin_g: 5,
        cout_g: 12,
        h: 9,
        w: 11,
        k: [3, 2],
        stride: [2, 1],
        padding: [1, 2],
        dilation: [1, 2],
        ceil: false,
        max: false,
        count_pad: true,
        epilogue: false,
        f64: false,
    };
    let big = Case {
        n: 2,
        groups: 1,
        cin_g: 4,
        cout_g: 40,
        h: 36,
        w: 34,
        k: [3, 3],
        stride: [1, 1],
        padding: [1, 1],
        dilation: [1, 1],
        epilogue: true,
        ..base.clone()
    };
    let strided = Case { stride: [2, 3], dilation: [2, 1], padding: [2, 0], ..base.clone() };
    for c in [base, big, strided] {
        let src = source(&c, "adj");
        let (cin, cout) = (c.cin_g * c.groups, c.cout_g * c.groups);
        let args = vec![
            Value::from(values(&[c.n, cin, c.h, c.w], false, 0)),
            Value::from(values(&[cout, c.cin_g, c.k[0], c.k[1]], false, 1)),
            Value::from(values(&[cout, 1, 1], false, 2)),
        ];
        let grads: Vec<Vec<Tensor>> = [(Backend::Interp, 1), (Backend::Jit, 1), (Backend::Jit, 2)]
            .into_iter()
            .map(|(backend, threads)| {
                let s = Session::with_options(tfn::SessionOptions {
                    backend,
                    threads,
                    ..Default::default()
                });
                s.load_str("adj.tfn", &src).expect("loads");
                let (_, g) = run(&s, "adj", &args, false);
                g.expect("vjp").expect("runs")
            })
            .collect();
        // Thousands-term f32 sums cancel: the tolerance scales with the tensor's largest value.
        for (jit, reference) in grads[1].iter().zip(&grads[0]) {
            let (Tensor::F32(a), Tensor::F32(b)) = (jit, reference) else { panic!("f32") };
            assert_eq!(a.shape(), b.shape());
            let scale = b.iter().fold(1f32, |m, v| m.max(v.abs()));
            let worst = a.iter().zip(b).fold(0f32, |m, (p, q)| m.max((p - q).abs()));
            assert!(worst <= 1e-5 * scale, "{c:?}: off by {worst} at scale {scale}");
        }
        assert_eq!(grads[1], grads[2], "{c:?}");
    }
}

/// `ceil_mode` with a window a little wider than the padded input (PyTorch's
/// `pooling_output_shape` rounds towards -inf): one place along H, starting inside the input;
/// its rows past the input are left out of the max. Both backends, against a reference.
#[test]
fn a_ceil_mode_window_wider_than_the_input_has_one_place() {
    let src = "fn p(Tensor x) -> Tensor {\n    return max_pool2d(x, kernel=[3, 2], stride=[3, 2], \
               padding=[0, 1], dilation=[2, 1], ceil_mode=true)\n}\n";
    let x = values(&[1, 2, 4, 4], false, 7);
    let Tensor::F32(xa) = &x else { unreachable!() };
    // H: rows {0, 2} (4 is past the input); W (padding 1): columns {-1, 0}, {1, 2}, {3, 4}.
    let mut want = vec![];
    for c in 0..2 {
        for cols in [[0usize, 0], [1, 2], [3, 3]] {
            let m = [0usize, 2]
                .iter()
                .flat_map(|&r| cols.iter().map(move |&q| (r, q)))
                .map(|(r, q)| xa[[0, c, r, q]])
                .fold(f32::NEG_INFINITY, f32::max);
            want.push(m);
        }
    }
    for backend in [Backend::Jit, Backend::Interp] {
        let s = Session::with_backend(backend);
        s.load_str("p.tfn", src).expect("loads");
        let y = s.call("p", &[Value::from(x.clone())]).expect("runs").remove(0);
        let y = y.into_tensor().expect("tensor");
        assert_eq!(y.shape(), &[1, 2, 1, 3], "{backend:?}");
        let Tensor::F32(ya) = y else { panic!("f32") };
        assert_eq!(ya.iter().copied().collect::<Vec<_>>(), want, "{backend:?}");
    }
}
