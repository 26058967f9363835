//! The one policy for comparing a computed tensor with its reference: [`compare`] (and
//! [`assert_close`], which panics) under a named [`Tolerance`].
//!
//! # The policy
//!
//! 1. Dtype and shape must be equal.
//! 2. Bools and integers must be equal, always: no tolerance applies to them.
//! 3. A float element passes when both are NaN (any payload), when the two values are equal
//!    (infinities of the same sign), or when `|got - want| <= atol + rtol * |want|` (NumPy's
//!    `isclose`), with the [`Bound`] the [`Tolerance`] gives the dtype. A NaN against a number,
//!    or an infinity against anything else, never passes. Under a zero bound
//!    ([`Bound::EQUAL`]) the two must be the same bits (NaN payloads aside): `-0.0` is not
//!    `0.0` there.
//! 4. The tolerance is chosen by what produced the result (the op class), by name; a test
//!    never loosens a bound inline. A test that needs a looser bound than the classes below
//!    names its own [`Tolerance`] (with [`Tolerance::uniform`]) and says why; a `.tir` case
//!    does the same with its `tol:` directive (`backend/tests/it/run_cases.rs`).
//!
//! | tolerance | for results that | `f16` | `bf16` | `f32` (rtol, atol) | `f64` (rtol, atol) |
//! |---|---|---|---|---|---|
//! | [`Tolerance::EXACT`] | are the same computation by another route: thread counts, SIMD levels, caller buffers, the kernel cache, copy and scan kernels | same bits | same bits | same bits | same bits |
//! | [`Tolerance::ROUNDING`] | differ from the reference only in the last bits of each operation: elementwise kernels and the interpreter against NumPy | same bits | same bits | 1e-5, 1e-6 | 1e-12, 1e-12 |
//! | [`Tolerance::ACCUMULATED`] | sum in another order or compound several roundings: reductions, matmuls, convolutions, chains of transcendental functions, whole programs against NumPy | 2⁻¹⁰, 2⁻¹⁴ | 2⁻⁷, 2⁻¹⁴ | 5e-5, 5e-5 | 1e-10, 1e-10 |
//!
//! The bounds are the tightest that every existing test met when the policy replaced the
//! tests' own comparisons (`1e-4 * max(1, |want|)` for whole programs, `1e-4 + 1e-4 * |want|`
//! for random graphs and matmul epilogues, `1e-4 * (1 + max(|got|, |want|))` for window ops):
//! no test's bound got looser.
//!
//! `f16` and `bf16` are storage types: every operation computes in `f32` and rounds once, so
//! under `EXACT` and `ROUNDING` both sides round the same value; under `ACCUMULATED` a
//! different summation order may move a value across one rounding boundary (one unit in the
//! last place, the relative bound rewrite soundness checks use in
//! `passes/src/optimize/soundness.rs`).
//!
//! Bit-for-bit identity including NaN payloads is stricter than `EXACT`: compare
//! [`crate::bits`].

use ndarray::ArrayD;
use std::fmt::Display;
use tfn_ir::{DType, Tensor};

/// How far one float element may be from its reference: `|got - want| <= atol + rtol * |want|`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bound {
    pub rtol: f64,
    pub atol: f64,
}

impl Bound {
    /// The same bits (a zero's sign counts), any NaN matching any NaN.
    pub const EQUAL: Bound = Bound { rtol: 0.0, atol: 0.0 };

    pub const fn new(rtol: f64, atol: f64) -> Bound {
        Bound { rtol, atol }
    }

    /// Whether `got` passes against `want` (rule 3 of the policy).
    pub fn admits(self, got: f64, want: f64) -> bool {
        if got.is_nan() || want.is_nan() {
            return got.is_nan() && want.is_nan();
        }
        if self == Bound::EQUAL {
            // The same bits: a zero's sign counts.
            return got.to_bits() == want.to_bits();
        }
        // An infinite `want` would make the bound infinite: infinities match only themselves.
        got == want
            || (got.is_finite()
                && want.is_finite()
                && (got - want).abs() <= self.atol + self.rtol * want.abs())
    }
}

/// A named tolerance: one [`Bound`] per float dtype (see the module docs for the policy).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Shown in every failure message.
    pub name: &'static str,
    pub f16: Bound,
    pub bf16: Bound,
    pub f32: Bound,
    pub f64: Bound,
}

impl Tolerance {
    /// The same computation by another route: the same bits, NaN matching NaN.
    pub const EXACT: Tolerance = Tolerance::uniform("exact", 0.0, 0.0);

    /// Each operation within a few units in the last place of the reference's.
    pub const ROUNDING: Tolerance = Tolerance {
        name: "rounding",
        f16: Bound::EQUAL,
        bf16: Bound::EQUAL,
        f32: Bound::new(1e-5, 1e-6),
        f64: Bound::new(1e-12, 1e-12),
    };

    /// Sums in another order, compounded roundings, transcendental chains, whole programs.
    pub const ACCUMULATED: Tolerance = Tolerance {
        name: "accumulated",
        f16: Bound::new(1.0 / 1024.0, 1.0 / 16384.0),
        bf16: Bound::new(1.0 / 128.0, 1.0 / 16384.0),
        f32: Bound::new(5e-5, 5e-5),
        f64: Bound::new(1e-10, 1e-10),
    };

    /// One bound for every float dtype: a test's own named tolerance (say why where it is
    /// defined), or a `.tir` case's `tol:` directive.
    pub const fn uniform(name: &'static str, rtol: f64, atol: f64) -> Tolerance {
        let b = Bound::new(rtol, atol);
        Tolerance { name, f16: b, bf16: b, f32: b, f64: b }
    }

    /// The bound for elements of `dtype` ([`Bound::EQUAL`] for bools and integers).
    pub fn bound(&self, dtype: DType) -> Bound {
        match dtype {
            DType::F16 => self.f16,
            DType::BF16 => self.bf16,
            DType::F32 => self.f32,
            DType::F64 => self.f64,
            DType::Bool | DType::I8 | DType::U8 | DType::I32 | DType::I64 => Bound::EQUAL,
        }
    }
}

/// The mismatching elements of one comparison.
struct Mismatches {
    count: usize,
    /// Flat index, got, want of the first.
    first: Option<(usize, String, String)>,
}

fn mismatches<T>(got: &ArrayD<T>, want: &ArrayD<T>, ok: impl Fn(&T, &T) -> bool) -> Mismatches
where
    T: Display,
{
    let mut m = Mismatches { count: 0, first: None };
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if !ok(g, w) {
            m.count += 1;
            if m.first.is_none() {
                m.first = Some((i, g.to_string(), w.to_string()));
            }
        }
    }
    m
}

/// The multi-index of flat (row-major) position `flat` in `shape`.
fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for (slot, &d) in index.iter_mut().zip(shape).rev() {
        if d > 0 {
            *slot = flat % d;
            flat /= d;
        }
    }
    index
}

/// `Ok` when `got` matches `want` under `tol` (the module's policy); otherwise how many
/// elements differ, the first of them, and (for small tensors) both tensors.
pub fn compare(got: &Tensor, want: &Tensor, tol: Tolerance) -> Result<(), String> {
    if got.dtype() != want.dtype() || got.shape() != want.shape() {
        return Err(format!(
            "got {}{:?}, want {}{:?}",
            got.dtype(),
            got.shape(),
            want.dtype(),
            want.shape()
        ));
    }
    let bound = tol.bound(want.dtype());
    let m = match (got, want) {
        (Tensor::Bool(a), Tensor::Bool(b)) => mismatches(a, b, |x, y| x == y),
        (Tensor::I8(a), Tensor::I8(b)) => mismatches(a, b, |x, y| x == y),
        (Tensor::U8(a), Tensor::U8(b)) => mismatches(a, b, |x, y| x == y),
        (Tensor::I32(a), Tensor::I32(b)) => mismatches(a, b, |x, y| x == y),
        (Tensor::I64(a), Tensor::I64(b)) => mismatches(a, b, |x, y| x == y),
        (Tensor::F16(a), Tensor::F16(b)) => {
            mismatches(a, b, |x, y| bound.admits(x.to_f64(), y.to_f64()))
        }
        (Tensor::BF16(a), Tensor::BF16(b)) => {
            mismatches(a, b, |x, y| bound.admits(x.to_f64(), y.to_f64()))
        }
        (Tensor::F32(a), Tensor::F32(b)) => {
            mismatches(a, b, |x, y| bound.admits(f64::from(*x), f64::from(*y)))
        }
        (Tensor::F64(a), Tensor::F64(b)) => mismatches(a, b, |x, y| bound.admits(*x, *y)),
        // The dtypes are equal (checked above).
        _ => unreachable!("equal dtypes"),
    };
    let Some((i, g, w)) = m.first else { return Ok(()) };
    let n: usize = want.shape().iter().product();
    let mut message = format!(
        "{} of {n} elements differ ({} tolerance, rtol {:e} atol {:e}); first at {:?}: got {g}, \
         want {w}",
        m.count,
        tol.name,
        bound.rtol,
        bound.atol,
        unravel(i, want.shape())
    );
    if n <= 32 {
        message.push_str(&format!("\n  got  {got:?}\n  want {want:?}"));
    }
    Err(message)
}

/// [`compare`], panicking with `what` and the difference on a mismatch.
#[track_caller]
pub fn assert_close(got: &Tensor, want: &Tensor, tol: Tolerance, what: &str) {
    if let Err(e) = compare(got, want, tol) {
        panic!("{what}: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{arr1, ArrayD};

    fn f32s(v: &[f32]) -> Tensor {
        Tensor::F32(arr1(v).into_dyn())
    }

    #[test]
    fn floats_pass_within_the_bound_of_their_dtype() {
        let want = f32s(&[1.0, -2.0, 0.0, f32::NAN, f32::INFINITY]);
        let near = f32s(&[1.000_005, -2.000_01, 5e-7, f32::NAN, f32::INFINITY]);
        assert_eq!(compare(&near, &want, Tolerance::ROUNDING), Ok(()));
        let far = f32s(&[1.001, -2.0, 0.0, f32::NAN, f32::INFINITY]);
        let err = compare(&far, &want, Tolerance::ROUNDING).unwrap_err();
        assert!(err.starts_with("1 of 5 elements differ (rounding tolerance"), "{err}");
        assert!(err.contains("first at [0]: got 1.001, want 1"), "{err}");
        assert_eq!(compare(&far, &want, Tolerance::ACCUMULATED).map_err(|_| ()), Err(()));
        assert_eq!(compare(&far, &want, Tolerance::uniform("loose", 1e-2, 0.0)), Ok(()));
    }

    #[test]
    fn nan_and_infinities_match_only_themselves() {
        let b = Bound::new(1.0, 1.0);
        assert!(b.admits(f64::NAN, -f64::NAN));
        assert!(!b.admits(f64::NAN, 1.0) && !b.admits(1.0, f64::NAN));
        assert!(!b.admits(f64::INFINITY, 1e308) && !b.admits(f64::INFINITY, f64::NEG_INFINITY));
        assert!(!Bound::EQUAL.admits(-0.0, 0.0) && Bound::EQUAL.admits(-0.0, -0.0));
        assert!(Bound::new(0.0, 1e-9).admits(-0.0, 0.0));
    }

    #[test]
    fn integers_and_bools_are_always_exact() {
        let loose = Tolerance::uniform("loose", 1.0, 1.0);
        let (a, b) = (
            Tensor::I64(arr1(&[i64::MAX]).into_dyn()),
            Tensor::I64(arr1(&[i64::MAX - 1]).into_dyn()),
        );
        assert!(compare(&a, &b, loose).is_err(), "no rounding through f64");
        let t = Tensor::Bool(ArrayD::from_elem(vec![2, 2], true));
        assert_eq!(compare(&t, &t, Tolerance::EXACT), Ok(()));
    }

    #[test]
    fn dtype_and_shape_must_match() {
        let a = f32s(&[1.0, 2.0]);
        let b = Tensor::F64(arr1(&[1.0, 2.0]).into_dyn());
        assert_eq!(compare(&a, &b, Tolerance::EXACT), Err("got f32[2], want f64[2]".into()));
        let c = Tensor::F32(ArrayD::zeros(vec![2, 1]));
        assert!(compare(&a, &c, Tolerance::EXACT).is_err());
    }

    #[test]
    fn storage_floats_are_exact_under_rounding_and_one_ulp_under_accumulated() {
        use tfn_ir::half::f16;
        let t = |v: f32| Tensor::F16(arr1(&[f16::from_f32(v)]).into_dyn());
        let one_ulp_up =
            Tensor::F16(arr1(&[f16::from_bits(f16::from_f32(3.0).to_bits() + 1)]).into_dyn());
        assert!(compare(&one_ulp_up, &t(3.0), Tolerance::ROUNDING).is_err());
        assert_eq!(compare(&one_ulp_up, &t(3.0), Tolerance::ACCUMULATED), Ok(()));
    }
}
