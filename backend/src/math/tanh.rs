//! `tanh` and `sigmoid`.
//!
//! `tanh`: on `a = |x|`, a small-argument approximation for `a < 0.625` — Cephes' degree-9 odd
//! polynomial (`f32`) or degree-7/6 rational (`f64`) — and `1 − 2/(e^{2a} + 1)` above, with `a`
//! clamped to 22 (where `tanh` rounds to 1 in both precisions) so the exponential stays normal.
//! The sign of `x` is copied onto the result (so `tanh(−0) = −0`, NaN stays NaN).
//!
//! `sigmoid`: with `e = e^{−|x|}` (never overflows), `σ(x) = 1/(1 + e)` for `x ≥ 0` and
//! `e/(1 + e)` for `x < 0`, which keeps full relative accuracy (down to denormals) for very
//! negative `x`.

use cranelift::codegen::ir::Value;

use super::exp::{exp, exp_normal_range};
use super::ops::{Ctx, FloatCC};

/// Below this `|x|` the small-argument approximation is used.
const SMALL: f64 = 0.625;

/// Cephes `tanhf`: `tanh a = a + a·z·P(z)`, `z = a²`, ascending.
const TANH_P_F32: [f64; 5] = [
    -3.333_328_194_22e-1,
    1.333_144_220_36e-1,
    -5.373_971_555_31e-2,
    2.063_908_879_54e-2,
    -5.704_988_727_45e-3,
];

/// Cephes `tanh`: `tanh a = a + a·z·P(z)/Q(z)`, ascending.
const TANH_P_F64: [f64; 3] = [
    -1.614_687_684_417_084_479_47e3,
    -9.928_772_310_019_185_865_64e1,
    -9.643_991_794_250_522_386_28e-1,
];
const TANH_Q_F64: [f64; 4] = [
    4.844_063_053_251_254_860_48e3,
    2.235_488_390_601_005_835_83e3,
    1.128_116_784_916_329_314_02e2,
    1.0,
];

/// Hyperbolic tangent.
pub(crate) fn tanh(cx: &mut Ctx, x: Value) -> Value {
    let a = cx.abs(x);
    let small = cx.fcmp_c(FloatCC::LessThan, a, SMALL);
    let z = cx.mul(a, a);
    let az = cx.mul(a, z);
    let small_y = if cx.fmt.is_f32() {
        let p = cx.poly(z, &TANH_P_F32);
        cx.mul_add(az, p, a)
    } else {
        let p = cx.poly(z, &TANH_P_F64);
        let q = cx.poly(z, &TANH_Q_F64);
        let ratio = cx.div(p, q);
        cx.mul_add(az, ratio, a)
    };
    let ac = cx.min_c(a, 22.0);
    let two_a = cx.add(ac, ac);
    let e = exp_normal_range(cx, two_a);
    let one = cx.c(1.0);
    let two = cx.c(2.0);
    let e1 = cx.add(e, one);
    let q = cx.div(two, e1);
    let large_y = cx.sub(one, q);
    let y = cx.select(small, small_y, large_y);
    cx.with_sign_of(y, x)
}

/// Logistic sigmoid `1/(1 + e^{−x})`.
pub(crate) fn sigmoid(cx: &mut Ctx, x: Value) -> Value {
    let a = cx.abs(x);
    let minus_a = cx.neg(a);
    let e = exp(cx, minus_a);
    let one = cx.c(1.0);
    let negative = cx.fcmp_c(FloatCC::LessThan, x, 0.0);
    let num = cx.select(negative, e, one);
    let den = cx.add(one, e);
    cx.div(num, den)
}
