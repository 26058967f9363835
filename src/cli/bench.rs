//! `tfnc bench FILE FN --arg NAME=dtype[shape]...`: compile time, then median and minimum time
//! per call on random inputs, and effective bandwidth (each input read once, each output
//! written once). Outputs are preallocated and written with `call_into`: allocation is not
//! included in the timings. `--profile` then profiles as many calls kernel by kernel
//! ([`crate::Profile`], `docs/profiling.md`).

use super::args::{parse_value, ArgValue};
use super::{session_for, BackendArg, Outcome};
use crate::{OutputMut, Tensor, Value};
use ndarray::{ArrayD, IxDyn};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tfn_ir::rng::SplitMix;
use tfn_ir::DType;

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

/// The most calls `--profile` records.
const MAX_PROFILED_CALLS: usize = 10_000;

/// Random data of `shape` (same sequence for every dtype); an allocation failure is an error.
fn random_tensor(rng: &mut SplitMix, dtype: DType, shape: &[usize]) -> Result<Tensor, String> {
    fn array<T>(shape: &[usize], mut value: impl FnMut() -> T) -> Result<ArrayD<T>, String> {
        let n: usize = shape.iter().product();
        let mut values = Vec::new();
        values.try_reserve_exact(n).map_err(|_| format!("not enough memory for {n} elements"))?;
        values.extend((0..n).map(|_| value()));
        // The element count is the product of the shape by construction.
        ArrayD::from_shape_vec(IxDyn(shape), values).map_err(|e| e.to_string())
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

fn bytes(t: &Tensor) -> usize {
    t.shape().iter().product::<usize>() * t.dtype().size_bytes()
}

pub(super) fn bench(req: BenchRequest) -> Outcome {
    if req.profile && req.backend == BackendArg::Interp {
        return Outcome::UsageError(
            "--profile needs --backend jit: the interpreter runs no kernels".into(),
        );
    }
    let session = match session_for(&req.file, req.backend, req.threads, true) {
        Ok(s) => s,
        Err(o) => return o,
    };
    let mut rng = SplitMix(0x9e37_79b9_7f4a_7c15);
    let mut kwargs: Vec<(&str, Value)> = Vec::new();
    let mut bytes_in = 0usize;
    for (name, text) in &req.args {
        let value = match parse_value(text) {
            Ok(ArgValue::TensorType(dtype, shape)) => {
                // Random data is generated in memory: refuse shapes that cannot fit.
                let limit = tfn_ir::bind::max_tensor_bytes().unwrap_or(0);
                let fits = shape
                    .iter()
                    .try_fold(1usize, |n, &d| n.checked_mul(d))
                    .is_some_and(|n| n <= MAX_ELEMENTS && (n * dtype.size_bytes()) as u64 <= limit);
                if !fits {
                    return Outcome::UsageError(format!(
                        "--arg {name}: {dtype}{shape:?} has more than {MAX_ELEMENTS} elements \
                         or {limit} bytes (TFN_MAX_TENSOR_BYTES)"
                    ));
                }
                let t = match random_tensor(&mut rng, dtype, &shape) {
                    Ok(t) => t,
                    Err(e) => return Outcome::UserError(format!("error: --arg {name}: {e}")),
                };
                bytes_in += bytes(&t);
                Value::from(t)
            }
            Ok(ArgValue::Literal(a)) => Value::Attr(a),
            Ok(ArgValue::NpyPath(p)) => match crate::npy::read(std::path::Path::new(&p)) {
                Ok(t) => {
                    bytes_in += bytes(&t);
                    Value::from(t)
                }
                Err(e) => return Outcome::UserError(format!("error: argument `{name}`: {e}")),
            },
            Err(e) => return Outcome::UsageError(format!("--arg {name}: {e}")),
        };
        kwargs.push((name.as_str(), value));
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
    while samples.len() < 5 || (begin.elapsed() < budget && samples.len() < 100_000) {
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
            Ok(p) => Some(p),
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
        outln!(
            "median       {:.3} µs over {} calls (min {:.3} µs)",
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
