//! `Session::profile` / `profile_into` (what `tfnc bench --profile` prints): the structure of
//! a profile, never its timings. One entry per fused kernel (the count the pass pipeline
//! plans), in order, with the strategy the executor runs; shares that add up to 100 %; the
//! byte and flop conventions of `docs/profiling.md` computed exactly; results identical to
//! unprofiled calls; errors as values.

use ndarray::{ArrayD, IxDyn};
use tfn::{Backend, Error, OutputMut, Profile, Session, SessionOptions, Tensor, Value};
use tfn_ir::lower::{ArgSpec, DimSpec, ParamSource};

const SRC: &str = r#"
fn gelu(Tensor x) -> Tensor {
    return 0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
}

fn softmax(Tensor x) -> Tensor {
    let e = exp(x - max(x, dims=[-1], keepdim=true))
    return e / sum(e, dims=[-1], keepdim=true)
}

fn dense(Tensor x, Tensor w, Tensor b) -> Tensor {
    return maximum(matmul(x, w) + b, 0.0)
}

fn mlp(Tensor x, Tensor w1, Tensor b1, Tensor w2, Tensor b2) -> Tensor {
    let h = matmul(x, w1) + b1
    let g = 0.5 * h * (1.0 + tanh(0.7978845608 * (h + 0.044715 * h * h * h)))
    return matmul(g, w2) + b2
}

fn two_results(Tensor x) -> (Tensor, Tensor) {
    let y = x * 2.0
    return (y, sum(y * y, dims=[-1]))
}

fn shuffled(Tensor x, Tensor y) -> (Tensor, Tensor) {
    return (transpose(y, [1, 0]), matmul(transpose(x, [1, 0]), y))
}

fn reshaped(Tensor x) -> Tensor {
    return reshape(x * 3.0, [-1]) * 2.0
}

fn colsum(Tensor x) -> Tensor {
    return sum(x, dims=[0])
}

fn scanned(Tensor x) -> Tensor {
    return cumsum(x, dim=1) + 1.0
}

fn conv(Tensor x, Tensor w) -> Tensor {
    return conv2d(x, w, padding=[1, 1])
}
"#;

fn session(threads: usize) -> Session {
    let options = SessionOptions { threads, ..SessionOptions::default() };
    let s = Session::with_options(options);
    s.load_str("profile.tfn", SRC).expect("the source loads");
    s
}

/// Deterministic data of `shape`.
fn data(shape: &[usize], seed: u32) -> ArrayD<f32> {
    let n: usize = shape.iter().product();
    let values =
        (0..n).map(|i| (((i as u32).wrapping_mul(2654435761) ^ seed) % 1000) as f32 / 500.0 - 1.0);
    ArrayD::from_shape_vec(IxDyn(shape), values.collect()).expect("shape")
}

/// A function with its keyword arguments' shapes.
struct Case {
    function: &'static str,
    args: Vec<(&'static str, Vec<usize>)>,
    /// The strategy of each kernel, in order.
    strategies: &'static [&'static str],
}

fn cases() -> Vec<Case> {
    let case = |function, args: &[(&'static str, &[usize])], strategies| Case {
        function,
        args: args.iter().map(|(n, s)| (*n, s.to_vec())).collect(),
        strategies,
    };
    vec![
        case("gelu", &[("x", &[4096])], &["loop"]),
        case("softmax", &[("x", &[64, 256])], &["rows"]),
        case("dense", &[("x", &[32, 64]), ("w", &[64, 48]), ("b", &[48])], &["matmul"]),
        case(
            "mlp",
            &[("x", &[16, 32]), ("w1", &[32, 64]), ("b1", &[64]), ("w2", &[64, 32]), ("b2", &[32])],
            &["matmul", "matmul"],
        ),
        case("two_results", &[("x", &[128, 64])], &["rows"]),
        case("shuffled", &[("x", &[64, 32]), ("y", &[64, 32])], &["copy", "matmul"]),
        case("reshaped", &[("x", &[16, 8])], &["loop", "view", "loop"]),
        case("colsum", &[("x", &[256, 16])], &["columns"]),
        case("scanned", &[("x", &[8, 64])], &["scan", "loop"]),
        case("conv", &[("x", &[2, 3, 12, 12]), ("w", &[4, 3, 3, 3])], &["window"]),
    ]
}

/// The number of kernels the pass pipeline plans for the call (what the session compiles).
fn planned_kernels(s: &Session, case: &Case) -> usize {
    let library = s.library();
    let specs: Vec<(String, ArgSpec)> = case
        .args
        .iter()
        .map(|(n, shape)| {
            let dims = shape.iter().map(|&d| if d == 1 { DimSpec::One } else { DimSpec::Dyn });
            (n.to_string(), ArgSpec::Tensor { dtype: tfn::DType::F32, dims: dims.collect() })
        })
        .collect();
    let sizes = |p: &ParamSource| match p {
        ParamSource::Keyword(k) => case.args.iter().find(|(n, _)| n == k).map(|(_, s)| s.clone()),
        _ => None,
    };
    let instance =
        tfn_ir::lower::instantiate_for_sizes(&library, case.function, &[], &specs, &sizes)
            .expect("instantiates");
    tfn::pipeline::plan(&library, &instance.graph, true).expect("plans").fused.kernels.len()
}

fn arrays(case: &Case) -> Vec<(&'static str, ArrayD<f32>)> {
    case.args.iter().enumerate().map(|(i, (n, s))| (*n, data(s, i as u32))).collect()
}

fn assert_close(a: f64, b: f64, what: &str) {
    assert!((a - b).abs() < 1e-6, "{what}: {a} vs {b}");
}

/// The invariants every profile keeps.
fn check_structure(p: &Profile, case: &Case, kernels: usize, calls: usize) {
    let f = case.function;
    assert_eq!(p.kernels.len(), kernels, "{f}: one entry per fused kernel");
    let strategies: Vec<&str> = p.kernels.iter().map(|k| k.strategy).collect();
    assert_eq!(strategies, case.strategies, "{f}");
    for (i, k) in p.kernels.iter().enumerate() {
        assert_eq!(k.index, i, "{f}: kernels in order");
        assert!(!k.ops.is_empty(), "{f}: kernel {i} names its ops");
        if k.strategy == "view" {
            assert_eq!((k.bytes, k.flops), (0, 0), "{f}: a reshape moves nothing");
        } else {
            assert!(k.bytes > 0 && p.gbps(k) > 0.0, "{f}: kernel {i} moves bytes: {k:?}");
            assert!(p.gflops(k) >= 0.0, "{f}");
        }
    }
    assert_eq!(p.calls, calls as u64, "{f}");
    assert_eq!(p.counted, calls.div_ceil(2) as u64, "{f}: the faster half");
    assert!(p.total >= p.kernel_time(), "{f}: kernels run inside the calls");
    let kernel_shares: f64 = p.kernels.iter().map(|k| p.kernel_share(k)).sum();
    assert_close(kernel_shares, 100.0, &format!("{f}: kernel shares"));
    let call_shares: f64 =
        p.kernels.iter().map(|k| p.call_share(k.time)).sum::<f64>() + p.call_share(p.outside());
    assert_close(call_shares, 100.0, &format!("{f}: call shares with the time outside"));
    assert_close(
        p.micros_per_call(p.kernel_time()) + p.micros_per_call(p.outside()),
        p.micros_per_call(p.total),
        f,
    );
    // The table has a row per kernel plus the header lines and the time outside kernels.
    let table = p.to_string();
    assert_eq!(table.lines().count(), kernels + 3, "{table}");
    assert!(table.lines().last().is_some_and(|l| l.contains("outside")), "{table}");
    let json = p.to_json();
    assert_eq!(json.matches("\"id\":").count(), kernels, "{json}");
    assert!(json.starts_with('{') && json.ends_with('}') && !json.contains('\n'), "{json}");
}

#[test]
fn a_profile_has_one_entry_per_fused_kernel_and_shares_that_add_up() {
    for threads in [1, 2] {
        let s = session(threads);
        for case in cases() {
            let kernels = planned_kernels(&s, &case);
            let arrays = arrays(&case);
            let kwargs: Vec<(&str, Value)> =
                arrays.iter().map(|(n, a)| (*n, Value::from(a.view()))).collect();
            let expected = s.call_kw(case.function, &[], &kwargs).expect("call");
            let mut results: Vec<Tensor> =
                expected.iter().map(|v| v.as_tensor().expect("tensor").to_tensor()).collect();
            // Garbage in the outputs first: the profiled calls must overwrite all of it.
            for r in &mut results {
                if let Tensor::F32(a) = r {
                    a.fill(f32::NAN);
                }
            }
            let mut outputs: Vec<OutputMut> = results.iter_mut().map(OutputMut::from).collect();
            let p = s.profile_into(case.function, &[], &kwargs, &mut outputs, 7).expect("profile");
            check_structure(&p, &case, kernels, 7);
            assert_eq!(p.threads, threads);
            for (got, want) in results.iter().zip(&expected) {
                let want = want.as_tensor().expect("tensor").to_tensor();
                assert_eq!(got, &want, "{}: profiled calls compute the same", case.function);
            }
            // The allocating form profiles the same kernels.
            let q = s.profile(case.function, &[], &kwargs, 1).expect("profile");
            assert_eq!((q.kernels.len(), q.calls, q.counted), (kernels, 1, 1));
        }
    }
}

#[test]
fn bytes_and_flops_follow_the_documented_conventions() {
    let s = session(1);
    let by_name = |name: &str| cases().into_iter().find(|c| c.function == name).expect("case");
    let profile = |case: &Case| {
        let arrays = arrays(case);
        let kwargs: Vec<(&str, Value)> =
            arrays.iter().map(|(n, a)| (*n, Value::from(a.view()))).collect();
        s.profile(case.function, &[], &kwargs, 3).expect("profile")
    };
    let costs =
        |p: &Profile| -> Vec<(u64, u64)> { p.kernels.iter().map(|k| (k.bytes, k.flops)).collect() };
    // gelu: read x, write y; after the FMA/Horner rules, mul×3 mul_add×2 tanh per element
    // (a `mul_add` counts 2).
    let n = 4096u64;
    let p = profile(&by_name("gelu"));
    assert_eq!(p.kernels[0].ops, "mul×3 mul_add×2 tanh");
    assert_eq!(costs(&p), [(8 * n, 8 * n)]);
    // softmax: max, sub, exp, sum and a multiply over every element, one reciprocal per row
    // (the `div-by-row` rule).
    let (r, c) = (64u64, 256u64);
    assert_eq!(costs(&profile(&by_name("softmax"))), [(8 * r * c, 5 * r * c + r)]);
    // dense: 2·M·N·K, then add and maximum per output element; x, w, b read, y written.
    let (m, k, nn) = (32u64, 64u64, 48u64);
    let bytes = 4 * (m * k + k * nn + nn + m * nn);
    assert_eq!(costs(&profile(&by_name("dense"))), [(bytes, 2 * m * nn * k + 2 * m * nn)]);
    // Two results: y = 2x is written (returned) and y·y summed per row.
    let (r, c) = (128u64, 64u64);
    assert_eq!(costs(&profile(&by_name("two_results"))), [(4 * (2 * r * c + r), 3 * r * c)]);
    // A copied transpose moves its elements; the matmul reads x through a view (in place).
    let (a, b) = (64u64, 32u64);
    let p = profile(&by_name("shuffled"));
    assert_eq!(costs(&p), [(8 * a * b, 0), (4 * (2 * a * b + b * b), 2 * b * b * a)]);
    assert_eq!(p.kernels[1].ops, "transpose matmul");
    // A column sum reads every element once.
    assert_eq!(costs(&profile(&by_name("colsum"))), [(4 * (256 * 16 + 16), 256 * 16)]);
    // conv2d, padding 1: 2·N·Cout·OH·OW·Cin·KH·KW.
    let flops = 2 * 2 * 4 * 12 * 12 * 3 * 3 * 3;
    let bytes = 4 * (2 * 3 * 12 * 12 + 4 * 3 * 3 * 3 + 2 * 4 * 12 * 12);
    assert_eq!(costs(&profile(&by_name("conv"))), [(bytes, flops)]);
}

#[test]
fn profile_errors_are_values() {
    let x = data(&[16], 0);
    let kwargs = [("x", Value::from(x.view()))];
    let interp = Session::with_backend(Backend::Interp);
    interp.load_str("profile.tfn", SRC).expect("loads");
    match interp.profile("gelu", &[], &kwargs, 3) {
        Err(Error::Config(m)) => assert!(m.contains("JIT"), "{m}"),
        other => panic!("the interpreter has no kernels to profile: {other:?}"),
    }
    let s = session(1);
    assert!(matches!(s.profile("gelu_typo", &[], &kwargs, 3), Err(Error::UnknownFunction { .. })));
    let mut wrong = ArrayD::<f32>::zeros(IxDyn(&[15]));
    let mut outputs = [OutputMut::from(wrong.view_mut())];
    assert!(matches!(
        s.profile_into("gelu", &[], &kwargs, &mut outputs, 3),
        Err(Error::Output { .. })
    ));
    let (bad, w) = (data(&[2, 3], 1), data(&[4, 5], 2));
    let kw = [("x", Value::from(bad.view())), ("w", Value::from(w.view()))];
    assert!(s.profile("dense", &[], &kw, 3).is_err(), "a call that does not instantiate fails");
}
