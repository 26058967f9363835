//! Programs far larger than people write, which must compile or be refused cleanly: a long
//! chain of ops fused into kernels (its code generation once recursed per op and overflowed
//! the stack at ~17,000; one kernel of 2,000 distinct constants took 19 s to compile), and
//! calls whose inlining grows exponentially (refused, E0506).

use ndarray::{ArrayD, IxDyn};
use tfn::{Backend, Session, Tensor, Value};
use tfn_ir::lower::{self, ArgSpec, DimSpec};
use tfn_passes::fusion::MAX_KERNEL_WEIGHT;

/// `f`: `n` chained multiplications; `g`: their sum (a row reduction over the chain).
fn chain(n: usize) -> String {
    let lets: String = (1..=n).map(|i| format!("    let a{i} = a{} * 1.0001\n", i - 1)).collect();
    format!(
        "fn f(Tensor x) -> Tensor {{\n    let a0 = x\n{lets}    return a{n}\n}}\n\
         fn g(Tensor x) -> Tensor {{\n    let a0 = x\n{lets}    return sum(a{n}, dims=[-1])\n}}\n"
    )
}

fn run(backend: Backend, source: &str, name: &str, x: &ArrayD<f32>) -> ArrayD<f32> {
    let s = Session::with_backend(backend);
    s.load_str("chain.tfn", source).unwrap_or_else(|e| panic!("load: {e}"));
    let out = s.call(name, &[Value::from(x.view())]).unwrap_or_else(|e| panic!("{name}: {e}"));
    match out.into_iter().next().and_then(Value::into_tensor) {
        Some(Tensor::F32(a)) => a,
        other => panic!("expected one f32 result, got {other:?}"),
    }
}

#[test]
fn a_long_chain_compiles_on_a_small_stack() {
    // 4,000 ops on a 1 MB stack: the recursive code generation needed several KB per op in a
    // debug build. The JIT's kernel must also be the interpreter's op-by-op result.
    let source = chain(4000);
    let x = ArrayD::from_shape_vec(IxDyn(&[3, 37]), (0..111).map(|i| i as f32 * 0.25).collect())
        .expect("shape");
    let jit = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn({
            let (source, x) = (source.clone(), x.clone());
            move || ["f", "g"].map(|name| run(Backend::Jit, &source, name, &x))
        })
        .expect("spawn")
        .join()
        .expect("the JIT compiled the chain");
    // 4,000 f32 roundings (which the optimiser may regroup, folding constants, as far as its
    // time limit lets it on a busy machine) bound the difference by about 4000 * 2^-24.
    for (name, got) in ["f", "g"].iter().zip(jit) {
        let want = run(Backend::Interp, &source, name, &x);
        assert_eq!(got.shape(), want.shape(), "{name}");
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= 1e-3 * w.abs().max(1.0), "{name}: {g} vs {w}");
        }
    }
}

#[test]
fn a_chain_of_distinct_constants_is_split_into_bounded_kernels() {
    // Each `y * c + d` brings two constants of its own: as one kernel, all of them lived across
    // its loop and register allocation took time quadratic in their number.
    let n = 1500;
    let lets: String = (1..=n)
        .map(|i| {
            format!("    let a{i} = a{} * {} + {}\n", i - 1, 1.0 + i as f64 * 1e-6, i as f64 * 1e-6)
        })
        .collect();
    let source =
        format!("fn f(Tensor x) -> Tensor {{\n    let a0 = x\n{lets}    return a{n}\n}}\n");
    let s = Session::with_backend(Backend::Jit);
    s.load_str("consts.tfn", &source).unwrap_or_else(|e| panic!("load: {e}"));
    let library = s.library();
    let spec = ArgSpec::Tensor { dtype: tfn::DType::F32, dims: vec![DimSpec::Dyn] };
    let instance =
        lower::instantiate_for_sizes(&library, "f", &[], &[("x".into(), spec)], &|_| None)
            .expect("instantiates");
    let kernels =
        tfn::pipeline::plan(&library, &instance.graph, true).expect("plans").fused.kernels;
    assert!(kernels.len() > 1, "{} kernel(s)", kernels.len());
    for k in &kernels {
        assert!(k.nodes.len() <= MAX_KERNEL_WEIGHT, "a kernel of {} nodes", k.nodes.len());
    }
    let x = ArrayD::from_shape_vec(IxDyn(&[37]), (0..37).map(|i| i as f32 * 0.5 - 9.0).collect())
        .expect("shape");
    let got = run(Backend::Jit, &source, "f", &x);
    let want = run(Backend::Interp, &source, "f", &x);
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-3 * w.abs().max(1.0), "{g} vs {w}");
    }
}

#[test]
fn exponential_inlining_is_refused_with_e0506() {
    // Each level calls the one below four times: 4^9 = 262,144 multiplications inlined.
    let mut source = String::from("fn g0(Tensor x) -> Tensor {\n    return x * 1.5\n}\n");
    for i in 1..=9 {
        let p = i - 1;
        source +=
            &format!("fn g{i}(Tensor x) -> Tensor {{\n    return g{p}(g{p}(g{p}(g{p}(x))))\n}}\n");
    }
    let s = Session::with_backend(Backend::Interp);
    s.load_str("exp.tfn", &source).unwrap_or_else(|e| panic!("load: {e}"));
    let x = ArrayD::<f32>::zeros(IxDyn(&[4]));
    let started = std::time::Instant::now();
    let err = s.call("g9", &[Value::from(x.view())]).expect_err("refused").to_string();
    assert!(err.contains("E0506") && err.contains("grows past"), "{err}");
    eprintln!("refused after {:?}", started.elapsed());
}

#[test]
fn an_empty_tensor_with_a_huge_axis_is_empty_on_both_backends() {
    // `[2^61 - 1, 0]` of f32 holds no bytes: the size limit must not overflow on its other
    // axis. (Its nonzero sizes must stay within 2^63 bytes, NumPy's limit: see below.)
    let source = "fn r(Tensor x, *, Int n) -> Tensor {\n    return reshape(x, [n, -1])\n}\n";
    let x = ArrayD::<f32>::zeros(IxDyn(&[0]));
    for backend in [Backend::Interp, Backend::Jit] {
        let s = Session::with_backend(backend);
        s.load_str("r.tfn", source).unwrap_or_else(|e| panic!("load: {e}"));
        let n = Value::from(i64::MAX / 4);
        let out = s
            .call_kw("r", &[Value::from(x.view())], &[("n", n)])
            .unwrap_or_else(|e| panic!("{backend:?}: {e}"));
        let shape = out[0].as_tensor().map(|t| t.shape().to_vec());
        assert_eq!(shape, Some(vec![(i64::MAX / 4) as usize, 0]), "{backend:?}");
    }
}

#[test]
fn an_empty_tensor_whose_other_sizes_overflow_is_refused_on_both_backends() {
    // `[0, 2^32, 2^32]` holds no bytes, but its nonzero sizes multiply past 2^63: no array
    // can describe it (the interpreter panicked inside ndarray, the JIT said "internal").
    let source = "fn f(Tensor x, *, Int n) -> Tensor {\n    return full([0, n, n], 1.0) + x\n}\n\
                  fn g(Tensor x, *, Int n) -> Tensor {\n    return full([n, n, 0], 1.0)\n}\n";
    let x = ArrayD::<f32>::zeros(IxDyn(&[]));
    for backend in [Backend::Interp, Backend::Jit] {
        let s = Session::with_backend(backend);
        s.load_str("e.tfn", source).unwrap_or_else(|e| panic!("load: {e}"));
        for name in ["f", "g"] {
            let n = Value::from(1i64 << 32);
            let err = s
                .call_kw(name, &[Value::from(x.view())], &[("n", n)])
                .expect_err("refused")
                .to_string();
            assert!(err.contains("no array can describe"), "{backend:?} {name}: {err}");
            // Within 2^63 bytes (f32: 2^60 elements) it is an ordinary empty result.
            let n = Value::from(1i64 << 30);
            let out = s.call_kw(name, &[Value::from(x.view())], &[("n", n)]);
            let shape = out.unwrap_or_else(|e| panic!("{backend:?} {name}: {e}"))[0]
                .as_tensor()
                .map(|t| t.shape().to_vec());
            assert!(shape.is_some_and(|s| s.contains(&0)), "{backend:?} {name}");
        }
    }
}
