//! `tfnc gradcheck`: checks the reverse-mode gradients of a file's functions against central
//! finite differences in f64, at random inputs with a random cotangent.
//!
//! For each function: every tensor parameter gets a shape (given, or the first candidate of
//! [`CANDIDATE_SHAPES`] — the same shape for every tensor — that the function lowers for),
//! float tensors are f64 and drawn uniformly from `[-1.5, 1.5]` (or, while that gives a
//! non-finite output, from the next of [`INPUT_RANGES`]: `[0.2, 1.5]` for `log`, `[-0.9, 0.9]`
//! for `asin`), integer tensors from `0..3`, bool tensors at random.
//! Attributes take their defaults; a function with an attribute parameter without a default,
//! or a tensor parameter of a fixed non-f64 float dtype, is skipped and reported as such.
//!
//! The error of one gradient element is `|analytic - numeric| / max(1, |analytic|, |numeric|)`
//! (relative, with an absolute floor for gradients near zero); each input reports its worst.

use ndarray::Dimension;
use ndarray::{ArrayD, IxDyn};
use std::fmt::Write;
use tfn_ir::library::{DTypeRef, FunctionDef, ParamType};
use tfn_ir::rng::SplitMix;
use tfn_ir::{ArgSpec, DType, DimSpec, FileId, Library, Tensor};
use tfn_passes::autodiff::vjp;

/// Where float inputs are drawn, in order, until every output is finite: wide, then positive
/// (`log`, `sqrt`), then inside `(-1, 1)` (`asin`, `acos`), then both.
const INPUT_RANGES: [(f64, f64); 4] = [(-1.5, 1.5), (0.2, 1.5), (-0.9, 0.9), (0.2, 0.9)];

/// Shapes tried, in order, for a function without given shapes (all tensors get the same).
pub const CANDIDATE_SHAPES: [&[usize]; 5] = [&[3, 4], &[4, 4], &[4], &[2, 3, 4], &[]];

/// Settings of a check.
#[derive(Clone, Debug, PartialEq)]
pub struct GradcheckOptions {
    pub seed: u64,
    /// Central-difference step.
    pub step: f64,
    /// Largest accepted error (see the module docs).
    pub tolerance: f64,
    /// Shapes of the tensor parameters by name; `None`: tried from [`CANDIDATE_SHAPES`].
    pub shapes: Option<Vec<(String, Vec<usize>)>>,
}

impl Default for GradcheckOptions {
    fn default() -> GradcheckOptions {
        GradcheckOptions { seed: 0, step: 1e-6, tolerance: 1e-5, shapes: None }
    }
}

/// The worst gradient error of one differentiated input.
#[derive(Clone, Debug, PartialEq)]
pub struct InputError {
    pub param: String,
    pub worst_error: f64,
    /// Index of the worst element, with the two values there.
    pub at: Vec<usize>,
    pub analytic: f64,
    pub numeric: f64,
}

/// What happened to one function.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Checked {
        shapes: Vec<(String, Vec<usize>)>,
        /// Each tensor parameter's dtype, in the order of `shapes`: f64, or what a parameter
        /// the function indexes with was given (i64).
        dtypes: Vec<DType>,
        inputs: Vec<InputError>,
        passed: bool,
    },
    /// Not checked: no tensor input to differentiate, or no usable signature.
    Skipped { reason: String },
    /// The gradient could not be built or run.
    Failed { error: String },
}

#[derive(Clone, Debug, PartialEq)]
pub struct FunctionReport {
    pub function: String,
    pub outcome: Outcome,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct GradcheckReport {
    pub functions: Vec<FunctionReport>,
}

impl GradcheckReport {
    /// No function failed (skipped ones do not count).
    pub fn passed(&self) -> bool {
        self.functions.iter().all(|f| match &f.outcome {
            Outcome::Checked { passed, .. } => *passed,
            Outcome::Skipped { .. } => true,
            Outcome::Failed { .. } => false,
        })
    }

    /// One line per function, then one per input.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for f in &self.functions {
            match &f.outcome {
                Outcome::Checked { shapes, dtypes, inputs, passed } => {
                    let shapes: Vec<String> = shapes
                        .iter()
                        .zip(dtypes)
                        .map(|((n, s), d)| match d {
                            DType::F64 => format!("{n}={s:?}"),
                            d => format!("{n}={d}{s:?}"),
                        })
                        .collect();
                    let verdict = if *passed { "ok" } else { "FAILED" };
                    let _ = writeln!(out, "{verdict:6} {} ({})", f.function, shapes.join(", "));
                    for i in inputs {
                        let _ = writeln!(
                            out,
                            "         d/d{}: worst error {:.2e} at {:?} (analytic {:.6e}, numeric {:.6e})",
                            i.param, i.worst_error, i.at, i.analytic, i.numeric
                        );
                    }
                }
                Outcome::Skipped { reason } => {
                    let _ = writeln!(out, "skip   {}: {reason}", f.function);
                }
                Outcome::Failed { error } => {
                    let _ = writeln!(out, "FAILED {}: {error}", f.function);
                }
            }
        }
        out
    }
}

/// Why no check ran at all.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum GradcheckError {
    #[error("no function `{0}` is defined in the file")]
    UnknownFunction(String),
}

/// Checks every composed function defined in `file` (or only `function`, by base name or
/// `name.overload`), in name order.
pub fn gradcheck(
    lib: &Library,
    file: FileId,
    function: Option<&str>,
    options: &GradcheckOptions,
) -> Result<GradcheckReport, GradcheckError> {
    let mut selected: Vec<&FunctionDef> = lib
        .functions
        .values()
        .flatten()
        .filter(|f| f.span.file == file && matches!(f.body, tfn_ir::library::Body::Composed(_)))
        .filter(|f| function.is_none_or(|n| n == f.name || n == f.full_name()))
        .collect();
    selected.sort_by_key(|f| f.full_name());
    if let (Some(name), true) = (function, selected.is_empty()) {
        return Err(GradcheckError::UnknownFunction(name.to_string()));
    }
    let functions = selected.into_iter().map(|f| check_function(lib, f, options)).collect();
    Ok(GradcheckReport { functions })
}

/// Checks one function (see the module docs).
pub fn check_function(
    lib: &Library,
    f: &FunctionDef,
    options: &GradcheckOptions,
) -> FunctionReport {
    let outcome = match check(lib, f, options) {
        Ok(o) | Err(o) => o,
    };
    FunctionReport { function: f.full_name(), outcome }
}

/// Whether an untyped (or generic) tensor parameter may also be tried as an i64 tensor, for a
/// function that uses it as an index (`index_select(table, tokens)`).
fn may_be_index(f: &FunctionDef, d: &DTypeRef) -> bool {
    match d {
        DTypeRef::Any => true,
        DTypeRef::Var(v) => f
            .type_params
            .iter()
            .find(|t| &t.name == v)
            .is_none_or(|t| t.allowed.as_ref().is_none_or(|a| a.contains(&DType::I64))),
        DTypeRef::Fixed(_) => false,
    }
}

/// The dtypes tried for the tensor parameters, in order: every flexible one f64 first, then
/// each subset of them (smallest first) as i64 index tensors, leaving at least one float.
fn dtype_choices(base: &[DType], flexible: &[usize]) -> Vec<Vec<DType>> {
    let flexible = &flexible[..flexible.len().min(MAX_INDEX_GUESSES)];
    let mut subsets: Vec<u32> = (0..1u32 << flexible.len()).collect();
    subsets.sort_by_key(|m| m.count_ones());
    subsets
        .into_iter()
        .map(|mask| {
            let mut dtypes = base.to_vec();
            for (bit, &i) in flexible.iter().enumerate() {
                if mask & (1 << bit) != 0 {
                    dtypes[i] = DType::I64;
                }
            }
            dtypes
        })
        .filter(|d| d.iter().any(|t| t.is_float()))
        .collect()
}

/// How many untyped tensor parameters are tried as index tensors (2^N dtype choices).
const MAX_INDEX_GUESSES: usize = 4;

/// The dtype a tensor parameter is checked with, or why none fits.
fn param_dtype(f: &FunctionDef, d: &DTypeRef) -> Result<DType, String> {
    match d {
        DTypeRef::Fixed(DType::F64) | DTypeRef::Any => Ok(DType::F64),
        DTypeRef::Fixed(d) if d.is_float() => Err(format!("a tensor parameter is fixed to {d}")),
        DTypeRef::Fixed(d) => Ok(*d),
        DTypeRef::Var(v) => match f.type_params.iter().find(|t| &t.name == v) {
            Some(t) if t.allowed.as_ref().is_some_and(|a| !a.contains(&DType::F64)) => {
                Err(format!("`{v}` cannot be f64"))
            }
            _ => Ok(DType::F64),
        },
    }
}

fn check(lib: &Library, f: &FunctionDef, options: &GradcheckOptions) -> Result<Outcome, Outcome> {
    let skip = |reason: String| Outcome::Skipped { reason };
    let mut tensors = Vec::new();
    let mut flexible = Vec::new();
    for p in &f.params {
        match &p.ty {
            ParamType::Tensor(d) => {
                if may_be_index(f, d) {
                    flexible.push(tensors.len());
                }
                tensors.push((p.name.clone(), param_dtype(f, d).map_err(skip)?))
            }
            ParamType::TensorList(_) => {
                return Err(skip(format!("`{}` is a list of tensors", p.name)))
            }
            _ if p.default.is_none() => {
                return Err(skip(format!("attribute `{}` has no default", p.name)))
            }
            _ => {}
        }
    }
    if !tensors.iter().any(|(_, d)| d.is_float()) {
        return Err(skip("no float tensor parameter".into()));
    }
    let candidates: Vec<Vec<Vec<usize>>> = match &options.shapes {
        Some(given) => {
            let shape_of = |n: &str| given.iter().find(|(g, _)| g == n).map(|(_, s)| s.clone());
            let shapes: Option<Vec<Vec<usize>>> =
                tensors.iter().map(|(n, _)| shape_of(n)).collect();
            vec![shapes.ok_or_else(|| skip("no shape given for every tensor parameter".into()))?]
        }
        None => CANDIDATE_SHAPES.iter().map(|s| vec![s.to_vec(); tensors.len()]).collect(),
    };
    let base: Vec<DType> = tensors.iter().map(|(_, d)| *d).collect();
    let mut first_error = None;
    for dtypes in dtype_choices(&base, &flexible) {
        let typed: Vec<(String, DType)> =
            tensors.iter().map(|(n, _)| n.clone()).zip(dtypes).collect();
        match check_typed(lib, f, &typed, &candidates, options) {
            Err(Outcome::Skipped { reason }) => {
                first_error.get_or_insert(reason);
            }
            done => return done,
        }
    }
    Err(skip(first_error.unwrap_or_else(|| "no dtype fits its signature".into())))
}

/// [`check`] with each tensor parameter's dtype chosen: the first candidate shapes the
/// function lowers for, or `Skipped` when none does.
fn check_typed(
    lib: &Library,
    f: &FunctionDef,
    tensors: &[(String, DType)],
    candidates: &[Vec<Vec<usize>>],
    options: &GradcheckOptions,
) -> Result<Outcome, Outcome> {
    let skip = |reason: String| Outcome::Skipped { reason };
    let mut last_error = String::new();
    for shapes in candidates.iter().cloned() {
        let keywords: Vec<(String, ArgSpec)> = tensors
            .iter()
            .zip(&shapes)
            .map(|((n, d), s)| {
                let dims =
                    s.iter().map(|&k| if k == 1 { DimSpec::One } else { DimSpec::Dyn }).collect();
                (n.clone(), ArgSpec::Tensor { dtype: *d, dims })
            })
            .collect();
        // The sizes decide whether derived sizes are 1, as for a call.
        let sizes = |src: &tfn_ir::ParamSource| match src {
            tfn_ir::ParamSource::Keyword(k) => {
                tensors.iter().position(|(n, _)| n == k).map(|i| shapes[i].clone())
            }
            _ => None,
        };
        let name = f.full_name();
        let instance = tfn_ir::lower::instantiate_for_sizes(lib, &name, &[], &keywords, &sizes);
        let concrete: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
        match instance.map_err(|e| e.to_string()).and_then(|i| {
            let signature = if i.has_loops() {
                i.program().map_err(|e| e.to_string())?.signature
            } else {
                i.graph.clone()
            };
            tfn_ir::bind_sizes(&signature, &concrete).map(|_| i).map_err(|e| e.to_string())
        }) {
            Ok(instance) => {
                // A `while` loop has no gradient (E0805): nothing to check.
                let program = instance.has_loops().then(|| instance.program().ok()).flatten();
                if let Some(label) = program.as_ref().and_then(crate::program::refuse_while) {
                    return Err(skip(format!(
                        "it runs the `while` loop `{label}`, which has no gradient (E0805)"
                    )));
                }
                // A loop body's sizes are checked only when it runs: try the shapes first.
                if instance.has_loops() {
                    let trial: Vec<Tensor> = tensors
                        .iter()
                        .zip(&shapes)
                        .map(|((_, d), s)| {
                            zeros_like(&random_tensor(&mut SplitMix::new(0), *d, s, 0.0, 1.0))
                        })
                        .collect();
                    let fits = Eval::new(lib, &instance, tensors).and_then(|e| e.forward(&trial));
                    if let Err(e) = fits {
                        last_error = e;
                        continue;
                    }
                }
                let named: Vec<(String, Vec<usize>)> =
                    tensors.iter().map(|(n, _)| n.clone()).zip(shapes.clone()).collect();
                return run_check(lib, &instance, tensors, named, options);
            }
            Err(e) => last_error = e,
        }
    }
    Err(skip(format!("no candidate shape fits its signature (last: {last_error})")))
}

fn run_check(
    lib: &Library,
    instance: &tfn_ir::Instance,
    tensors: &[(String, DType)],
    shapes: Vec<(String, Vec<usize>)>,
    options: &GradcheckOptions,
) -> Result<Outcome, Outcome> {
    let fail = |error: String| Outcome::Failed { error };
    let eval = Eval::new(lib, instance, tensors).map_err(fail)?;
    let mut rng = SplitMix::new(options.seed);
    // Graph parameters are the tensor parameters in order (no lists: those were skipped).
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    for (lo, hi) in INPUT_RANGES {
        inputs = tensors
            .iter()
            .zip(&shapes)
            .map(|((_, d), (_, s))| random_tensor(&mut rng, *d, s, lo, hi))
            .collect();
        outputs = eval.forward(&inputs).map_err(fail)?;
        if outputs.iter().all(all_finite) {
            break;
        }
    }
    let cotangents: Vec<Tensor> = outputs
        .iter()
        .map(|o| match o {
            Tensor::F64(a) => Tensor::F64(a.mapv(|_| rng.uniform(-1.0, 1.0))),
            other => zeros_like(other),
        })
        .collect();
    let (grads, differentiated) = eval.gradients(&inputs, &cotangents).map_err(fail)?;
    let objective = |xs: &[Tensor]| -> Result<f64, Outcome> {
        let outs = eval.forward(xs).map_err(fail)?;
        Ok(outs
            .iter()
            .zip(&cotangents)
            .map(|(o, c)| match (o, c) {
                (Tensor::F64(o), Tensor::F64(c)) => (o * c).sum(),
                _ => 0.0,
            })
            .sum())
    };
    let h = options.step;
    let mut reports = Vec::new();
    for (g, &p) in grads.iter().zip(&differentiated) {
        let (Tensor::F64(g), Some(Tensor::F64(x))) = (g, inputs.get(p)) else {
            return Err(fail(format!("the gradient of parameter {p} is not f64")));
        };
        let name = tensors.get(p).map_or_else(|| format!("#{p}"), |(n, _)| n.clone());
        let mut worst = InputError {
            param: name,
            worst_error: 0.0,
            at: Vec::new(),
            analytic: 0.0,
            numeric: 0.0,
        };
        for (idx, &analytic) in g.indexed_iter() {
            let shifted = |delta: f64| {
                let mut xs = inputs.clone();
                let mut moved = x.clone();
                if let Some(e) = moved.get_mut(idx.clone()) {
                    *e += delta;
                }
                xs[p] = Tensor::F64(moved);
                xs
            };
            let numeric = (objective(&shifted(h))? - objective(&shifted(-h))?) / (2.0 * h);
            let err = (analytic - numeric).abs() / 1f64.max(analytic.abs()).max(numeric.abs());
            if err > worst.worst_error || err.is_nan() {
                worst.worst_error = if err.is_nan() { f64::INFINITY } else { err };
                worst.at = idx.slice().to_vec();
                worst.analytic = analytic;
                worst.numeric = numeric;
            }
        }
        reports.push(worst);
    }
    let passed = reports.iter().all(|r| r.worst_error <= options.tolerance);
    let dtypes = tensors.iter().map(|(_, d)| *d).collect();
    Ok(Outcome::Checked { shapes, dtypes, inputs: reports, passed })
}

/// How the check evaluates the function and its gradient: the interpreter on the graph and
/// its gradient graph, or, for a function with loops (a program of steps), an interpreter
/// session's `call` and `vjp`.
enum Eval<'a> {
    Graph { graph: &'a tfn_ir::Graph, vjp: tfn_passes::autodiff::Vjp },
    Program { session: crate::Session, function: String, names: Vec<String> },
}

impl<'a> Eval<'a> {
    fn new(
        lib: &Library,
        instance: &'a tfn_ir::Instance,
        tensors: &[(String, DType)],
    ) -> Result<Eval<'a>, String> {
        if !instance.has_loops() {
            let vjp = vjp(lib, instance).map_err(|e| e.to_string())?;
            return Ok(Eval::Graph { graph: &instance.graph, vjp });
        }
        let options = crate::SessionOptions {
            backend: crate::Backend::Interp,
            optimize: false,
            ..Default::default()
        };
        let session = crate::Session::with_library(options, std::sync::Arc::new(lib.clone()));
        let names = tensors.iter().map(|(n, _)| n.clone()).collect();
        Ok(Eval::Program { session, function: instance.function.clone(), names })
    }

    fn forward(&self, xs: &[Tensor]) -> Result<Vec<Tensor>, String> {
        match self {
            Eval::Graph { graph, .. } => tfn_ir::run(graph, xs).map_err(|e| e.to_string()),
            Eval::Program { session, function, names } => {
                let kw: Vec<(&str, crate::Value)> = names
                    .iter()
                    .zip(xs)
                    .map(|(n, x)| (n.as_str(), crate::Value::from(x.clone())))
                    .collect();
                let out = session.call_kw(function, &[], &kw).map_err(|e| e.to_string())?;
                Ok(out.into_iter().filter_map(|v| v.into_tensor()).collect())
            }
        }
    }

    /// The gradients, and the parameters they are of.
    fn gradients(
        &self,
        xs: &[Tensor],
        cots: &[Tensor],
    ) -> Result<(Vec<Tensor>, Vec<usize>), String> {
        match self {
            Eval::Graph { vjp, .. } => {
                let mut all = xs.to_vec();
                all.extend(cots.iter().cloned());
                let g = tfn_ir::run(&vjp.graph, &all).map_err(|e| e.to_string())?;
                Ok((g, vjp.differentiated.clone()))
            }
            Eval::Program { session, function, names } => {
                let kw: Vec<(&str, crate::Value)> = names
                    .iter()
                    .zip(xs)
                    .map(|(n, x)| (n.as_str(), crate::Value::from(x.clone())))
                    .collect();
                let cots: Vec<crate::Value> =
                    cots.iter().map(|c| crate::Value::from(c.clone())).collect();
                let g = session.vjp_kw(function, &[], &kw, &cots).map_err(|e| e.to_string())?;
                let differentiated =
                    xs.iter().enumerate().filter(|(_, x)| x.dtype().is_float()).map(|(i, _)| i);
                Ok((
                    g.into_iter().filter_map(|v| v.into_tensor()).collect(),
                    differentiated.collect(),
                ))
            }
        }
    }
}

fn all_finite(t: &Tensor) -> bool {
    match t {
        Tensor::F64(a) => a.iter().all(|x| x.is_finite()),
        Tensor::F32(a) => a.iter().all(|x| x.is_finite()),
        _ => true,
    }
}

fn zeros_like(t: &Tensor) -> Tensor {
    let shape = IxDyn(t.shape());
    match t.dtype() {
        DType::Bool => Tensor::Bool(ArrayD::from_elem(shape, false)),
        DType::I32 => Tensor::I32(ArrayD::zeros(shape)),
        DType::I64 => Tensor::I64(ArrayD::zeros(shape)),
        DType::F32 => Tensor::F32(ArrayD::zeros(shape)),
        DType::F64 => Tensor::F64(ArrayD::zeros(shape)),
        DType::I8 => Tensor::I8(ArrayD::zeros(shape)),
        DType::U8 => Tensor::U8(ArrayD::zeros(shape)),
        DType::F16 => Tensor::F16(ArrayD::from_elem(shape, Default::default())),
        DType::BF16 => Tensor::BF16(ArrayD::from_elem(shape, Default::default())),
    }
}

fn random_tensor(rng: &mut SplitMix, dtype: DType, shape: &[usize], lo: f64, hi: f64) -> Tensor {
    let shape = IxDyn(shape);
    match dtype {
        DType::Bool => Tensor::Bool(ArrayD::from_shape_fn(shape, |_| rng.uniform(0.0, 1.0) < 0.5)),
        DType::I32 => Tensor::I32(ArrayD::from_shape_fn(shape, |_| rng.uniform(0.0, 3.0) as i32)),
        DType::I64 => Tensor::I64(ArrayD::from_shape_fn(shape, |_| rng.uniform(0.0, 3.0) as i64)),
        DType::F32 => Tensor::F32(ArrayD::from_shape_fn(shape, |_| rng.uniform(lo, hi) as f32)),
        DType::F64 => Tensor::F64(ArrayD::from_shape_fn(shape, |_| rng.uniform(lo, hi))),
        DType::I8 => Tensor::I8(ArrayD::from_shape_fn(shape, |_| rng.uniform(0.0, 3.0) as i8)),
        DType::U8 => Tensor::U8(ArrayD::from_shape_fn(shape, |_| rng.uniform(0.0, 3.0) as u8)),
        DType::F16 => Tensor::F16(ArrayD::from_shape_fn(shape, |_| {
            tfn_ir::half::f16::from_f64(rng.uniform(lo, hi))
        })),
        DType::BF16 => Tensor::BF16(ArrayD::from_shape_fn(shape, |_| {
            tfn_ir::half::bf16::from_f64(rng.uniform(lo, hi))
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = r#"
fn gelu(Tensor x) -> Tensor {
    return 0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
}
fn linear(Tensor x, Tensor w, Tensor b) -> Tensor {
    return matmul(x, w) + b
}
fn logs(Tensor x) -> Tensor {
    return log(x) * sqrt(x)
}
fn scaled(Tensor x, *, Float s) -> Tensor {
    return x * s
}
fn wrong(Tensor x) -> Tensor {
    return x * x
}
fn inverse(Tensor x) -> Tensor {
    return asin(x) * acos(x)
}
fn embed(Tensor table, Tensor tokens, Tensor scale) -> Tensor {
    return index_select(table, tokens) * scale
}
grad wrong(x) {
    x: grad * x
}
"#;

    fn library() -> (Library, FileId) {
        let mut lib = tfn_frontend::prelude().expect("prelude");
        let loader = tfn_frontend::MemLoader::new();
        if lib.grad_of("tanh", None).is_none() {
            let grads = include_str!("../frontend/prelude/grads.tfn");
            tfn_frontend::load_source(&mut lib, "<grads>", grads, &loader).expect("grads.tfn");
        }
        tfn_frontend::load_source(&mut lib, "t.tfn", SOURCE, &loader).expect("source");
        let file = tfn_frontend::file_ids(&lib, "t.tfn")[0];
        (lib, file)
    }

    #[test]
    fn checks_every_function_and_catches_a_wrong_gradient() {
        let (lib, file) = library();
        let report = gradcheck(&lib, file, None, &GradcheckOptions::default()).expect("runs");
        let outcome = |name: &str| {
            report.functions.iter().find(|f| f.function == name).map(|f| f.outcome.clone())
        };
        for ok in ["gelu", "linear", "logs", "inverse"] {
            assert!(
                matches!(outcome(ok), Some(Outcome::Checked { passed: true, .. })),
                "{ok}: {}",
                report.render()
            );
        }
        assert!(matches!(outcome("scaled"), Some(Outcome::Skipped { .. })), "{}", report.render());
        // An untyped parameter used as an index is tried as an i64 tensor (values 0..3).
        match outcome("embed") {
            Some(Outcome::Checked { passed: true, dtypes, inputs, .. }) => {
                assert_eq!(dtypes, [DType::F64, DType::I64, DType::F64]);
                let names: Vec<&str> = inputs.iter().map(|i| i.param.as_str()).collect();
                assert_eq!(names, ["table", "scale"]);
            }
            other => panic!("embed: {other:?}\n{}", report.render()),
        }
        assert!(report.render().contains("tokens=i64["), "{}", report.render());
        assert!(matches!(outcome("wrong"), Some(Outcome::Checked { passed: false, .. })));
        assert!(!report.passed());
        let only = gradcheck(&lib, file, Some("gelu"), &GradcheckOptions::default()).expect("runs");
        assert!(only.passed() && only.functions.len() == 1, "{}", only.render());
        assert!(gradcheck(&lib, file, Some("nope"), &GradcheckOptions::default()).is_err());
    }
}
