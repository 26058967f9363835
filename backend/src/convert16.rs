//! Blocks of 16-bit floats (`f16`, `bf16`) widened to `f32` and narrowed back, for the
//! executor's widened kernels (`executor/widened.rs`).
//!
//! The conversions are `tfn_ir::storage::bits`' — round to nearest even, NaNs quieted with
//! their leading payload kept — run by the fastest code the CPU has: F16C's `vcvtph2ps` /
//! `vcvtps2ph` for `f16` (which compute exactly those bits), and for `bf16` the same
//! branch-free integer steps compiled for AVX2 when the CPU has it (the compiler vectorises
//! them). Without those features the scalar functions of `bits` run. Every path gives the same
//! bits; the tests compare them over every `f16` pattern and a sweep of `f32` ones.

use tfn_ir::storage::bits;
use tfn_ir::DType;

/// Whether this CPU has F16C (and AVX, which its 256-bit forms need).
fn has_f16c() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("f16c") && std::arch::is_x86_feature_detected!("avx")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

fn has_avx512f() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

fn has_avx512bf16() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512bf16")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `dst[i] = src[i]` as `f32`, for `n` elements of the 16-bit float `dtype`.
pub(crate) fn widen(dtype: DType, src: &[u16], dst: &mut [f32]) {
    let n = src.len().min(dst.len());
    let (src, dst) = (&src[..n], &mut dst[..n]);
    match dtype {
        DType::F16 => {
            #[cfg(target_arch = "x86_64")]
            if has_f16c() {
                // SAFETY: the CPU has F16C and AVX.
                return unsafe { f16c::widen(src, dst) };
            }
            for (d, &s) in dst.iter_mut().zip(src) {
                *d = bits::f16_to_f32(s);
            }
        }
        _ => {
            #[cfg(target_arch = "x86_64")]
            if has_avx512f() {
                // SAFETY: the CPU has AVX-512F.
                return unsafe { bf16_avx512::widen(src, dst) };
            }
            // bf16: the high half of an f32 (the compiler vectorises this at any level).
            for (d, &s) in dst.iter_mut().zip(src) {
                *d = bits::bf16_to_f32(s);
            }
        }
    }
}

/// `dst[i] = src[i]` rounded to the 16-bit float `dtype`.
pub(crate) fn narrow(dtype: DType, src: &[f32], dst: &mut [u16]) {
    let n = src.len().min(dst.len());
    let (src, dst) = (&src[..n], &mut dst[..n]);
    match dtype {
        DType::F16 => {
            #[cfg(target_arch = "x86_64")]
            if has_f16c() {
                if has_avx512f() {
                    // SAFETY: the CPU has AVX-512F, F16C and AVX.
                    return unsafe { f16c::narrow_avx512(src, dst) };
                }
                // SAFETY: the CPU has F16C and AVX.
                return unsafe { f16c::narrow(src, dst) };
            }
            for (d, &s) in dst.iter_mut().zip(src) {
                *d = bits::f32_to_f16(s);
            }
        }
        _ => {
            #[cfg(target_arch = "x86_64")]
            if has_avx512f() {
                if has_avx512bf16() {
                    // SAFETY: the CPU has AVX-512F and AVX512_BF16.
                    return unsafe { bf16_avx512::narrow_bf16_instruction(src, dst) };
                }
                // SAFETY: the CPU has AVX-512F.
                return unsafe { bf16_avx512::narrow(src, dst) };
            }
            #[cfg(target_arch = "x86_64")]
            if has_avx2() {
                // SAFETY: the CPU has AVX2.
                return unsafe { narrow_bf16_avx2(src, dst) };
            }
            narrow_bf16(src, dst);
        }
    }
}

/// `bits::f32_to_bf16` written without branches, so that it vectorises.
#[inline(always)]
fn narrow_bf16(src: &[f32], dst: &mut [u16]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        let b = s.to_bits();
        let nan = (b >> 16) | 0x0040;
        let rounded = b.wrapping_add(0x7fff).wrapping_add((b >> 16) & 1) >> 16;
        *d = if b & 0x7fff_ffff > 0x7f80_0000 { nan } else { rounded } as u16;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn narrow_bf16_avx2(src: &[f32], dst: &mut [u16]) {
    narrow_bf16(src, dst)
}

/// bf16 16 lanes at a time: `bits`' conversions written in AVX-512F integer instructions (the
/// compiler's vectorisation of [`narrow_bf16`] and of the widening shift stays at 256 and 128
/// bits: bf16 saxpy over 256K was 1.6× slower than f16's).
#[cfg(target_arch = "x86_64")]
mod bf16_avx512 {
    use std::arch::x86_64::{
        __m256i, _mm256_loadu_si256, _mm256_storeu_si256, _mm512_add_epi32, _mm512_and_si512,
        _mm512_cmpgt_epu32_mask, _mm512_cvtepi32_epi16, _mm512_cvtepu16_epi32, _mm512_loadu_si512,
        _mm512_mask_blend_epi32, _mm512_or_si512, _mm512_set1_epi32, _mm512_slli_epi32,
        _mm512_srli_epi32, _mm512_storeu_si512,
    };

    /// # Safety
    /// The CPU must have AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn widen(src: &[u16], dst: &mut [f32]) {
        let n = src.len().min(dst.len());
        let body = n / 16 * 16;
        for i in (0..body).step_by(16) {
            // SAFETY: `i + 16 <= n`, inside both slices.
            unsafe {
                let h = _mm256_loadu_si256(src.as_ptr().add(i) as *const __m256i);
                let x = _mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h));
                _mm512_storeu_si512(dst.as_mut_ptr().add(i).cast(), x);
            }
        }
        for (d, &s) in dst[body..n].iter_mut().zip(&src[body..n]) {
            *d = super::bits::bf16_to_f32(s);
        }
    }

    /// # Safety
    /// The CPU must have AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn narrow(src: &[f32], dst: &mut [u16]) {
        let n = src.len().min(dst.len());
        let body = n / 16 * 16;
        let (one, quiet, round) =
            (_mm512_set1_epi32(1), _mm512_set1_epi32(0x40), _mm512_set1_epi32(0x7fff));
        let (abs, inf) = (_mm512_set1_epi32(0x7fff_ffff), _mm512_set1_epi32(0x7f80_0000));
        for i in (0..body).step_by(16) {
            // SAFETY: `i + 16 <= n`, inside both slices.
            unsafe {
                let b = _mm512_loadu_si512(src.as_ptr().add(i).cast());
                let high = _mm512_srli_epi32::<16>(b);
                let nan = _mm512_or_si512(high, quiet);
                let odd = _mm512_and_si512(high, one);
                let rounded =
                    _mm512_srli_epi32::<16>(_mm512_add_epi32(_mm512_add_epi32(b, round), odd));
                let is_nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(b, abs), inf);
                let h = _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(is_nan, rounded, nan));
                _mm256_storeu_si256(dst.as_mut_ptr().add(i) as *mut __m256i, h);
            }
        }
        super::narrow_bf16(&src[body..n], &mut dst[body..n]);
    }

    /// [`narrow`] with AVX512_BF16's `vcvtneps2bf16`: one instruction rounds 16 lanes to
    /// nearest even and quiets NaNs as `bits::f32_to_bf16` does, but flushes subnormal inputs
    /// to zero; a vector holding one (rare) is narrowed by [`narrow`]'s integer code instead.
    /// bf16 over 256K, 1 thread: saxpy 70–74 → 63.4–63.6 µs, gelu 149 → 139.
    ///
    /// # Safety
    /// The CPU must have AVX-512F and AVX512_BF16.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub(super) unsafe fn narrow_bf16_instruction(src: &[f32], dst: &mut [u16]) {
        use std::arch::x86_64::{
            _mm512_cmplt_epu32_mask, _mm512_cvtneps_pbh, _mm512_loadu_ps, _mm512_sub_epi32,
        };
        let n = src.len().min(dst.len());
        let body = n / 16 * 16;
        let (abs, one, below) =
            (_mm512_set1_epi32(0x7fff_ffff), _mm512_set1_epi32(1), _mm512_set1_epi32(0x007f_ffff));
        for i in (0..body).step_by(16) {
            // SAFETY: `i + 16 <= n`, inside both slices.
            unsafe {
                let x = _mm512_loadu_ps(src.as_ptr().add(i));
                let b = _mm512_loadu_si512(src.as_ptr().add(i).cast());
                // Subnormal: `1 <= |bits| <= 0x7fffff`, i.e. `|bits| - 1 < 0x7fffff` unsigned.
                let magnitude = _mm512_and_si512(b, abs);
                if _mm512_cmplt_epu32_mask(_mm512_sub_epi32(magnitude, one), below) != 0 {
                    narrow(&src[i..i + 16], &mut dst[i..i + 16]);
                    continue;
                }
                let h = _mm512_cvtneps_pbh(x);
                _mm256_storeu_si256(
                    dst.as_mut_ptr().add(i) as *mut __m256i,
                    std::mem::transmute::<std::arch::x86_64::__m256bh, __m256i>(h),
                );
            }
        }
        super::narrow_bf16(&src[body..n], &mut dst[body..n]);
    }
}

#[cfg(target_arch = "x86_64")]
mod f16c {
    use std::arch::x86_64::{
        __m128i, __m256i, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_storeu_si256, _mm512_loadu_ps,
        _mm_loadu_si128, _mm_storeu_si128,
    };
    use tfn_ir::storage::bits;

    /// # Safety
    /// The CPU must have F16C and AVX.
    #[target_feature(enable = "f16c,avx")]
    pub(super) unsafe fn widen(src: &[u16], dst: &mut [f32]) {
        let n = src.len().min(dst.len());
        let body = n / 8 * 8;
        for i in (0..body).step_by(8) {
            // SAFETY: `i + 8 <= n`, inside both slices.
            unsafe {
                let h = _mm_loadu_si128(src.as_ptr().add(i) as *const __m128i);
                let x: std::arch::x86_64::__m256;
                // The register form after a plain load: LLVM folds the load into
                // `vcvtph2ps ymm, m128`, which ran f16 saxpy over 4M 1.2–1.4× slower here
                // (six interleaved pairs; no difference in cache).
                std::arch::asm!(
                    "vcvtph2ps {x}, {h}",
                    x = lateout(ymm_reg) x,
                    h = in(xmm_reg) h,
                    options(pure, nomem, nostack, preserves_flags)
                );
                _mm256_storeu_ps(dst.as_mut_ptr().add(i), x);
            }
        }
        for i in body..n {
            dst[i] = bits::f16_to_f32(src[i]);
        }
    }

    /// [`narrow`] 16 elements at a time.
    ///
    /// # Safety
    /// The CPU must have AVX-512F, F16C and AVX.
    #[target_feature(enable = "avx512f,f16c,avx")]
    pub(super) unsafe fn narrow_avx512(src: &[f32], dst: &mut [u16]) {
        let n = src.len().min(dst.len());
        let body = n / 16 * 16;
        for i in (0..body).step_by(16) {
            // SAFETY: `i + 16 <= n`, inside both slices.
            unsafe {
                let x = _mm512_loadu_ps(src.as_ptr().add(i));
                let h: __m256i;
                // The register form, then a store (see `narrow`).
                std::arch::asm!(
                    "vcvtps2ph {h}, {x}, 0",
                    h = lateout(ymm_reg) h,
                    x = in(zmm_reg) x,
                    options(pure, nomem, nostack, preserves_flags)
                );
                _mm256_storeu_si256(dst.as_mut_ptr().add(i) as *mut __m256i, h);
            }
        }
        // SAFETY: as above.
        unsafe { narrow(&src[body..n], &mut dst[body..n]) }
    }

    /// # Safety
    /// The CPU must have F16C and AVX.
    #[target_feature(enable = "f16c,avx")]
    pub(super) unsafe fn narrow(src: &[f32], dst: &mut [u16]) {
        let n = src.len().min(dst.len());
        let body = n / 8 * 8;
        for i in (0..body).step_by(8) {
            // SAFETY: `i + 8 <= n`, inside both slices.
            unsafe {
                let x = _mm256_loadu_ps(src.as_ptr().add(i));
                let h: __m128i;
                // The register form, then a store: LLVM folds `_mm256_cvtps_ph` into a
                // store as `vcvtps2ph m128, ymm`, which Zen 4 runs several times slower.
                std::arch::asm!(
                    "vcvtps2ph {h}, {x}, 0",
                    h = lateout(xmm_reg) h,
                    x = in(ymm_reg) x,
                    options(pure, nomem, nostack, preserves_flags)
                );
                _mm_storeu_si128(dst.as_mut_ptr().add(i) as *mut __m128i, h);
            }
        }
        for i in body..n {
            dst[i] = bits::f32_to_f16(src[i]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `f16` and `bf16` pattern widens to `bits`' `f32`, bit for bit.
    #[test]
    fn widening_every_pattern_matches_bits() {
        let all: Vec<u16> = (0..=u16::MAX).collect();
        let mut got = vec![0f32; all.len()];
        widen(DType::F16, &all, &mut got);
        for (&h, g) in all.iter().zip(&got) {
            assert_eq!(g.to_bits(), bits::f16_to_f32(h).to_bits(), "f16 {h:#06x}");
        }
        widen(DType::BF16, &all, &mut got);
        for (&h, g) in all.iter().zip(&got) {
            assert_eq!(g.to_bits(), bits::bf16_to_f32(h).to_bits(), "bf16 {h:#06x}");
        }
    }

    /// A narrowing path: `f32` values to 16-bit patterns.
    #[cfg(target_arch = "x86_64")]
    type Narrow = unsafe fn(&[f32], &mut [u16]);

    /// Runs every path this CPU has (its flag) on all of `xs` but the last 7 (odd lengths:
    /// tails), each against `want`.
    #[cfg(target_arch = "x86_64")]
    fn check_paths(xs: &[f32], paths: &[(&str, bool, Narrow)], want: fn(f32) -> u16) {
        let n = xs.len() - 7;
        let mut got = vec![0u16; n];
        for &(name, _, path) in paths.iter().filter(|p| p.1) {
            got.fill(0);
            // SAFETY: the CPU has the path's features (filtered above).
            unsafe { path(&xs[..n], &mut got) };
            for (x, &g) in xs[..n].iter().zip(&got) {
                assert_eq!(g, want(*x), "{name}: narrowing {:#010x}", x.to_bits());
            }
        }
    }

    /// A sweep of `f32` patterns (every 251st, so every exponent, both signs, NaNs, the
    /// subnormal and overflow boundaries) plus every value just around each `f16`/`bf16`
    /// boundary narrows to `bits`' result, bit for bit.
    #[test]
    fn narrowing_matches_bits() {
        let mut xs: Vec<f32> = (0..=u32::MAX).step_by(251).map(f32::from_bits).collect();
        for h in 0..=u16::MAX {
            let f = bits::f16_to_f32(h).to_bits();
            let b = u32::from(h) << 16;
            for d in [0u32, 1, 0xfff, 0x1000, 0x1001, 0x7fff, 0x8000, 0x8001] {
                xs.extend(
                    [f.wrapping_add(d), f.wrapping_sub(d), b.wrapping_add(d)].map(f32::from_bits),
                );
            }
        }
        let mut got = vec![0u16; xs.len()];
        narrow(DType::F16, &xs, &mut got);
        for (x, &g) in xs.iter().zip(&got) {
            assert_eq!(g, bits::f32_to_f16(*x), "f16 of {:#010x}", x.to_bits());
        }
        // Each F16C path this CPU runs, not only the one `narrow` picks (odd lengths: tails).
        #[cfg(target_arch = "x86_64")]
        if has_f16c() {
            let paths: [(&str, bool, Narrow); 2] =
                [("avx", true, f16c::narrow), ("avx512", has_avx512f(), f16c::narrow_avx512)];
            check_paths(&xs, &paths, bits::f32_to_f16);
        }
        narrow(DType::BF16, &xs, &mut got);
        for (x, &g) in xs.iter().zip(&got) {
            assert_eq!(g, bits::f32_to_bf16(*x), "bf16 of {:#010x}", x.to_bits());
        }
        // Each AVX-512 bf16 path this CPU runs (odd lengths: tails).
        #[cfg(target_arch = "x86_64")]
        if has_avx512f() {
            let paths: [(&str, bool, Narrow); 2] = [
                ("avx512f", true, bf16_avx512::narrow),
                ("avx512bf16", has_avx512bf16(), bf16_avx512::narrow_bf16_instruction),
            ];
            check_paths(&xs, &paths, bits::f32_to_bf16);
        }
        // The portable bf16 narrowing too, where `narrow` picked a vector path.
        got.fill(0);
        narrow_bf16(&xs, &mut got);
        for (x, &g) in xs.iter().zip(&got) {
            assert_eq!(g, bits::f32_to_bf16(*x), "portable bf16 of {:#010x}", x.to_bits());
        }
    }
}
