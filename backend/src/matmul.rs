//! Matrix products, batched NumPy style with broadcast batch axes, with the fused elementwise
//! epilogue run on each block of output rows as soon as it is final.
//!
//! f32 on AVX-512 CPUs runs tfn's own packed GEMM (`crate::packed_gemm`), the pool's threads
//! (`crate::workers`) splitting the flattened `batch × rows` range into contiguous row panels
//! (`KC` is fixed, so an element's sum runs in one order however the rows are split).
//! Everything else (f64, CPUs without AVX-512) calls the `gemm` crate single-threaded on
//! blocks of rows of one batch matrix whose size depends only on the problem
//! ([`crate_row_block`]: the crate picks its depth blocking from the block's sizes, so the
//! partition must not depend on the thread count), the threads claiming blocks, and leaves the
//! epilogue to one pass over the whole output afterwards ([`EpilogueRun::Pending`]).
//!
//! Why not a Cranelift micro-kernel: Cranelift only has 128-bit vectors and no register tiling
//! help, so a JIT micro-kernel tops out far below the 150 GFLOP/s target.
//!
//! An operand may be stored transposed (the source of a last-two-axes `Transpose` that fusion
//! folded into the matmul kernel): both paths then read it with swapped strides.
//!
//! The epilogue is a JIT loop kernel callable on any sub-range `[lo, hi)` of its outermost
//! loop axis; one step of that axis covers `unit` consecutive output elements (the product of
//! the inner loop sizes). Rows `i0..i1` of batch matrix `c` are the flat elements
//! `[(c·m + i0)·n, (c·m + i1)·n)`, so as rows become final each thread runs the epilogue on
//! the steps wholly inside its finished elements; steps straddling two threads' regions run
//! after the threads join.

use crate::buffers::RawBuf;
use crate::error::RunError;
use crate::packed_gemm::{self, Dims, OutputMatrix, PackBuffers};
use std::cell::Cell;
use tfn_ir::DType;

/// Shapes of one matmul call: `a` is `[..., m, k]`, `b` is `[..., k, n]`, `out` is
/// `[..., m, n]` with the batch axes of `a` and `b` broadcast to those of `out`.
pub(crate) struct MatMulShapes<'s> {
    pub a: &'s [usize],
    pub b: &'s [usize],
    pub out: &'s [usize],
}

/// One matmul operand: a contiguous row-major buffer holding the logical operand or, with
/// `strides`, the logical operand's element strides per axis in `buf` (a transpose fusion
/// folded into the matmul, a strided argument read where it lies).
#[derive(Clone, Debug)]
pub(crate) struct Operand {
    pub buf: RawBuf,
    pub strides: Option<Vec<usize>>,
}

impl Operand {
    /// Element strides `(row, column)` of one `rows × cols` logical matrix.
    fn strides(&self, cols: usize) -> (usize, usize) {
        match &self.strides {
            Some(s) if s.len() >= 2 => (s[s.len() - 2], s[s.len() - 1]),
            _ => (cols, 1),
        }
    }

    /// Element strides of the batch axes of this operand of `shape`, aligned to `batch`
    /// (0 where the operand broadcasts).
    fn batch_strides(&self, shape: &[usize], batch: &[usize], matrix: usize) -> Vec<usize> {
        let Some(strides) = &self.strides else { return batch_strides(shape, batch, matrix) };
        let lead = shape.len().saturating_sub(2);
        let mut out = vec![0usize; batch.len()];
        for i in 0..lead {
            if shape[i] != 1 {
                out[batch.len() + i - lead] = strides[i];
            }
        }
        out
    }
}

/// An elementwise epilogue that can run on steps `[lo, hi)` of its outer loop, each step
/// covering `unit` consecutive elements of the (row-major) matmul output.
pub(crate) struct TileEpilogue<'e> {
    /// Output elements per step (> 0).
    pub unit: usize,
    /// Runs the epilogue on steps `lo..hi`; called concurrently on disjoint ranges.
    pub run: &'e (dyn Fn(usize, usize) + Sync),
}

/// Whether [`matmul`] ran the epilogue it was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EpilogueRun {
    /// Every step ran, tile by tile.
    Done,
    /// Not run: the caller runs it over the whole output.
    Pending,
}

/// Below this many multiply-adds a matmul runs on the calling thread.
const MIN_PARALLEL_FLOPS: usize = 1 << 21;

/// Fewest multiply-adds in one `gemm`-crate row block ([`crate_row_block`]).
const CRATE_BLOCK_FLOPS: usize = 1 << 18;

/// Rows per `gemm`-crate call: a multiple of 64 with at least [`CRATE_BLOCK_FLOPS`]
/// multiply-adds, a function of the sizes only (never of the thread count).
fn crate_row_block(n: usize, k: usize) -> usize {
    let rows = CRATE_BLOCK_FLOPS / n.saturating_mul(k).max(1);
    rows.max(1).next_multiple_of(64)
}

/// Row-major element strides of the batch axes of `shape` aligned to `batch` (0 = broadcast).
fn batch_strides(shape: &[usize], batch: &[usize], matrix: usize) -> Vec<usize> {
    let lead = shape.len().saturating_sub(2);
    let mut strides = vec![0usize; batch.len()];
    let mut acc = matrix;
    for i in (0..lead).rev() {
        let j = batch.len() + i - lead;
        if shape[i] != 1 {
            strides[j] = acc;
        }
        acc *= shape[i];
    }
    strides
}

/// One batched product, resolved: sizes, per-batch element offsets, element size.
struct Problem {
    m: usize,
    n: usize,
    k: usize,
    /// Element offsets of `a` and `b` for each output batch matrix.
    offsets: Vec<(usize, usize)>,
    /// Element strides `(row, column)` within one matrix of `a` and of `b`.
    a_strides: (usize, usize),
    b_strides: (usize, usize),
}

impl Problem {
    fn new(shapes: &MatMulShapes<'_>, a: &Operand, b: &Operand) -> Result<Problem, RunError> {
        let (ra, rb, ro) = (shapes.a.len(), shapes.b.len(), shapes.out.len());
        if ra < 2 || rb < 2 || ro < 2 {
            return Err(RunError::Internal("matmul operands must have rank >= 2".into()));
        }
        let rank_of = |o: &Operand, r: usize| o.strides.as_ref().is_none_or(|s| s.len() == r);
        if !rank_of(a, ra) || !rank_of(b, rb) {
            return Err(RunError::Internal("matmul operand strides do not match its rank".into()));
        }
        let (m, k) = (shapes.a[ra - 2], shapes.a[ra - 1]);
        let n = shapes.b[rb - 1];
        if shapes.b[rb - 2] != k || shapes.out[ro - 2] != m || shapes.out[ro - 1] != n {
            return Err(RunError::Internal("matmul shapes do not agree".into()));
        }
        let batch = &shapes.out[..ro - 2];
        let a_strides = a.batch_strides(shapes.a, batch, m * k);
        let b_strides = b.batch_strides(shapes.b, batch, k * n);
        let count: usize = batch.iter().product();
        let mut offsets = Vec::with_capacity(count);
        let mut index = vec![0usize; batch.len()];
        for _ in 0..count {
            let a_off: usize = index.iter().zip(&a_strides).map(|(i, s)| i * s).sum();
            let b_off: usize = index.iter().zip(&b_strides).map(|(i, s)| i * s).sum();
            offsets.push((a_off, b_off));
            for i in (0..index.len()).rev() {
                index[i] += 1;
                if index[i] < batch[i] {
                    break;
                }
                index[i] = 0;
            }
        }
        let (a_strides, b_strides) = (a.strides(k), b.strides(n));
        // One `b` shared by every batch matrix over evenly strided rows of `a` (`[B, T, K]
        // @ [K, N]`, a linear layer): one product of `B·T` rows, so `b` is packed once.
        let rows_continue = offsets.iter().enumerate().all(|(c, &(a_off, b_off))| {
            b_off == 0 && Some(a_off) == c.checked_mul(m).and_then(|r| r.checked_mul(a_strides.0))
        });
        if offsets.len() > 1 && rows_continue {
            let m = m * offsets.len();
            return Ok(Problem { m, n, k, offsets: vec![(0, 0)], a_strides, b_strides });
        }
        Ok(Problem { m, n, k, offsets, a_strides, b_strides })
    }
}

/// Computes `out = a @ b` (all contiguous row-major of `shapes`, operands possibly stored
/// transposed), running `epilogue` on the output as it becomes final when the kernel allows it.
///
/// # Safety
/// The buffers must be valid for their shapes and dtype; `out` must not overlap the inputs.
/// `epilogue.run` must be safe to call on any step range of the finished output.
pub(crate) unsafe fn matmul(
    a: Operand,
    b: Operand,
    out: RawBuf,
    shapes: &MatMulShapes<'_>,
    threads: usize,
    epilogue: Option<&TileEpilogue<'_>>,
) -> Result<EpilogueRun, RunError> {
    let problem = Problem::new(shapes, &a, &b)?;
    #[cfg(target_arch = "x86_64")]
    if out.dtype == DType::F32 && packed_gemm::available() {
        let matrix = |o: &Operand, (rs, cs): (usize, usize)| {
            let m = packed_gemm::Matrix::new(o.buf.ptr, o.buf.dtype, rs as isize, cs as isize);
            m.ok_or_else(|| {
                RunError::Internal(format!("the packed GEMM does not read {}", o.buf.dtype))
            })
        };
        let job = PackedJob {
            a: matrix(&a, problem.a_strides)?,
            b: matrix(&b, problem.b_strides)?,
            out: out.ptr as *mut f32,
            problem: &problem,
        };
        // SAFETY: guaranteed by the caller; AVX-512F was just detected.
        unsafe { run_packed(&job, threads, epilogue.filter(|e| e.unit > 0))? };
        return Ok(if epilogue.is_some() { EpilogueRun::Done } else { EpilogueRun::Pending });
    }
    // SAFETY: guaranteed by the caller.
    unsafe { run_unpacked(&a, &b, out, shapes, &problem, threads)? };
    Ok(EpilogueRun::Pending)
}

/// The product through the `gemm` crate, which reads f32 or f64: a 16-bit operand (an f32
/// product's, read through a folded widening cast) is widened whole first.
///
/// # Safety
/// As [`matmul`].
unsafe fn run_unpacked(
    a: &Operand,
    b: &Operand,
    out: RawBuf,
    shapes: &MatMulShapes<'_>,
    problem: &Problem,
    threads: usize,
) -> Result<(), RunError> {
    // SAFETY: guaranteed by the caller (the operands are valid for their shapes); a widened
    // operand is an f32 copy at the same element offsets, alive until this function returns.
    unsafe {
        let (_wide_a, a_buf) = widened(a, shapes.a);
        let (_wide_b, b_buf) = widened(b, shapes.b);
        run_gemm_crate(a_buf, b_buf, out, problem, threads)
    }
}

/// An `f16`/`bf16` operand widened to `f32` (every element its strides reach over `shape`, at
/// the same offsets), and the buffer to read: the returned vector's, valid while it lives;
/// other operands as they are (and an empty vector).
///
/// # Safety
/// The operand's buffer must hold every element its strides reach over `shape`.
unsafe fn widened(operand: &Operand, shape: &[usize]) -> (Vec<f32>, RawBuf) {
    if !matches!(operand.buf.dtype, DType::F16 | DType::BF16) {
        return (Vec::new(), operand.buf);
    }
    let strides = match &operand.strides {
        Some(s) => s.clone(),
        None => {
            let mut s = vec![1usize; shape.len()];
            for i in (0..shape.len().saturating_sub(1)).rev() {
                s[i] = s[i + 1] * shape[i + 1];
            }
            s
        }
    };
    let extent = if shape.contains(&0) {
        0
    } else {
        1 + shape.iter().zip(&strides).map(|(d, s)| (d - 1) * s).sum::<usize>()
    };
    // SAFETY: the caller's contract: `extent` 16-bit values from the buffer's start.
    let src = unsafe { std::slice::from_raw_parts(operand.buf.ptr as *const u16, extent) };
    let mut wide = vec![0f32; extent];
    crate::convert16::widen(operand.buf.dtype, src, &mut wide);
    let buf = RawBuf { ptr: wide.as_mut_ptr() as *mut u8, dtype: DType::F32 };
    (wide, buf)
}

/// The `gemm` crate, single-threaded per row block of each batch matrix, the blocks claimed by
/// up to `threads` threads.
///
/// # Safety
/// As [`matmul`].
unsafe fn run_gemm_crate(
    a: RawBuf,
    b: RawBuf,
    out: RawBuf,
    problem: &Problem,
    threads: usize,
) -> Result<(), RunError> {
    let Problem { m, n, k, a_strides: (rs_a, cs_a), b_strides: (rs_b, cs_b), .. } = *problem;
    if !matches!(a.dtype, DType::F32 | DType::F64) {
        return Err(RunError::Internal(format!("matmul of {} has no gemm kernel", a.dtype)));
    }
    let block = crate_row_block(n, k);
    let per_matrix = m.div_ceil(block);
    let blocks = problem.offsets.len() * per_matrix;
    let work = blocks.saturating_mul(block).saturating_mul(n).saturating_mul(k);
    let threads = if work >= MIN_PARALLEL_FLOPS { threads } else { 1 };
    let (a_at, b_at, out_at) = (a.ptr as usize, b.ptr as usize, out.ptr as usize);
    macro_rules! call {
        ($t:ty, $c:expr, $i0:expr, $rows:expr, $a_off:expr, $b_off:expr) => {
            gemm::gemm(
                $rows,
                n,
                k,
                (out_at as *mut $t).add($c * m * n + $i0 * n),
                1,
                n as isize,
                false,
                (a_at as *const $t).add($a_off + $i0 * rs_a),
                cs_a as isize,
                rs_a as isize,
                (b_at as *const $t).add($b_off),
                cs_b as isize,
                rs_b as isize,
                0.0 as $t,
                1.0 as $t,
                false,
                false,
                false,
                gemm::Parallelism::None,
            )
        };
    }
    // An inner size of 1: the crate writes each product as it is, so `-0.0 · 1` stays `-0.0`
    // where a sum that starts from zero (the interpreter's, NumPy's) gives `+0.0`. The outer
    // product is written here, each element `0 + a·b`, as the interpreter computes it.
    macro_rules! outer {
        ($t:ty, $c:expr, $i0:expr, $rows:expr, $a_off:expr, $b_off:expr) => {{
            let out = (out_at as *mut $t).add($c * m * n + $i0 * n);
            let a = (a_at as *const $t).add($a_off + $i0 * rs_a);
            let b = (b_at as *const $t).add($b_off);
            for i in 0..$rows {
                let ai = *a.add(i * rs_a);
                let row = std::slice::from_raw_parts_mut(out.add(i * n), n);
                if cs_b == 1 {
                    // Contiguous: the compiler vectorises this loop.
                    let b = std::slice::from_raw_parts(b, n);
                    for (o, &bj) in row.iter_mut().zip(b) {
                        *o = 0.0 + ai * bj;
                    }
                } else {
                    for (j, o) in row.iter_mut().enumerate() {
                        *o = 0.0 + ai * *b.add(j * cs_b);
                    }
                }
            }
        }};
    }
    let run_block = |item: usize| {
        let (c, i0) = (item / per_matrix, item % per_matrix * block);
        let rows = block.min(m - i0);
        let Some(&(a_off, b_off)) = problem.offsets.get(c) else { return };
        // SAFETY: offsets stay inside the buffers for the shapes checked in `Problem::new`;
        // rows `i0..i0 + rows` of batch matrix `c` are this block's alone.
        unsafe {
            match (a.dtype, k) {
                (DType::F32, 1) => outer!(f32, c, i0, rows, a_off, b_off),
                (DType::F32, _) => call!(f32, c, i0, rows, a_off, b_off),
                (_, 1) => outer!(f64, c, i0, rows, a_off, b_off),
                _ => call!(f64, c, i0, rows, a_off, b_off),
            }
        }
    };
    crate::workers::run(blocks, threads, &run_block).map_err(|e| RunError::Internal(e.to_string()))
}

/// The raw operands of a packed f32 product, shared by the threads computing it: each input at
/// its start with its dtype (`f32`, or 16-bit widened while packed) and matrix strides.
struct PackedJob<'p> {
    a: packed_gemm::Matrix,
    b: packed_gemm::Matrix,
    out: *mut f32,
    problem: &'p Problem,
}

// SAFETY: the threads only read `a` and `b`, and write disjoint row ranges of `out`
// (see `run_packed`); the buffers outlive the pool run (`workers::run` returns after every
// chunk has finished).
unsafe impl Sync for PackedJob<'_> {}

thread_local! {
    /// Packing buffers per region, kept by the calling thread across calls (regions are claimed
    /// by whichever pool thread is free, so they are the caller's, not the workers').
    static REGION_BUFFERS: Cell<Vec<PackBuffers>> = const { Cell::new(Vec::new()) };
}

/// Splits the flattened `batch × m` rows into one contiguous region per thread and runs them.
///
/// # Safety
/// As [`matmul`], for f32 buffers; the CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
unsafe fn run_packed(
    job: &PackedJob<'_>,
    threads: usize,
    epilogue: Option<&TileEpilogue<'_>>,
) -> Result<(), RunError> {
    let Problem { m, n, k, .. } = *job.problem;
    let rows = job.problem.offsets.len() * m;
    let work = rows.saturating_mul(n).saturating_mul(k);
    if threads > 1 && work >= MIN_PARALLEL_FLOPS && job.problem.offsets.len() == 1 && m < n {
        // SAFETY: as this function's.
        return unsafe { run_packed_columns(job, threads, epilogue) };
    }
    let chunks = if threads > 1 && work >= MIN_PARALLEL_FLOPS {
        threads.min(rows.div_ceil(packed_gemm::MR)).max(1)
    } else {
        1
    };
    let per = rows.div_ceil(chunks.max(1)).div_ceil(packed_gemm::MR) * packed_gemm::MR;
    let regions: Vec<(usize, usize)> = (0..chunks)
        .map(|t| ((t * per).min(rows), ((t + 1) * per).min(rows)))
        .filter(|(lo, hi)| lo < hi)
        .collect();
    // Taken out of the thread-local (not borrowed), so a re-entrant call gets fresh ones.
    let mut bufs = REGION_BUFFERS.take();
    bufs.resize_with(regions.len().max(bufs.len()), PackBuffers::default);
    let ran = if let ([(lo, hi)], [mine, ..]) = (regions.as_slice(), bufs.as_mut_slice()) {
        // SAFETY: guaranteed by the caller; one region covering every row.
        unsafe { run_region(job, *lo, *hi, mine, epilogue) };
        Ok(())
    } else {
        let region = |c: usize, region_bufs: &mut PackBuffers| {
            let (lo, hi) = regions[c];
            // SAFETY: regions are disjoint row ranges (see `PackedJob`'s `Sync`).
            unsafe { run_region(job, lo, hi, region_bufs, epilogue) }
        };
        crate::workers::run_mut(&mut bufs[..regions.len()], threads, &region)
    };
    REGION_BUFFERS.set(bufs);
    ran.map_err(|e| RunError::Internal(e.to_string()))?;
    if let Some(e) = epilogue {
        run_straddling_steps(&regions, n, rows * n, e);
    }
    Ok(())
}

/// One product with fewer rows than columns (a linear layer at batch 1) on several threads:
/// each thread computes a band of `NR`-aligned columns, so each packs only its share of `b`
/// (split by rows, every thread would pack all of it, and a weight read from memory is most of
/// the cost). Every element is still one micro-kernel's sum in the same order: the same bits
/// as one thread. The epilogue runs after the bands, its steps split over the threads.
///
/// # Safety
/// As [`run_packed`], for a single batch matrix.
#[cfg(target_arch = "x86_64")]
unsafe fn run_packed_columns(
    job: &PackedJob<'_>,
    threads: usize,
    epilogue: Option<&TileEpilogue<'_>>,
) -> Result<(), RunError> {
    let Problem { m, n, k, b_strides: (_, cs_b), .. } = *job.problem;
    let per = n.div_ceil(threads).div_ceil(packed_gemm::NR) * packed_gemm::NR;
    let bands: Vec<(usize, usize)> = (0..threads)
        .map(|t| ((t * per).min(n), ((t + 1) * per).min(n)))
        .filter(|(lo, hi)| lo < hi)
        .collect();
    let mut bufs = REGION_BUFFERS.take();
    bufs.resize_with(bands.len().max(bufs.len()), PackBuffers::default);
    let band = |c: usize, band_bufs: &mut PackBuffers| {
        let (j0, j1) = bands[c];
        // SAFETY: column `j0 < n` of `b` is inside it.
        let (a, b) = (job.a, unsafe { job.b.offset(j0 * cs_b) });
        // SAFETY: `a` is `m × k`, `b` from column `j0` is `k × (j1 - j0)`; columns `j0..j1`
        // of every output row are this band's alone and do not overlap the inputs; AVX-512F
        // is present (caller contract).
        unsafe {
            let c = OutputMatrix { ptr: job.out.add(j0), row_stride: n };
            let dims = Dims { m, n: j1 - j0, k };
            packed_gemm::gemm_f32(dims, &a, &b, c, band_bufs, &mut |_, _| {});
        }
    };
    let ran = crate::workers::run_mut(&mut bufs[..bands.len()], threads, &band);
    REGION_BUFFERS.set(bufs);
    ran.map_err(|e| RunError::Internal(e.to_string()))?;
    if let Some(e) = epilogue {
        let steps = m * n / e.unit;
        let chunk = steps.div_ceil(threads).max(1);
        let run = |t: usize| {
            let lo = (t * chunk).min(steps);
            let hi = (lo + chunk).min(steps);
            if lo < hi {
                (e.run)(lo, hi);
            }
        };
        crate::workers::run(threads, threads, &run)
            .map_err(|e| RunError::Internal(e.to_string()))?;
    }
    Ok(())
}

/// Runs the epilogue steps not wholly inside one region (those the threads skipped).
fn run_straddling_steps(regions: &[(usize, usize)], n: usize, total: usize, e: &TileEpilogue<'_>) {
    let mut covered = 0;
    for &(lo, hi) in regions {
        let (first, last) = ((lo * n).div_ceil(e.unit), hi * n / e.unit);
        if first < last {
            if covered < first {
                (e.run)(covered, first);
            }
            covered = last;
        }
    }
    let steps = total / e.unit;
    if covered < steps {
        (e.run)(covered, steps);
    }
}

/// Computes flat rows `lo..hi` (row `r` = row `r % m` of batch matrix `r / m`), running the
/// epilogue steps wholly inside them as their rows become final.
///
/// # Safety
/// As [`run_packed`]; no other thread writes rows `lo..hi`.
#[cfg(target_arch = "x86_64")]
unsafe fn run_region(
    job: &PackedJob<'_>,
    lo: usize,
    hi: usize,
    bufs: &mut PackBuffers,
    epilogue: Option<&TileEpilogue<'_>>,
) {
    let Problem { m, n, k, a_strides: (rs_a, _), .. } = *job.problem;
    let mut next_step = epilogue.map_or(0, |e| (lo * n).div_ceil(e.unit));
    let mut row = lo;
    while row < hi {
        let (batch, i0) = (row / m, row % m);
        let i1 = m.min(i0 + (hi - row));
        let Some(&(a_off, b_off)) = job.problem.offsets.get(batch) else { return };
        // SAFETY: row `i0 < m` of batch matrix `batch` is inside `a`; batch matrix `batch` of
        // `b` starts inside `b` (or is empty).
        let (a, b) = unsafe { (job.a.offset(a_off + i0 * rs_a), job.b.offset(b_off)) };
        let first_row = batch * m + i0;
        let mut rows_done = |_: usize, done: usize| {
            if let Some(e) = epilogue {
                let last = (first_row + done) * n / e.unit;
                if last > next_step {
                    (e.run)(next_step, last);
                    next_step = last;
                }
            }
        };
        // SAFETY: `a` covers rows `i0..i1` × `k`, `b` is `k × n`, the output rows
        // `first_row..first_row + (i1 - i0)` are this region's and do not overlap the inputs;
        // AVX-512F is present (caller contract).
        unsafe {
            let c = OutputMatrix { ptr: job.out.add(first_row * n), row_stride: n };
            let dims = Dims { m: i1 - i0, n, k };
            packed_gemm::gemm_f32(dims, &a, &b, c, bufs, &mut rows_done);
        }
        row = first_row + (i1 - i0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tfn_ir::half::{bf16, f16};

    /// The `gemm`-crate path (CPUs without AVX-512) on 16-bit operands, one stored
    /// transposed, batched: every element against an f64 sum of the widened values.
    #[test]
    fn the_unpacked_path_widens_16_bit_operands() {
        let (batch, m, k, n) = (2usize, 13usize, 37usize, 9usize);
        let value = |i: usize| ((i * 7919 % 1009) as f32 / 504.5 - 1.0) * 2.0;
        for dtype in [DType::F16, DType::BF16] {
            let bits = |x: f32| match dtype {
                DType::F16 => f16::from_f32(x).to_bits(),
                _ => bf16::from_f32(x).to_bits(),
            };
            let wide = |h: u16| match dtype {
                DType::F16 => f16::from_bits(h).to_f32(),
                _ => bf16::from_bits(h).to_f32(),
            };
            // `a`: [batch, m, k] row-major; `b`: [k, n] stored as its [n, k] transpose.
            let mut a: Vec<u16> = (0..batch * m * k).map(|i| bits(value(i))).collect();
            let mut b: Vec<u16> = (0..n * k).map(|i| bits(value(i + 5000))).collect();
            let mut out = vec![f32::NAN; batch * m * n];
            let op_a =
                Operand { buf: RawBuf { ptr: a.as_mut_ptr() as *mut u8, dtype }, strides: None };
            let op_b = Operand {
                buf: RawBuf { ptr: b.as_mut_ptr() as *mut u8, dtype },
                strides: Some(vec![1, k]),
            };
            let shapes = MatMulShapes { a: &[batch, m, k], b: &[k, n], out: &[batch, m, n] };
            let problem = Problem::new(&shapes, &op_a, &op_b).unwrap();
            let c = RawBuf { ptr: out.as_mut_ptr() as *mut u8, dtype: DType::F32 };
            // SAFETY: the buffers hold the shapes above; `out` does not overlap them.
            unsafe { run_unpacked(&op_a, &op_b, c, &shapes, &problem, 2).unwrap() };
            for (e, got) in out.iter().enumerate() {
                let (bm, i, j) = (e / (m * n), e / n % m, e % n);
                let want: f64 = (0..k)
                    .map(|p| wide(a[(bm * m + i) * k + p]) as f64 * wide(b[j * k + p]) as f64)
                    .sum();
                assert!((*got as f64 - want).abs() <= 1e-4 * (1.0 + want.abs()), "{dtype} {e}");
            }
        }
    }
}
