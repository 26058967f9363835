//! `erf`, with coefficients fitted for this module.
//!
//! On `a = |x|`:
//! - `a < 0.84375`: `erf a = a·P(a²)`, a near-minimax (relative error) polynomial of degree 5
//!   (`f32`) or 10 (`f64`) in `a²`;
//! - otherwise `erf a = 1 − e^{−a²}·R(t)` with `t = (a − k)/(a + k)` and `R ≈ erfc(a)·e^{a²}` a
//!   near-minimax polynomial of degree 6 (`f32`, `k = 2`) or 18 (`f64`, `k = 3`) on
//!   `[0.84375, 4]` resp. `[0.84375, 6]`; `a` is clamped there (`erf` rounds to 1 beyond).
//!
//! The change of variable `t` turns the `~1/a` shape of `erfc(a)·e^{a²}` into a function that a
//! low-degree polynomial fits well. Fits: Lawson-iterated weighted least squares in 40-digit
//! arithmetic (`mpmath`), relative error of the rounded coefficients `< 1e-7` (`f32`) and
//! `< 1e-16` (`f64`). The sign of `x` is copied onto the result.

use super::exp::exp_normal_range;
use super::lanes::Lanes;
use super::FloatCC;

const SMALL: f64 = 0.84375;

const ERF_SMALL_F32: [f64; 6] = [
    1.128_379_106_521_606_4,
    -0.376_125_752_925_872_8,
    0.112_827_755_510_807_04,
    -0.026_805_100_962_519_646,
    0.005_055_617_541_074_753,
    -0.000_634_289_230_220_019_8,
];
const ERFC_LARGE_F32: [f64; 7] = [
    0.255_395_680_665_969_85,
    -0.427_186_101_675_033_57,
    0.241_658_762_097_358_7,
    -0.078_963_771_462_440_49,
    0.003_713_148_180_395_364_8,
    0.006_777_139_380_574_226,
    -0.000_702_582_707_162_946_5,
];
const ERF_SMALL_F64: [f64; 11] = [
    std::f64::consts::FRAC_2_SQRT_PI,
    -0.376_126_389_031_833_76,
    0.112_837_916_709_341_89,
    -0.026_866_170_640_580_386,
    0.005_223_977_574_573_669,
    -0.000_854_832_369_730_713_7,
    0.000_120_551_969_656_819_2,
    -1.492_206_313_592_988_7e-05,
    1.640_093_564_220_907_4e-06,
    -1.570_989_453_176_820_4e-07,
    1.071_379_752_579_834_6e-08,
];
const ERFC_LARGE_F64: [f64; 19] = [
    0.179_001_151_181_389_96,
    -0.326_233_560_043_037_2,
    0.245_603_801_712_330_87,
    -0.150_115_936_500_777_18,
    0.071_665_837_197_977_37,
    -0.024_392_499_318_675_695,
    0.004_269_136_332_892_711,
    0.000_707_746_439_141_347_7,
    -0.000_597_061_950_225_114_6,
    4.525_529_160_976_089e-05,
    6.405_658_284_951_806e-05,
    -1.286_037_399_503_171_3e-05,
    -7.978_341_536_219_959e-06,
    2.118_765_314_669_95e-06,
    1.252_835_436_911_918_3e-06,
    -2.873_405_286_540_837_5e-07,
    -2.301_605_276_549_538_8e-07,
    1.433_808_169_574_577_2e-08,
    2.623_497_675_649_786_2e-08,
];

/// The error function.
#[inline(always)]
pub(crate) fn erf<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
    let (small_p, large_p, k, sat): (&[f64], &[f64], f64, f64) = if cx.fmt().is_f32() {
        (&ERF_SMALL_F32, &ERFC_LARGE_F32, 2.0, 4.0)
    } else {
        (&ERF_SMALL_F64, &ERFC_LARGE_F64, 3.0, 6.0)
    };
    let a = cx.abs(x);
    let small = cx.fcmp_c(FloatCC::LessThan, a, SMALL);
    let z = cx.mul(a, a);
    let p = cx.poly(z, small_p);
    let small_y = cx.mul(a, p);
    let ac = cx.min_c(a, sat);
    let kc = cx.c(k);
    let num = cx.sub(ac, kc);
    let den = cx.add(ac, kc);
    let t = cx.div(num, den);
    let r = cx.poly(t, large_p);
    let ac2 = cx.mul(ac, ac);
    let minus_ac2 = cx.neg(ac2);
    let e = exp_normal_range(cx, minus_ac2);
    let minus_e = cx.neg(e);
    let one = cx.c(1.0);
    let large_y = cx.mul_add(minus_e, r, one);
    let y = cx.select(small, small_y, large_y);
    cx.with_sign_of(y, x)
}
