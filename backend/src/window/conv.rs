//! Convolution kernels: the implicit-GEMM forward convolution (f32, AVX-512), the dispatch of
//! the adjoints to the GEMM (`super::conv_grad`) and direct loops for everything else. Geometry and naming: `tfn_ir::op_window` ("big" image, "small" image,
//! weight).

use super::{split, Shared};
use crate::buffers::RawBuf;
use crate::error::RunError;
use crate::matmul::{EpilogueRun, TileEpilogue};
use std::ops::{Add, Mul};
use tfn_ir::op_window::ConvGeom;
use tfn_ir::DType;

/// The float element types of the direct kernels.
trait Real: Copy + Send + Sync + Add<Output = Self> + Mul<Output = Self> {
    const ZERO: Self;
}

impl Real for f32 {
    const ZERO: f32 = 0.0;
}

impl Real for f64 {
    const ZERO: f64 = 0.0;
}

/// The range of small-image columns `j` whose big-image column `j·s + off` is inside
/// `0..width`, clipped to `0..ow`.
#[inline]
pub(super) fn valid_cols(off: isize, s: usize, width: usize, ow: usize) -> (usize, usize) {
    let s = s as isize;
    let lo = if off < 0 { (-off + s - 1) / s } else { 0 };
    let room = width as isize - off;
    let hi = if room > 0 { (room + s - 1) / s } else { 0 };
    let (lo, hi) = (lo.clamp(0, ow as isize) as usize, hi.clamp(0, ow as isize) as usize);
    (lo, hi.max(lo))
}

/// `small = conv(big, w)`, running `epilogue` per image when it can.
///
/// # Safety
/// As [`super::run_window`]; `g` describes the buffers.
pub(super) unsafe fn forward(
    g: &ConvGeom,
    x: RawBuf,
    w: RawBuf,
    out: RawBuf,
    threads: usize,
    epilogue: Option<&TileEpilogue<'_>>,
) -> Result<EpilogueRun, RunError> {
    match x.dtype {
        DType::F32 => {
            #[cfg(target_arch = "x86_64")]
            if crate::packed_gemm::available() && use_gemm(g) {
                let per_image = g.cout * g.oh * g.ow;
                let tiles = epilogue.filter(|e| e.unit > 0 && per_image.is_multiple_of(e.unit));
                // SAFETY: the caller's contract; AVX-512F was just detected.
                unsafe {
                    implicit_gemm::forward(g, x.ptr as _, w.ptr as _, out.ptr as _, threads, tiles)?
                };
                return Ok(if tiles.is_some() { EpilogueRun::Done } else { EpilogueRun::Pending });
            }
            // SAFETY: the caller's contract.
            unsafe { direct_forward::<f32>(g, x.ptr as _, w.ptr as _, out.ptr as _, threads)? };
        }
        // SAFETY: the caller's contract.
        DType::F64 => unsafe {
            direct_forward::<f64>(g, x.ptr as _, w.ptr as _, out.ptr as _, threads)?
        },
        d => return Err(RunError::Internal(format!("conv2d of {d}"))),
    }
    Ok(EpilogueRun::Pending)
}

/// Whether the implicit GEMM pays: enough output channels per group to fill the GEMM's
/// 12-row micro-tiles, and a deep enough product. Depthwise and tiny convolutions run
/// direct.
fn use_gemm(g: &ConvGeom) -> bool {
    g.cout_g() >= 8 && g.cin_g() * g.kh * g.kw >= 16 && g.oh * g.ow >= 16
}

/// Direct forward convolution: per (image, output channel) plane, accumulating each input
/// channel and window tap over whole output rows (branch-free inner loops). Each output
/// element sums its terms in the interpreter's order.
unsafe fn direct_forward<T: Real>(
    g: &ConvGeom,
    x: *const T,
    w: *const T,
    out: *mut T,
    threads: usize,
) -> Result<(), RunError> {
    let (x, w, out) = (Shared(x as *mut T), Shared(w as *mut T), Shared(out));
    let g = *g;
    let (cin_g, cout_g, plane, oplane) = (g.cin_g(), g.cout_g(), g.h * g.w, g.oh * g.ow);
    split(g.n * g.cout, threads, g.macs(), &|lo, hi| {
        let (x, w, out) = (&x, &w, &out);
        for no in lo..hi {
            let (n, o) = (no / g.cout, no % g.cout);
            let grp = o / cout_g;
            // SAFETY: plane `no` of the output is this thread's alone and inside `out`.
            let op = unsafe { std::slice::from_raw_parts_mut(out.0.add(no * oplane), oplane) };
            op.fill(T::ZERO);
            for c in 0..cin_g {
                let ch = grp * cin_g + c;
                // SAFETY: channel `ch` of image `n` is inside `x`.
                let xp =
                    unsafe { std::slice::from_raw_parts(x.0.add((n * g.cin + ch) * plane), plane) };
                for a in 0..g.kh {
                    for b in 0..g.kw {
                        // SAFETY: the tap is inside the weight.
                        let wv = unsafe { *w.0.add(((o * cin_g + c) * g.kh + a) * g.kw + b) };
                        let off = (b * g.dilation[1]) as isize - g.padding[1] as isize;
                        let (jlo, jhi) = valid_cols(off, g.stride[1], g.w, g.ow);
                        for i in 0..g.oh {
                            let Some(r) = g.in_row(i, a) else { continue };
                            let xrow = &xp[r * g.w..(r + 1) * g.w];
                            let orow = &mut op[i * g.ow..(i + 1) * g.ow];
                            let s = g.stride[1];
                            let base = (jlo * s) as isize + off;
                            for (t, o) in orow[jlo..jhi].iter_mut().enumerate() {
                                *o = *o + wv * xrow[(base + (t * s) as isize) as usize];
                            }
                        }
                    }
                }
            }
        }
    })
}

/// `big = conv_transpose(small, w)`: each image's big planes accumulate every small plane
/// through every window tap (threads split the images).
///
/// # Safety
/// As [`super::run_window`]; `g` describes the buffers.
pub(super) unsafe fn transpose(
    g: &ConvGeom,
    x: RawBuf,
    w: RawBuf,
    out: RawBuf,
    threads: usize,
) -> Result<(), RunError> {
    // SAFETY (both arms): the caller's contract.
    match x.dtype {
        DType::F32 => {
            #[cfg(target_arch = "x86_64")]
            if crate::packed_gemm::available() && super::conv_grad::use_gemm_transpose(g) {
                // SAFETY: the caller's contract; AVX-512F was just detected.
                unsafe {
                    super::conv_grad::transpose(g, x.ptr as _, w.ptr as _, out.ptr as _, threads)?
                };
                return Ok(());
            }
            // SAFETY: the caller's contract.
            unsafe { direct_transpose::<f32>(g, x.ptr as _, w.ptr as _, out.ptr as _, threads)? }
        }
        DType::F64 => unsafe {
            direct_transpose::<f64>(g, x.ptr as _, w.ptr as _, out.ptr as _, threads)?
        },
        d => return Err(RunError::Internal(format!("conv_transpose2d of {d}"))),
    }
    Ok(())
}

unsafe fn direct_transpose<T: Real>(
    g: &ConvGeom,
    x: *const T,
    w: *const T,
    out: *mut T,
    threads: usize,
) -> Result<(), RunError> {
    let (x, w, out) = (Shared(x as *mut T), Shared(w as *mut T), Shared(out));
    let g = *g;
    let (cin_g, cout_g, plane, oplane) = (g.cin_g(), g.cout_g(), g.h * g.w, g.oh * g.ow);
    split(g.n, threads, g.macs(), &|lo, hi| {
        let (x, w, out) = (&x, &w, &out);
        for n in lo..hi {
            // SAFETY: image `n` of the output is this thread's alone and inside `out`.
            let big = unsafe {
                std::slice::from_raw_parts_mut(out.0.add(n * g.cin * plane), g.cin * plane)
            };
            big.fill(T::ZERO);
            for o in 0..g.cout {
                let grp = o / cout_g;
                // SAFETY: plane `o` of image `n` is inside `x`.
                let sp = unsafe {
                    std::slice::from_raw_parts(x.0.add((n * g.cout + o) * oplane), oplane)
                };
                for c in 0..cin_g {
                    let bp = &mut big[(grp * cin_g + c) * plane..(grp * cin_g + c + 1) * plane];
                    for a in 0..g.kh {
                        for b in 0..g.kw {
                            // SAFETY: the tap is inside the weight.
                            let wv = unsafe { *w.0.add(((o * cin_g + c) * g.kh + a) * g.kw + b) };
                            let off = (b * g.dilation[1]) as isize - g.padding[1] as isize;
                            let (jlo, jhi) = valid_cols(off, g.stride[1], g.w, g.ow);
                            let s = g.stride[1];
                            for i in 0..g.oh {
                                let Some(r) = g.in_row(i, a) else { continue };
                                let srow = &sp[i * g.ow..(i + 1) * g.ow];
                                let brow = &mut bp[r * g.w..(r + 1) * g.w];
                                for (j, v) in srow.iter().enumerate().take(jhi).skip(jlo) {
                                    let q = ((j * s) as isize + off) as usize;
                                    brow[q] = brow[q] + wv * *v;
                                }
                            }
                        }
                    }
                }
            }
        }
    })
}

/// `w = conv_weight(big, small)`: each weight tap is the correlation of its big channel with
/// its small channel over every image (threads split the output channels).
///
/// # Safety
/// As [`super::run_window`]; `g` describes the buffers.
pub(super) unsafe fn weight(
    g: &ConvGeom,
    x: RawBuf,
    dy: RawBuf,
    out: RawBuf,
    threads: usize,
) -> Result<(), RunError> {
    // SAFETY (both arms): the caller's contract.
    match x.dtype {
        DType::F32 => {
            #[cfg(target_arch = "x86_64")]
            if crate::packed_gemm::available() && super::conv_grad::use_gemm_weight(g) {
                // SAFETY: the caller's contract; AVX-512F was just detected.
                unsafe {
                    super::conv_grad::weight(g, x.ptr as _, dy.ptr as _, out.ptr as _, threads)?
                };
                return Ok(());
            }
            // SAFETY: the caller's contract.
            unsafe { direct_weight::<f32>(g, x.ptr as _, dy.ptr as _, out.ptr as _, threads)? }
        }
        DType::F64 => unsafe {
            direct_weight::<f64>(g, x.ptr as _, dy.ptr as _, out.ptr as _, threads)?
        },
        d => return Err(RunError::Internal(format!("conv2d_weight of {d}"))),
    }
    Ok(())
}

unsafe fn direct_weight<T: Real>(
    g: &ConvGeom,
    x: *const T,
    dy: *const T,
    out: *mut T,
    threads: usize,
) -> Result<(), RunError> {
    let (x, dy, out) = (Shared(x as *mut T), Shared(dy as *mut T), Shared(out));
    let g = *g;
    let (cin_g, cout_g, plane, oplane) = (g.cin_g(), g.cout_g(), g.h * g.w, g.oh * g.ow);
    split(g.cout, threads, g.macs(), &|lo, hi| {
        let (x, dy, out) = (&x, &dy, &out);
        for o in lo..hi {
            let grp = o / cout_g;
            for c in 0..cin_g {
                let ch = grp * cin_g + c;
                for a in 0..g.kh {
                    for b in 0..g.kw {
                        let off = (b * g.dilation[1]) as isize - g.padding[1] as isize;
                        let (jlo, jhi) = valid_cols(off, g.stride[1], g.w, g.ow);
                        let s = g.stride[1];
                        let mut acc = T::ZERO;
                        for n in 0..g.n {
                            // SAFETY: channel `ch` / plane `o` of image `n` are inside the inputs.
                            let xp = unsafe {
                                std::slice::from_raw_parts(x.0.add((n * g.cin + ch) * plane), plane)
                            };
                            let sp = unsafe {
                                std::slice::from_raw_parts(
                                    dy.0.add((n * g.cout + o) * oplane),
                                    oplane,
                                )
                            };
                            for i in 0..g.oh {
                                let Some(r) = g.in_row(i, a) else { continue };
                                let xrow = &xp[r * g.w..(r + 1) * g.w];
                                let srow = &sp[i * g.ow..(i + 1) * g.ow];
                                for j in jlo..jhi {
                                    acc = acc + xrow[((j * s) as isize + off) as usize] * srow[j];
                                }
                            }
                        }
                        // SAFETY: weight row `o` is this thread's alone.
                        unsafe { *out.0.add(((o * cin_g + c) * g.kh + a) * g.kw + b) = acc };
                    }
                }
            }
        }
    })
}

#[cfg(target_arch = "x86_64")]
mod implicit_gemm {
    use super::super::{split, Shared};
    use crate::error::RunError;
    use crate::matmul::TileEpilogue;
    use crate::packed_gemm::{
        gemm_f32, Dims, OutputMatrix, PackBuffers, PanelSource, StridedMatrix, NR,
    };
    use std::cell::Cell;
    use tfn_ir::op_window::ConvGeom;

    thread_local! {
        /// Packing buffers of the calling thread, kept across calls.
        static BUFFERS: Cell<PackBuffers> = Cell::new(PackBuffers::default());
    }

    /// The im2col matrix of one image and group, `[cin_g·kh·kw, oh·ow]`, never stored: its
    /// GEMM panels are packed straight from the NCHW image. Row `k = (c, a, b)`, column
    /// `p = (i, j)` holds `x[c, i·s - p + a·d, j·s - p + b·d]` (0 in the padding).
    struct Im2col {
        /// Channel 0 of the group in the image.
        x: *const f32,
        g: ConvGeom,
    }

    impl PanelSource for Im2col {
        unsafe fn pack_b(&self, row0: usize, col0: usize, kc: usize, nc: usize, dst: *mut f32) {
            let g = &self.g;
            let (khw, plane) = (g.kh * g.kw, g.h * g.w);
            let (s, pad, dil) = (g.stride[1], g.padding[1] as isize, g.dilation[1]);
            let mut out = dst;
            for c in (0..nc).step_by(NR) {
                let cols = (nc - c).min(NR);
                // The panel's columns as runs within one output row: (first, length, i, j).
                let mut runs = [(0usize, 0usize, 0usize, 0usize); NR];
                let mut count = 0;
                let (mut p, end) = (col0 + c, col0 + c + cols);
                while p < end {
                    let (i, j) = (p / g.ow, p % g.ow);
                    let len = (g.ow - j).min(end - p);
                    runs[count] = (p - (col0 + c), len, i, j);
                    count += 1;
                    p += len;
                }
                for r in 0..kc {
                    let k = row0 + r;
                    let (ch, a, b) = (k / khw, (k % khw) / g.kw, k % g.kw);
                    // SAFETY: panel row `r` holds `NR` floats inside `dst` (caller contract).
                    let row = unsafe { std::slice::from_raw_parts_mut(out.add(r * NR), NR) };
                    row[cols..].fill(0.0);
                    for &(first, len, i, j) in &runs[..count] {
                        let seg = &mut row[first..first + len];
                        let Some(rr) = g.in_row(i, a) else {
                            seg.fill(0.0);
                            continue;
                        };
                        // SAFETY: row `rr < h` of channel `ch < cin_g` is inside the image.
                        let src = unsafe {
                            std::slice::from_raw_parts(self.x.add(ch * plane + rr * g.w), g.w)
                        };
                        let c0 = (j * s + b * dil) as isize - pad;
                        if s == 1 {
                            let lo = (-c0).clamp(0, len as isize) as usize;
                            let hi = (g.w as isize - c0).clamp(lo as isize, len as isize) as usize;
                            seg[..lo].fill(0.0);
                            seg[hi..].fill(0.0);
                            // A window entirely right of the image (`c0 > w`) copies nothing.
                            if lo < hi {
                                let start = (c0 + lo as isize) as usize;
                                seg[lo..hi].copy_from_slice(&src[start..start + (hi - lo)]);
                            }
                        } else {
                            for (t, v) in seg.iter_mut().enumerate() {
                                let q = c0 + (t * s) as isize;
                                *v = if q >= 0 && (q as usize) < g.w {
                                    src[q as usize]
                                } else {
                                    0.0
                                };
                            }
                        }
                    }
                }
                // SAFETY: the panel just written is `kc * NR` floats.
                out = unsafe { out.add(kc * NR) };
            }
        }
    }

    /// Per image (threads split the images) and group: `out = W_g · im2col(x_n)`, then the
    /// epilogue's steps of that image (`unit` divides an image's elements).
    ///
    /// # Safety
    /// As [`super::super::run_window`], f32 buffers; AVX-512F must be present.
    pub(super) unsafe fn forward(
        g: &ConvGeom,
        x: *const f32,
        w: *const f32,
        out: *mut f32,
        threads: usize,
        epilogue: Option<&TileEpilogue<'_>>,
    ) -> Result<(), RunError> {
        let g = *g;
        let (x, w, out) = (Shared(x as *mut f32), Shared(w as *mut f32), Shared(out));
        let (cin_g, cout_g, p) = (g.cin_g(), g.cout_g(), g.oh * g.ow);
        let k = cin_g * g.kh * g.kw;
        let per_image = g.cout * p;
        let run = |lo: usize, hi: usize| {
            let (x, w, out) = (&x, &w, &out);
            let mut bufs = BUFFERS.take();
            for n in lo..hi {
                for grp in 0..g.groups {
                    // SAFETY: the group's weight rows, image channels and output planes are
                    // inside the buffers; image `n`'s output is this thread's alone.
                    unsafe {
                        let a = StridedMatrix {
                            ptr: w.0.add(grp * cout_g * k),
                            row_stride: k as isize,
                            col_stride: 1,
                        };
                        let b = Im2col { x: x.0.add((n * g.cin + grp * cin_g) * g.h * g.w), g };
                        let c = OutputMatrix {
                            ptr: out.0.add((n * g.cout + grp * cout_g) * p),
                            row_stride: p,
                        };
                        gemm_f32(Dims { m: cout_g, n: p, k }, &a, &b, c, &mut bufs, &mut |_, _| {});
                    }
                }
                if let Some(e) = epilogue {
                    (e.run)(n * per_image / e.unit, (n + 1) * per_image / e.unit);
                }
            }
            BUFFERS.set(bufs);
        };
        split(g.n, threads, g.macs(), &run)
    }
}
