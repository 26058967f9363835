//! `f64` `pow`: fdlibm's `e_pow.c` (the algorithm of the interpreter's `libm::pow`), branch-free.
//!
//! `exp(y·ln x)` in plain `f64` loses `|y·ln x|·2⁻⁵³` relative accuracy (15 ULP at
//! `pow(2, 3)`); fdlibm carries the logarithm in extended precision instead:
//! 1. `log₂|x| = t1 + t2` as a double-double (`t1` with 32 trailing zero bits): `|x| = 2ⁿ·m`,
//!    `m ∈ [1, √3)`… reduced around `bp ∈ {1, 1.5}`, `s = (m − bp)/(m + bp)` split into a 21-bit
//!    head and a tail by hand (exact products without `fma`), and an odd series in `s`;
//!    for `|y| > 2³¹` and `x` within `2⁻²⁰` of 1, a series in `x − 1` instead;
//! 2. `y·log₂|x| = p_h + p_l` (`y` split in two halves so `y_h·t1` is exact);
//! 3. `2^(p_h + p_l) = 2ᵏ·exp(r)` with `k` the nearest integer and a rational `exp` of
//!    `r ∈ [−ln2/2, ln2/2]` that keeps `p_l`'s correction.
//!
//! The result is "nearly rounded" (under 1 ULP) and exact when the true power is representable
//! (`pow(2, 3) = 8`); with the same operation order as fdlibm (no `fma` contraction) it agrees
//! with `libm::pow` bit for bit on the vast majority of inputs. Every branch of the C code is a
//! lane select: both sides are computed and the special cases of C99 Annex F override the
//! general result, in fdlibm's order of precedence.

use cranelift::codegen::ir::{InstBuilder, Value};

use super::exp::split_scale;
use super::lanes::Lanes;
use super::ops::{Ctx, FloatCC, IntCC};
use super::pow::integer_and_odd;

const DP_H1: f64 = 5.849_624_872_207_641_601_56e-1; // 0x3fe2b803_40000000: log2(1.5) head
const DP_L1: f64 = 1.350_039_202_129_748_971_28e-8; // 0x3e4cfdeb_43cfd006: its tail
const L: [f64; 6] = [
    5.999_999_999_999_946_487_25e-1,
    4.285_714_285_785_501_842_52e-1,
    3.333_333_298_183_774_329_18e-1,
    2.727_281_238_085_340_064_89e-1,
    2.306_607_457_755_617_540_67e-1,
    2.069_750_178_003_384_177_84e-1,
];
const P: [f64; 5] = [
    1.666_666_666_666_660_190_37e-1,
    -2.777_777_777_701_559_338_42e-3,
    6.613_756_321_437_934_361_17e-5,
    -1.653_390_220_546_525_153_90e-6,
    4.138_136_797_057_238_460_39e-8,
];
const LG2: f64 = std::f64::consts::LN_2; // 0x3fe62e42_fefa39ef, fdlibm's lg2
const LG2_H: f64 = 6.931_471_824_645_996_093_75e-1; // 0x3fe62e43_00000000
const LG2_L: f64 = -1.904_654_299_957_768_045_25e-9;
const OVT: f64 = 8.008_566_259_537_294_437_2e-17; // -(1024 - log2(ovfl + .5ulp))
const CP: f64 = 9.617_966_939_259_755_543_29e-1; // 2/(3 ln2)
const CP_H: f64 = 9.617_967_009_544_372_558_59e-1; // (float)cp
const CP_L: f64 = -7.028_461_650_952_758_265_16e-9;
const IVLN2: f64 = std::f64::consts::LOG2_E; // 0x3ff71547_652b82fe, fdlibm's ivln2
const IVLN2_H: f64 = 1.442_695_021_629_333_496_09e0; // 24-bit 1/ln2
const IVLN2_L: f64 = 1.925_962_991_126_617_468_87e-8;
/// `m` at or above this (high word `0x3ff3988f`, ≈ √(3/2)) is reduced around `bp = 1.5`.
const SQRT_1_5: u64 = 0x3ff3_988f_0000_0000;
/// `m` at or above this (high word `0x3ffbb67a`, ≈ √3) is halved (and `n` incremented).
const SQRT_3: u64 = 0x3ffb_b67a_0000_0000;
/// The high 32 bits of a double (fdlibm's "set the low word to 0").
const HIGH_WORD: i64 = 0xffff_ffff_0000_0000_u64 as i64;

/// `v` with its low 32 bits cleared: a head whose products with other heads are exact.
fn head(cx: &mut Ctx, v: Value) -> Value {
    let bits = cx.bits_of(v);
    let h = cx.band_c(bits, HIGH_WORD);
    cx.float_of_bits(h)
}

/// Horner with separate rounded multiplies and adds (fdlibm's order, no `fma`).
fn horner(cx: &mut Ctx, t: Value, coeffs: &[f64]) -> Value {
    let mut acc = cx.c(coeffs[coeffs.len() - 1]);
    for &k in coeffs[..coeffs.len() - 1].iter().rev() {
        let m = cx.mul(acc, t);
        let ck = cx.c(k);
        acc = cx.add(m, ck);
    }
    acc
}

/// `log₂ ax = t1 + t2` for finite `ax > 0` (fdlibm's general path).
fn log2_general(cx: &mut Ctx, ax: Value) -> (Value, Value) {
    // Denormals scaled by 2⁵³.
    let denormal = cx.fcmp_c(FloatCC::LessThan, ax, f64::MIN_POSITIVE);
    let up = cx.c(2f64.powi(53));
    let scaled = cx.mul(ax, up);
    let ax = cx.select(denormal, scaled, ax);
    let bits = cx.bits_of(ax);
    // n = unbiased exponent (as a float through the rounding magic), m ∈ [1, 2).
    let biased = cx.ushr(bits, 52);
    let magic_bits = cx.fmt.round_magic_bits();
    let n_bits = cx.iadd_c(biased, magic_bits - 1023);
    let n_magic = cx.float_of_bits(n_bits);
    let magic = cx.c(cx.fmt.round_magic());
    let n = cx.sub(n_magic, magic);
    let zero = cx.c(0.0);
    let den_adj = cx.select_c(denormal, 53.0, zero);
    let n = cx.sub(n, den_adj);
    let m_bits = cx.band_c(bits, (1i64 << 52) - 1);
    let one_bits = cx.ci(0x3ff0_0000_0000_0000);
    let m_bits = cx.bor(m_bits, one_bits);
    let m = cx.float_of_bits(m_bits);
    // Intervals: [1, √1.5) around 1 (k = 0), [√1.5, √3) around 1.5 (k = 1), [√3, 2) halved.
    let mid = cx.fcmp_c(FloatCC::GreaterThanOrEqual, m, f64::from_bits(SQRT_1_5));
    let halve = cx.fcmp_c(FloatCC::GreaterThanOrEqual, m, f64::from_bits(SQRT_3));
    let k1 = cx.b.ins().band_not(mid, halve);
    let half = cx.c(0.5);
    let half_m = cx.mul(m, half);
    let ax = cx.select(halve, half_m, m);
    let one = cx.c(1.0);
    let n_inc = cx.select(halve, one, zero);
    let n = cx.add(n, n_inc);
    let bp = cx.c(1.5);
    let bp = cx.select(k1, bp, one);
    let dp_h = cx.c(DP_H1);
    let dp_h = cx.select(k1, dp_h, zero);
    let dp_l = cx.c(DP_L1);
    let dp_l = cx.select(k1, dp_l, zero);

    // ss = s_h + s_l = (ax − bp)/(ax + bp).
    let u = cx.sub(ax, bp);
    let sum = cx.add(ax, bp);
    let v = cx.div(one, sum);
    let ss = cx.mul(u, v);
    let s_h = head(cx, ss);
    // t_h = ax + bp, high part, built from the bits as fdlibm does.
    let ax_bits = cx.bits_of(ax);
    let half_bits = cx.ushr(ax_bits, 1);
    let half_bits = cx.band_c(half_bits, HIGH_WORD);
    let t_h_bits = cx.iadd_c(half_bits, 0x2008_0000_0000_0000);
    let k_bits = cx.ci(1 << 50);
    let zero_i = cx.ci(0);
    let k_bits = cx.select(k1, k_bits, zero_i);
    let t_h_bits = cx.b.ins().iadd(t_h_bits, k_bits);
    let t_h = cx.float_of_bits(t_h_bits);
    let t_h_bp = cx.sub(t_h, bp);
    let t_l = cx.sub(ax, t_h_bp);
    let sht = cx.mul(s_h, t_h);
    let a = cx.sub(u, sht);
    let shl = cx.mul(s_h, t_l);
    let a = cx.sub(a, shl);
    let s_l = cx.mul(v, a);

    // log(ax) series.
    let s2 = cx.mul(ss, ss);
    let s4 = cx.mul(s2, s2);
    let poly = horner(cx, s2, &L);
    let r = cx.mul(s4, poly);
    let shs = cx.add(s_h, ss);
    let corr = cx.mul(s_l, shs);
    let r = cx.add(r, corr);
    let s2 = cx.mul(s_h, s_h);
    let three = cx.c(3.0);
    let t = cx.add(three, s2);
    let t = cx.add(t, r);
    let t_h = head(cx, t);
    let t_h3 = cx.sub(t_h, three);
    let t_h3 = cx.sub(t_h3, s2);
    let t_l = cx.sub(r, t_h3);
    // u + v = ss·(1 + …).
    let u = cx.mul(s_h, t_h);
    let a = cx.mul(s_l, t_h);
    let b = cx.mul(t_l, ss);
    let v = cx.add(a, b);
    // 2/(3 log2)·(ss + …).
    let uv = cx.add(u, v);
    let p_h = head(cx, uv);
    let p_hu = cx.sub(p_h, u);
    let p_l = cx.sub(v, p_hu);
    let cp_h = cx.c(CP_H);
    let z_h = cx.mul(cp_h, p_h);
    let cp_l = cx.c(CP_L);
    let a = cx.mul(cp_l, p_h);
    let cp = cx.c(CP);
    let b = cx.mul(p_l, cp);
    let z_l = cx.add(a, b);
    let z_l = cx.add(z_l, dp_l);
    // log2(ax) = n + dp_h + z_h + z_l.
    let a = cx.add(z_h, z_l);
    let a = cx.add(a, dp_h);
    let a = cx.add(a, n);
    let t1 = head(cx, a);
    let b = cx.sub(t1, n);
    let b = cx.sub(b, dp_h);
    let b = cx.sub(b, z_h);
    let t2 = cx.sub(z_l, b);
    (t1, t2)
}

/// `log₂ ax = t1 + t2` by the series in `t = ax − 1` (fdlibm's path for huge `|y|`, where
/// only `ax` within `2⁻²⁰` of 1 does not overflow or underflow).
fn log2_near_one(cx: &mut Ctx, ax: Value) -> (Value, Value) {
    let one = cx.c(1.0);
    let t = cx.sub(ax, one);
    let tt = cx.mul(t, t);
    let k_quarter = cx.c(0.25);
    let quarter = cx.mul(t, k_quarter);
    let third = cx.c(0.333_333_333_333_333_333_333_3);
    let a = cx.sub(third, quarter);
    let a = cx.mul(t, a);
    let half = cx.c(0.5);
    let a = cx.sub(half, a);
    let w = cx.mul(tt, a);
    let ivln2_h = cx.c(IVLN2_H);
    let u = cx.mul(ivln2_h, t);
    let ivln2_l = cx.c(IVLN2_L);
    let a = cx.mul(t, ivln2_l);
    let ivln2 = cx.c(IVLN2);
    let b = cx.mul(w, ivln2);
    let v = cx.sub(a, b);
    let uv = cx.add(u, v);
    let t1 = head(cx, uv);
    let d = cx.sub(t1, u);
    let t2 = cx.sub(v, d);
    (t1, t2)
}

/// `|x|ʸ` without special cases: `(magnitude, overflow mask, underflow mask)`.
fn pow_magnitude(cx: &mut Ctx, ax: Value, y: Value, ay: Value) -> (Value, Value, Value) {
    let (g1, g2) = log2_general(cx, ax);
    let (n1, n2) = log2_near_one(cx, ax);
    let huge_y = cx.fcmp_c(FloatCC::GreaterThan, ay, f64::from_bits(0x41e0_0000_ffff_ffff));
    let lo = cx.fcmp_c(FloatCC::GreaterThanOrEqual, ax, f64::from_bits(0x3fef_ffff_0000_0000));
    let hi = cx.fcmp_c(FloatCC::LessThanOrEqual, ax, f64::from_bits(0x3ff0_0000_ffff_ffff));
    let near = cx.mask_and(lo, hi);
    let series = cx.mask_and(huge_y, near);
    let t1 = cx.select(series, n1, g1);
    let t2 = cx.select(series, n2, g2);

    // (y1 + y2)·(t1 + t2) = p_h + p_l.
    let y1 = head(cx, y);
    let yy = cx.sub(y, y1);
    let a = cx.mul(yy, t1);
    let b = cx.mul(y, t2);
    let p_l = cx.add(a, b);
    let p_h = cx.mul(y1, t1);
    let z = cx.add(p_l, p_h);
    // Overflow above 1024 (at 1024 when the tail pushes it over), underflow below −1075.
    let zp = cx.sub(z, p_h);
    let over_z = cx.fcmp_c(FloatCC::GreaterThan, z, 1024.0);
    let at_max = cx.fcmp_c(FloatCC::Equal, z, 1024.0);
    let ovt = cx.c(OVT);
    let pl_ovt = cx.add(p_l, ovt);
    let tail_over = cx.fcmp(FloatCC::GreaterThan, pl_ovt, zp);
    let tail_over = cx.mask_and(at_max, tail_over);
    let over = cx.mask_or(over_z, tail_over);
    let under_z = cx.fcmp_c(FloatCC::LessThan, z, -1075.0);
    let at_min = cx.fcmp_c(FloatCC::Equal, z, -1075.0);
    let tail_under = cx.fcmp(FloatCC::LessThanOrEqual, p_l, zp);
    let tail_under = cx.mask_and(at_min, tail_under);
    let under = cx.mask_or(under_z, tail_under);

    // k = nearest integer to the head of z (half away from zero, as fdlibm's bit trick), 0 for
    // |head| ≤ 0.5; clamped so the scale stays well defined where over/under take over.
    let az = cx.abs(z);
    let az_h = head(cx, az);
    let half = cx.c(0.5);
    let a = cx.add(az_h, half);
    let (r, _) = cx.round_int(a);
    let above = cx.fcmp(FloatCC::GreaterThan, r, a);
    let one = cx.c(1.0);
    let zero = cx.c(0.0);
    let dec = cx.select(above, one, zero);
    let k = cx.sub(r, dec);
    let big = cx.fcmp_c(FloatCC::GreaterThan, az_h, 0.5);
    let k = cx.select(big, k, zero);
    let k = cx.min_c(k, 1100.0);
    let k = cx.with_sign_of(k, z);
    let p_h = cx.sub(p_h, k);

    // exp((p_h + p_l)·ln2) with p_h + p_l ∈ [−0.5, 0.5].
    let s = cx.add(p_l, p_h);
    let t = head(cx, s);
    let lg2_h = cx.c(LG2_H);
    let u = cx.mul(t, lg2_h);
    let tp = cx.sub(t, p_h);
    let a = cx.sub(p_l, tp);
    let lg2 = cx.c(LG2);
    let a = cx.mul(a, lg2);
    let lg2_l = cx.c(LG2_L);
    let b = cx.mul(t, lg2_l);
    let v = cx.add(a, b);
    let z = cx.add(u, v);
    let zu = cx.sub(z, u);
    let w = cx.sub(v, zu);
    let tt = cx.mul(z, z);
    let poly = horner(cx, tt, &P);
    let tp = cx.mul(tt, poly);
    let t1 = cx.sub(z, tp);
    let num = cx.mul(z, t1);
    let two = cx.c(2.0);
    let den = cx.sub(t1, two);
    let q = cx.div(num, den);
    let zw = cx.mul(z, w);
    let wzw = cx.add(w, zw);
    let r = cx.sub(q, wzw);
    let rz = cx.sub(r, z);
    let e = cx.sub(one, rz);
    // e·2ᵏ with one rounding (into the denormals too): two normal factors.
    let (_, k_bits) = cx.round_int(k);
    let (s1, s2) = split_scale(cx, k_bits);
    let e = cx.mul(e, s1);
    (cx.mul(e, s2), over, under)
}

/// `xʸ` on `f64`/`f64x2` lanes with fdlibm's accuracy and C99 special cases.
pub(crate) fn pow_f64(cx: &mut Ctx, x: Value, y: Value) -> Value {
    let ax = cx.abs(x);
    let ay = cx.abs(y);
    let (magnitude, over, under) = pow_magnitude(cx, ax, y, ay);
    let r = cx.select_c(over, f64::INFINITY, magnitude);
    let r = cx.select_c(under, 0.0, r);

    let (is_int, odd) = integer_and_odd(cx, ay);
    let x_negative = cx.fcmp_c(FloatCC::LessThan, x, 0.0);
    let x_sign_set = sign_set(cx, x);
    let odd_neg = cx.mask_and(odd, x_sign_set);
    // (x < 0)^(odd integer) = −|x|^y; (x < 0)^(non-integer) = NaN.
    let neg_r = cx.neg(r);
    let r = cx.select(odd_neg, neg_r, r);
    let non_int = cx.b.ins().band_not(x_negative, is_int);
    let r = cx.select_c(non_int, f64::NAN, r);

    // x = ±0, ±inf, ±1: |x| or 1/|x|, signed for odd y; (−1)^(non-integer) = NaN.
    let x_zero = cx.fcmp_c(FloatCC::Equal, ax, 0.0);
    let x_inf = cx.fcmp_c(FloatCC::Equal, ax, f64::INFINITY);
    let x_unit = cx.fcmp_c(FloatCC::Equal, ax, 1.0);
    let special_x = cx.mask_or(x_zero, x_inf);
    let special_x = cx.mask_or(special_x, x_unit);
    let one = cx.c(1.0);
    let inv_x = cx.div(one, x);
    let inv_ax = cx.abs(inv_x);
    let y_negative = cx.fcmp_c(FloatCC::LessThan, y, 0.0);
    let zx = cx.select(y_negative, inv_ax, ax);
    let neg_zx = cx.neg(zx);
    let zx = cx.select(odd_neg, neg_zx, zx);
    let minus_one = cx.fcmp_c(FloatCC::Equal, x, -1.0);
    let minus_one_frac = cx.b.ins().band_not(minus_one, is_int);
    let zx = cx.select_c(minus_one_frac, f64::NAN, zx);
    let r = cx.select(special_x, zx, r);

    // y = 0.5 (x ≥ +0): sqrt; y = 2: x·x; y = −1: 1/x; y = 1: x.
    let y_half = cx.fcmp_c(FloatCC::Equal, y, 0.5);
    let root_case = cx.b.ins().band_not(y_half, x_sign_set);
    let root = cx.sqrt(x);
    let r = cx.select(root_case, root, r);
    let y_two = cx.fcmp_c(FloatCC::Equal, y, 2.0);
    let square = cx.mul(x, x);
    let r = cx.select(y_two, square, r);
    let y_minus_one = cx.fcmp_c(FloatCC::Equal, y, -1.0);
    let r = cx.select(y_minus_one, inv_x, r);
    let y_one = cx.fcmp_c(FloatCC::Equal, y, 1.0);
    let r = cx.select(y_one, x, r);

    // y = ±inf: 1 for |x| = 1, else inf or 0 as |x| > 1 and y > 0 agree.
    let y_inf = cx.fcmp_c(FloatCC::Equal, ay, f64::INFINITY);
    let x_big = cx.fcmp_c(FloatCC::GreaterThan, ax, 1.0);
    let y_pos = cx.fcmp_c(FloatCC::GreaterThan, y, 0.0);
    let grows = cx.b.ins().bxor(x_big, y_pos);
    let inf = cx.c(f64::INFINITY);
    let zero = cx.c(0.0);
    let zy = cx.select(grows, zero, inf);
    let zy = cx.select(x_unit, one, zy);
    let r = cx.select(y_inf, zy, r);

    // NaN operands give NaN, except x^0 = 1 and 1^y = 1.
    let x_nan = cx.fcmp(FloatCC::Unordered, x, x);
    let y_nan = cx.fcmp(FloatCC::Unordered, y, y);
    let nan = cx.mask_or(x_nan, y_nan);
    let r = cx.select_c(nan, f64::NAN, r);
    let y_zero = cx.fcmp_c(FloatCC::Equal, y, 0.0);
    let x_one = cx.fcmp_c(FloatCC::Equal, x, 1.0);
    let unit = cx.mask_or(y_zero, x_one);
    cx.select_c(unit, 1.0, r)
}

/// Lane mask: the sign bit of `x` is set (`−0` and negative NaNs included).
fn sign_set(cx: &mut Ctx, x: Value) -> Value {
    let bits = cx.bits_of(x);
    let sign = cx.band_c(bits, cx.fmt.sign_mask());
    let zero_i = cx.ci(0);
    cx.icmp(IntCC::NotEqual, sign, zero_i)
}
