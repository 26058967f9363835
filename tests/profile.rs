//! `Session::profile` / `profile_into` (what `tfnc bench --profile` prints): the structure of
//! a profile, never its timings. One entry per fused kernel (the count the pass pipeline
//! plans), in order, with the strategy the executor runs; shares that add up to 100 %; the
//! byte and flop conventions of `docs/profiling.md` computed exactly; results identical to
//! unprofiled calls; errors as values. A function with loops: every stage's and every loop
//! body's kernels, each under its place with the loop's trips.

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

// w is [L, C, C]: a stage before the loop, a matmul per trip, a stage after it.
fn layers(Tensor x, Tensor w) -> Tensor {
    var h = x * 2.0
    for l in 0..size(w, 0) {
        h = erf(matmul(h, w[l]))
    }
    return sum(h, dims=[-1])
}

// A loop in a loop body: the outer body has a stage before and after its inner loop.
fn nested(Tensor x, Tensor w) -> Tensor {
    var h = x
    for l in 0..size(w, 0) {
        var g = matmul(h, w[l])
        for _k in 0..3 {
            g = tanh(g * 0.5)
        }
        h = h + g
    }
    return h
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
    // softmax: max, sub, exp, sum and a division over every element (which the JIT runs as
    // one reciprocal per row and multiplies).
    let (r, c) = (64u64, 256u64);
    assert_eq!(costs(&profile(&by_name("softmax"))), [(8 * r * c, 5 * r * c)]);
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
    // Nor for the stages and bodies of a function with loops.
    let (x2, w) = (data(&[4, 8], 1), data(&[2, 8, 8], 2));
    let loop_kwargs = [("x", Value::from(x2.view())), ("w", Value::from(w.view()))];
    match interp.profile("layers", &[], &loop_kwargs, 3) {
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

/// Profiles `function(x, w)` over `layers` stacked weights; checks the profiled calls compute
/// what an unprofiled call does.
fn loop_profile(s: &Session, function: &str, layers: usize, calls: usize) -> Profile {
    let (x, w) = (data(&[4, 8], 1), data(&[layers, 8, 8], 2));
    let kwargs = [("x", Value::from(x.view())), ("w", Value::from(w.view()))];
    let expected = s.call_kw(function, &[], &kwargs).expect("call");
    let expected: Vec<Tensor> =
        expected.iter().map(|v| v.as_tensor().expect("tensor").to_tensor()).collect();
    let mut results = expected.clone();
    for r in &mut results {
        if let Tensor::F32(a) = r {
            a.fill(f32::NAN);
        }
    }
    let mut outputs: Vec<OutputMut> = results.iter_mut().map(OutputMut::from).collect();
    let p = s.profile_into(function, &[], &kwargs, &mut outputs, calls).expect("profile");
    assert_eq!(results, expected, "{function}: profiled calls compute the same");
    p
}

/// What every profile of a function with loops keeps: shares that add up, kernels numbered
/// from 0 in each place, each place named once in the table, in the JSON per kernel.
fn check_loop_structure(p: &Profile) {
    assert!(p.has_loops());
    assert!(p.total >= p.kernel_time(), "kernels run inside the calls");
    let kernel_shares: f64 = p.kernels.iter().map(|k| p.kernel_share(k)).sum();
    assert_close(kernel_shares, 100.0, "kernel shares");
    let call_shares: f64 =
        p.kernels.iter().map(|k| p.call_share(k.time)).sum::<f64>() + p.call_share(p.outside());
    assert_close(call_shares, 100.0, "call shares with the time outside");
    let mut places: Vec<&str> = Vec::new();
    for (i, k) in p.kernels.iter().enumerate() {
        let first = i == 0 || p.kernels[i - 1].place != k.place;
        assert_eq!(k.index == 0, first, "kernels numbered from 0 in each place: {p:?}");
        if first {
            assert!(!places.contains(&k.place.as_str()), "{} twice: {p:?}", k.place);
            places.push(&k.place);
        }
        assert!(k.runs >= p.counted, "{k:?}");
    }
    let table = p.to_string();
    assert_eq!(table.lines().count(), p.kernels.len() + places.len() + 3, "{table}");
    for place in &places {
        assert_eq!(table.lines().filter(|l| l.trim() == *place).count(), 1, "{place}: {table}");
    }
    assert!(table.lines().last().is_some_and(|l| l.contains("(call and loop overhead)")));
    let json = p.to_json();
    assert_eq!(json.matches("\"place\":").count(), p.kernels.len(), "{json}");
}

#[test]
fn a_profile_of_a_function_with_loops_has_each_body_kernel_with_its_trips() {
    let s = session(1);
    let p = loop_profile(&s, "layers", 6, 5);
    check_loop_structure(&p);
    assert_eq!((p.calls, p.counted), (5, 3));
    let places: Vec<&str> = p.kernels.iter().map(|k| k.place.as_str()).collect();
    let body = "for l in 0..size(w, 0) (6 trips)";
    assert_eq!(places.first(), Some(&"stage 0"), "{p}");
    assert_eq!(places.last(), Some(&"stage 1"), "{p}");
    // The body: one matmul with the erf fused into its epilogue, run 6 times per call.
    let body_kernels: Vec<_> = p.kernels.iter().filter(|k| k.place == body).collect();
    assert_eq!(body_kernels.len(), 1, "{p}");
    let k = body_kernels[0];
    assert_eq!((k.index, k.strategy, k.ops.as_str()), (0, "matmul", "matmul erf"), "{p}");
    assert_eq!(k.runs, 6 * p.counted, "{p}");
    // Bytes and flops per run: [4, 8] x [8, 8] read, [4, 8] written; 2·4·8·8 + erf per element.
    assert_eq!((k.bytes, k.flops), (4 * (32 + 64 + 32), 2 * 4 * 8 * 8 + 32), "{p}");
    assert!(p.kernel_time() > std::time::Duration::ZERO && k.time > std::time::Duration::ZERO);
    let table = p.to_string();
    let row = table.lines().find(|l| l.contains("matmul erf")).expect("the body's row");
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[4], (6 * p.counted).to_string(), "its calls are its runs: {table}");
    assert!(p.to_json().contains(&format!("\"calls\":{},", 6 * p.counted)), "{}", p.to_json());
    // Another trip count: the same kernels, the new count.
    let p = loop_profile(&s, "layers", 2, 3);
    assert!(p.kernels.iter().any(|k| k.place == "for l in 0..size(w, 0) (2 trips)"), "{p}");
}

#[test]
fn a_profile_names_the_places_of_nested_loops() {
    let s = session(2);
    let p = loop_profile(&s, "nested", 2, 3);
    check_loop_structure(&p);
    let outer = "for l in 0..size(w, 0) (2 trips)";
    let places: Vec<&str> = p.kernels.iter().map(|k| k.place.as_str()).collect();
    // The outer body: the matmul before the inner loop, the inner body (3 trips per outer
    // trip, 6 runs per call), the residual add after it.
    let first = format!("{outer} / stage 0");
    let inner = format!("{outer} / for _k in 0..3 (3 trips)");
    let last = format!("{outer} / stage 1");
    for place in [&first, &inner, &last] {
        assert!(places.contains(&place.as_str()), "{place}: {p}");
    }
    let at = |place: &str| places.iter().position(|p| *p == place).expect("place");
    assert!(at(&first) < at(&inner) && at(&inner) < at(&last), "in program order: {p}");
    for k in &p.kernels {
        let per_call = if k.place == inner {
            6
        } else if k.place.starts_with(outer) {
            2
        } else {
            1
        };
        assert_eq!(k.runs, per_call * p.counted, "{k:?}");
    }
}
