//! `sin` and `cos`.
//!
//! Cody–Waite reduction by π/2 with a three- or four-part constant: `j = round(x·2/π)`,
//! `r = x − j·P₁ − j·P₂ − j·P₃`, `|r| ≤ π/4`; then the sine or cosine polynomial of `r` (Cephes
//! `sinf`/`cosf` for `f32`, fdlibm `__sin`/`__cos` for `f64`) chosen by the quadrant `j mod 4`,
//! which is read from the low bits of the rounding-magic sum (no float→int conversion).
//!
//! With `fma`, `P₁ = fl(π/2)` and every step is either exact or a single rounding of a value of
//! the size of `r`, which keeps `r` accurate even for the arguments closest to a multiple of π/2.
//! Without `fma`, π/2 is split in four parts, the first three with 11 (`f32`) or 33 (`f64`)
//! significant bits so that their products with `j` (`|j| ≤ 2¹³` resp. `2²⁰`) are exact and
//! each subtraction is exact or a rounding at the size of `r` (`x − j·P₁ − j·P₂ − j·P₃ − j·P₄`).
//!
//! **Accurate range** ([`reduction_limit`]): `f32`: `|x| ≤ 2¹⁸` with `fma`, `≤ 12 864` without;
//! `f64`: `≤ 2²⁸` with `fma`, `≤ 1 647 099` (`2²⁰·π/2`) without. Lanes beyond it (and `±inf`)
//! go to the scalar [`Fallback`]: the interpreter's `libm` function, with its exact
//! Payne–Hanek reduction, called only when some lane of a vector needs it. Where there is no
//! fallback to call (a self-contained aarch64 object) those lanes are NaN, never a silently
//! wrong value.

use super::lanes::Lanes;
use super::Fallback;
use super::{FloatCC, IntCC};

const TWO_OVER_PI: f64 = std::f64::consts::FRAC_2_PI;

/// Three-part π/2 for use with `fma` (full-precision parts).
const PIO2_FMA_F32: [f64; 3] =
    [1.570_796_370_506_286_6, -4.371_138_828_673_793e-08, -1.715_124_510_005_881_9e-15];
const PIO2_FMA_F64: [f64; 3] =
    [std::f64::consts::FRAC_PI_2, 6.123_233_995_736_766e-17, -1.497_384_904_859_169_8e-33];
/// Four-part π/2 whose first three parts have 11 (`f32`) or 33 (`f64`) significant bits, so
/// that their products with `j` are exact without `fma`.
const PIO2_SHORT_F32: [f64; 4] = [
    1.570_312_5,
    0.000_483_751_296_997_070_3,
    7.549_533_620_476_723e-08,
    2.563_344_068_257_089_6e-12,
];
const PIO2_SHORT_F64: [f64; 4] = [
    1.570_796_326_734_125_6,
    6.077_100_506_303_966e-11,
    2.022_266_248_711_166_5e-21,
    8.478_427_660_368_9e-32,
];

/// Cephes `sinf`: `sin r = r + r·z·S(z)`, ascending.
const SIN_F32: [f64; 3] = [-1.666_665_461_1e-1, 8.332_160_873_6e-3, -1.951_529_589_1e-4];
/// Cephes `cosf`: `cos r = 1 − z/2 + z²·C(z)`, ascending.
const COS_F32: [f64; 3] =
    [4.166_664_568_298_827e-2, -1.388_731_625_493_765e-3, 2.443_315_711_809_948e-5];
/// fdlibm `S1..S6`.
const SIN_F64: [f64; 6] = [
    -1.666_666_666_666_663_243_48e-01,
    8.333_333_333_322_489_461_24e-03,
    -1.984_126_982_985_794_931_34e-04,
    2.755_731_370_707_006_767_89e-06,
    -2.505_076_025_340_686_341_95e-08,
    1.589_690_995_211_550_102_21e-10,
];
/// fdlibm `C1..C6`.
const COS_F64: [f64; 6] = [
    4.166_666_666_666_660_190_37e-02,
    -1.388_888_888_887_410_957_49e-03,
    2.480_158_728_947_672_941_78e-05,
    -2.755_731_435_139_066_330_35e-07,
    2.087_572_321_298_174_827_90e-09,
    -1.135_964_755_778_819_482_65e-11,
];

/// The largest `|x|` that `sin`/`cos` reduce accurately; beyond it they return NaN. The values
/// are exactly representable in `f32`, so the `f32` comparison is exact.
pub fn reduction_limit(is_f32: bool, fma: bool) -> f64 {
    match (is_f32, fma) {
        (true, true) => 262_144.0,      // 2¹⁸
        (true, false) => 12_864.0,      // ≤ 2¹³·π/2
        (false, true) => 268_435_456.0, // 2²⁸
        (false, false) => 1_647_099.0,  // ≤ 2²⁰·π/2
    }
}

/// `sin x`.
#[inline(always)]
pub(crate) fn sin<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
    let y = sin_cos(cx, x, 0);
    cx.keep_zero(x, y)
}

/// `cos x`.
#[inline(always)]
pub(crate) fn cos<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
    sin_cos(cx, x, 1)
}

/// `sin(x + quadrant_shift·π/2)`.
#[inline(always)]
fn sin_cos<L: Lanes>(cx: &mut L, x: L::F, quadrant_shift: i64) -> L::F {
    let is_f32 = cx.fmt().is_f32();
    let pio2: &[f64] = match (is_f32, cx.has_fma()) {
        (true, true) => &PIO2_FMA_F32,
        (true, false) => &PIO2_SHORT_F32,
        (false, true) => &PIO2_FMA_F64,
        (false, false) => &PIO2_SHORT_F64,
    };
    let (j, j_bits) = cx.round_int_of_product(x, TWO_OVER_PI);
    let neg_j = cx.neg(j);
    let mut r = x;
    for &part in pio2 {
        let k = cx.c(part);
        r = cx.mul_add(neg_j, k, r);
    }
    let z = cx.mul(r, r);
    let (sin_p, cos_p): (&[f64], &[f64]) =
        if is_f32 { (&SIN_F32, &COS_F32) } else { (&SIN_F64, &COS_F64) };
    let sp = cx.poly(z, sin_p);
    let rz = cx.mul(r, z);
    let sin_r = cx.mul_add(rz, sp, r);
    let cp = cx.poly(z, cos_p);
    let one = cx.c(1.0);
    let minus_half = cx.c(-0.5);
    let w = cx.mul_add(z, minus_half, one);
    let zz = cx.mul(z, z);
    let cos_r = cx.mul_add(zz, cp, w);
    // Quadrant q = j + shift (mod 4): odd q swaps to cos, q ≥ 2 negates.
    let q = cx.iadd_c(j_bits, quadrant_shift);
    let odd = cx.band_c(q, 1);
    let zero_i = cx.ci(0);
    let swap = cx.icmp(IntCC::NotEqual, odd, zero_i);
    let y = cx.select(swap, cos_r, sin_r);
    let half_turn = cx.band_c(q, 2);
    let flip = cx.shl(half_turn, cx.fmt().bits - 2);
    let y_bits = cx.bits_of(y);
    let y_bits = cx.bxor(y_bits, flip);
    let y = cx.float_of_bits(y_bits);
    let a = cx.abs(x);
    let limit = reduction_limit(is_f32, cx.has_fma());
    let out_of_range = cx.fcmp_c(FloatCC::GreaterThan, a, limit);
    let f = if quadrant_shift == 0 { Fallback::Sin } else { Fallback::Cos };
    cx.fallback(f, out_of_range, x, y)
}
