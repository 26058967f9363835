//! `rsqrt` and `reciprocal`: single correctly rounded hardware operations.
//!
//! `1/√x` is computed as `sqrt` then `fdiv`, each correctly rounded, so the result is within
//! 1 ULP of the true value (no approximate `rsqrtps` + Newton step, whose results would differ
//! between machines).

use super::lanes::Lanes;

/// `1/√x`.
#[inline(always)]
pub(crate) fn rsqrt<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
    let s = cx.sqrt(x);
    reciprocal(cx, s)
}

/// `1/x`.
#[inline(always)]
pub(crate) fn reciprocal<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
    let one = cx.c(1.0);
    cx.div(one, x)
}
