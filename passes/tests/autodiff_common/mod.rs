//! Shared helpers of the autodiff tests: a library with the prelude's gradients and test
//! source, random inputs, and a finite-difference check of a function's VJP in f64.

#![allow(dead_code)]

use ndarray::ArrayD;
use tfn_ir::{ArgSpec, Attr, DimSpec, Graph, Library, Tensor};
use tfn_passes::autodiff::{vjp, vjp_graph, Vjp};

pub const GRADS: &str = include_str!("../../../frontend/prelude/grads.tfn");

/// The prelude (with its `grad` blocks) plus `user` source.
pub fn library(user: &str) -> Library {
    let render = |lib: &Library, d: Vec<tfn_ir::Diagnostic>| {
        tfn_ir::diagnostic::render_all(&d, &lib.sources)
    };
    let mut lib = tfn_frontend::prelude().unwrap_or_else(|d| panic!("prelude: {d:?}"));
    let loader = tfn_frontend::MemLoader::new();
    if lib.grad_of("tanh", None).is_none() {
        if let Err(d) = tfn_frontend::load_source(&mut lib, "<grads>", GRADS, &loader) {
            panic!("grads.tfn does not load:\n{}", render(&lib, d));
        }
    }
    if let Err(d) = tfn_frontend::load_source(&mut lib, "test.tfn", user, &loader) {
        panic!("test source does not load:\n{}", render(&lib, d));
    }
    lib
}

/// The project's one generator, with its array helper (`Rng::new(seed)`, `rng.array(..)`).
pub use tfn_test_utils::Rng;

/// An argument of a checked call.
#[derive(Clone, Debug)]
pub enum Arg {
    Tensor(ArrayD<f64>),
    Attr(Attr),
}

pub fn spec(args: &[Arg]) -> Vec<ArgSpec> {
    args.iter()
        .map(|a| match a {
            Arg::Tensor(t) => ArgSpec::Tensor {
                dtype: tfn_ir::DType::F64,
                dims: t
                    .shape()
                    .iter()
                    .map(|&d| if d == 1 { DimSpec::One } else { DimSpec::Dyn })
                    .collect(),
            },
            Arg::Attr(a) => ArgSpec::Attr(a.clone()),
        })
        .collect()
}

pub fn f64s(t: &Tensor) -> ArrayD<f64> {
    match t {
        Tensor::F64(a) => a.clone(),
        Tensor::F32(a) => a.mapv(f64::from),
        other => panic!("not a float tensor: {other:?}"),
    }
}

pub fn run(graph: &Graph, inputs: &[ArrayD<f64>]) -> Vec<ArrayD<f64>> {
    let ts: Vec<Tensor> = inputs.iter().map(|a| Tensor::F64(a.clone())).collect();
    let out = tfn_ir::run(graph, &ts).unwrap_or_else(|e| {
        panic!("running `{}` failed: {e}\n{}", graph.name, tfn_ir::print_graph(graph))
    });
    out.iter().map(f64s).collect()
}

/// `sum_k <outputs_k, cot_k>` of `graph` at `inputs`.
pub fn objective(graph: &Graph, inputs: &[ArrayD<f64>], cots: &[ArrayD<f64>]) -> f64 {
    run(graph, inputs).iter().zip(cots).map(|(o, c)| (o * c).sum()).sum()
}

/// The worst error of the VJP of `graph` against central differences at `inputs`, relative to
/// `max(1, |gradient|)` per element. Returns it with a description of where it occurs.
pub fn fd_error(graph: &Graph, v: &Vjp, inputs: &[ArrayD<f64>], seed: u64) -> (f64, String) {
    let mut rng = Rng::new(seed ^ 0x5eed);
    let outs = run(graph, inputs);
    let cots: Vec<ArrayD<f64>> = outs.iter().map(|o| rng.array(o.shape(), -1.0, 1.0)).collect();
    let mut all = inputs.to_vec();
    all.extend(cots.iter().cloned());
    let grads = run(&v.graph, &all);
    assert_eq!(grads.len(), v.differentiated.len());
    let h = 1e-6;
    let mut worst = (0.0, String::new());
    for (g, &p) in grads.iter().zip(&v.differentiated) {
        assert_eq!(g.shape(), inputs[p].shape(), "gradient shape of param {p}");
        for (idx, &analytic) in g.indexed_iter() {
            let mut plus = inputs.to_vec();
            plus[p][&idx] += h;
            let mut minus = inputs.to_vec();
            minus[p][&idx] -= h;
            let numeric =
                (objective(graph, &plus, &cots) - objective(graph, &minus, &cots)) / (2.0 * h);
            let err = (analytic - numeric).abs() / numeric.abs().max(1.0);
            if err > worst.0 || err.is_nan() {
                worst =
                    (err, format!("param {p} at {idx:?}: analytic {analytic}, numeric {numeric}"));
            }
        }
    }
    worst
}

/// Lowers `name` for `args`, builds its VJP and checks it against finite differences.
pub fn check(lib: &Library, name: &str, args: &[Arg], tol: f64, seed: u64) {
    let instance = tfn_ir::instantiate(lib, name, &spec(args), &[])
        .unwrap_or_else(|e| panic!("`{name}` does not lower: {e}"));
    let v = vjp(lib, &instance).unwrap_or_else(|e| panic!("vjp of `{name}`: {e}"));
    let inputs: Vec<ArrayD<f64>> = args
        .iter()
        .filter_map(|a| match a {
            Arg::Tensor(t) => Some(t.clone()),
            Arg::Attr(_) => None,
        })
        .collect();
    let (err, at) = fd_error(&instance.graph, &v, &inputs, seed);
    assert!(
        err <= tol,
        "`{name}`: gradient error {err:e} > {tol:e} at {at}\n{}",
        tfn_ir::print_graph(&v.graph)
    );
}

/// The VJP of a VJP graph (second order), differentiated with respect to the forward inputs.
pub fn second_order(lib: &Library, first: &Vjp) -> Vjp {
    vjp_graph(lib, &first.graph, &first.regions).unwrap_or_else(|e| panic!("second-order vjp: {e}"))
}
