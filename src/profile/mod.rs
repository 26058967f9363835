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

mod cost;
mod report;

use crate::error::Error;
use crate::session::{gather_inputs, Session};
use crate::signature::CallKind;
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
    /// Its time summed over the counted calls ([`Profile::counted`]).
    pub time: Duration,
    /// Bytes it reads and writes per call (each operand once).
    pub bytes: u64,
    /// Floating-point (or integer) operations per call (the convention of `docs/profiling.md`).
    pub flops: u64,
}

impl Profile {
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

    fn rate(&self, kernel: &KernelProfile, per_call: u64) -> f64 {
        let seconds = kernel.time.as_secs_f64();
        if seconds <= 0.0 {
            return 0.0;
        }
        per_call as f64 * self.counted as f64 / seconds / 1e9
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
        let Some(compiled) = prepared.compiled() else {
            if prepared.is_program() {
                return Err(Error::Config(format!(
                    "`{name}` has loops: a per-kernel profile covers functions without loops for now (time the call instead)"
                )));
            }
            return Err(Error::Config(
                "a profile needs the JIT backend: the interpreter runs no kernels".into(),
            ));
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
        // Per call: its total time, then each kernel's (nanoseconds).
        let mut samples: Vec<u64> = Vec::new();
        samples
            .try_reserve_exact(calls.saturating_mul(kernel_count + 1))
            .map_err(|_| Error::Config(format!("not enough memory to profile {calls} calls")))?;
        let mut times = KernelTimes::new(kernel_count);
        for _ in 0..calls {
            times.per_kernel.iter_mut().for_each(|t| *t = Duration::ZERO);
            let start = Instant::now();
            // What `call_into_kw` does, with the kernels timed.
            let again = self.prepare(CallKind::Call, name, args, kwargs)?;
            if !Arc::ptr_eq(&again, &prepared) {
                return Err(Error::Internal(format!("`{name}` was recompiled while profiled")));
            }
            let inputs = gather_inputs(&again, args, kwargs, &[])?;
            again
                .run_into_profiled(&inputs, outputs, self.externs(), &mut times)
                .unwrap_or_else(|| Err(Error::Internal("no compiled kernels".into())))
                .map_err(|e| self.explain(e, name, args, kwargs))?;
            samples.push(nanos(start.elapsed()));
            samples.extend(times.per_kernel.iter().map(|&t| nanos(t)));
        }
        // The faster half of the calls (by total time): a call the OS interrupted (on a
        // loaded machine, many are) would otherwise charge the wait to whichever kernel it
        // hit. Shares, µs per call and rates are over the same calls, so they add up.
        let mut rows: Vec<&[u64]> = samples.chunks_exact(kernel_count + 1).collect();
        rows.sort_by_key(|row| row[0]);
        rows.truncate(calls.div_ceil(2));
        let sum = |column: usize| Duration::from_nanos(rows.iter().map(|r| r[column]).sum());
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
                }
            })
            .collect();
        Ok(Profile {
            function: name.to_string(),
            threads: self.options().threads,
            calls: calls as u64,
            counted: rows.len() as u64,
            total: sum(0),
            kernels,
        })
    }
}
