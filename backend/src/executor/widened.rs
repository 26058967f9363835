//! Loop kernels over `f16`/`bf16` operands run on `f32` blocks ([`Widened`]).
//!
//! A 16-bit float is computed in an `f32` register and rounded once when stored (the
//! language's rule), so a kernel only converts at its loads and stores. Cranelift has no F16C,
//! so its own conversion is some thirty vector instructions per four elements — a 16-bit
//! kernel ran 25× slower than the same kernel over `f32`. Instead, such a kernel is compiled
//! with its 16-bit operands as `f32` (nothing else in the plan changes) and the executor runs
//! it in blocks of its split axis: each block's 16-bit inputs are widened into a per-thread
//! `f32` scratch (`crate::convert16`, F16C where the CPU has it), the kernel runs on the block
//! with its operand pointers moved onto the scratch, and its outputs are narrowed from the
//! scratch into the real buffers. The rounding is the one the kernel's store did (to nearest
//! even; `tfn_ir::storage::bits`), so results are the same bits; blocks hold whole steps of
//! the split axis, so every row and element is computed by the same code as in one call.
//!
//! Taken by kernels split along their first collapsed axis, without indexed reads, whose
//! 16-bit operands are read without views and, for outputs, span that axis. A 16-bit input
//! broadcast along the split axis (a bias) is widened whole once per call.
//!
//! A call touching at least as many bytes as the last-level cache holds (or any call under
//! `Streaming::Always`) narrows each block's outputs into a per-thread 16-bit scratch and
//! streams that into the real buffers with non-temporal stores (`streamed::stream_copy`), as
//! light f32 kernels do (`streamed.rs`): an output the cache cannot keep is then written
//! without first being read. Each thread runs a contiguous run of blocks and fences once.

use super::streamed::{self, Streaming};
use crate::abi::{KernelFn, LoopAbi};
use crate::convert16;
use crate::error::RunError;
use crate::parallel::MIN_PARALLEL_ELEMENTS;
use crate::plan::{LoopPlan, Ref};
use crate::workers;
use smallvec::SmallVec;
use std::cell::RefCell;
use tfn_ir::{DType, Op};

/// `f32` elements of scratch per operand and block (4 KB: a block's operands stay in L1;
/// measured against 512, 2048 and 4096 on saxpy, gelu and softmax over 1M f16).
const BLOCK_ELEMENTS: usize = 1024;

/// The 16-bit operands of a widened kernel (fixed when it is compiled).
#[derive(Clone, Debug)]
pub(crate) struct Widened {
    operands: Vec<Operand16>,
}

#[derive(Clone, Debug)]
struct Operand16 {
    /// Index among the plan's operands (its pointer slot).
    k: usize,
    dtype: DType,
    output: bool,
    /// Per collapsed axis, whether the operand spans it.
    full: Vec<bool>,
}

impl Widened {
    /// `plan` with its 16-bit float operands turned into `f32` ones, and what was turned, if
    /// the kernel can run widened (see the module documentation); else `plan` unchanged.
    pub(crate) fn plan(mut plan: LoopPlan) -> (LoopPlan, Option<Widened>) {
        let is16 = |d: DType| matches!(d, DType::F16 | DType::BF16);
        let first = plan.inputs.len();
        let inputs = plan.inputs.iter().enumerate().filter(|(_, o)| is16(o.dtype));
        let outputs = plan.outputs.iter().enumerate().filter(|(_, o)| is16(o.dtype));
        let mut operands: Vec<Operand16> = inputs
            .map(|(k, o)| Operand16 { k, dtype: o.dtype, output: false, full: o.full.clone() })
            .collect();
        operands.extend(outputs.map(|(i, o)| Operand16 {
            k: first + i,
            dtype: o.dtype,
            output: true,
            full: o.full.clone(),
        }));
        let operand = |k: usize| {
            if k < first {
                plan.inputs.get(k)
            } else {
                plan.outputs.get(k - first)
            }
        };
        let takes = !operands.is_empty()
            && plan.split_axis() == 0
            && plan.reduced.first() == Some(&false)
            && plan.reads.is_empty()
            && operands.iter().all(|o| {
                let spans_split = o.full.first() == Some(&true);
                operand(o.k).is_some_and(|op| {
                    op.view.is_none() && op.indexed.is_none() && !op.key_only && !op.index
                }) && (!o.output || spans_split)
            });
        if !takes {
            return (plan, None);
        }
        for o in &operands {
            if o.output {
                plan.outputs[o.k - first].dtype = DType::F32;
            } else {
                plan.inputs[o.k].dtype = DType::F32;
            }
        }
        // An output's rounding `cast` of an f32 value: the narrowing rounds the same way, so
        // the kernel stores the f32 value (rounding to nearest even twice is rounding once).
        for i in 0..plan.outputs.len() {
            let Some(k) = plan.outputs[i].node else { continue };
            let stored_once = plan.outputs.iter().filter(|o| o.node == Some(k)).count() == 1
                && plan.outputs[i].dtype == DType::F32
                && !plan.nodes.iter().any(|n| n.args.contains(&Ref::Node(k)));
            let from = match plan.nodes[k].args.first() {
                Some(Ref::Node(m)) => plan.nodes.get(*m).map(|n| n.dtype),
                Some(Ref::Input(j)) => plan.inputs.get(*j).map(|o| o.dtype),
                None => None,
            };
            let node = &mut plan.nodes[k];
            if stored_once
                && from == Some(DType::F32)
                && matches!(node.op, Op::Cast(to) if is16(to))
            {
                node.op = Op::Cast(DType::F32);
                node.dtype = DType::F32;
            }
        }
        (plan, Some(Widened { operands }))
    }

    /// The widened form of one call over collapsed `sizes`; its outputs are streamed (see the
    /// module documentation) as `mode` says.
    pub(super) fn call(&self, plan: &LoopPlan, sizes: &[usize], mode: Streaming) -> WidenedCall {
        let abi = LoopAbi::of(plan);
        let per_step = |full: &[bool]| -> usize {
            sizes.iter().zip(full).skip(1).filter(|(_, &f)| f).map(|(s, _)| s).product()
        };
        let operands = self
            .operands
            .iter()
            .map(|o| {
                let spans = o.full.first() == Some(&true);
                let whole = (!spans).then(|| {
                    sizes.iter().zip(&o.full).filter(|(_, &f)| f).map(|(s, _)| s).product()
                });
                CallOperand {
                    slot: abi.ptr(o.k),
                    dtype: o.dtype,
                    output: o.output,
                    unit: per_step(&o.full),
                    whole,
                }
            })
            .collect::<Vec<_>>();
        let widest = operands.iter().filter(|o| o.whole.is_none()).map(|o| o.unit).max();
        let steps = (BLOCK_ELEMENTS / widest.unwrap_or(1).max(1)).max(1);
        let block = if sizes.len() == 1 { steps.div_ceil(64) * 64 } else { steps };
        let range = sizes.first().copied().unwrap_or(1);
        let work = sizes.iter().product();
        let stream = operands.iter().any(|o| o.output && o.whole.is_none())
            && match mode {
                Streaming::Never => false,
                Streaming::Always => true,
                Streaming::Auto => {
                    // The 16-bit operands at their own size (the plan says f32 for them).
                    let size = |k: usize, dtype: DType| {
                        let w = self.operands.iter().find(|w| w.k == k);
                        w.map_or(dtype, |w| w.dtype).size_bytes()
                    };
                    streamed::call_bytes(plan, sizes, size) >= streamed::llc_bytes()
                }
            };
        WidenedCall { operands, block, range, work, begin_slot: abi.begin(), stream }
    }
}

struct CallOperand {
    slot: usize,
    dtype: DType,
    output: bool,
    /// Elements per step of the split axis.
    unit: usize,
    /// For an input broadcast along the split axis: its element count (widened whole).
    whole: Option<usize>,
}

/// One call of a widened kernel (see [`Widened::call`]).
pub(super) struct WidenedCall {
    operands: Vec<CallOperand>,
    /// Steps of the split axis per block, and the axis's size.
    block: usize,
    range: usize,
    /// Elements of the domain (the threading decision).
    work: usize,
    begin_slot: usize,
    /// Whether [`Self::run`] streams the narrowed outputs (non-temporal stores).
    stream: bool,
}

/// A thread's buffers for running blocks, kept between blocks and calls (no allocation per
/// block once they have grown).
#[derive(Default)]
struct Scratch {
    /// The `f32` blocks of the 16-bit operands.
    f32s: Vec<f32>,
    /// A block's narrowed output, when streamed.
    narrowed: Vec<u16>,
    /// The kernel's arguments for the block.
    args: Vec<i64>,
    /// Per blocked operand: (offset in `f32s`, first element, element count).
    regions: Vec<(usize, usize, usize)>,
}

thread_local! {
    /// Each thread's scratch.
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl WidenedCall {
    /// Runs `func` block by block (see the module documentation).
    ///
    /// # Safety
    /// `args` must be `func`'s bound arguments with the real (16-bit) buffers: every buffer
    /// alive and contiguous, inputs finished.
    pub(super) unsafe fn run(
        &self,
        func: KernelFn,
        args: &[i64],
        threads: usize,
    ) -> Result<(), RunError> {
        let threads = if self.work >= MIN_PARALLEL_ELEMENTS { threads } else { 1 };
        let stream = self.stream;
        let pool = |blocks: usize, block: &(dyn Fn(usize) + Sync)| {
            let ran = if stream {
                // One task per thread, a contiguous run of blocks fenced once at its end.
                let tasks = threads.min(blocks).max(1);
                let task = |t: usize| {
                    (blocks * t / tasks..blocks * (t + 1) / tasks).for_each(block);
                    streamed::fence();
                };
                workers::run(tasks, threads, &task)
            } else {
                workers::run(blocks, threads, block)
            };
            ran.map_err(|e| RunError::Internal(e.to_string()))
        };
        // SAFETY: guaranteed by the caller.
        unsafe { self.run_steps(func, args, 0..self.range, stream, pool) }
    }

    /// Runs steps `lo..hi` of the split axis on the calling thread (a GEMM epilogue's tile),
    /// in the same blocks as [`Self::run`] would within them.
    ///
    /// # Safety
    /// As [`Self::run`], for the elements of those steps; `lo <= hi <=` the split size.
    pub(super) unsafe fn run_range(&self, func: KernelFn, args: &[i64], lo: usize, hi: usize) {
        let inline = |blocks: usize, block: &(dyn Fn(usize) + Sync)| (0..blocks).for_each(block);
        // SAFETY: guaranteed by the caller.
        unsafe { self.run_steps(func, args, lo..hi, false, inline) }
    }

    /// Runs steps `steps` in blocks, handing `dispatch` the block count and the block runner
    /// (the pool, or a plain loop); `stream`: narrow outputs into scratch and stream them
    /// (`dispatch` then fences each thread's stores).
    ///
    /// # Safety
    /// As [`Self::run`], for the elements of those steps.
    unsafe fn run_steps<R>(
        &self,
        func: KernelFn,
        args: &[i64],
        steps: std::ops::Range<usize>,
        stream: bool,
        dispatch: impl FnOnce(usize, &(dyn Fn(usize) + Sync)) -> R,
    ) -> R {
        let mut base: SmallVec<[i64; 16]> = SmallVec::from_slice(args);
        // Inputs broadcast along the split axis: widened whole, once.
        let mut wholes: SmallVec<[Vec<f32>; 1]> = SmallVec::new();
        for o in &self.operands {
            if let Some(n) = o.whole {
                // SAFETY: the input's buffer holds its `n` elements (contiguous).
                let src = unsafe { std::slice::from_raw_parts(args[o.slot] as *const u16, n) };
                let mut w = vec![0f32; n];
                convert16::widen(o.dtype, src, &mut w);
                base[o.slot] = w.as_ptr() as i64;
                wholes.push(w);
            }
        }
        let blocked: SmallVec<[&CallOperand; 4]> =
            self.operands.iter().filter(|o| o.whole.is_none()).collect();
        let region: SmallVec<[usize; 4]> = blocked.iter().map(|o| self.block * o.unit).collect();
        let scratch_len: usize = region.iter().sum();
        let blocks = steps.len().div_ceil(self.block);
        let run_block = |c: usize| {
            let lo = steps.start + c * self.block;
            let hi = (lo + self.block).min(steps.end);
            SCRATCH.with(|scratch| {
                let mut scratch = scratch.borrow_mut();
                let Scratch { f32s: s, narrowed, args: mine, regions } = &mut *scratch;
                if s.len() < scratch_len {
                    s.resize(scratch_len, 0.0);
                }
                mine.clear();
                mine.extend_from_slice(&base);
                mine[self.begin_slot] = lo as i64;
                mine[self.begin_slot + 1] = hi as i64;
                let mut at = 0;
                regions.clear();
                for (o, &len) in blocked.iter().zip(&region) {
                    let (first, n) = (lo * o.unit, (hi - lo) * o.unit);
                    let scratch = &mut s[at..at + n];
                    if !o.output {
                        // SAFETY: elements `first..first + n` of the live input.
                        let src = unsafe {
                            std::slice::from_raw_parts((args[o.slot] as *const u16).add(first), n)
                        };
                        convert16::widen(o.dtype, src, scratch);
                    }
                    // The kernel addresses element `e` at `ptr + 4 e`: the block's first
                    // element lands at the scratch's start.
                    let ptr = scratch.as_mut_ptr() as i64;
                    mine[o.slot] = ptr.wrapping_sub((first * 4) as i64);
                    regions.push((at, first, n));
                    at += len;
                }
                // SAFETY: the caller's arguments on steps `lo..hi`, every 16-bit operand
                // moved onto its f32 scratch block, which covers exactly what they touch.
                unsafe { func(mine.as_ptr()) };
                for (o, &(at, first, n)) in blocked.iter().zip(regions.iter()) {
                    if o.output {
                        // Elements `first..first + n` of the live output, which only this
                        // block writes.
                        let dst = (args[o.slot] as *mut u16).wrapping_add(first);
                        if stream {
                            if narrowed.len() < n {
                                narrowed.resize(n, 0);
                            }
                            convert16::narrow(o.dtype, &s[at..at + n], &mut narrowed[..n]);
                            // SAFETY: `dst` as above, `2n` bytes; `narrowed` holds the
                            // block's `n` elements.
                            unsafe {
                                streamed::stream_copy(
                                    dst as *mut u8,
                                    narrowed.as_ptr() as *const u8,
                                    2 * n,
                                )
                            };
                        } else {
                            // SAFETY: `dst` as above.
                            let dst = unsafe { std::slice::from_raw_parts_mut(dst, n) };
                            convert16::narrow(o.dtype, &s[at..at + n], dst);
                        }
                    }
                }
            });
        };
        let ran = dispatch(blocks, &run_block);
        drop(wholes);
        ran
    }
}
