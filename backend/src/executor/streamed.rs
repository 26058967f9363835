//! Loop kernels whose data does not fit in the last-level cache, their outputs streamed to
//! memory ([`Streamed`]).
//!
//! A store first reads the line it writes (write-allocate): an output the cache cannot keep
//! costs a read and a write per line, a third more memory traffic for `out = a·x + y`.
//! Non-temporal stores write whole lines without reading them, but Cranelift emits none. So
//! such a kernel runs in blocks of its split axis, as widened kernels do (`widened.rs`): its
//! outputs' pointers are moved onto a per-thread scratch that stays in L1, and after each
//! block the scratch is streamed into the real outputs ([`stream_copy`]: `movntdq`, then
//! `sfence`). Blocks hold whole steps of the split axis (a multiple of 64 elements when it is
//! the inner axis, as the threads' split), so every element is computed by the same code as in
//! one call: the bits do not change, only the path of the stores.
//!
//! Taken on x86-64 by light kernels ([`streamable`]: no reduction, random numbers, indexed
//! read or output view, little arithmetic per element) when one call touches at least as many bytes as the
//! last-level cache holds ([`llc_bytes`]) and a step of the split axis fits a block. `TFN_STREAM=off` never
//! streams, `on` streams whatever the size (tests), `auto` (the default) as above.

use crate::abi::{KernelFn, LoopAbi};
use crate::error::RunError;
use crate::parallel::MIN_PARALLEL_ELEMENTS;
use crate::plan::LoopPlan;
use crate::workers;
use std::cell::RefCell;
use std::sync::OnceLock;
use tfn_ir::Op;

/// Scratch bytes per block, all outputs together (in L1 with the block's inputs).
/// Scratch bytes per block, all outputs together: small, so that the kernel's reads and the
/// streaming stores overlap in the memory system (saxpy over 16M f32 on Zen 4, 256-bit
/// stores: 2 KB blocks 31 GB/s, 4 KB 29, 8 KB 25.5, 16 KB 18.7, plain stores 24).
const BLOCK_BYTES: usize = 2 << 10;

/// The largest step of the split axis (all outputs together) a block may hold: larger blocks
/// stream slower than plain stores.
const MAX_STEP_BYTES: usize = 8 << 10;

/// When light kernels stream their outputs to memory ([`CompileOptions::stream`]); results are
/// the same bits either way.
///
/// [`CompileOptions::stream`]: crate::CompileOptions::stream
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Streaming {
    /// When a call touches at least as many bytes as the last-level cache holds.
    #[default]
    Auto,
    /// Whatever the size (tests, measurements).
    Always,
    /// Never: plain stores.
    Never,
}

impl Streaming {
    /// `TFN_STREAM=auto|on|off`, [`Streaming::Auto`] when unset; an unknown value is reported
    /// on stderr and ignored (as `TFN_SIMD`).
    pub fn from_env() -> Streaming {
        match std::env::var("TFN_STREAM") {
            Err(_) => Streaming::Auto,
            Ok(v) => match v.trim() {
                "auto" => Streaming::Auto,
                "on" => Streaming::Always,
                "off" => Streaming::Never,
                _ => {
                    tfn_ir::tfn_log!("tfn: ignoring TFN_STREAM={v:?} (expected auto, on or off)");
                    Streaming::Auto
                }
            },
        }
    }
}

/// The size of this CPU's last-level cache in bytes (`tfn_probes::last_level_cache_bytes`),
/// 32 MiB where it cannot be read.
pub(crate) fn llc_bytes() -> usize {
    static LLC: OnceLock<usize> = OnceLock::new();
    *LLC.get_or_init(|| {
        let bytes = tfn_probes::last_level_cache_bytes().unwrap_or(32 << 20);
        usize::try_from(bytes).unwrap_or(usize::MAX)
    })
}

/// The bytes one call of `plan` over collapsed `sizes` reads and writes: each data operand
/// (inputs, then outputs, numbered as the kernel's operands) over the axes it spans, at
/// `size(operand, dtype)` bytes per element.
pub(super) fn call_bytes(
    plan: &LoopPlan,
    sizes: &[usize],
    size: impl Fn(usize, tfn_ir::DType) -> usize,
) -> usize {
    plan.inputs
        .iter()
        .chain(&plan.outputs)
        .enumerate()
        .filter(|(_, o)| !o.key_only && !o.index)
        .map(|(k, o)| {
            let spanned: usize =
                sizes.iter().zip(&o.full).filter(|(_, &f)| f).map(|(s, _)| s).product();
            spanned.saturating_mul(size(k, o.dtype))
        })
        .fold(0, usize::saturating_add)
}

/// Whether a call over `elements` of the domain may be large enough to stream (a cheap test
/// before [`streamable`] and [`StreamedCall::of`]: no operand has more than 64 bytes per
/// element of the domain).
pub(super) fn may_stream(mode: Streaming, elements: usize) -> bool {
    match mode {
        Streaming::Never => false,
        Streaming::Always => true,
        Streaming::Auto => elements.saturating_mul(64) >= llc_bytes(),
    }
}

/// Arithmetic per element of the domain (the op table's `cost`, in simple instructions) up to
/// which a kernel runs at the memory's speed: saxpy and bias+relu (2) gain 1.4× over 4M f32
/// streamed, gelu (a `tanh`, 16, and six more) loses 1.2×.
const MAX_ARITHMETIC: f64 = 8.0;

/// A plan node's arithmetic per element: its row of the op table for unary and binary ops
/// (`exp` 16, `div` 4, `add` 1); casts, selects, constants and indices a few instructions.
fn arithmetic(op: &Op) -> f64 {
    match op {
        Op::Unary(u) => u.cost_weight(),
        Op::Binary(b) => b.cost_weight(),
        _ => 1.0,
    }
}

/// Whether a kernel may stream its outputs: besides the conditions of the blocks, a kernel
/// that does little per element (no reduction or random numbers, at most [`MAX_ARITHMETIC`]),
/// so that it runs at the memory's speed; others are slower streamed (gelu, softmax and
/// layer_norm over 4M f32: 1.2–1.3× slower).
pub(super) fn streamable(plan: &LoopPlan) -> bool {
    cfg!(target_arch = "x86_64")
        && !plan.outputs.is_empty()
        && !plan.reduces
        && plan.randoms.is_empty()
        && plan.nodes.iter().map(|n| arithmetic(&n.op)).sum::<f64>() <= MAX_ARITHMETIC
        && plan.split_axis() == 0
        && plan.reduced.first() == Some(&false)
        && plan.reads.is_empty()
        && plan
            .outputs
            .iter()
            .all(|o| o.view.is_none() && o.indexed.is_none() && o.full.first() == Some(&true))
}

/// One call of a streamed kernel.
pub(super) struct StreamedCall {
    /// Per output: its pointer slot and bytes per step of the split axis.
    outputs: Vec<(usize, usize)>,
    /// Steps of the split axis per block, and the axis's size.
    block: usize,
    range: usize,
    /// Elements of the domain (the threading decision).
    work: usize,
    begin_slot: usize,
}

impl StreamedCall {
    /// The streamed form of one call of a [`streamable`] kernel over collapsed `sizes`, if the
    /// call is large enough.
    pub(super) fn of(mode: Streaming, plan: &LoopPlan, sizes: &[usize]) -> Option<StreamedCall> {
        let bytes = call_bytes(plan, sizes, |_, dtype| dtype.size_bytes());
        if mode == Streaming::Auto && bytes < llc_bytes() {
            return None;
        }
        let abi = LoopAbi::of(plan);
        let first = plan.inputs.len();
        let outputs: Vec<(usize, usize)> = plan
            .outputs
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let step: usize =
                    sizes.iter().zip(&o.full).skip(1).filter(|(_, &f)| f).map(|(s, _)| s).product();
                (abi.ptr(first + i), step * o.dtype.size_bytes())
            })
            .collect();
        let per_step: usize = outputs.iter().map(|&(_, b)| b).sum();
        if per_step == 0 || per_step > MAX_STEP_BYTES {
            return None;
        }
        let steps = (BLOCK_BYTES / per_step).max(1);
        let block = if sizes.len() == 1 { steps.div_ceil(64) * 64 } else { steps };
        let range = sizes.first().copied().unwrap_or(1);
        let work = sizes.iter().product();
        Some(StreamedCall { outputs, block, range, work, begin_slot: abi.begin() })
    }

    /// Runs `func` block by block (see the module documentation).
    ///
    /// # Safety
    /// `args` must be `func`'s bound arguments: every buffer alive and contiguous, inputs
    /// finished.
    pub(super) unsafe fn run(
        &self,
        func: KernelFn,
        args: &[i64],
        threads: usize,
    ) -> Result<(), RunError> {
        let scratch_bytes: usize = self.outputs.iter().map(|&(_, b)| b * self.block).sum();
        let blocks = self.range.div_ceil(self.block);
        let threads = if self.work >= MIN_PARALLEL_ELEMENTS { threads.max(1) } else { 1 };
        // One task per thread, each a contiguous run of blocks fenced once at its end (a
        // fence per block would wait for each block's lines to reach memory).
        let tasks = threads.min(blocks).max(1);
        let run_task = |t: usize| {
            let (first, last) = (blocks * t / tasks, blocks * (t + 1) / tasks);
            SCRATCH.with(|scratch| {
                let mut scratch = scratch.borrow_mut();
                let Scratch { lines, args: mine } = &mut *scratch;
                let words = scratch_bytes.div_ceil(16);
                if lines.len() < words {
                    lines.resize(words, 0);
                }
                let base = lines.as_mut_ptr() as *mut u8;
                mine.clear();
                mine.extend_from_slice(args);
                for c in first..last {
                    let lo = c * self.block;
                    let hi = (lo + self.block).min(self.range);
                    mine[self.begin_slot] = lo as i64;
                    mine[self.begin_slot + 1] = hi as i64;
                    let mut at = 0;
                    for &(slot, step) in &self.outputs {
                        // The kernel addresses byte `b` of the output at `ptr + b`: the
                        // block's first byte lands at the start of the output's region.
                        let region = base.wrapping_add(at) as i64;
                        mine[slot] = region.wrapping_sub((lo * step) as i64);
                        at += step * self.block;
                    }
                    // SAFETY: the caller's arguments on steps `lo..hi`, every output moved
                    // onto its scratch region, which covers exactly what the kernel writes
                    // (and reads back) of it on those steps.
                    unsafe { func(mine.as_ptr()) };
                    let mut at = 0;
                    for &(slot, step) in &self.outputs {
                        let dst = (args[slot] as *mut u8).wrapping_add(lo * step);
                        // SAFETY: bytes `lo·step..hi·step` of the live output, which only
                        // this block writes; the scratch region holds them.
                        unsafe { stream_copy(dst, base.add(at), (hi - lo) * step) };
                        at += step * self.block;
                    }
                }
            });
            fence();
        };
        workers::run(tasks, threads, &run_task).map_err(|e| RunError::Internal(e.to_string()))
    }
}

/// Orders this thread's non-temporal stores before what it does next (the thread that waits
/// for it then sees them).
pub(super) fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of x86-64.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    }
}

/// A thread's buffers for running blocks, kept between blocks and calls.
#[derive(Default)]
struct Scratch {
    /// The outputs' blocks (16-byte words: the copies' loads are aligned).
    lines: Vec<u128>,
    /// The kernel's arguments for the block.
    args: Vec<i64>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Copies `n` bytes from `src` to `dst` with non-temporal stores for the whole 64-byte lines
/// of `dst` (plain copies for the partial lines at either end). The caller [`fence`]s them
/// before another thread may read `dst`.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, not overlapping.
pub(crate) unsafe fn stream_copy(dst: *mut u8, src: *const u8, n: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller's promise.
    unsafe {
        let head = dst.align_offset(64).min(n);
        std::ptr::copy_nonoverlapping(src, dst, head);
        let lines = (n - head) / 64;
        let (d, s) = (dst.add(head), src.add(head));
        if has_avx() {
            stream_lines_avx(d, s, lines);
        } else {
            stream_lines_sse2(d, s, lines);
        }
        let done = head + 64 * lines;
        std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), n - done);
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's promise.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, n)
    }
}

#[cfg(target_arch = "x86_64")]
fn has_avx() -> bool {
    static AVX: OnceLock<bool> = OnceLock::new();
    *AVX.get_or_init(|| std::arch::is_x86_feature_detected!("avx"))
}

/// `lines` 64-byte lines from `s` to the 64-byte aligned `d`, in 32-byte non-temporal stores
/// (measured faster than 16- and 64-byte ones on Zen 4).
///
/// # Safety
/// The CPU has AVX; `s` valid for `64·lines` reads, `d` for as many writes, aligned to 64.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn stream_lines_avx(d: *mut u8, s: *const u8, lines: usize) {
    use std::arch::x86_64::{__m256i, _mm256_loadu_si256, _mm256_stream_si256};
    for at in (0..lines * 64).step_by(32) {
        // SAFETY: the caller's promise; `d + at` is 32-byte aligned.
        unsafe {
            let v = _mm256_loadu_si256(s.add(at) as *const __m256i);
            _mm256_stream_si256(d.add(at) as *mut __m256i, v);
        }
    }
}

/// [`stream_lines_avx`] in 16-byte stores (SSE2, every x86-64 CPU).
///
/// # Safety
/// As [`stream_lines_avx`], without AVX.
#[cfg(target_arch = "x86_64")]
unsafe fn stream_lines_sse2(d: *mut u8, s: *const u8, lines: usize) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
    for at in (0..lines * 64).step_by(16) {
        // SAFETY: the caller's promise; `d + at` is 16-byte aligned.
        unsafe {
            let v = _mm_loadu_si128(s.add(at) as *const __m128i);
            _mm_stream_si128(d.add(at) as *mut __m128i, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_copy_copies_every_alignment_and_length() {
        let src: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        for offset in 0..70 {
            for n in [0, 1, 15, 63, 64, 65, 127, 128, 200, 777] {
                let mut dst = vec![0xAAu8; 1000];
                // SAFETY: `offset + n <= 1000` for both buffers, distinct allocations.
                unsafe { stream_copy(dst.as_mut_ptr().add(offset), src.as_ptr().add(3), n) };
                fence();
                assert!(dst[..offset].iter().all(|&b| b == 0xAA), "before, {offset} {n}");
                assert_eq!(&dst[offset..offset + n], &src[3..3 + n], "{offset} {n}");
                assert!(dst[offset + n..].iter().all(|&b| b == 0xAA), "after, {offset} {n}");
            }
        }
    }
}
