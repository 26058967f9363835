//! `tfnc bench FILE FN --arg NAME=dtype[shape]...`: compile time, then median and minimum time
//! per call on random inputs, and effective bandwidth (each input read once, each output
//! written once). Outputs are preallocated and written with `call_into`: allocation is not
//! included in the timings. `--profile` then profiles as many calls kernel by kernel
//! ([`crate::Profile`], `docs/profiling.md`). Random integer arguments that index an axis
//! (`gather`, `index_select`, `scatter_add`, `index_add`) are drawn within that axis.

use super::args::{parse_value, ArgValue};
use super::{session_for, BackendArg, Outcome};
use crate::{OutputMut, Tensor, Value};
use ndarray::{ArrayD, IxDyn};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tfn_ir::lower::{instantiate_for_sizes, ArgSpec, DimSpec, ParamSource};
use tfn_ir::rng::SplitMix;
use tfn_ir::{DType, Op};

pub(super) struct BenchRequest {
    pub file: PathBuf,
    pub function: String,
    pub args: Vec<(String, String)>,
    pub backend: BackendArg,
    pub threads: Option<usize>,
    pub json: bool,
    pub millis: u64,
    /// After the timing, profile as many calls kernel by kernel.
    pub profile: bool,
}

/// The largest random input `bench` generates (4 GiB of f32), and never more bytes than
/// `TFN_MAX_TENSOR_BYTES`.
const MAX_ELEMENTS: usize = 1 << 30;

/// The fewest calls timed, whatever `--millis` says.
const MIN_CALLS: usize = 5;
/// The most calls timed: `--millis` ends earlier for a fast function (a median of 100,000
/// calls is as precise as a timer makes it).
const MAX_CALLS: usize = 100_000;

/// The most calls `--profile` records.
const MAX_PROFILED_CALLS: usize = 10_000;

/// Random data of `shape` (same sequence for every dtype); an allocation failure is an error.
/// With `below`, an integer tensor's elements are drawn from `0..below` instead (an index
/// operand: valid for the axis it indexes).
fn random_tensor(
    rng: &mut SplitMix,
    dtype: DType,
    shape: &[usize],
    below: Option<u64>,
) -> Result<Tensor, String> {
    fn array<T>(shape: &[usize], mut value: impl FnMut() -> T) -> Result<ArrayD<T>, String> {
        let n: usize = shape.iter().product();
        // Advised onto huge pages from 4 MB on, as NumPy's arrays are (`huge_pages`).
        let mut values = tfn_backend::huge_pages::with_capacity(n)
            .ok_or_else(|| format!("not enough memory for {n} elements"))?;
        values.extend((0..n).map(|_| value()));
        // The element count is the product of the shape by construction.
        ArrayD::from_shape_vec(IxDyn(shape), values).map_err(|e| e.to_string())
    }
    if let (Some(n), true) = (below, dtype.is_int()) {
        let mut index = || rng.below(n.max(1)) as i64;
        return Ok(match dtype {
            DType::I8 => Tensor::I8(array(shape, || index() as i8)?),
            DType::U8 => Tensor::U8(array(shape, || index() as u8)?),
            DType::I32 => Tensor::I32(array(shape, || index() as i32)?),
            _ => Tensor::I64(array(shape, index)?),
        });
    }
    Ok(match dtype {
        DType::F32 => Tensor::F32(array(shape, || rng.normal() as f32)?),
        DType::F64 => Tensor::F64(array(shape, || rng.normal())?),
        DType::I8 => Tensor::I8(array(shape, || (rng.normal() * 10.0) as i8)?),
        DType::U8 => Tensor::U8(array(shape, || (rng.normal() * 10.0).abs() as u8)?),
        DType::F16 => Tensor::F16(array(shape, || tfn_ir::half::f16::from_f64(rng.normal()))?),
        DType::BF16 => Tensor::BF16(array(shape, || tfn_ir::half::bf16::from_f64(rng.normal()))?),
        DType::I32 => Tensor::I32(array(shape, || (rng.normal() * 10.0) as i32)?),
        DType::I64 => Tensor::I64(array(shape, || (rng.normal() * 10.0) as i64)?),
        DType::Bool => Tensor::Bool(array(shape, || rng.normal() > 0.0)?),
    })
}

/// One `--arg` of `bench`: a tensor type to fill with random data, or a value.
enum Given {
    Random(DType, Vec<usize>),
    Value(Value<'static>),
}

/// For each random integer argument that is (through data movement and casts) the index
/// operand of an indexed op (`gather`, `index_select`, `scatter_add`, `index_add`), the size
/// of the axis it indexes (the smallest, if several), so that its random values are valid
/// indices. Empty when the function does not instantiate for these arguments (the call
/// then reports why).
fn index_bounds(
    library: &tfn_ir::Library,
    function: &str,
    given: &[(&str, Given)],
) -> HashMap<String, u64> {
    let mut bounds: HashMap<String, u64> = HashMap::new();
    let shape_of = |name: &str| -> Option<Vec<usize>> {
        match &given.iter().find(|(n, _)| *n == name)?.1 {
            Given::Random(_, shape) => Some(shape.clone()),
            Given::Value(v) => v.as_tensor().map(|t| t.shape().to_vec()),
        }
    };
    let specs: Vec<(String, ArgSpec)> = given
        .iter()
        .filter_map(|(name, g)| {
            let tensor = |dtype: DType, shape: &[usize]| ArgSpec::Tensor {
                dtype,
                dims: shape
                    .iter()
                    .map(|&d| if d == 1 { DimSpec::One } else { DimSpec::Dyn })
                    .collect(),
            };
            let spec = match g {
                Given::Random(dtype, shape) => tensor(*dtype, shape),
                Given::Value(Value::Attr(a)) => ArgSpec::Attr(a.clone()),
                Given::Value(v) => {
                    let t = v.as_tensor()?;
                    tensor(t.dtype(), t.shape())
                }
            };
            Some((name.to_string(), spec))
        })
        .collect();
    let source_shape = |p: &ParamSource| match p {
        ParamSource::Keyword(name) => shape_of(name),
        _ => None,
    };
    let Ok(instance) = instantiate_for_sizes(library, function, &[], &specs, &source_shape) else {
        return bounds;
    };
    let Some(shapes) = instance.params.iter().map(source_shape).collect::<Option<Vec<_>>>() else {
        return bounds;
    };
    let graph = &instance.graph;
    let shapes: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
    let none = tfn_ir::bind::Allocated::Only(&[]);
    // A function with loops: its outer graph also has the loops' results as parameters; the
    // program's signature (the call's parameters, the same symbols) binds the sizes. Indexed
    // ops of the outer graph are found; those inside a loop body are not (its sizes are the
    // body's own).
    let signature = match instance.has_loops() {
        true => match instance.program() {
            Ok(program) => Some(program.signature),
            Err(_) => return bounds,
        },
        false => None,
    };
    let Ok(sizes) =
        tfn_ir::bind::bind_sizes_allocating(signature.as_ref().unwrap_or(graph), &shapes, none)
    else {
        return bounds;
    };
    for node in &graph.nodes {
        let (Op::Index { axis, .. }, [data, index, ..]) = (&node.op, node.inputs.as_slice()) else {
            continue;
        };
        let Some(data_shape) = tfn_ir::bind::try_concrete_shape(&graph.ty(*data).shape, &sizes)
        else {
            continue;
        };
        let Some(&n) = data_shape.get(*axis as usize) else { continue };
        let mut stack = vec![*index];
        let mut seen = std::collections::HashSet::new();
        while let Some(v) = stack.pop() {
            if !seen.insert(v) {
                continue;
            }
            let source = graph.node(v);
            match &source.op {
                Op::Param(p) => {
                    if let Some(ParamSource::Keyword(name)) = instance.params.get(*p as usize) {
                        let bound = bounds.entry(name.clone()).or_insert(n as u64);
                        *bound = (*bound).min(n as u64);
                    }
                }
                Op::Reshape
                | Op::Transpose { .. }
                | Op::BroadcastTo
                | Op::Slice { .. }
                | Op::Concat { .. }
                | Op::Cast(_) => stack.extend(&source.inputs),
                Op::Where => stack.extend(source.inputs.iter().skip(1)),
                _ => {}
            }
        }
    }
    bounds
}

fn bytes(t: &Tensor) -> usize {
    t.shape().iter().product::<usize>() * t.dtype().size_bytes()
}

pub(super) fn bench(req: BenchRequest) -> Outcome {
    if req.profile && req.backend == BackendArg::Interp {
        return Outcome::UsageError(
            "--profile needs --backend jit: the interpreter runs no kernels".into(),
        );
    }
    let session = match session_for(&req.file, req.backend, req.threads, true, false) {
        Ok(s) => s,
        Err(o) => return o,
    };
    // The arguments: random tensors of the given types (drawn below), literals, files.
    let mut given: Vec<(&str, Given)> = Vec::new();
    for (name, text) in &req.args {
        let value = match parse_value(text) {
            Ok(ArgValue::TensorType(dtype, shape)) => {
                // Random data is generated in memory: refuse shapes that cannot fit.
                let limit = tfn_ir::bind::max_tensor_bytes().unwrap_or(0);
                let elements = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
                let bytes = elements.and_then(|n| n.checked_mul(dtype.size_bytes()));
                if elements.is_none_or(|n| n > MAX_ELEMENTS) {
                    return Outcome::UsageError(format!(
                        "--arg {name}: {dtype}{shape:?} has more than {MAX_ELEMENTS} elements, \
                         the most `bench` generates for one input"
                    ));
                }
                if bytes.is_none_or(|b| b as u64 > limit) {
                    return Outcome::UsageError(format!(
                        "--arg {name}: {dtype}{shape:?} is more than {limit} bytes \
                         (TFN_MAX_TENSOR_BYTES)"
                    ));
                }
                Given::Random(dtype, shape)
            }
            Ok(ArgValue::Literal(a)) => Given::Value(Value::Attr(a)),
            Ok(ArgValue::NpyPath(p)) => match crate::npy::read(std::path::Path::new(&p)) {
                Ok(t) => Given::Value(Value::from(t)),
                Err(e) => return Outcome::UserError(format!("error: argument `{name}`: {e}")),
            },
            Err(e) => return Outcome::UsageError(format!("--arg {name}: {e}")),
        };
        given.push((name.as_str(), value));
    }
    let names: Vec<&str> = given.iter().map(|(n, _)| *n).collect();
    let what = "a tensor's dtype and shape or a .npy file";
    if let Err(o) =
        super::ir::missing_args(&session.library(), &req.function, &names, what, "f32[4, 8]")
    {
        return o;
    }
    let bounds = index_bounds(&session.library(), &req.function, &given);
    let mut rng = SplitMix(0x9e37_79b9_7f4a_7c15);
    let mut kwargs: Vec<(&str, Value)> = Vec::new();
    let mut bytes_in = 0usize;
    for (name, g) in given {
        let value = match g {
            Given::Random(dtype, shape) => {
                let below = bounds.get(name).copied();
                match random_tensor(&mut rng, dtype, &shape, below) {
                    Ok(t) => Value::from(t),
                    Err(e) => return Outcome::UserError(format!("error: --arg {name}: {e}")),
                }
            }
            Given::Value(v) => v,
        };
        if let Some(t) = value.as_tensor() {
            bytes_in += t.shape().iter().product::<usize>() * t.dtype().size_bytes();
        }
        kwargs.push((name, value));
    }
    // First call: check + instantiate + optimise + fuse + compile.
    let start = Instant::now();
    let first = match session.call_kw(&req.function, &[], &kwargs) {
        Ok(r) => r,
        Err(e) => return Outcome::from(e),
    };
    let first_call = start.elapsed();
    let compile = session.stats().compile_time;
    let mut results: Vec<Tensor> = first.into_iter().filter_map(Value::into_tensor).collect();
    let bytes_out: usize = results.iter().map(bytes).sum();
    let mut outs: Vec<OutputMut> = results.iter_mut().map(OutputMut::from).collect();
    let mut samples: Vec<Duration> = Vec::new();
    let budget = Duration::from_millis(req.millis);
    let begin = Instant::now();
    while samples.len() < MIN_CALLS || (begin.elapsed() < budget && samples.len() < MAX_CALLS) {
        let t = Instant::now();
        if let Err(e) = session.call_into_kw(&req.function, &[], &kwargs, &mut outs) {
            return Outcome::from(e);
        }
        samples.push(t.elapsed());
    }
    samples.sort();
    let median = samples[samples.len() / 2];
    let min = samples[0];
    let gbps = (bytes_in + bytes_out) as f64 / median.as_secs_f64() / 1e9;
    let backend = match req.backend {
        BackendArg::Jit => "jit",
        BackendArg::Interp => "interp",
    };
    let threads = session.options().threads;
    // As many calls as were timed (memory: 8 bytes per kernel per call).
    let profile_calls = samples.len().min(MAX_PROFILED_CALLS);
    let profile = if req.profile {
        match session.profile_into(&req.function, &[], &kwargs, &mut outs, profile_calls) {
            Ok(p) => Some(p.with_roofline()),
            Err(e) => return Outcome::from(e),
        }
    } else {
        None
    };
    if req.json {
        let profile = profile.map(|p| format!(",\"profile\":{}", p.to_json())).unwrap_or_default();
        outln!(
            "{{\"function\":\"{}\",\"backend\":\"{backend}\",\"threads\":{threads},\"compile_us\":{:.1},\"first_call_us\":{:.1},\"median_us\":{:.3},\"min_us\":{:.3},\"calls\":{},\"bytes\":{},\"gbps\":{:.3}{profile}}}",
            req.function,
            compile.as_secs_f64() * 1e6,
            first_call.as_secs_f64() * 1e6,
            median.as_secs_f64() * 1e6,
            min.as_secs_f64() * 1e6,
            samples.len(),
            bytes_in + bytes_out,
            gbps
        );
    } else {
        outln!(
            "function     {} ({backend}, {threads} thread(s), outputs preallocated)",
            req.function
        );
        outln!(
            "compile      {:.1} µs (first call {:.1} µs)",
            compile.as_secs_f64() * 1e6,
            first_call.as_secs_f64() * 1e6
        );
        let capped = if samples.len() >= MAX_CALLS { ", the most timed" } else { "" };
        outln!(
            "median       {:.3} µs over {} calls{capped} (min {:.3} µs)",
            median.as_secs_f64() * 1e6,
            samples.len(),
            min.as_secs_f64() * 1e6
        );
        outln!("bandwidth    {gbps:.2} GB/s effective ({} bytes per call)", bytes_in + bytes_out);
        if let Some(p) = profile {
            outln!("{p}");
        }
    }
    Outcome::Ok
}
