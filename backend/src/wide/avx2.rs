//! AVX2 + FMA instantiation: [`Lanes`] on `__m256` (8 `f32` lanes; masks are all-ones /
//! all-zeros `__m256` lanes, as Cranelift's vector masks) and the exported `f32` routines.
//!
//! Every method is one intrinsic (or two: AVX2 has only `==` and signed `>` on integers),
//! `#[inline(always)]`. Selects are `vblendvps`, exact for full-lane masks; `min_c`/`max_c`
//! are `vminps(c, x)`/`vmaxps(c, x)`, which return `x` when it is NaN.

use std::arch::x86_64::*;

use super::predicates::float_cmp;
use crate::math::{Fallback, FloatCC, IntCC, LaneFormat, Lanes};

/// [`Lanes`] on 8 `f32` lanes. Only constructed inside routines compiled for AVX2 and FMA, on
/// CPUs that have them.
#[derive(Clone, Copy)]
pub(super) struct Avx2F32;

/// `!x` on integer lanes.
#[inline(always)]
fn not(x: __m256i) -> __m256i {
    unsafe { _mm256_xor_si256(x, _mm256_set1_epi32(-1)) }
}

/// Flips the sign bits, so that signed comparisons order the lanes as unsigned.
#[inline(always)]
fn unsigned_order(x: __m256i) -> __m256i {
    unsafe { _mm256_xor_si256(x, _mm256_set1_epi32(i32::MIN)) }
}

/// Lane mask of the integer comparison `x <cc> y` (signed `>` and `==` are native).
#[inline(always)]
fn int_cmp(cc: IntCC, x: __m256i, y: __m256i) -> __m256i {
    let (ux, uy) = (unsigned_order(x), unsigned_order(y));
    unsafe {
        match cc {
            IntCC::Equal => _mm256_cmpeq_epi32(x, y),
            IntCC::NotEqual => not(_mm256_cmpeq_epi32(x, y)),
            IntCC::SignedLessThan => _mm256_cmpgt_epi32(y, x),
            IntCC::SignedLessThanOrEqual => not(_mm256_cmpgt_epi32(x, y)),
            IntCC::SignedGreaterThan => _mm256_cmpgt_epi32(x, y),
            IntCC::SignedGreaterThanOrEqual => not(_mm256_cmpgt_epi32(y, x)),
            IntCC::UnsignedLessThan => _mm256_cmpgt_epi32(uy, ux),
            IntCC::UnsignedLessThanOrEqual => not(_mm256_cmpgt_epi32(ux, uy)),
            IntCC::UnsignedGreaterThan => _mm256_cmpgt_epi32(ux, uy),
            IntCC::UnsignedGreaterThanOrEqual => not(_mm256_cmpgt_epi32(uy, ux)),
        }
    }
}

impl Lanes for Avx2F32 {
    type F = __m256;
    type I = __m256i;
    type M = __m256;

    #[inline(always)]
    fn fmt(&self) -> LaneFormat {
        LaneFormat::F32
    }
    #[inline(always)]
    fn has_fma(&self) -> bool {
        true
    }
    #[inline(always)]
    fn c(&mut self, v: f64) -> __m256 {
        unsafe { _mm256_set1_ps(v as f32) }
    }
    #[inline(always)]
    fn ci(&mut self, v: i64) -> __m256i {
        unsafe { _mm256_set1_epi32(v as u32 as i32) }
    }
    #[inline(always)]
    fn add(&mut self, x: __m256, y: __m256) -> __m256 {
        unsafe { _mm256_add_ps(x, y) }
    }
    #[inline(always)]
    fn sub(&mut self, x: __m256, y: __m256) -> __m256 {
        unsafe { _mm256_sub_ps(x, y) }
    }
    #[inline(always)]
    fn mul(&mut self, x: __m256, y: __m256) -> __m256 {
        unsafe { _mm256_mul_ps(x, y) }
    }
    #[inline(always)]
    fn div(&mut self, x: __m256, y: __m256) -> __m256 {
        unsafe { _mm256_div_ps(x, y) }
    }
    #[inline(always)]
    fn abs(&mut self, x: __m256) -> __m256 {
        unsafe { _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(i32::MAX))) }
    }
    #[inline(always)]
    fn neg(&mut self, x: __m256) -> __m256 {
        unsafe { _mm256_xor_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(i32::MIN))) }
    }
    #[inline(always)]
    fn sqrt(&mut self, x: __m256) -> __m256 {
        unsafe { _mm256_sqrt_ps(x) }
    }
    #[inline(always)]
    fn mul_add(&mut self, x: __m256, y: __m256, z: __m256) -> __m256 {
        unsafe { _mm256_fmadd_ps(x, y, z) }
    }
    #[inline(always)]
    fn fcmp(&mut self, cc: FloatCC, x: __m256, y: __m256) -> __m256 {
        unsafe { float_cmp!(cc, _mm256_cmp_ps, x, y) }
    }
    #[inline(always)]
    fn icmp(&mut self, cc: IntCC, x: __m256i, y: __m256i) -> __m256 {
        unsafe { _mm256_castsi256_ps(int_cmp(cc, x, y)) }
    }
    #[inline(always)]
    fn fallback(&mut self, f: Fallback, mask: __m256, x: __m256, y: __m256) -> __m256 {
        let bits = unsafe { _mm256_movemask_ps(mask) } as u32;
        if bits == 0 {
            return y;
        }
        let (mut xs, mut ys) = ([0f32; 8], [0f32; 8]);
        unsafe {
            _mm256_storeu_ps(xs.as_mut_ptr(), x);
            _mm256_storeu_ps(ys.as_mut_ptr(), y);
        }
        f.patch_f32(bits, &xs, &mut ys);
        unsafe { _mm256_loadu_ps(ys.as_ptr()) }
    }
    #[inline(always)]
    fn select(&mut self, mask: __m256, x: __m256, y: __m256) -> __m256 {
        unsafe { _mm256_blendv_ps(y, x, mask) }
    }
    #[inline(always)]
    fn mask_and(&mut self, m: __m256, n: __m256) -> __m256 {
        unsafe { _mm256_and_ps(m, n) }
    }
    #[inline(always)]
    fn mask_or(&mut self, m: __m256, n: __m256) -> __m256 {
        unsafe { _mm256_or_ps(m, n) }
    }
    #[inline(always)]
    fn mask_xor(&mut self, m: __m256, n: __m256) -> __m256 {
        unsafe { _mm256_xor_ps(m, n) }
    }
    #[inline(always)]
    fn bits_of(&mut self, x: __m256) -> __m256i {
        unsafe { _mm256_castps_si256(x) }
    }
    #[inline(always)]
    fn float_of_bits(&mut self, i: __m256i) -> __m256 {
        unsafe { _mm256_castsi256_ps(i) }
    }
    #[inline(always)]
    fn iadd(&mut self, x: __m256i, y: __m256i) -> __m256i {
        unsafe { _mm256_add_epi32(x, y) }
    }
    #[inline(always)]
    fn isub(&mut self, x: __m256i, y: __m256i) -> __m256i {
        unsafe { _mm256_sub_epi32(x, y) }
    }
    #[inline(always)]
    fn band(&mut self, x: __m256i, y: __m256i) -> __m256i {
        unsafe { _mm256_and_si256(x, y) }
    }
    #[inline(always)]
    fn bor(&mut self, x: __m256i, y: __m256i) -> __m256i {
        unsafe { _mm256_or_si256(x, y) }
    }
    #[inline(always)]
    fn bxor(&mut self, x: __m256i, y: __m256i) -> __m256i {
        unsafe { _mm256_xor_si256(x, y) }
    }
    #[inline(always)]
    fn shl(&mut self, x: __m256i, amount: u32) -> __m256i {
        unsafe { _mm256_sll_epi32(x, _mm_cvtsi32_si128(amount as i32)) }
    }
    #[inline(always)]
    fn ushr(&mut self, x: __m256i, amount: u32) -> __m256i {
        unsafe { _mm256_srl_epi32(x, _mm_cvtsi32_si128(amount as i32)) }
    }
    #[inline(always)]
    fn min_c(&mut self, x: __m256, hi: f64) -> __m256 {
        let k = self.c(hi);
        unsafe { _mm256_min_ps(k, x) }
    }
    #[inline(always)]
    fn max_c(&mut self, x: __m256, lo: f64) -> __m256 {
        let k = self.c(lo);
        unsafe { _mm256_max_ps(k, x) }
    }
}

/// `dst[i] = f(src[i])` for `i < n`, 8 lanes at a time; the last `n mod 8` elements through
/// `vmaskmovps` loads and stores (masked-off lanes are neither read nor written, and fault on
/// no page; they compute `f(0)`, discarded).
///
/// # Safety
/// The CPU must have AVX2; `src` valid for `n` reads and `dst` for `n` writes (they may be
/// equal: each block is loaded before it is stored, but must not otherwise overlap).
#[inline(always)]
unsafe fn run(src: *const f32, dst: *mut f32, n: usize, f: impl Fn(__m256) -> __m256) {
    let mut i = 0;
    unsafe {
        while i + 8 <= n {
            let x = _mm256_loadu_ps(src.add(i));
            _mm256_storeu_ps(dst.add(i), f(x));
            i += 8;
        }
        if i < n {
            let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            let mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((n - i) as i32), lane);
            let x = _mm256_maskload_ps(src.add(i), mask);
            _mm256_maskstore_ps(dst.add(i), mask, f(x));
        }
    }
}

/// [`run`] that also sums the results into `acc` in the inline row pass's order (see
/// [`crate::wide::WideSumF32`]): four 8-lane accumulators are the inline code's eight unrolled
/// 4-lane ones side by side; the last `n mod 32` results go through [`super::sum_tail`].
///
/// # Safety
/// As [`run`]; `acc` valid for [`super::SUM_ACC`] reads and writes.
#[inline(always)]
unsafe fn run_sum(
    src: *const f32,
    dst: *mut f32,
    n: usize,
    acc: *mut f32,
    f: impl Fn(__m256) -> __m256,
) {
    let mut i = 0;
    unsafe {
        let mut a: [__m256; 4] = std::array::from_fn(|k| load_acc(acc.add(8 * k)));
        while i + 32 <= n {
            for (k, a) in a.iter_mut().enumerate() {
                let y = f(_mm256_loadu_ps(src.add(i + 8 * k)));
                _mm256_storeu_ps(dst.add(i + 8 * k), y);
                *a = _mm256_add_ps(*a, y);
            }
            i += 32;
        }
        for (k, &a) in a.iter().enumerate() {
            store_acc(acc.add(8 * k), a);
        }
        let mut tail = [0f32; super::ACC_LANES];
        let rest = n - i;
        let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        for part in 0..4 {
            let left = rest.saturating_sub(8 * part);
            if left == 0 {
                break;
            }
            let at = i + 8 * part;
            let mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(left.min(8) as i32), lane);
            let y = f(_mm256_maskload_ps(src.add(at), mask));
            _mm256_maskstore_ps(dst.add(at), mask, y);
            _mm256_storeu_ps(tail.as_mut_ptr().add(8 * part), y);
        }
        super::sum_tail(&tail[..rest], acc);
    }
}

/// The running max of `src[..n]` into `acc` (see [`crate::wide::WideMaxF32`]): per lane
/// `maxps(x, acc)` (ties and NaN keep `acc`) OR-ed with `x`'s NaN mask, as the inline
/// accumulator step.
///
/// # Safety
/// As [`crate::wide::WideMaxF32`]; the CPU must have AVX2.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe extern "C" fn max(src: *const f32, n: usize, acc: *mut f32) {
    let mut i = 0;
    unsafe {
        let mut a: [__m256; 4] = std::array::from_fn(|k| load_acc(acc.add(8 * k)));
        // The NaN lanes collected apart, as the AVX-512 routine does.
        let mut nan = [_mm256_setzero_ps(); 4];
        while i + 32 <= n {
            for k in 0..4 {
                let x = _mm256_loadu_ps(src.add(i + 8 * k));
                nan[k] = _mm256_or_ps(nan[k], _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x));
                a[k] = _mm256_max_ps(x, a[k]);
            }
            i += 32;
        }
        for k in 0..4 {
            store_acc(acc.add(8 * k), _mm256_or_ps(a[k], nan[k]));
        }
        super::max_tail(std::slice::from_raw_parts(src.add(i), n - i), acc);
    }
}

/// The running sum of `src[..n]` into `acc` (see [`crate::wide::WideAddF32`]): four 8-lane
/// accumulators, the inline pass's eight 4-lane ones side by side.
///
/// # Safety
/// As [`crate::wide::WideAddF32`]; the CPU must have AVX2.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe extern "C" fn add(src: *const f32, n: usize, acc: *mut f32) {
    // SAFETY: forwarded from the caller.
    unsafe { add_mapped(src, n, acc, |x| x, |x| x) }
}

/// The running sum of `(src[i] - *shift)²`, or `src[i]²` with a null `shift` (see
/// [`crate::wide::WideAddSquaresF32`]).
///
/// # Safety
/// As [`crate::wide::WideAddSquaresF32`]; the CPU must have AVX2.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe extern "C" fn add_squares(
    src: *const f32,
    n: usize,
    acc: *mut f32,
    shift: *const f32,
) {
    // SAFETY: forwarded from the caller.
    unsafe {
        if shift.is_null() {
            add_mapped(src, n, acc, |x| _mm256_mul_ps(x, x), |x| x * x)
        } else {
            let (m, v) = (*shift, _mm256_set1_ps(*shift));
            let d = |x| _mm256_sub_ps(x, v);
            add_mapped(src, n, acc, |x| _mm256_mul_ps(d(x), d(x)), |x| (x - m) * (x - m))
        }
    }
}

/// `dst[i] = (src[i] - *shift) · *s`, or `src[i] · *s` with a null `shift` (see
/// [`crate::wide::WideShiftScaleF32`]).
///
/// # Safety
/// As [`crate::wide::WideShiftScaleF32`]; the CPU must have AVX2.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe extern "C" fn shift_scale(
    src: *const f32,
    dst: *mut f32,
    n: usize,
    shift: *const f32,
    s: *const f32,
) {
    // SAFETY: forwarded from the caller.
    unsafe {
        let k = _mm256_set1_ps(*s);
        if shift.is_null() {
            run(src, dst, n, |x| _mm256_mul_ps(x, k))
        } else {
            let m = _mm256_set1_ps(*shift);
            run(src, dst, n, |x| _mm256_mul_ps(_mm256_sub_ps(x, m), k))
        }
    }
}

/// `f(src[i])` added into `acc` in the inline pass's order (`g` is `f` on one element, for the
/// tail): four 8-lane accumulators, the inline pass's eight 4-lane ones side by side.
///
/// # Safety
/// As [`crate::wide::WideAddF32`]; AVX2.
#[inline(always)]
unsafe fn add_mapped(
    src: *const f32,
    n: usize,
    acc: *mut f32,
    f: impl Fn(__m256) -> __m256,
    g: impl Fn(f32) -> f32,
) {
    let mut i = 0;
    unsafe {
        let mut a: [__m256; 4] = std::array::from_fn(|k| load_acc(acc.add(8 * k)));
        while i + 32 <= n {
            for (k, a) in a.iter_mut().enumerate() {
                *a = _mm256_add_ps(*a, f(_mm256_loadu_ps(src.add(i + 8 * k))));
            }
            i += 32;
        }
        for (k, &a) in a.iter().enumerate() {
            store_acc(acc.add(8 * k), a);
        }
        let mut tail = [0f32; super::ACC_LANES];
        let rest = n - i;
        for (k, t) in tail[..rest].iter_mut().enumerate() {
            *t = g(*src.add(i + k));
        }
        super::sum_tail(&tail[..rest], acc);
    }
}

/// `dst[i] = src[i] · s` (see [`crate::wide::WideScaleF32`]).
///
/// # Safety
/// As [`crate::wide::WideScaleF32`]; the CPU must have AVX2.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe extern "C" fn scale(src: *const f32, dst: *mut f32, n: usize, s: *const f32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        let k = _mm256_set1_ps(*s);
        run(src, dst, n, |x| _mm256_mul_ps(x, k))
    }
}

/// Accumulators `acc[..8]`, loaded as the two 128-bit vectors the kernel stores them as (a
/// 256-bit load of two narrower stores cannot be forwarded from the store buffer).
///
/// # Safety
/// AVX; `acc` valid for 8 reads.
#[inline(always)]
unsafe fn load_acc(acc: *const f32) -> __m256 {
    unsafe { _mm256_set_m128(super::load_128(acc.add(4)), super::load_128(acc)) }
}

/// Stores `a` as [`load_acc`] reads it, as two 128-bit vectors.
///
/// # Safety
/// AVX; `acc` valid for 8 writes.
#[inline(always)]
unsafe fn store_acc(acc: *mut f32, a: __m256) {
    unsafe {
        _mm_storeu_ps(acc, _mm256_castps256_ps128(a));
        _mm_storeu_ps(acc.add(4), _mm256_extractf128_ps::<1>(a));
    }
}

/// One `#[target_feature]` routine per listed function, named after it.
macro_rules! routines {
    ($(($variant:ident, $fn_name:ident)),* $(,)?) => {
        $(
            /// The AVX2 `f32` routine of this function (see [`crate::wide::WideF32`]).
            ///
            /// # Safety
            /// As [`crate::wide::WideF32`]; the CPU must have AVX2 and FMA.
            #[target_feature(enable = "avx2,fma")]
            pub(super) unsafe extern "C" fn $fn_name(src: *const f32, dst: *mut f32, n: usize) {
                // SAFETY: forwarded from the caller.
                unsafe { run(src, dst, n, |x| crate::math::generic::$fn_name(&mut Avx2F32, x)) }
            }
        )*
        /// The summing routines (see [`crate::wide::WideSumF32`]), one per function.
        pub(super) mod sum {
            use super::*;
            $(
                /// The AVX2 summing `f32` routine of this function.
                ///
                /// # Safety
                /// As [`crate::wide::WideSumF32`]; the CPU must have AVX2 and FMA.
                #[target_feature(enable = "avx2,fma")]
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
                                crate::math::generic::$fn_name(&mut Avx2F32, x)
                            })
                        } else {
                            let m = _mm256_set1_ps(*shift);
                            run_sum(src, dst, n, acc, |x| {
                                let x = _mm256_sub_ps(x, m);
                                crate::math::generic::$fn_name(&mut Avx2F32, x)
                            })
                        }
                    }
                }
            )*
        }
    };
}

super::for_each_routine!(routines);
