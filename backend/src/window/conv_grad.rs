//! The f32 convolution adjoints on the packed GEMM (x86-64, AVX-512), per group `g`:
//!
//! - weight gradient (`conv2d_weight`): `dW_g = Σ_n dY_{n,g} · im2col(x_{n,g})ᵀ`, an
//!   `cout_g × K` product of depth `oh·ow` per image (`K = cin_g·kh·kw`). The transposed
//!   im2col matrix is never stored: [`Im2colT`] packs the GEMM's `B` panels straight from the
//!   NCHW image, as the forward's `Im2col` does for the untransposed one. Each image's product
//!   lands in a per-thread scratch tile and is added to `dW` in image order, so every element
//!   sums its images in one order; threads split `dW`'s columns in whole micro-panels (`NR`),
//!   which the micro-kernel computes lane for lane alike — the same floats for any thread
//!   count.
//! - input gradient (`conv_transpose2d`): per image, `cols = W_gᵀ · dY_{n,g}` (`K × oh·ow`,
//!   `W_gᵀ` read through transposed strides), then col2im: each column row `(c, a, b)` is
//!   added into the big image at its window tap (contiguous rows for stride 1). The column
//!   buffer is one image-group's, per thread, reused. Threads split the images.
//!
//! When these pay ([`use_gemm_weight`], [`use_gemm_transpose`]) is decided in `conv.rs`'s
//! dispatch; tiny channel counts and depthwise convolutions keep the direct loops.

use super::{split, Shared, MIN_PARALLEL_WORK};
use crate::error::RunError;
use crate::packed_gemm::{
    gemm_f32, Dims, OutputMatrix, PackBuffers, PanelSource, StridedMatrix, NR,
};
use std::cell::{Cell, RefCell};
use tfn_ir::op_window::ConvGeom;

thread_local! {
    /// Packing buffers of the calling thread, kept across calls.
    static BUFFERS: Cell<PackBuffers> = Cell::new(PackBuffers::default());
    /// The scratch product (a weight-gradient tile or an image's columns), kept across calls.
    static SCRATCH: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// Whether the weight gradient runs on the GEMM (product `cout_g × K`, depth `oh·ow`): at
/// least 4 output channels per group, 4 taps·channels and 4 output positions, so depthwise
/// and single-channel convolutions stay direct. The direct loop's scalar reduction is
/// latency-bound: measured (one thread, adjoints of one layer) the GEMM is 26× faster
/// already at `[32,3,16,16]` → 8 channels (7.4 → 0.28 ms) and 40× at cnn's second layer
/// (8.8 → 0.22 ms). The boundary itself (4 channels) is not tuned.
pub(super) fn use_gemm_weight(g: &ConvGeom) -> bool {
    g.cout_g() >= 4 && g.cin_g() * g.kh * g.kw >= 4 && g.oh * g.ow >= 4
}

/// Whether the input gradient runs on the GEMM (product `K × oh·ow`, depth `cout_g`): the
/// same rule as [`use_gemm_weight`] (the two adjoints were measured together).
pub(super) fn use_gemm_transpose(g: &ConvGeom) -> bool {
    g.cout_g() >= 4 && g.cin_g() * g.kh * g.kw >= 4 && g.oh * g.ow >= 4
}

/// The transposed im2col matrix of one image and group, `[oh·ow, cin_g·kh·kw]`: row
/// `p = (i, j)`, column `k = (c, a, b)` holds `x[c, i·s - p + a·d, j·s - p + b·d]` (0 in the
/// padding). Packed straight from the NCHW image.
struct Im2colT {
    /// Channel 0 of the group in the image.
    x: *const f32,
    g: ConvGeom,
}

impl PanelSource for Im2colT {
    unsafe fn pack_b(&self, row0: usize, col0: usize, kc: usize, nc: usize, dst: *mut f32) {
        let g = &self.g;
        let (khw, plane) = (g.kh * g.kw, g.h * g.w);
        let (s, pad, dil) = (g.stride[1], g.padding[1] as isize, g.dilation[1]);
        let mut out = dst;
        for c0 in (0..nc).step_by(NR) {
            let cols = (nc - c0).min(NR);
            // SAFETY: this panel is `kc * NR` floats inside `dst` (caller contract).
            let panel = unsafe { std::slice::from_raw_parts_mut(out, kc * NR) };
            if cols < NR {
                panel.fill(0.0);
            }
            for t in 0..cols {
                let k = col0 + c0 + t;
                let (ch, a, b) = (k / khw, (k % khw) / g.kw, k % g.kw);
                // Walk the panel rows (output positions) a whole output row at a time.
                let (mut p, end) = (row0, row0 + kc);
                while p < end {
                    let (i, j0) = (p / g.ow, p % g.ow);
                    let len = (g.ow - j0).min(end - p);
                    let base = (p - row0) * NR + t;
                    match g.in_row(i, a) {
                        None => (0..len).for_each(|u| panel[base + u * NR] = 0.0),
                        Some(rr) => {
                            // SAFETY: row `rr < h` of channel `ch < cin_g` is inside the image.
                            let src = unsafe {
                                std::slice::from_raw_parts(self.x.add(ch * plane + rr * g.w), g.w)
                            };
                            let c = (j0 * s + b * dil) as isize - pad;
                            for u in 0..len {
                                let q = c + (u * s) as isize;
                                panel[base + u * NR] = if q >= 0 && (q as usize) < g.w {
                                    src[q as usize]
                                } else {
                                    0.0
                                };
                            }
                        }
                    }
                    p += len;
                }
            }
            // SAFETY: the panel just written is `kc * NR` floats.
            out = unsafe { out.add(kc * NR) };
        }
    }
}

/// `out = conv_weight(x, dy)` (`[cout, cin_g, kh, kw]`) on the GEMM.
///
/// # Safety
/// As [`super::run_window`], f32 buffers described by `g`; AVX-512F must be present.
pub(super) unsafe fn weight(
    g: &ConvGeom,
    x: *const f32,
    dy: *const f32,
    out: *mut f32,
    threads: usize,
) -> Result<(), RunError> {
    let g = *g;
    let (x, dy, out) = (Shared(x as *mut f32), Shared(dy as *mut f32), Shared(out));
    let (cin_g, cout_g, p) = (g.cin_g(), g.cout_g(), g.oh * g.ow);
    let k = cin_g * g.kh * g.kw;
    // Column chunks of whole micro-panels, one per thread when the work is worth splitting.
    let panels = k.div_ceil(NR);
    let width = if threads > 1 && g.macs() >= MIN_PARALLEL_WORK {
        NR * panels.div_ceil(threads.div_ceil(g.groups).max(1))
    } else {
        k
    };
    let chunks = k.div_ceil(width);
    let run = |lo: usize, hi: usize| {
        let (x, dy, out) = (&x, &dy, &out);
        let mut bufs = BUFFERS.take();
        SCRATCH.with_borrow_mut(|tmp| {
            for unit in lo..hi {
                let (grp, chunk) = (unit / chunks, unit % chunks);
                let (k0, k1) = (chunk * width, ((chunk + 1) * width).min(k));
                let kk = k1 - k0;
                if tmp.len() < cout_g * kk {
                    tmp.resize(cout_g * kk, 0.0);
                }
                // SAFETY: rows `grp·cout_g..` of the weight, columns `k0..k1`, are this
                // unit's alone and inside `out`.
                let dw = unsafe { out.0.add(grp * cout_g * k + k0) };
                for n in 0..g.n {
                    // SAFETY: the group's planes of image `n` are inside the inputs; `tmp`
                    // holds `cout_g × kk`.
                    unsafe {
                        let a = StridedMatrix {
                            ptr: dy.0.add((n * g.cout + grp * cout_g) * p),
                            row_stride: p as isize,
                            col_stride: 1,
                        };
                        let b = Shifted {
                            src: Im2colT { x: x.0.add((n * g.cin + grp * cin_g) * g.h * g.w), g },
                            col0: k0,
                        };
                        let c = OutputMatrix { ptr: tmp.as_mut_ptr(), row_stride: kk };
                        gemm_f32(
                            Dims { m: cout_g, n: kk, k: p },
                            &a,
                            &b,
                            c,
                            &mut bufs,
                            &mut |_, _| {},
                        );
                    }
                    for o in 0..cout_g {
                        // SAFETY: row `o` of this unit's block of `out` (see above).
                        let row = unsafe { std::slice::from_raw_parts_mut(dw.add(o * k), kk) };
                        let src = &tmp[o * kk..(o + 1) * kk];
                        if n == 0 {
                            row.copy_from_slice(src);
                        } else {
                            row.iter_mut().zip(src).for_each(|(d, s)| *d += *s);
                        }
                    }
                }
                if g.n == 0 {
                    for o in 0..cout_g {
                        // SAFETY: as above.
                        unsafe { std::ptr::write_bytes(dw.add(o * k), 0, kk) };
                    }
                }
            }
        });
        BUFFERS.set(bufs);
    };
    split(g.groups * chunks, threads, g.macs(), &run)
}

/// A panel source read from column `col0` on.
struct Shifted<S> {
    src: S,
    col0: usize,
}

impl<S: PanelSource> PanelSource for Shifted<S> {
    unsafe fn pack_b(&self, row0: usize, col0: usize, kc: usize, nc: usize, dst: *mut f32) {
        // SAFETY: the caller's contract, shifted inside the same matrix.
        unsafe { self.src.pack_b(row0, self.col0 + col0, kc, nc, dst) }
    }
}

/// `out = conv_transpose(dy, w)` (the big image) on the GEMM, then col2im.
///
/// # Safety
/// As [`super::run_window`], f32 buffers described by `g`; AVX-512F must be present.
pub(super) unsafe fn transpose(
    g: &ConvGeom,
    dy: *const f32,
    w: *const f32,
    out: *mut f32,
    threads: usize,
) -> Result<(), RunError> {
    let g = *g;
    let (dy, w, out) = (Shared(dy as *mut f32), Shared(w as *mut f32), Shared(out));
    let (cin_g, cout_g, p, plane) = (g.cin_g(), g.cout_g(), g.oh * g.ow, g.h * g.w);
    let k = cin_g * g.kh * g.kw;
    let run = |lo: usize, hi: usize| {
        let (dy, w, out) = (&dy, &w, &out);
        let mut bufs = BUFFERS.take();
        SCRATCH.with_borrow_mut(|cols| {
            if cols.len() < k * p {
                cols.resize(k * p, 0.0);
            }
            for n in lo..hi {
                // SAFETY: image `n` of the output is this thread's alone and inside `out`.
                let big = unsafe {
                    std::slice::from_raw_parts_mut(out.0.add(n * g.cin * plane), g.cin * plane)
                };
                big.fill(0.0);
                for grp in 0..g.groups {
                    // SAFETY: the group's weight rows and planes of image `n` are inside the
                    // inputs; `cols` holds `k × p`.
                    unsafe {
                        let a = StridedMatrix {
                            ptr: w.0.add(grp * cout_g * k),
                            row_stride: 1,
                            col_stride: k as isize,
                        };
                        let b = StridedMatrix {
                            ptr: dy.0.add((n * g.cout + grp * cout_g) * p),
                            row_stride: p as isize,
                            col_stride: 1,
                        };
                        let c = OutputMatrix { ptr: cols.as_mut_ptr(), row_stride: p };
                        gemm_f32(
                            Dims { m: k, n: p, k: cout_g },
                            &a,
                            &b,
                            c,
                            &mut bufs,
                            &mut |_, _| {},
                        );
                    }
                    col2im(
                        &g,
                        &cols[..k * p],
                        &mut big[grp * cin_g * plane..(grp + 1) * cin_g * plane],
                    );
                }
            }
        });
        BUFFERS.set(bufs);
    };
    split(g.n, threads, g.macs(), &run)
}

/// Adds the columns `cols` (`[cin_g·kh·kw, oh·ow]`) of one image and group into its big
/// planes `big` (`[cin_g, h, w]`) at their window taps.
fn col2im(g: &ConvGeom, cols: &[f32], big: &mut [f32]) {
    let (khw, plane, p) = (g.kh * g.kw, g.h * g.w, g.oh * g.ow);
    let s = g.stride[1];
    for (kr, row) in cols.chunks_exact(p).enumerate() {
        let (ch, a, b) = (kr / khw, (kr % khw) / g.kw, kr % g.kw);
        let off = (b * g.dilation[1]) as isize - g.padding[1] as isize;
        let (jlo, jhi) = super::conv::valid_cols(off, s, g.w, g.ow);
        if jlo >= jhi {
            continue;
        }
        let bp = &mut big[ch * plane..(ch + 1) * plane];
        for i in 0..g.oh {
            let Some(r) = g.in_row(i, a) else { continue };
            let src = &row[i * g.ow + jlo..i * g.ow + jhi];
            let start = r * g.w + ((jlo * s) as isize + off) as usize;
            if s == 1 {
                let dst = &mut bp[start..start + src.len()];
                dst.iter_mut().zip(src).for_each(|(d, v)| *d += *v);
            } else {
                for (t, v) in src.iter().enumerate() {
                    bp[start + t * s] += *v;
                }
            }
        }
    }
}
