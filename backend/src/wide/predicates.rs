//! Cranelift's comparison codes as x86 compare predicates, for the SIMD [`Lanes`] impls.
//!
//! The compare intrinsics take their predicate as a const generic, so a runtime
//! [`FloatCC`] becomes a `match` with one intrinsic call per arm; every caller is
//! `#[inline(always)]` with a constant `cc`, so the match folds to the one instruction.
//! Each arm has exactly Cranelift's meaning: ordered predicates are false on NaN, the
//! `Unordered…` ones true; quiet vs signalling only changes exception flags (masked).
//!
//! [`Lanes`]: crate::math::Lanes

/// `$cmp::<PREDICATE>($x, $y)` for the `_CMP_*` predicate meaning `$cc` (a [`FloatCC`]).
///
/// [`FloatCC`]: crate::math::FloatCC
macro_rules! float_cmp {
    ($cc:expr, $cmp:ident, $x:expr, $y:expr) => {{
        use crate::math::FloatCC;
        match $cc {
            FloatCC::Ordered => $cmp::<_CMP_ORD_Q>($x, $y),
            FloatCC::Unordered => $cmp::<_CMP_UNORD_Q>($x, $y),
            FloatCC::Equal => $cmp::<_CMP_EQ_OQ>($x, $y),
            FloatCC::NotEqual => $cmp::<_CMP_NEQ_UQ>($x, $y),
            FloatCC::OrderedNotEqual => $cmp::<_CMP_NEQ_OQ>($x, $y),
            FloatCC::UnorderedOrEqual => $cmp::<_CMP_EQ_UQ>($x, $y),
            FloatCC::LessThan => $cmp::<_CMP_LT_OQ>($x, $y),
            FloatCC::LessThanOrEqual => $cmp::<_CMP_LE_OQ>($x, $y),
            FloatCC::GreaterThan => $cmp::<_CMP_GT_OQ>($x, $y),
            FloatCC::GreaterThanOrEqual => $cmp::<_CMP_GE_OQ>($x, $y),
            FloatCC::UnorderedOrLessThan => $cmp::<_CMP_NGE_UQ>($x, $y),
            FloatCC::UnorderedOrLessThanOrEqual => $cmp::<_CMP_NGT_UQ>($x, $y),
            FloatCC::UnorderedOrGreaterThan => $cmp::<_CMP_NLE_UQ>($x, $y),
            FloatCC::UnorderedOrGreaterThanOrEqual => $cmp::<_CMP_NLT_UQ>($x, $y),
        }
    }};
}

/// `$cmp::<PREDICATE>($x, $y)` for the AVX-512 integer predicate meaning `$cc` (an
/// [`IntCC`]); `$cmpu` is the unsigned compare, `$cmp` the signed one.
///
/// [`IntCC`]: crate::math::IntCC
macro_rules! int_cmp_avx512 {
    ($cc:expr, $cmp:ident, $cmpu:ident, $x:expr, $y:expr) => {{
        use crate::math::IntCC;
        match $cc {
            IntCC::Equal => $cmp::<_MM_CMPINT_EQ>($x, $y),
            IntCC::NotEqual => $cmp::<_MM_CMPINT_NE>($x, $y),
            IntCC::SignedLessThan => $cmp::<_MM_CMPINT_LT>($x, $y),
            IntCC::SignedLessThanOrEqual => $cmp::<_MM_CMPINT_LE>($x, $y),
            IntCC::SignedGreaterThan => $cmp::<_MM_CMPINT_NLE>($x, $y),
            IntCC::SignedGreaterThanOrEqual => $cmp::<_MM_CMPINT_NLT>($x, $y),
            IntCC::UnsignedLessThan => $cmpu::<_MM_CMPINT_LT>($x, $y),
            IntCC::UnsignedLessThanOrEqual => $cmpu::<_MM_CMPINT_LE>($x, $y),
            IntCC::UnsignedGreaterThan => $cmpu::<_MM_CMPINT_NLE>($x, $y),
            IntCC::UnsignedGreaterThanOrEqual => $cmpu::<_MM_CMPINT_NLT>($x, $y),
        }
    }};
}

pub(crate) use {float_cmp, int_cmp_avx512};
