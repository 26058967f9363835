//! Ahead-of-time compilation: the kernels of planned functions in a relocatable object file
//! ([`ObjectBuilder`], `tfnc build`), and what the runtime needs to run them
//! ([`CompiledFunction::from_object`], [`choose_tier`]).
//!
//! The JIT's code, split at the function-pointer boundary. At build time every kernel is
//! compiled exactly as the JIT compiles it (the same `codegen::build`, flags, the same
//! vector-or-scalar choice, the same code-identity dedup) but defined as a local symbol of a
//! `cranelift_object` module instead of a `JITModule`; wide math routines are imports by their
//! symbol names. What the executor needs besides the code is *not* serialised: the object
//! carries the planned graph's IR text and, per function, the table of its kernels'
//! addresses in step order with one fingerprint per kernel (a hash of its [`LoopPlan`]). At
//! its first call the runtime parses the text, fuses it again (`fuse` is deterministic) and
//! builds the steps with a [`KernelSource`] that takes the next address from the table after
//! checking its fingerprint, so the steps, the plans and the executor are the JIT's own code.
//!
//! **CPU tiers.** An object holds every kernel once per *tier* ([`TIERS`]: x86-64-v2 and -v3,
//! each an ISA extension set and the least level of the wide routines its kernels call), and
//! the runtime runs the widest tier the CPU has ([`choose_tier`]); the x86-64-v3 kernels call
//! wide routines the runtime picks by CPU feature (AVX-512 or AVX2). Every tier computes the
//! same bits: the math is generated with `fma` on every tier (one rounding, as the JIT on a
//! CPU with FMA), which Cranelift lowers to a `fmaf`/`fma` libcall where the tier has no FMA
//! instruction (x86-64-v2), and the wide routines are bit-identical to the inline code.
//!
//! The descriptor (`<prefix>_module`, exported; every word a little-endian `u64`):
//! `magic, version, functions, info pointer, info length, tiers`, then per function `blob
//! pointer, blob length, fingerprint table pointer, kernels`, and one kernel table pointer per
//! tier. The info is text, one line per tier in table order, narrowest first (`tier NAME
//! simd=… isa=…`: what the tier's code needs of the CPU); a function's blob is its metadata
//! lines ([`FunctionMeta`]) then either `graph`, a newline and the IR text, or — a function
//! with loops — `program`, a newline and its plan as text (`tfn_ir::program::text`: the
//! loops, and per stage its kernel count and planned graph). A program's stages take their
//! kernels from the function's table (the chosen tier's) in program order, each stage its own
//! run of it ([`load_program`]); its loops run through the same forward runner as a
//! session's (`tfn_ir::program::run`, with [`ObjectStages`]).
//!
//! **Self-contained objects** ([`StandaloneBuilder`], `standalone/`): for aarch64, where there
//! is no runtime library, the object holds the code that runs the kernels too — an entry
//! point generated from the executor's steps — for functions of loop kernels only.

#[cfg(feature = "jit")]
mod build;
pub mod c_abi;
#[cfg(feature = "jit")]
pub use build::{AotError, CpuChoice, ObjectBuilder};
#[cfg(feature = "jit")]
mod standalone;
#[cfg(feature = "jit")]
pub use standalone::{StandaloneBuilder, AARCH64};

use crate::abi::KernelFn;
use crate::error::CodegenError;
use crate::error::RunError;
use crate::executor::{CompileOptions, CompiledFunction, KernelSource};
use crate::plan::LoopPlan;
use crate::scan::AxisSpec;
use crate::tensors::{TensorView, TensorViewMut};
use crate::wide::SimdLevel;
use std::cell::Cell;
use tfn_ir::program::run::{Plan, StageRunner};
use tfn_ir::program::vjp::{Differentiable, GradRunner, Gradient};
use tfn_ir::{Graph, Tensor, TensorType, TensorValue};
use tfn_passes::fusion::FusedGraph;

/// The descriptor's first word: `TFNAOT01`.
pub const MAGIC: u64 = u64::from_le_bytes(*b"TFNAOT01");
/// The descriptor layout's version; the runtime refuses any other.
pub const VERSION: u64 = 2;
/// Words of the descriptor before the per-function entries.
pub const HEADER_WORDS: usize = 6;

/// Words of one function's entry in an object of `tiers` tiers.
pub const fn function_words(tiers: usize) -> usize {
    4 + tiers
}

/// One CPU tier of an x86-64 object: its name, the Cranelift ISA flags its kernels may use,
/// and the level of the wide routines they call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tier {
    /// The tier's name (`--cpu`, `TFN_RT_TIER`): the x86-64 micro-architecture level.
    pub name: &'static str,
    /// Cranelift's flags (`has_avx2`, …) of the extensions the code may use.
    pub flags: &'static [&'static str],
    /// The wide routines the kernels call.
    pub simd: SimdLevel,
}

/// The tiers of a portable x86-64 object, narrowest first: x86-64-v2 (SSE4.2 and POPCNT, what
/// Cranelift's 128-bit SIMD needs; `fma` by a libcall, no wide routines) and x86-64-v3 (AVX2,
/// FMA, BMI1/2, LZCNT), whose kernels call the wide routines the runtime dispatches to the
/// widest level the CPU has, AVX-512 or AVX2 (`wide::dispatched_symbol_f32`). An x86-64-v4
/// tier would be the same machine code as x86-64-v3 (Cranelift emits 128-bit vectors; only
/// the routines' level differed), so there is none.
pub const TIERS: [Tier; 2] = [
    Tier {
        name: "x86-64-v2",
        flags: &["has_sse3", "has_ssse3", "has_cmpxchg16b", "has_sse41", "has_sse42", "has_popcnt"],
        simd: SimdLevel::V128,
    },
    Tier {
        name: "x86-64-v3",
        flags: &[
            "has_sse3",
            "has_ssse3",
            "has_cmpxchg16b",
            "has_sse41",
            "has_sse42",
            "has_popcnt",
            "has_avx",
            "has_avx2",
            "has_fma",
            "has_bmi1",
            "has_bmi2",
            "has_lzcnt",
        ],
        simd: SimdLevel::Avx2,
    },
];

/// The info line of a tier: `tier NAME simd=LEVEL isa=FLAG,...`.
pub fn tier_line(name: &str, simd: SimdLevel, flags: &[String]) -> String {
    format!("tier {name} simd={} isa={}\n", simd.name(), flags.join(","))
}

/// A loop plan's fingerprint: FNV-1a over its `Debug` text (every field the code generator
/// reads: nodes, operands, axes, dtypes), so a runtime that would build a different plan from
/// the embedded graph than the one the kernel was compiled from refuses to call it.
pub(crate) fn fingerprint(plan: &LoopPlan) -> u64 {
    fnv1a(format!("{plan:?}").as_bytes())
}

/// FNV-1a, 64 bits.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A scan's or arg-reduction's fingerprint (see [`fingerprint`]).
pub(crate) fn axis_fingerprint(spec: &AxisSpec) -> u64 {
    fnv1a(format!("{spec:?}").as_bytes())
}

/// Kernels taken from an object's table in step order, each after its fingerprint matched.
struct TableSource<'a> {
    kernels: &'a [(*const u8, u64)],
    next: Cell<usize>,
}

impl TableSource<'_> {
    /// The next kernel, whose plan (or axis spec) has the fingerprint `actual`.
    fn take(&self, actual: u64) -> Result<KernelFn, CodegenError> {
        let i = self.next.get();
        let Some(&(addr, expected)) = self.kernels.get(i) else {
            return Err(CodegenError::Internal(format!(
                "the object has {} kernel(s); the schedule asks for more",
                self.kernels.len()
            )));
        };
        if actual != expected {
            return Err(CodegenError::Internal(format!(
                "kernel {i}: the object's code was compiled from another plan (fingerprint \
                 mismatch): the object and the runtime library are from different tfn versions"
            )));
        }
        if addr.is_null() {
            return Err(CodegenError::Internal(format!("kernel {i}: null address")));
        }
        self.next.set(i + 1);
        // SAFETY: the table holds the addresses of kernels compiled with the kernel ABI
        // signature, from this very plan (the fingerprint matched).
        Ok(unsafe { std::mem::transmute::<*const u8, KernelFn>(addr) })
    }
}

impl KernelSource for TableSource<'_> {
    fn loop_kernel(&self, plan: &LoopPlan) -> Result<KernelFn, CodegenError> {
        self.take(fingerprint(plan))
    }

    fn axis_kernel(&self, spec: &AxisSpec) -> Result<KernelFn, CodegenError> {
        self.take(axis_fingerprint(spec))
    }
}

impl CompiledFunction {
    /// The function whose kernels are `kernels` (address and fingerprint, in step order) of an
    /// AOT object, for `graph` (the object's planned graph) and `fused = fuse(graph)`. Any
    /// difference from the plans the object was built from is an error, never a wrong call;
    /// so is a step that would need the JIT or the interpreter.
    ///
    /// # Safety
    /// Every address must be a kernel of the object that recorded the fingerprint next to it,
    /// loaded in this process for as long as the function is used.
    pub unsafe fn from_object(
        graph: &Graph,
        fused: FusedGraph,
        kernels: &[(*const u8, u64)],
        options: &CompileOptions,
    ) -> Result<CompiledFunction, CodegenError> {
        let src = TableSource { kernels, next: Cell::new(0) };
        let compiled = CompiledFunction::assemble(
            &src,
            #[cfg(feature = "jit")]
            None,
            graph,
            fused,
            options,
        )?;
        if src.next.get() != kernels.len() {
            return Err(CodegenError::Internal(format!(
                "the schedule uses {} of the object's {} kernels",
                src.next.get(),
                kernels.len()
            )));
        }
        if let Some((i, why)) =
            compiled.interpreted_kernels().into_iter().chain(compiled.reference_kernels()).next()
        {
            return Err(CodegenError::Unsupported(format!("kernel {i}: {why}")));
        }
        Ok(compiled)
    }
}

/// One planned graph of an object (its IR text) with its kernels (address and fingerprint, in
/// step order): parsed, fused again and assembled.
///
/// # Safety
/// As [`CompiledFunction::from_object`].
pub unsafe fn load_graph(
    text: &str,
    kernels: &[(*const u8, u64)],
    options: &CompileOptions,
) -> Result<CompiledFunction, String> {
    let graph = tfn_ir::text::parse_graph(text)
        .map_err(|e| format!("the embedded graph does not parse: {e}"))?;
    let fused = tfn_passes::fusion::fuse(&graph);
    // SAFETY: the caller's contract.
    unsafe { CompiledFunction::from_object(&graph, fused, kernels, options) }
        .map_err(|e| e.to_string())
}

/// A stage of a function with loops in an object: what runs it (at build time `G` is its
/// planned graph with its fusion, at run time its executor) and, in a vjp, its gradient cut at
/// its residuals (`tfn_passes::autodiff::split_vjp`), whose halves the reverse mode runs
/// (`tfn_ir::program::vjp`).
pub struct ProgramStage<G> {
    pub forward: G,
    pub gradient: Option<StageGradient<G>>,
    /// How many results the stage has.
    pub results: usize,
}

/// A stage's gradient in two halves (see `tfn_ir::program::vjp::Gradient`).
pub struct StageGradient<G> {
    pub forward: G,
    pub backward: G,
    pub differentiated: Vec<usize>,
}

impl<G> Differentiable for ProgramStage<G> {
    type Half = G;

    fn results(&self) -> usize {
        self.results
    }

    fn gradient(&self) -> Option<Gradient<'_, G>> {
        self.gradient.as_ref().map(|g| Gradient {
            forward: &g.forward,
            backward: &g.backward,
            differentiated: &g.differentiated,
        })
    }
}

/// A stage's payload in an object's program text: its kernel count and planned graph
/// (`kernels N`, a newline, the IR text) or, for a stage of a vjp, `gradient results R
/// differentiated P...`, a newline and three parts (the stage, its forward half, its backward
/// half), each `part LEN`, a newline, exactly `LEN` bytes of such a payload and a newline.
pub fn stage_payload(graph: &str, kernels: usize) -> String {
    format!("kernels {kernels}\n{graph}")
}

/// A gradient stage's payload (see [`stage_payload`]) from its three parts' payloads.
pub fn gradient_payload(results: usize, differentiated: &[usize], parts: [&str; 3]) -> String {
    let mut s = format!("gradient results {results} differentiated");
    for p in differentiated {
        s.push_str(&format!(" {p}"));
    }
    s.push('\n');
    for part in parts {
        s.push_str(&format!("part {}\n{part}\n", part.len()));
    }
    s
}

/// A function with loops of an object (its plan's text, `tfn_ir::program::text`) with the
/// function's kernels: every stage (and, in a vjp, its gradient's halves) loaded by
/// [`load_graph`] with its own run of the table, in program order. Returns the plan and the
/// function's result types.
///
/// # Safety
/// As [`CompiledFunction::from_object`].
#[allow(clippy::type_complexity)]
pub unsafe fn load_program(
    text: &str,
    kernels: &[(*const u8, u64)],
    options: &CompileOptions,
) -> Result<(Plan<ProgramStage<CompiledFunction>>, Vec<TensorType>), String> {
    let (plan, results) = tfn_ir::program::text::parse_plan(text).map_err(|e| e.to_string())?;
    let mut next = 0usize;
    // One planned graph with the next `count` kernels.
    let mut graph = |payload: &str| -> Result<CompiledFunction, String> {
        let (count, graph) = payload
            .split_once('\n')
            .and_then(|(head, graph)| Some((head.strip_prefix("kernels ")?, graph)))
            .ok_or_else(|| "a stage without its kernel count".to_string())?;
        let count: usize = count.parse().map_err(|_| format!("bad kernel count `{count}`"))?;
        let mine =
            next.checked_add(count).and_then(|end| kernels.get(next..end)).ok_or_else(|| {
                format!("the stages use more than the object's {} kernels", kernels.len())
            })?;
        next += count;
        // SAFETY: the caller's contract; each graph gets its own run of the table.
        unsafe { load_graph(graph, mine, options) }
    };
    let plan = plan.try_map(&mut |payload: &String| {
        let Some((head, mut rest)) =
            payload.strip_prefix("gradient ").and_then(|p| p.split_once('\n'))
        else {
            let forward = graph(payload)?;
            let results = forward.graph().outputs.len();
            return Ok(ProgramStage { forward, gradient: None, results });
        };
        let bad = || format!("bad gradient stage `{head}`");
        let (results, differentiated) = head
            .strip_prefix("results ")
            .and_then(|h| h.split_once(" differentiated"))
            .ok_or_else(bad)?;
        let results: usize = results.parse().map_err(|_| bad())?;
        let differentiated = differentiated
            .split_whitespace()
            .map(|p| p.parse::<usize>().map_err(|_| bad()))
            .collect::<Result<Vec<_>, _>>()?;
        let mut parts = Vec::with_capacity(3);
        for _ in 0..3 {
            let (len, after) = rest
                .strip_prefix("part ")
                .and_then(|r| r.split_once('\n'))
                .ok_or_else(|| "a gradient stage without its parts".to_string())?;
            let len: usize = len.parse().map_err(|_| format!("bad part length `{len}`"))?;
            let part = after.get(..len).ok_or_else(|| "a truncated gradient part".to_string())?;
            rest = after.get(len..).and_then(|r| r.strip_prefix('\n')).unwrap_or("");
            parts.push(graph(part)?);
        }
        let mut parts = parts.into_iter();
        let (Some(forward), Some(fw), Some(bw)) = (parts.next(), parts.next(), parts.next()) else {
            return Err("a gradient stage without its parts".to_string());
        };
        let gradient = StageGradient { forward: fw, backward: bw, differentiated };
        Ok(ProgramStage { forward, gradient: Some(gradient), results })
    })?;
    if next != kernels.len() {
        return Err(format!("the stages use {next} of the object's {} kernels", kernels.len()));
    }
    Ok((plan, results))
}

/// The stages of a program loaded from an object: each an executor of object kernels.
pub struct ObjectStages;

/// Runs one executor on a stage's arguments.
fn run_function(f: &CompiledFunction, args: &[TensorValue<'_>]) -> Result<Vec<Tensor>, RunError> {
    let views: Vec<TensorView> = args.iter().map(TensorView::from).collect();
    f.run(&views)
}

impl StageRunner<ProgramStage<CompiledFunction>> for ObjectStages {
    type Error = RunError;

    fn run(
        &mut self,
        stage: &ProgramStage<CompiledFunction>,
        args: &[TensorValue<'_>],
    ) -> Result<Vec<Tensor>, RunError> {
        run_function(&stage.forward, args)
    }

    fn run_into(
        &mut self,
        stage: &ProgramStage<CompiledFunction>,
        args: &[TensorValue<'_>],
        outs: &mut [Tensor],
    ) -> Result<bool, RunError> {
        let views: Vec<TensorView> = args.iter().map(TensorView::from).collect();
        let mut outs: Vec<TensorViewMut> = outs.iter_mut().map(TensorViewMut::from).collect();
        match stage.forward.run_into(&views, &mut outs) {
            Ok(()) => Ok(true),
            Err(RunError::OutputType { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

impl GradRunner<ProgramStage<CompiledFunction>> for ObjectStages {
    fn run_half(
        &mut self,
        half: &CompiledFunction,
        args: &[TensorValue<'_>],
    ) -> Result<Vec<Tensor>, RunError> {
        run_function(half, args)
    }
}

/// The tier of an object this CPU runs (index in the descriptor's tables, name): the widest
/// of the info's tiers (written narrowest first) whose extensions the CPU has, or `requested`
/// (`TFN_RT_TIER`) if given. `Err` says what is missing, or that no tier has that name.
pub fn choose_tier(info: &str, requested: Option<&str>) -> Result<(usize, String), String> {
    let mut best: Option<(usize, String)> = None;
    let mut refusals = Vec::new();
    let mut names = Vec::new();
    for (index, line) in info.lines().filter_map(|l| l.strip_prefix("tier ")).enumerate() {
        let mut words = line.split(' ');
        let name = words.next().unwrap_or_default().to_string();
        names.push(name.clone());
        if requested.is_some_and(|r| r != name) {
            continue;
        }
        match check_tier(words) {
            Ok(()) => best = Some((index, name)),
            Err(why) => refusals.push(format!("{name}: {why}")),
        }
    }
    match (best, requested) {
        (Some(best), _) => Ok(best),
        (None, Some(r)) if !names.iter().any(|n| n == r) => Err(format!(
            "TFN_RT_TIER={r}: the object has no such tier (it has {})",
            names.join(", ")
        )),
        (None, _) if names.is_empty() => Err("the object has no code for this CPU".into()),
        (None, _) => Err(format!(
            "this CPU lacks what the object was compiled for ({})",
            refusals.join("; ")
        )),
    }
}

/// Whether this CPU runs a tier given its `simd=…` and `isa=…` words: `Err` names what it
/// lacks.
fn check_tier<'a>(words: impl Iterator<Item = &'a str>) -> Result<(), String> {
    let mut missing = Vec::new();
    for word in words {
        let Some((key, value)) = word.split_once('=') else { continue };
        match key {
            "simd" => {
                let level = SimdLevel::parse(value)
                    .ok_or_else(|| format!("unknown SIMD level `{value}`"))?;
                if level.clamp_to_cpu() != level {
                    missing.push(format!("simd {value}"));
                }
            }
            "isa" => {
                for flag in value.split(',').filter(|f| !f.is_empty()) {
                    match has_feature(flag) {
                        Some(true) => {}
                        Some(false) => missing.push(flag.to_string()),
                        None => return Err(format!("unknown ISA flag `{flag}`")),
                    }
                }
            }
            _ => {}
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("no {}", missing.join(", ")))
    }
}

/// Whether the CPU has the extension of a Cranelift x86-64 ISA flag (`has_avx2`); `None`
/// for a flag this runtime does not know.
fn has_feature(flag: &str) -> Option<bool> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        let yes = match flag {
            "has_sse3" => has!("sse3"),
            "has_ssse3" => has!("ssse3"),
            "has_cmpxchg16b" => has!("cmpxchg16b"),
            "has_sse41" => has!("sse4.1"),
            "has_sse42" => has!("sse4.2"),
            "has_popcnt" => has!("popcnt"),
            "has_avx" => has!("avx"),
            "has_avx2" => has!("avx2"),
            "has_fma" => has!("fma"),
            "has_bmi1" => has!("bmi1"),
            "has_bmi2" => has!("bmi2"),
            "has_lzcnt" => has!("lzcnt"),
            "has_avx_vnni" => has!("avxvnni"),
            "has_avx512bitalg" => has!("avx512bitalg"),
            "has_avx512dq" => has!("avx512dq"),
            "has_avx512f" => has!("avx512f"),
            "has_avx512vbmi" => has!("avx512vbmi"),
            "has_avx512vl" => has!("avx512vl"),
            "has_avx512vnni" => has!("avx512vnni"),
            _ => return None,
        };
        Some(yes)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = flag;
        None
    }
}

/// What the object records of one function besides its graph: the C names and declared
/// sizes of its parameters (`None`: a size fixed at the call), one line each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionMeta {
    /// The function's name in the source.
    pub name: String,
    /// Per graph parameter: its name and, per axis, the declared size.
    pub params: Vec<(String, Vec<Option<usize>>)>,
}

impl FunctionMeta {
    /// The metadata lines of a blob (`fn NAME`, then `param NAME DIMS` with `?` for a size
    /// fixed at the call), each ending in a newline.
    pub fn to_text(&self) -> String {
        let mut s = format!("fn {}\n", self.name);
        for (name, dims) in &self.params {
            let dims: Vec<String> =
                dims.iter().map(|d| d.map_or("?".to_string(), |n| n.to_string())).collect();
            s.push_str(&format!("param {name} [{}]\n", dims.join(",")));
        }
        s
    }

    /// Splits a blob into its metadata and its body (after the line `graph` or `program`).
    pub fn parse_blob(blob: &str) -> Result<(FunctionMeta, BlobBody<'_>), String> {
        let mut meta = FunctionMeta { name: String::new(), params: Vec::new() };
        let mut rest = blob;
        loop {
            let (line, after) =
                rest.split_once('\n').ok_or_else(|| "no graph in the function blob".to_string())?;
            rest = after;
            if line == "graph" {
                return Ok((meta, BlobBody::Graph(rest)));
            } else if line == "program" {
                return Ok((meta, BlobBody::Program(rest)));
            } else if line == "program vjp" {
                return Ok((meta, BlobBody::ProgramVjp(rest)));
            } else if let Some(name) = line.strip_prefix("fn ") {
                meta.name = name.to_string();
            } else if let Some(rest) = line.strip_prefix("param ") {
                let (name, dims) =
                    rest.split_once(' ').ok_or_else(|| format!("bad line `{line}`"))?;
                let dims = dims
                    .strip_prefix('[')
                    .and_then(|d| d.strip_suffix(']'))
                    .ok_or_else(|| format!("bad line `{line}`"))?;
                let dims = dims
                    .split(',')
                    .filter(|d| !d.is_empty())
                    .map(|d| match d {
                        "?" => Ok(None),
                        n => n.parse().map(Some).map_err(|_| format!("bad size in `{line}`")),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                meta.params.push((name.to_string(), dims));
            } else if !line.is_empty() {
                return Err(format!("unknown line `{line}` in the function blob"));
            }
        }
    }
}

/// What runs of a function: one planned graph's IR text, or a program's plan as text (the
/// function's, or — `program vjp` — that of its vector-Jacobian product, whose stages carry
/// their gradients' halves).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlobBody<'a> {
    Graph(&'a str),
    Program(&'a str),
    ProgramVjp(&'a str),
}
