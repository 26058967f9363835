//! Long reductions split along the reduced axis ([`ChunkedReduce`]), the same bits on any
//! thread count.
//!
//! A loop kernel is split across threads along a *kept* axis (`crate::parallel`), so a full
//! `sum(x)` — one kept position, one long row — ran on one thread. Here a kernel whose only
//! results are reductions over its inner axis, with few kept positions and a long inner axis,
//! is called once per fixed-size chunk of that axis ([`CHUNK`] elements, whatever the thread
//! count): each call reduces its chunk into a partial result, and the partials are combined in
//! chunk order on the calling thread. The chunking depends only on the shape, so the result is
//! the same bits for one thread or many; the kernels' own code is unchanged (a chunk is the
//! same kernel called on a shorter inner axis, its inputs offset to the chunk).

use crate::abi::{KernelFn, LoopAbi};
use crate::error::RunError;
use crate::plan::{LoopPlan, Ref};
use crate::workers;
use tfn_ir::{DType, Op, ReduceOp};

/// Elements of the inner axis one chunk reduces (a multiple of the kernels' unrolled vector
/// block, so every chunk is vector blocks plus the last chunk's tail).
pub(crate) const CHUNK: usize = 1 << 15;

/// A row is chunked from this many elements (two chunks) …
pub(crate) const MIN_LEN: usize = 2 * CHUNK;

/// … when the kernel has at most this many kept positions (more rows split across threads by
/// rows already).
pub(crate) const MAX_ROWS: usize = 4;

thread_local! {
    /// Each thread's copy of a chunk's kernel arguments (kept between chunks and calls: no
    /// allocation per chunk once it has grown).
    static ARGS: std::cell::RefCell<Vec<i64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// How one output is combined: its reduction and dtype, its argument slots.
struct Output {
    op: ReduceOp,
    dtype: DType,
    /// The operand's pointer slot and its outer stride slots.
    ptr_slot: usize,
    strides: std::ops::Range<usize>,
}

/// A kernel call run as chunks of its reduced inner axis (see the module documentation).
pub(super) struct ChunkedReduce {
    outputs: Vec<Output>,
    /// Pointer slot and element size of each input that spans the inner axis.
    offset_inputs: Vec<(usize, usize)>,
    /// The inner axis's size slot, and its length.
    len_slot: usize,
    len: usize,
    /// Kept sizes (the collapsed outer axes).
    kept: Vec<usize>,
    /// The `begin` slot and the split axis's size: every chunk covers all kept positions.
    begin_slot: usize,
    split_range: usize,
}

impl ChunkedReduce {
    /// The chunked form of a call of `plan` over collapsed `sizes`, if it takes one: only
    /// reductions over the inner axis (every other axis kept), each result a reduction that
    /// nothing else in the kernel reads, plain data inputs, at most [`MAX_ROWS`] kept
    /// positions and at least [`MIN_LEN`] reduced elements.
    pub(super) fn of(plan: &LoopPlan, sizes: &[usize]) -> Option<ChunkedReduce> {
        let rank = sizes.len();
        let (&len, outer) = sizes.split_last()?;
        let kept: usize = outer.iter().product();
        if !Self::eligible(plan) || rank != plan.rank() || len < MIN_LEN || kept > MAX_ROWS {
            return None;
        }
        let abi = LoopAbi::of(plan);
        let mut outputs = Vec::new();
        for (i, o) in plan.outputs.iter().enumerate() {
            let node = plan.nodes.get(o.node?)?;
            let Op::Reduce { op, .. } = node.op else { return None };
            let p = plan.inputs.len() + i;
            outputs.push(Output {
                op,
                dtype: o.dtype,
                ptr_slot: abi.ptr(p),
                strides: abi.strides(p),
            });
        }
        let offset_inputs = plan
            .inputs
            .iter()
            .enumerate()
            .filter(|(_, o)| o.full.last() == Some(&true))
            .map(|(k, o)| (abi.ptr(k), o.dtype.size_bytes()))
            .collect();
        Some(ChunkedReduce {
            outputs,
            offset_inputs,
            len_slot: abi.size(rank - 1),
            len,
            kept: outer.to_vec(),
            begin_slot: abi.begin(),
            split_range: sizes.get(plan.split_axis()).copied().unwrap_or(1),
        })
    }

    /// Whether calls of `plan` are chunked when their inner axis is long and they have few
    /// kept positions: reductions over the inner axis only, each result a reduction of f32,
    /// f64, i32 or i64 that nothing else in the kernel reads (a softmax's max would see only
    /// its chunk), plain data inputs (no indexed reads, iotas or random keys).
    pub(super) fn eligible(plan: &LoopPlan) -> bool {
        let Some((_, outer)) = plan.reduced.split_last() else { return false };
        let is_reduce =
            |k: usize| matches!(plan.nodes.get(k), Some(n) if matches!(n.op, Op::Reduce { .. }));
        plan.inner_reduced()
            && !outer.iter().any(|&r| r)
            && plan.randoms.is_empty()
            && plan.reads.is_empty()
            && !plan.inputs.iter().any(|o| o.index || o.key_only || o.indexed.is_some())
            && !plan
                .nodes
                .iter()
                .any(|n| n.args.iter().any(|a| matches!(a, Ref::Node(k) if is_reduce(*k))))
            && plan.outputs.iter().all(|o| {
                o.node.is_some_and(is_reduce)
                    && matches!(o.dtype, DType::F32 | DType::F64 | DType::I32 | DType::I64)
                    && o.full.last() == Some(&false)
            })
    }

    /// Runs `func` once per chunk (across up to `threads` threads) on partial buffers, then
    /// combines the partials in chunk order into the call's outputs.
    ///
    /// # Safety
    /// `args` must be the bound arguments of `func` for the call this was made for, every
    /// buffer alive and finished.
    pub(super) unsafe fn run(
        &self,
        func: KernelFn,
        args: &[i64],
        threads: usize,
    ) -> Result<(), RunError> {
        let chunks = self.len.div_ceil(CHUNK);
        let kept: usize = self.kept.iter().product();
        // One partial per (output, chunk, kept position), 8 bytes each whatever the dtype;
        // allocated fallibly (a reduction of 2^60 elements needs petabytes of partials).
        let count = self.outputs.len().checked_mul(chunks).and_then(|n| n.checked_mul(kept));
        let out_of_memory = || RunError::OutOfMemory {
            dtype: DType::I64,
            shape: vec![self.outputs.len(), chunks, kept],
        };
        let count = count.ok_or_else(out_of_memory)?;
        let mut partials: Vec<u64> = Vec::new();
        partials.try_reserve_exact(count).map_err(|_| out_of_memory())?;
        partials.resize(count, 0);
        let base = partials.as_mut_ptr() as usize;
        let chunk = |c: usize| {
            ARGS.with_borrow_mut(|mine| {
                let lo = c * CHUNK;
                let n = CHUNK.min(self.len - lo);
                mine.clear();
                mine.extend_from_slice(args);
                mine[self.len_slot] = n as i64;
                mine[self.begin_slot] = 0;
                mine[self.begin_slot + 1] = self.split_range as i64;
                for &(slot, size) in &self.offset_inputs {
                    mine[slot] = mine[slot].wrapping_add((lo * size) as i64);
                }
                for (i, o) in self.outputs.iter().enumerate() {
                    let at = base + ((i * chunks + c) * kept) * 8;
                    mine[o.ptr_slot] = at as i64;
                    // Row-major over the kept axes, one 8-byte slot per position, in elements
                    // of the output's dtype.
                    let mut acc = (8 / o.dtype.size_bytes()) as i64;
                    for (slot, &size) in o.strides.clone().zip(&self.kept).rev() {
                        mine[slot] = acc;
                        acc *= size as i64;
                    }
                }
                // SAFETY: the caller's arguments with a shorter inner axis and inputs offset to
                // the chunk (inside their buffers); outputs into this chunk's own partials.
                unsafe { func(mine.as_ptr()) };
            })
        };
        workers::run(chunks, threads, &chunk).map_err(|e| RunError::Internal(e.to_string()))?;
        for (i, o) in self.outputs.iter().enumerate() {
            let out = args[o.ptr_slot] as usize;
            let strides: Vec<i64> = args[o.strides.clone()].to_vec();
            for r in 0..kept {
                // The kept position's element offset in the real output.
                let (mut rest, mut offset) = (r, 0i64);
                for (&size, &stride) in self.kept.iter().zip(&strides).rev() {
                    offset += (rest % size) as i64 * stride;
                    rest /= size;
                }
                let at = |c: usize| base + ((i * chunks + c) * kept + r) * 8;
                let dest = out as i64 + offset * o.dtype.size_bytes() as i64;
                // SAFETY: partials were written by the chunks as the output's dtype at `at`;
                // `dest` is the kept position's element of the live output buffer.
                unsafe { combine(o, chunks, self.len, &at, dest as usize) };
            }
        }
        Ok(())
    }
}

/// Combines one kept position's partials (`at(c)`) into `dest`, in chunk order: float sums,
/// means and products in f64, rounded once; integers wrapping as the kernels do; max and min
/// keeping NaN.
///
/// # Safety
/// Each `at(c)` holds a value of `o.dtype`; `dest` is writable for one.
unsafe fn combine(o: &Output, chunks: usize, len: usize, at: &dyn Fn(usize) -> usize, dest: usize) {
    // SAFETY (every access): guaranteed by the caller.
    match o.dtype {
        DType::F32 | DType::F64 => {
            let read = |c: usize| unsafe {
                if o.dtype == DType::F32 {
                    f64::from(*(at(c) as *const f32))
                } else {
                    *(at(c) as *const f64)
                }
            };
            let vals: Vec<f64> = (0..chunks).map(read).collect();
            let r = float(o.op, &vals, len);
            unsafe {
                if o.dtype == DType::F32 {
                    *(dest as *mut f32) = r as f32;
                } else {
                    *(dest as *mut f64) = r;
                }
            }
        }
        DType::I32 | DType::I64 => {
            let read = |c: usize| unsafe {
                if o.dtype == DType::I32 {
                    i64::from(*(at(c) as *const i32))
                } else {
                    *(at(c) as *const i64)
                }
            };
            let vals: Vec<i64> = (0..chunks).map(read).collect();
            let r = int(o.op, &vals);
            unsafe {
                if o.dtype == DType::I32 {
                    // Truncating a wrapped i64 sum or product is the wrapped i32 one.
                    *(dest as *mut i32) = r as i32;
                } else {
                    *(dest as *mut i64) = r;
                }
            }
        }
        _ => {}
    }
}

/// A float reduction of per-chunk partials; a mean's partials are chunk means, weighted by
/// their chunks' lengths.
fn float(op: ReduceOp, vals: &[f64], len: usize) -> f64 {
    let nan_or = |a: f64, v: f64, pick: bool| {
        if a.is_nan() || v.is_nan() {
            // The default NaN, as each chunk's kernel gives (`codegen::ops::default_nan`).
            f64::from_bits(0xfff8_0000_0000_0000)
        } else if pick {
            v
        } else {
            a
        }
    };
    match op {
        ReduceOp::Sum => vals.iter().sum(),
        ReduceOp::Mean => {
            let weight = |c: usize| CHUNK.min(len - c * CHUNK) as f64;
            vals.iter().enumerate().map(|(c, v)| v * weight(c)).sum::<f64>() / len as f64
        }
        ReduceOp::Prod => vals.iter().product(),
        ReduceOp::Max => vals.iter().fold(f64::NEG_INFINITY, |a, &v| nan_or(a, v, v > a)),
        ReduceOp::Min => vals.iter().fold(f64::INFINITY, |a, &v| nan_or(a, v, v < a)),
    }
}

/// An integer reduction of per-chunk partials (wrapping, as the kernels' `iadd`/`imul`).
fn int(op: ReduceOp, vals: &[i64]) -> i64 {
    match op {
        ReduceOp::Sum | ReduceOp::Mean => vals.iter().fold(0, |a, &v| a.wrapping_add(v)),
        ReduceOp::Prod => vals.iter().fold(1, |a, &v| a.wrapping_mul(v)),
        ReduceOp::Max => vals.iter().copied().max().unwrap_or(i64::MIN),
        ReduceOp::Min => vals.iter().copied().min().unwrap_or(i64::MAX),
    }
}
