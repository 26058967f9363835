//! Profiles: where the time of a call goes, kernel by kernel ([`Session::profile`],
//! `tfnc bench --profile`).
//!
//! A profile runs the function `calls` times through the same path as
//! [`Session::call_into_kw`] (cache lookup, gathering the arguments, running the compiled
//! kernels into preallocated outputs), timing each whole call and — through the executor's
//! timing hook (`tfn_backend::KernelTimes`) — each kernel. The time of a call not spent in any
//! kernel (lookup, binding sizes, buffers, copies into strided outputs) is
//! [`Profile::outside`]. Times are over the faster half of the calls ([`Profile::counted`]):
//! on a shared machine the slower ones are mostly calls the operating system interrupted. Each kernel also carries what one call of it moves and computes
//! (`cost.rs`: the byte and flop conventions), so the table shows GB/s and GFLOP/s.
//! Unprofiled calls read no clock: the hook costs one branch per kernel.
//!
//! A function with loops runs as a program of stages and loop bodies (`crate::program`): its
//! profile has every stage's kernels and every loop body's, each body kernel's time summed
//! over the loop's trips, and each kernel says where it runs ([`KernelProfile::place`]:
//! `stage 0`, `for l in 0..size(w, 0) (6 trips)`, nested loops joined by ` / `). The runner
//! takes the timing sink as an `Option`: an unprofiled run passes `None`.

mod cost;
mod report;
mod roofline;

pub use roofline::Roofline;

use crate::error::Error;
use crate::program::{ProgramTimes, StageInfo};
use crate::session::{gather_inputs, Session};
use crate::signature::CallKind;
use crate::signature::{copy_into, Prepared};
use crate::value::{OutputMut, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tfn_backend::KernelTimes;

/// The width of [`KernelProfile::ops`] summaries.
const OPS_WIDTH: usize = 32;

/// Where the time of a function's calls goes, kernel by kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    /// The function profiled.
    pub function: String,
    /// Threads the kernels may use.
    pub threads: usize,
    /// Calls profiled.
    pub calls: u64,
    /// The calls the times are over: the faster half (by wall time) of those profiled, so
    /// that calls the operating system interrupted do not count.
    pub counted: u64,
    /// Wall time of the counted calls, end to end.
    pub total: Duration,
    /// One entry per fused kernel, in execution order.
    pub kernels: Vec<KernelProfile>,
    /// The machine's limits to read the kernels' rates against, when asked for
    /// ([`Profile::with_roofline`]; `tfnc bench --profile` does).
    pub roofline: Option<Roofline>,
}

/// One kernel of a [`Profile`].
#[derive(Clone, Debug, PartialEq)]
pub struct KernelProfile {
    /// The kernel's number (as `tfnc ir --stage fused` and `tfnc graph` number them).
    pub index: usize,
    /// How it runs: `loop`, `rows`, `columns`, `matmul`, `window`, `scan`, `arg`, `scatter`,
    /// `copy`, `view` or `interp` (`tfn_backend::CompiledFunction::kernel_strategies`).
    pub strategy: &'static str,
    /// The ops it fuses, abbreviated (`mul×5 add×2 tanh`).
    pub ops: String,
    /// Its time summed over the counted calls ([`Profile::counted`]), every trip of its loop
    /// included.
    pub time: Duration,
    /// Bytes it reads and writes per run (each operand once).
    pub bytes: u64,
    /// Floating-point (or integer) operations per run (the convention of `docs/profiling.md`).
    pub flops: u64,
    /// How many times it ran in the counted calls: [`Profile::counted`], times the trips of
    /// its loop for a loop body's kernel.
    pub runs: u64,
    /// Where it runs in a function with loops: `stage 1` (a stage of the function), `for l in
    /// 0..size(w, 0) (6 trips)` (a loop's body, with its trips per call), nested loops and the
    /// stages of a body with several steps joined by ` / `. Empty for a function without
    /// loops. [`KernelProfile::index`] numbers the kernels of each place from 0.
    pub place: String,
}

impl Profile {
    /// This profile with the machine's limits for its thread count ([`Roofline::for_threads`]:
    /// measured once, then cached), so each kernel's rates read as shares of them. A kernel
    /// that beats a cached limit (its GFLOP/s above the FMA peak, or, moving more bytes than
    /// the caches hold, its GB/s above the bandwidth) has the limits measured again first: the
    /// cached figures came from a busy machine.
    pub fn with_roofline(mut self) -> Profile {
        let beyond_cache = roofline::beyond_cache_bytes();
        let attained = roofline::Attained::of(
            self.kernels
                .iter()
                .filter(|k| k.runs > 0)
                .map(|k| (k.bytes, k.flops, k.time.as_secs_f64() / k.runs as f64)),
            beyond_cache,
        );
        self.roofline = Some(Roofline::checked(self.threads, attained));
        self
    }

    /// A kernel's bandwidth as a percentage of the machine's ([`Profile::roofline`]).
    pub fn bandwidth_share(&self, kernel: &KernelProfile) -> Option<f64> {
        let r = self.roofline.as_ref()?;
        Some(100.0 * self.gbps(kernel) / r.bandwidth_gbps)
    }

    /// A kernel's arithmetic rate as a percentage of the machine's FMA peak.
    pub fn fma_share(&self, kernel: &KernelProfile) -> Option<f64> {
        let r = self.roofline.as_ref()?;
        Some(100.0 * self.gflops(kernel) / r.fma_gflops)
    }

    /// The summed time of every kernel.
    pub fn kernel_time(&self) -> Duration {
        self.kernels.iter().map(|k| k.time).sum()
    }

    /// The time of the calls not spent in any kernel (call overhead).
    pub fn outside(&self) -> Duration {
        self.total.saturating_sub(self.kernel_time())
    }

    /// Mean microseconds per call of a total over the counted calls.
    pub fn micros_per_call(&self, total: Duration) -> f64 {
        total.as_secs_f64() * 1e6 / self.counted.max(1) as f64
    }

    /// A kernel's share of the summed kernel time, in percent (the kernels' shares add to
    /// 100).
    pub fn kernel_share(&self, kernel: &KernelProfile) -> f64 {
        percent(kernel.time, self.kernel_time())
    }

    /// A time's share of the whole calls, in percent (the kernels and [`Self::outside`] add
    /// to 100).
    pub fn call_share(&self, time: Duration) -> f64 {
        percent(time, self.total)
    }

    /// A kernel's bandwidth in GB/s (its bytes per call over its mean time per call).
    pub fn gbps(&self, kernel: &KernelProfile) -> f64 {
        self.rate(kernel, kernel.bytes)
    }

    /// A kernel's arithmetic rate in GFLOP/s.
    pub fn gflops(&self, kernel: &KernelProfile) -> f64 {
        self.rate(kernel, kernel.flops)
    }

    /// Whether the function has loops (its kernels name their places).
    pub fn has_loops(&self) -> bool {
        self.kernels.iter().any(|k| !k.place.is_empty())
    }

    fn rate(&self, kernel: &KernelProfile, per_run: u64) -> f64 {
        let seconds = kernel.time.as_secs_f64();
        if seconds <= 0.0 {
            return 0.0;
        }
        per_run as f64 * kernel.runs as f64 / seconds / 1e9
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn percent(part: Duration, whole: Duration) -> f64 {
    if whole.is_zero() {
        0.0
    } else {
        part.as_secs_f64() / whole.as_secs_f64() * 100.0
    }
}

impl Session {
    /// Profiles `calls` calls (at least 1) of a function with results allocated once: the
    /// first call's results are the outputs of the profiled calls.
    pub fn profile(
        &self,
        name: &str,
        args: &[Value],
        kwargs: &[(&str, Value)],
        calls: usize,
    ) -> Result<Profile, Error> {
        let first = self.call_kw(name, args, kwargs)?;
        let mut results: Vec<tfn_ir::Tensor> =
            first.into_iter().filter_map(Value::into_tensor).collect();
        let mut outputs: Vec<OutputMut> = results.iter_mut().map(OutputMut::from).collect();
        self.profile_into(name, args, kwargs, &mut outputs, calls)
    }

    /// Profiles `calls` calls (at least 1) of [`Session::call_into_kw`]`(name, args, kwargs,
    /// outputs)`. Needs the JIT backend (the interpreter has no kernels: [`Error::Config`]).
    pub fn profile_into(
        &self,
        name: &str,
        args: &[Value],
        kwargs: &[(&str, Value)],
        outputs: &mut [OutputMut],
        calls: usize,
    ) -> Result<Profile, Error> {
        let prepared = self.prepare(CallKind::Call, name, args, kwargs)?;
        if prepared.program().is_some() {
            return self.profile_program(&prepared, name, args, kwargs, outputs, calls);
        }
        let Some(compiled) = prepared.compiled() else {
            return Err(no_kernels());
        };
        let (graph, fused) = (compiled.graph(), compiled.fused());
        let sizes = {
            let inputs = gather_inputs(&prepared, args, kwargs, &[])?;
            let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
            // (Sizes for the accounting only: each profiled call checks the size limit.)
            let none = tfn_ir::bind::Allocated::Only(&[]);
            tfn_ir::bind::bind_sizes_allocating(graph, &shapes, none)
                .map_err(|e| Error::Shape(e.to_string()))?
        };
        let kernel_count = fused.kernels.len();
        let calls = calls.max(1);
        let mut times = KernelTimes::new(kernel_count);
        // Per call: its total time, then each kernel's (nanoseconds).
        let (sums, counted) = faster_half(calls, kernel_count + 1, |row| {
            times.per_kernel.iter_mut().for_each(|t| *t = Duration::ZERO);
            let start = Instant::now();
            // What `call_into_kw` does, with the kernels timed.
            let again = self.prepare_again(&prepared, name, args, kwargs)?;
            let inputs = gather_inputs(&again, args, kwargs, &[])?;
            again
                .run_into_profiled(&inputs, outputs, self.externs(), &mut times)
                .unwrap_or_else(|| Err(Error::Internal("no compiled kernels".into())))
                .map_err(|e| self.explain(e, name, args, kwargs))?;
            row.push(nanos(start.elapsed()));
            row.extend(times.per_kernel.iter().map(|&t| nanos(t)));
            Ok(())
        })?;
        let sum = |column: usize| Duration::from_nanos(sums[column]);
        let strategies = compiled.kernel_strategies();
        let kernels = fused
            .kernels
            .iter()
            .enumerate()
            .map(|(index, kernel)| {
                let (bytes, flops) = cost::kernel_cost(graph, kernel, &sizes);
                KernelProfile {
                    index,
                    strategy: strategies.get(index).copied().unwrap_or("?"),
                    ops: cost::ops_summary(graph, kernel, OPS_WIDTH),
                    time: sum(index + 1),
                    bytes,
                    flops,
                    runs: counted,
                    place: String::new(),
                }
            })
            .collect();
        Ok(Profile {
            function: name.to_string(),
            threads: self.options().threads,
            calls: calls as u64,
            counted,
            total: sum(0),
            kernels,
            roofline: None,
        })
    }

    /// What `call_into_kw` looks up: the same prepared function.
    fn prepare_again(
        &self,
        prepared: &Arc<Prepared>,
        name: &str,
        args: &[Value],
        kwargs: &[(&str, Value)],
    ) -> Result<Arc<Prepared>, Error> {
        let again = self.prepare(CallKind::Call, name, args, kwargs)?;
        if !Arc::ptr_eq(&again, prepared) {
            return Err(Error::Internal(format!("`{name}` was recompiled while profiled")));
        }
        Ok(again)
    }

    /// [`Session::profile_into`] of a function with loops: every stage's and loop body's
    /// kernels, a body's summed over its trips.
    fn profile_program(
        &self,
        prepared: &Arc<Prepared>,
        name: &str,
        args: &[Value],
        kwargs: &[(&str, Value)],
        outputs: &mut [OutputMut],
        calls: usize,
    ) -> Result<Profile, Error> {
        let program =
            prepared.program().ok_or_else(|| Error::Internal("not a loop program".into()))?;
        let (stages, loops) = crate::program::layout(program);
        if stages.iter().any(|s| s.prepared.compiled().is_none()) {
            return Err(no_kernels());
        }
        let mut times = ProgramTimes::new(program);
        let kernel_columns: usize = times.stages.iter().map(|t| t.per_kernel.len()).sum();
        let calls = calls.max(1);
        // Per call: its total time, each stage's kernels' (nanoseconds), each loop's trips.
        let (sums, counted) = faster_half(calls, 1 + kernel_columns + loops.len(), |row| {
            times.clear();
            let start = Instant::now();
            let again = self.prepare_again(prepared, name, args, kwargs)?;
            let inputs = gather_inputs(&again, args, kwargs, &[])?;
            crate::program::run_profiled(program, &inputs, self.externs(), &mut times)
                .and_then(|results| copy_into(results, outputs))
                .map_err(|e| self.explain(e, name, args, kwargs))?;
            row.push(nanos(start.elapsed()));
            for t in &times.stages {
                row.extend(t.per_kernel.iter().map(|&d| nanos(d)));
            }
            row.extend(&times.trips);
            Ok(())
        })?;
        let trips = &sums[1 + kernel_columns..];
        // How many times the body of the innermost of `around` ran (the calls if none).
        let runs = |around: &[usize]| around.last().map_or(counted, |&l| trips[l]);
        let loop_place = |l: usize| {
            let per = trips[l] as f64 / runs(&loops[l].loops).max(1) as f64;
            let count = if per.fract() == 0.0 { format!("{per}") } else { format!("{per:.1}") };
            let plural = if per == 1.0 { "" } else { "s" };
            format!("{} ({count} trip{plural})", loops[l].label)
        };
        let place = |stage: &StageInfo| {
            let mut parts: Vec<String> = stage.loops.iter().map(|&l| loop_place(l)).collect();
            if !stage.alone || stage.loops.is_empty() {
                parts.push(format!("stage {}", stage.number));
            }
            parts.join(" / ")
        };
        let mut kernels = Vec::with_capacity(kernel_columns);
        let mut column = 1;
        for (stage, shapes) in stages.iter().zip(&times.shapes) {
            let Some(compiled) = stage.prepared.compiled() else { continue };
            let (graph, fused) = (compiled.graph(), compiled.fused());
            // The sizes of the stage's first run (a stage that never ran moved nothing).
            let sizes = match shapes {
                Some(shapes) => {
                    let shapes: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
                    let none = tfn_ir::bind::Allocated::Only(&[]);
                    Some(
                        tfn_ir::bind::bind_sizes_allocating(graph, &shapes, none)
                            .map_err(|e| Error::Shape(e.to_string()))?,
                    )
                }
                None => None,
            };
            let strategies = compiled.kernel_strategies();
            let where_ = place(stage);
            for (index, kernel) in fused.kernels.iter().enumerate() {
                let (bytes, flops) =
                    sizes.as_ref().map_or((0, 0), |z| cost::kernel_cost(graph, kernel, z));
                kernels.push(KernelProfile {
                    index,
                    strategy: strategies.get(index).copied().unwrap_or("?"),
                    ops: cost::ops_summary(graph, kernel, OPS_WIDTH),
                    time: Duration::from_nanos(sums[column]),
                    bytes,
                    flops,
                    runs: runs(&stage.loops),
                    place: where_.clone(),
                });
                column += 1;
            }
        }
        Ok(Profile {
            function: name.to_string(),
            threads: self.options().threads,
            calls: calls as u64,
            counted,
            total: Duration::from_nanos(sums[0]),
            kernels,
            roofline: None,
        })
    }
}

fn no_kernels() -> Error {
    Error::Config("a profile needs the JIT backend: the interpreter runs no kernels".into())
}

/// Makes `calls` calls, each pushing its row of `width` numbers (its total time first), and
/// sums each column over the faster half of the calls (by total time); returns the sums and
/// how many calls they are over. A call the OS interrupted (on a loaded machine, many are)
/// would otherwise charge the wait to whichever kernel it hit. Shares, µs per call and rates
/// are over the same calls, so they add up.
fn faster_half(
    calls: usize,
    width: usize,
    mut call: impl FnMut(&mut Vec<u64>) -> Result<(), Error>,
) -> Result<(Vec<u64>, u64), Error> {
    let mut samples: Vec<u64> = Vec::new();
    samples
        .try_reserve_exact(calls.saturating_mul(width))
        .map_err(|_| Error::Config(format!("not enough memory to profile {calls} calls")))?;
    for _ in 0..calls {
        let before = samples.len();
        call(&mut samples)?;
        if samples.len() != before + width {
            return Err(Error::Internal("a profiled call recorded the wrong columns".into()));
        }
    }
    let mut rows: Vec<&[u64]> = samples.chunks_exact(width).collect();
    rows.sort_by_key(|row| row[0]);
    rows.truncate(calls.div_ceil(2));
    let sums = (0..width).map(|c| rows.iter().map(|r| r[c]).sum()).collect();
    Ok((sums, rows.len() as u64))
}
