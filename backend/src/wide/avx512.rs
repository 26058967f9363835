//! AVX-512 instantiation: [`Lanes`] on `__m512` (16 `f32` lanes, `__mmask16` masks) and the
//! exported `f32` routines.
//!
//! Every method is one intrinsic (or a constant broadcast), `#[inline(always)]`, so a math
//! function instantiated inside a `#[target_feature(enable = "avx512f,…")]` routine is straight
//! AVX-512 code. Selects are `vblendmps` on a mask register, `min_c`/`max_c` are
//! `vminps(c, x)`/`vmaxps(c, x)`: the operand order that returns `x` when it is NaN, as the
//! Cranelift `fcmp` + `bitselect` form does.

use std::arch::x86_64::*;

use super::predicates::{float_cmp, int_cmp_avx512};
use crate::math::{Fallback, FloatCC, IntCC, LaneFormat, Lanes};

/// [`Lanes`] on 16 `f32` lanes. Only constructed inside routines compiled for AVX-512F/DQ/VL
/// and FMA, on CPUs that have them.
#[derive(Clone, Copy)]
pub(super) struct Avx512F32;

impl Lanes for Avx512F32 {
    type F = __m512;
    type I = __m512i;
    type M = __mmask16;

    #[inline(always)]
    fn fmt(&self) -> LaneFormat {
        LaneFormat::F32
    }
    #[inline(always)]
    fn has_fma(&self) -> bool {
        true
    }
    #[inline(always)]
    fn c(&mut self, v: f64) -> __m512 {
        unsafe { _mm512_set1_ps(v as f32) }
    }
    #[inline(always)]
    fn ci(&mut self, v: i64) -> __m512i {
        unsafe { _mm512_set1_epi32(v as u32 as i32) }
    }
    #[inline(always)]
    fn add(&mut self, x: __m512, y: __m512) -> __m512 {
        unsafe { _mm512_add_ps(x, y) }
    }
    #[inline(always)]
    fn sub(&mut self, x: __m512, y: __m512) -> __m512 {
        unsafe { _mm512_sub_ps(x, y) }
    }
    #[inline(always)]
    fn mul(&mut self, x: __m512, y: __m512) -> __m512 {
        unsafe { _mm512_mul_ps(x, y) }
    }
    #[inline(always)]
    fn div(&mut self, x: __m512, y: __m512) -> __m512 {
        unsafe { _mm512_div_ps(x, y) }
    }
    #[inline(always)]
    fn abs(&mut self, x: __m512) -> __m512 {
        unsafe {
            _mm512_castsi512_ps(_mm512_and_si512(
                _mm512_castps_si512(x),
                _mm512_set1_epi32(i32::MAX),
            ))
        }
    }
    #[inline(always)]
    fn neg(&mut self, x: __m512) -> __m512 {
        unsafe {
            _mm512_castsi512_ps(_mm512_xor_si512(
                _mm512_castps_si512(x),
                _mm512_set1_epi32(i32::MIN),
            ))
        }
    }
    #[inline(always)]
    fn sqrt(&mut self, x: __m512) -> __m512 {
        unsafe { _mm512_sqrt_ps(x) }
    }
    #[inline(always)]
    fn mul_add(&mut self, x: __m512, y: __m512, z: __m512) -> __m512 {
        unsafe { _mm512_fmadd_ps(x, y, z) }
    }
    #[inline(always)]
    fn fcmp(&mut self, cc: FloatCC, x: __m512, y: __m512) -> __mmask16 {
        unsafe { float_cmp!(cc, _mm512_cmp_ps_mask, x, y) }
    }
    #[inline(always)]
    fn icmp(&mut self, cc: IntCC, x: __m512i, y: __m512i) -> __mmask16 {
        unsafe { int_cmp_avx512!(cc, _mm512_cmp_epi32_mask, _mm512_cmp_epu32_mask, x, y) }
    }
    #[inline(always)]
    fn fallback(&mut self, f: Fallback, mask: __mmask16, x: __m512, y: __m512) -> __m512 {
        if mask == 0 {
            return y;
        }
        let (mut xs, mut ys) = ([0f32; 16], [0f32; 16]);
        unsafe {
            _mm512_storeu_ps(xs.as_mut_ptr(), x);
            _mm512_storeu_ps(ys.as_mut_ptr(), y);
        }
        f.patch_f32(u32::from(mask), &xs, &mut ys);
        unsafe { _mm512_loadu_ps(ys.as_ptr()) }
    }
    #[inline(always)]
    fn select(&mut self, mask: __mmask16, x: __m512, y: __m512) -> __m512 {
        unsafe { _mm512_mask_blend_ps(mask, y, x) }
    }
    #[inline(always)]
    fn mask_and(&mut self, m: __mmask16, n: __mmask16) -> __mmask16 {
        m & n
    }
    #[inline(always)]
    fn mask_or(&mut self, m: __mmask16, n: __mmask16) -> __mmask16 {
        m | n
    }
    #[inline(always)]
    fn mask_xor(&mut self, m: __mmask16, n: __mmask16) -> __mmask16 {
        m ^ n
    }
    #[inline(always)]
    fn bits_of(&mut self, x: __m512) -> __m512i {
        unsafe { _mm512_castps_si512(x) }
    }
    #[inline(always)]
    fn float_of_bits(&mut self, i: __m512i) -> __m512 {
        unsafe { _mm512_castsi512_ps(i) }
    }
    /// One `vfixupimmps`: the table maps the quiet and the signalling NaN class (tokens zero
    /// and one) to response 3, the default ("indefinite") NaN `0xffc0_0000`, and every other
    /// class to response 0, `x` unchanged (no exception is reported: `imm8 = 0`).
    #[inline(always)]
    fn canonical_nan(&mut self, x: __m512) -> __m512 {
        unsafe { _mm512_fixupimm_ps::<0>(x, x, _mm512_set1_epi32(0x33)) }
    }
    #[inline(always)]
    fn iadd(&mut self, x: __m512i, y: __m512i) -> __m512i {
        unsafe { _mm512_add_epi32(x, y) }
    }
    #[inline(always)]
    fn isub(&mut self, x: __m512i, y: __m512i) -> __m512i {
        unsafe { _mm512_sub_epi32(x, y) }
    }
    #[inline(always)]
    fn band(&mut self, x: __m512i, y: __m512i) -> __m512i {
        unsafe { _mm512_and_si512(x, y) }
    }
    #[inline(always)]
    fn bor(&mut self, x: __m512i, y: __m512i) -> __m512i {
        unsafe { _mm512_or_si512(x, y) }
    }
    #[inline(always)]
    fn bxor(&mut self, x: __m512i, y: __m512i) -> __m512i {
        unsafe { _mm512_xor_si512(x, y) }
    }
    #[inline(always)]
    fn shl(&mut self, x: __m512i, amount: u32) -> __m512i {
        unsafe { _mm512_sll_epi32(x, _mm_cvtsi32_si128(amount as i32)) }
    }
    #[inline(always)]
    fn ushr(&mut self, x: __m512i, amount: u32) -> __m512i {
        unsafe { _mm512_srl_epi32(x, _mm_cvtsi32_si128(amount as i32)) }
    }
    #[inline(always)]
    fn min_c(&mut self, x: __m512, hi: f64) -> __m512 {
        let k = self.c(hi);
        unsafe { _mm512_min_ps(k, x) }
    }
    #[inline(always)]
    fn max_c(&mut self, x: __m512, lo: f64) -> __m512 {
        let k = self.c(lo);
        unsafe { _mm512_max_ps(k, x) }
    }
}

/// `dst[i] = f(src[i])` for `i < n`, 16 lanes at a time; the last `n mod 16` elements through
/// masked loads and stores (masked-off lanes are neither read nor written; they compute
/// `f(0)`, discarded).
///
/// # Safety
/// The CPU must have AVX-512F; `src` valid for `n` reads and `dst` for `n` writes (they may be
/// equal: each block is loaded before it is stored, but must not otherwise overlap).
#[inline(always)]
unsafe fn run(src: *const f32, dst: *mut f32, n: usize, f: impl Fn(__m512) -> __m512) {
    let mut i = 0;
    unsafe {
        while i + 16 <= n {
            let x = _mm512_loadu_ps(src.add(i));
            _mm512_storeu_ps(dst.add(i), f(x));
            i += 16;
        }
        if i < n {
            let mask: __mmask16 = (1u16 << (n - i)) - 1;
            let x = _mm512_maskz_loadu_ps(mask, src.add(i));
            _mm512_mask_storeu_ps(dst.add(i), mask, f(x));
        }
    }
}

/// [`run`] that also sums the results into `acc` in the inline row pass's order (see
/// [`crate::wide::WideSumF32`]): two 16-lane accumulators are the inline code's eight unrolled
/// 4-lane ones side by side; the last `n mod 32` results go through [`super::sum_tail`].
/// (`f` includes the routine's shift.)
///
/// # Safety
/// As [`run`]; `acc` valid for [`super::SUM_ACC`] reads and writes.
#[inline(always)]
unsafe fn run_sum(
    src: *const f32,
    dst: *mut f32,
    n: usize,
    acc: *mut f32,
    f: impl Fn(__m512) -> __m512,
) {
    unsafe {
        let (mut a0, mut a1) = (load_acc(acc), load_acc(acc.add(16)));
        // In place (`src == dst`) too: every element is loaded before a store reaches it (a
        // pair is stored once the lines it needs, the shifted path's `after` included, are in
        // registers).
        let mut at = 0;
        let mut fold = |x0, x1| {
            let (y0, y1) = (f(x0), f(x1));
            _mm512_storeu_ps(dst.add(at), y0);
            _mm512_storeu_ps(dst.add(at + 16), y1);
            a0 = _mm512_add_ps(a0, y0);
            a1 = _mm512_add_ps(a1, y1);
            at += 32;
        };
        let i = pairs_of_16(src, n, &mut fold);
        store_acc(acc, a0);
        store_acc(acc.add(16), a1);
        let rest = n - i;
        let mut tail = [0f32; super::ACC_LANES];
        for half in 0..2 {
            let left = rest.saturating_sub(16 * half);
            if left == 0 {
                break;
            }
            let at = i + 16 * half;
            let mask = lanes_mask(left);
            let y = f(_mm512_maskz_loadu_ps(mask, src.add(at)));
            _mm512_mask_storeu_ps(dst.add(at), mask, y);
            _mm512_storeu_ps(tail.as_mut_ptr().add(16 * half), y);
        }
        super::sum_tail(&tail[..rest], acc);
    }
}

/// The mask of the first `min(left, 16)` lanes.
#[inline(always)]
fn lanes_mask(left: usize) -> __mmask16 {
    if left >= 16 {
        u16::MAX
    } else {
        (1u16 << left) - 1
    }
}

/// The running max of `src[..n]` into `acc` (see [`crate::wide::WideMaxF32`]): per lane
/// `maxps(x, acc)` (ties and NaN keep `acc`) OR-ed with `x`'s NaN mask, as the inline
/// accumulator step.
///
/// # Safety
/// As [`crate::wide::WideMaxF32`]; the CPU must have AVX-512F/DQ/VL.
#[target_feature(enable = "avx512f,avx512dq,avx512vl,fma")]
pub(super) unsafe extern "C" fn max(src: *const f32, n: usize, acc: *mut f32) {
    unsafe {
        // The NaN lanes are collected apart and set at the end: `maxps(x, acc)` keeps an
        // all-ones (NaN) accumulator and ignores a NaN `x`, so this is the sticky step's
        // result with half its dependency chain.
        let ones = _mm512_castsi512_ps(_mm512_set1_epi32(-1));
        let (mut a0, mut a1) = (load_acc(acc), load_acc(acc.add(16)));
        let (mut nan0, mut nan1): (__mmask16, __mmask16) = (0, 0);
        let mut fold = |x0, x1| {
            nan0 |= _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x0, x0);
            nan1 |= _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x1, x1);
            a0 = _mm512_max_ps(x0, a0);
            a1 = _mm512_max_ps(x1, a1);
        };
        let i = pairs_of_16(src, n, &mut fold);
        store_acc(acc, _mm512_mask_mov_ps(a0, nan0, ones));
        store_acc(acc.add(16), _mm512_mask_mov_ps(a1, nan1, ones));
        super::max_tail(std::slice::from_raw_parts(src.add(i), n - i), acc);
    }
}

/// The running sum of `src[..n]` into `acc` (see [`crate::wide::WideAddF32`]): the two
/// 16-lane accumulators are the inline pass's eight 4-lane ones side by side, each lane adding
/// its elements in the same order, so the bits are the inline loop's.
///
/// # Safety
/// As [`crate::wide::WideAddF32`]; the CPU must have AVX-512F/DQ/VL.
#[target_feature(enable = "avx512f,avx512dq,avx512vl,fma")]
pub(super) unsafe extern "C" fn add(src: *const f32, n: usize, acc: *mut f32) {
    // SAFETY: forwarded from the caller.
    unsafe { add_mapped(src, n, acc, |x| x, |x| x) }
}

/// The running sum of `(src[i] - *shift)²`, or `src[i]²` with a null `shift` (see
/// [`crate::wide::WideAddSquaresF32`]): a subtraction, a multiply and an add per element,
/// unfused, as the inline step.
///
/// # Safety
/// As [`crate::wide::WideAddSquaresF32`]; the CPU must have AVX-512F/DQ/VL.
#[target_feature(enable = "avx512f,avx512dq,avx512vl,fma")]
pub(super) unsafe extern "C" fn add_squares(
    src: *const f32,
    n: usize,
    acc: *mut f32,
    shift: *const f32,
) {
    // SAFETY: forwarded from the caller.
    unsafe {
        if shift.is_null() {
            add_mapped(src, n, acc, |x| _mm512_mul_ps(x, x), |x| x * x)
        } else {
            let (m, v) = (*shift, _mm512_set1_ps(*shift));
            let d = |x| _mm512_sub_ps(x, v);
            add_mapped(src, n, acc, |x| _mm512_mul_ps(d(x), d(x)), |x| (x - m) * (x - m))
        }
    }
}

/// `dst[i] = (src[i] - *shift) · *s`, or `src[i] · *s` with a null `shift` (see
/// [`crate::wide::WideShiftScaleF32`]).
///
/// # Safety
/// As [`crate::wide::WideShiftScaleF32`]; the CPU must have AVX-512F/DQ/VL.
#[target_feature(enable = "avx512f,avx512dq,avx512vl,fma")]
pub(super) unsafe extern "C" fn shift_scale(
    src: *const f32,
    dst: *mut f32,
    n: usize,
    shift: *const f32,
    s: *const f32,
) {
    // SAFETY: forwarded from the caller.
    unsafe {
        let k = _mm512_set1_ps(*s);
        if shift.is_null() {
            run(src, dst, n, |x| _mm512_mul_ps(x, k))
        } else {
            let m = _mm512_set1_ps(*shift);
            run(src, dst, n, |x| _mm512_mul_ps(_mm512_sub_ps(x, m), k))
        }
    }
}

/// `f(src[i])` added into `acc` in the inline pass's order (`g` is `f` on one element, for the
/// tail): two 16-lane accumulators, the inline pass's eight 4-lane ones side by side.
///
/// # Safety
/// As [`crate::wide::WideAddF32`]; AVX-512F.
#[inline(always)]
unsafe fn add_mapped(
    src: *const f32,
    n: usize,
    acc: *mut f32,
    f: impl Fn(__m512) -> __m512,
    g: impl Fn(f32) -> f32,
) {
    unsafe {
        let (mut a0, mut a1) = (load_acc(acc), load_acc(acc.add(16)));
        let mut fold = |x0, x1| {
            a0 = _mm512_add_ps(a0, f(x0));
            a1 = _mm512_add_ps(a1, f(x1));
        };
        let i = pairs_of_16(src, n, &mut fold);
        store_acc(acc, a0);
        store_acc(acc.add(16), a1);
        let mut tail = [0f32; super::ACC_LANES];
        let rest = n - i;
        for (k, t) in tail[..rest].iter_mut().enumerate() {
            *t = g(*src.add(i + k));
        }
        super::sum_tail(&tail[..rest], acc);
    }
}

/// Calls `fold(x0, x1)` on `src[i..i + 16]` and `src[i + 16..i + 32]` for `i = 0, 32, …` while
/// `i + 32 <= n`, and returns the first `i` not folded (`n` rounded down to 32).
///
/// A `src` that is not on a cache line (a NumPy array starts 16 bytes past one) would make
/// three of every four 512-bit loads split two lines, a second cache access each; so from such
/// a `src` the loop loads whole aligned lines and shifts each pair into place with one
/// `vpermt2ps` (a shuffle port, idle in these loops), which is as fast as aligned data. The
/// vectors are the same either way, so the bits do not depend on the alignment. Never reads
/// outside `src[..n]` (the first line is loaded masked; the last lines the unaligned way).
///
/// # Safety
/// `src` valid for `n` reads; AVX-512F.
#[inline(always)]
unsafe fn pairs_of_16(src: *const f32, n: usize, fold: &mut impl FnMut(__m512, __m512)) -> usize {
    let mut i = 0;
    unsafe {
        let shift = (src as usize % 64) / 4;
        if (src as usize).is_multiple_of(4) && shift != 0 && n >= 64 {
            // Before `src` when `shift > 0`: only ever read through a mask or at `+ 16·k`.
            let base = src.wrapping_sub(shift);
            let lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
            let idx = _mm512_add_epi32(lane, _mm512_set1_epi32(shift as i32));
            // Lanes `shift..16` of the line holding `src[0]`: the elements from `src[0]` on.
            let mut line = _mm512_maskz_load_ps(u16::MAX << shift, base);
            // Line `base + i + 32` ends at element `i + 48 - shift`: whole while `i + 48 <= n`.
            while i + 48 <= n {
                let next = _mm512_load_ps(base.add(i + 16));
                let after = _mm512_load_ps(base.add(i + 32));
                fold(
                    _mm512_permutex2var_ps(line, idx, next),
                    _mm512_permutex2var_ps(next, idx, after),
                );
                line = after;
                i += 32;
            }
        }
        while i + 32 <= n {
            fold(_mm512_loadu_ps(src.add(i)), _mm512_loadu_ps(src.add(i + 16)));
            i += 32;
        }
    }
    i
}

/// `dst[i] = src[i] · s` (see [`crate::wide::WideScaleF32`]).
///
/// # Safety
/// As [`crate::wide::WideScaleF32`]; the CPU must have AVX-512F/DQ/VL.
#[target_feature(enable = "avx512f,avx512dq,avx512vl,fma")]
pub(super) unsafe extern "C" fn scale(src: *const f32, dst: *mut f32, n: usize, s: *const f32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        let k = _mm512_set1_ps(*s);
        run(src, dst, n, |x| _mm512_mul_ps(x, k))
    }
}

/// 16 of the vector accumulators of `acc` (see [`crate::wide::SUM_ACC`]), loaded as the four
/// 128-bit vectors the kernel stores them as (a 512-bit load of four narrower stores cannot be
/// forwarded from the store buffer: it would wait for them to reach the cache; see
/// [`super::load_128`]).
///
/// # Safety
/// AVX-512F; `acc` valid for 16 reads.
#[inline(always)]
unsafe fn load_acc(acc: *const f32) -> __m512 {
    use super::load_128;
    unsafe {
        let lo = _mm256_set_m128(load_128(acc.add(4)), load_128(acc));
        let hi = _mm256_set_m128(load_128(acc.add(12)), load_128(acc.add(8)));
        _mm512_insertf32x8::<1>(_mm512_castps256_ps512(lo), hi)
    }
}

/// Stores `a` as [`load_acc`] reads it, as four 128-bit vectors (what the kernel loads).
///
/// # Safety
/// AVX-512F/DQ; `acc` valid for 16 writes.
#[inline(always)]
unsafe fn store_acc(acc: *mut f32, a: __m512) {
    unsafe {
        _mm_storeu_ps(acc, _mm512_castps512_ps128(a));
        _mm_storeu_ps(acc.add(4), _mm512_extractf32x4_ps::<1>(a));
        _mm_storeu_ps(acc.add(8), _mm512_extractf32x4_ps::<2>(a));
        _mm_storeu_ps(acc.add(12), _mm512_extractf32x4_ps::<3>(a));
    }
}

/// One `#[target_feature]` routine per listed function, named after it.
macro_rules! routines {
    ($(($variant:ident, $fn_name:ident)),* $(,)?) => {
        $(
            /// The AVX-512 `f32` routine of this function (see [`crate::wide::WideF32`]).
            ///
            /// # Safety
            /// As [`crate::wide::WideF32`]; the CPU must have AVX-512F/DQ/VL and FMA.
            #[target_feature(enable = "avx512f,avx512dq,avx512vl,fma")]
            pub(super) unsafe extern "C" fn $fn_name(src: *const f32, dst: *mut f32, n: usize) {
                // SAFETY: forwarded from the caller.
                unsafe { run(src, dst, n, |x| crate::math::generic::$fn_name(&mut Avx512F32, x)) }
            }
        )*
        /// The summing routines (see [`crate::wide::WideSumF32`]), one per function.
        pub(super) mod sum {
            use super::*;
            $(
                /// The AVX-512 summing `f32` routine of this function.
                ///
                /// # Safety
                /// As [`crate::wide::WideSumF32`]; the CPU must have AVX-512F/DQ/VL and FMA.
                #[target_feature(enable = "avx512f,avx512dq,avx512vl,fma")]
                pub(in crate::wide) unsafe extern "C" fn $fn_name(
                    src: *const f32,
                    dst: *mut f32,
                    n: usize,
                    acc: *mut f32,
                    shift: *const f32,
                ) {
                    // SAFETY: forwarded from the caller.
                    unsafe {
                        if shift.is_null() {
                            run_sum(src, dst, n, acc, |x| {
                                crate::math::generic::$fn_name(&mut Avx512F32, x)
                            })
                        } else {
                            let m = _mm512_set1_ps(*shift);
                            run_sum(src, dst, n, acc, |x| {
                                let x = _mm512_sub_ps(x, m);
                                crate::math::generic::$fn_name(&mut Avx512F32, x)
                            })
                        }
                    }
                }
            )*
        }
    };
}

super::for_each_routine!(routines);
