//! Vectorised transcendental functions emitted as Cranelift IR.
//!
//! Cranelift has no `exp`/`log`/`tanh`/`sin` instructions, and calling libm per element is far
//! too slow, so the kernel code generator inlines these approximations into its loop bodies.
//! Every function is written once, generically over the four float types a kernel uses —
//! `F32X4` and `F64X2` for vector bodies, `F32` and `F64` for scalar tails — so the tail computes
//! bit-identical results to the body. All code is branch-free (lane masks + `bitselect`).
//!
//! Usage from a kernel builder:
//! ```text
//! // in the entry block, before the loop:
//! let features = MathFeatures::of_isa(module.isa());
//! let vconsts = MathConsts::new(&mut b, F32X4, &[MathFn::Tanh], features)?;
//! let sconsts = MathConsts::new(&mut b, F32, &[MathFn::Tanh], features)?;
//! // in the loop body:
//! let y = math::emit(&mut b, &vconsts, MathFn::Tanh, &[x])?;
//! ```
//!
//! Accuracy, max ULP error measured by `tests/math_accuracy.rs`. `f32`: against the correctly
//! rounded result on **all 2³² inputs** (`TFN_MATH_STRIDE=1`; without `fma` every 5th bit pattern
//! except sin/cos/tanh and asin…cosh, also exhaustive; `atan2` on pairs); `f64`: against libm on
//! ~400K samples per function (random bits, per-binade, regime boundaries), with and without
//! `fma` (max of both below).
//!
//! | fn      | f32 (fma) | f32 (no fma) | f64 | notes |
//! |---------|-----------|--------------|-----|-------|
//! | exp     | 1 | 1 | 1 | denormal results, overflow to inf |
//! | exp_non_positive | 1 | 1 | 1 | `x ≤ 0` only (softmax's `x − max`); denormal results |
//! | expm1   | 2 | 2 | 2 | |
//! | log     | 1 | 1 | 1 | denormal inputs |
//! | log1p   | 1 | 1 | 1 | |
//! | tanh    | 4 | 4 | 3 | `f32`: half-angle rational, 14 ops; `f64`: via `expm1` |
//! | sigmoid | 2 | 2 | 2 | |
//! | erf     | 2 | 2 | 2 | |
//! | sin/cos | 2 | 2 | 2 | beyond [`sin_cos_reduction_limit`]: the interpreter's `libm` per lane ([`Fallback`]) |
//! | pow     | 1 | 1 | 0 | `f32` on a grid; `f64` (fdlibm, `math/pow_f64.rs`) against libm on ~5.5M pairs, exact powers exact |
//! | rsqrt   | 1 | 1 | 0 | sqrt and reciprocal: 0 |
//! | asin/acos | 3 | 3 | 3 | `atan2(x, √((1−x)(1+x)))`, NaN outside `[−1, 1]` |
//! | atan    | 2 | 2 | 2 | one division after a two-interval reduction, fdlibm/musl polynomials |
//! | atan2   | 2 | 2 | 2 | on ~0.9M pairs per dtype: specials × specials, ratios near the reduction's boundaries, random bits |
//! | sinh    | 2 | 2 | 3 | one `exp` reduction shared by `expm1` (small) and `eˣ/2` (large) |
//! | cosh    | 2 | 1 | 2 | same reduction; `1 + t²/(2(t+1))` below ln2/2 |
//!
//! NaN, infinity and signed-zero results match libm everywhere (checked by the same tests).
//! Algorithms: Cody–Waite range reduction plus minimax/Taylor polynomials (Cephes, fdlibm, or
//! fitted for this module where noted).
//!
//! One source, several instantiations: every approximation is generic over `lanes::Lanes`
//! (float/integer/mask lane arithmetic). `ops::Ctx` implements it by emitting Cranelift IR (the
//! inline code above); `crate::wide` implements it on AVX-512/AVX2 registers, which makes
//! precompiled routines bit-identical to the inline `f32x4` code with `fma`.
//!
//! Code map: `lanes` the trait and its shared compositions (Horner, rounding, sign copies) ·
//! `ops` its Cranelift implementation `Ctx` · `consts` hoisted constants and ISA features ·
//! `exp` exp, expm1 · `log` log, log1p · `tanh` tanh, sigmoid · `erf` erf ·
//! `trig` sin, cos · `pow` pow (`pow_f64` its `f64` form) · `rsqrt` sqrt, rsqrt, reciprocal ·
//! `atan` atan, atan2, asin, acos · `hyperbolic` sinh, cosh.

// Coefficients are quoted digit for digit from Cephes/fdlibm (or the fit's output) so that they
// can be checked against their sources; Rust rounds them to the nearest f64 either way.
#![allow(clippy::excessive_precision)]

mod atan;
#[cfg(feature = "jit")]
mod consts;
mod erf;
mod exp;
mod fallback;
mod hyperbolic;
mod lane_format;
mod lanes;
mod log;
#[cfg(feature = "jit")]
mod ops;
#[cfg(feature = "jit")]
mod pow;
#[cfg(feature = "jit")]
mod pow_f64;
mod rsqrt;
mod tanh;
mod trig;

#[cfg(feature = "jit")]
use cranelift::codegen::ir::{Type, Value};
#[cfg(feature = "jit")]
use cranelift::frontend::FunctionBuilder;

#[cfg(feature = "jit")]
pub use consts::{trampoline_signature, MathConsts, MathFeatures};
pub use fallback::{trampoline as fallback_trampoline, Fallback, TRAMPOLINE_SYMBOL};
pub use trig::reduction_limit as sin_cos_reduction_limit;

pub(crate) use lane_format::LaneFormat;
#[cfg(not(feature = "jit"))]
pub(crate) use lane_format::{FloatCC, IntCC};
pub(crate) use lanes::Lanes;
#[cfg(feature = "jit")]
pub(crate) use ops::{FloatCC, IntCC};

#[cfg(feature = "jit")]
use ops::Ctx;

/// The generic approximations, for instantiations of [`Lanes`] other than [`emit`]'s (the wide
/// routines of `crate::wide`), returning NaNs as [`emit`] does (by the same
/// [`MathFn::keeps_one_nan`], see [`canonical_nan`]), so a routine and the inline code agree
/// on every bit, NaNs included.
pub(crate) mod generic {
    use super::{canonical_nan, Lanes, MathFn};

    macro_rules! generic {
        ($($name:ident = $path:path, $f:ident;)*) => {
            $(
                #[inline(always)]
                pub(crate) fn $name<L: Lanes>(cx: &mut L, x: L::F) -> L::F {
                    let r = $path(cx, x);
                    if MathFn::$f.keeps_one_nan() { r } else { canonical_nan(cx, r) }
                }
            )*
        };
    }

    generic! {
        acos = super::atan::acos, Acos;
        asin = super::atan::asin, Asin;
        atan = super::atan::atan, Atan;
        erf = super::erf::erf, Erf;
        exp = super::exp::exp, Exp;
        exp_non_positive = super::exp::exp_non_positive, ExpNonPositive;
        expm1 = super::exp::expm1, Expm1;
        cosh = super::hyperbolic::cosh, Cosh;
        sinh = super::hyperbolic::sinh, Sinh;
        log = super::log::log, Log;
        log1p = super::log::log1p, Log1p;
        log2 = super::log::log2, Log2;
        sigmoid = super::tanh::sigmoid, Sigmoid;
        tanh = super::tanh::tanh, Tanh;
        cos = super::trig::cos, Cos;
        sin = super::trig::sin, Sin;
    }
}

/// The NaN a math function returns is the same bits whatever code computes it. The inline code
/// ([`emit`]) and the wide routines ([`generic`]) run the same operations, but where two
/// different NaNs meet in one operation (an input NaN and its negation, or a default NaN of an
/// invalid operation), which one an `fma` or `fadd` returns depends on the operand order the
/// code generator picks: Cranelift's, or LLVM's in a debug or a release build. So:
///
/// - a function whose NaN is one lineage — every operation sees at most one NaN, derived from
///   the input's by quieting and by no sign change after it is combined
///   ([`MathFn::keeps_one_nan`]: `exp`, `exp_non_positive`, `sigmoid`, `tanh`, the hot ones)
///   returns that NaN, which no operand order changes;
/// - every other function returns the canonical NaN ([`Lanes::canonical_nan`], the x86 default
///   NaN `0xffc0_0000`, which the kernels' own invalid operations and libm's `log(-1)` produce
///   too), replacing whatever NaN its arithmetic carried. One `vfixupimmps` per 16 lanes on
///   AVX-512; `tests/wide.rs` compares every routine with the inline code bit for bit, NaNs
///   included.
#[inline(always)]
pub(crate) fn canonical_nan<L: Lanes>(cx: &mut L, r: L::F) -> L::F {
    cx.canonical_nan(r)
}

/// The functions [`emit`] can inline, declared once: rows `Variant "name" arity` (the name
/// as in C's `math.h` where one exists). [`MathFn`], [`MathFn::ALL`], [`MathFn::name`] and
/// [`MathFn::arity`] are its expansion; [`emit`]'s `match` says how each is computed.
macro_rules! math_fns {
    ($callback:ident) => {
        $callback! {
            /// `eˣ`; overflows to `+inf`, underflows through denormals to `+0`.
            Exp "exp" 1,
            /// `eˣ` on `x ≤ 0` only (the code generator proves the sign, e.g. `x − max(x)` in
            /// softmax); cheaper than [`MathFn::Exp`] because nothing overflows. Unspecified
            /// for `x > 0`.
            ExpNonPositive "exp_non_positive" 1,
            /// `eˣ − 1`, accurate near 0.
            Expm1 "expm1" 1,
            /// Natural logarithm; `log(±0) = −inf`, `log(x<0) = NaN`, `log(+inf) = +inf`.
            Log "log" 1,
            /// Base-2 logarithm, exact at powers of two; special cases as [`MathFn::Log`].
            Log2 "log2" 1,
            /// `log(1 + x)`, accurate near 0.
            Log1p "log1p" 1,
            /// Hyperbolic tangent, saturating to `±1`.
            Tanh "tanh" 1,
            /// Logistic sigmoid `1 / (1 + e⁻ˣ)`, computed without overflow.
            Sigmoid "sigmoid" 1,
            /// Error function.
            Erf "erf" 1,
            /// Sine; lanes with `|x|` beyond [`sin_cos_reduction_limit`] (`2¹⁸` for `f32` with
            /// `fma`) call the scalar [`Fallback`] (NaN where there is none to call).
            Sin "sin" 1,
            /// Cosine; beyond [`sin_cos_reduction_limit`] as [`MathFn::Sin`].
            Cos "cos" 1,
            /// `xʸ` with C99 special cases (binary: `args = [x, y]`).
            Pow "pow" 2,
            /// `1 / √x` (correctly rounded `sqrt` followed by a correctly rounded division).
            Rsqrt "rsqrt" 1,
            /// `√x` (a single hardware instruction).
            Sqrt "sqrt" 1,
            /// `1 / x` (a single hardware division).
            Reciprocal "reciprocal" 1,
            /// Arcsine; NaN outside `[−1, 1]`.
            Asin "asin" 1,
            /// Arccosine; NaN outside `[−1, 1]`.
            Acos "acos" 1,
            /// Arctangent; `atan(±inf) = ±π/2`.
            Atan "atan" 1,
            /// Hyperbolic sine; overflows to `±inf`.
            Sinh "sinh" 1,
            /// Hyperbolic cosine; overflows to `+inf`.
            Cosh "cosh" 1,
            /// `atan2(y, x)` with C99 special cases (binary: `args = [y, x]`).
            Atan2 "atan2" 2,
        }
    };
}

macro_rules! define_math_fns {
    ($($(#[doc = $doc:literal])* $v:ident $name:literal $arity:literal,)*) => {
        /// A function [`emit`] can inline.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum MathFn {
            $($(#[doc = $doc])* $v,)*
        }

        impl MathFn {
            /// Every function, in declaration order.
            pub const ALL: &'static [MathFn] = &[$(MathFn::$v),*];

            /// Number of arguments `emit` expects.
            pub fn arity(self) -> usize {
                match self {
                    $(MathFn::$v => $arity,)*
                }
            }

            /// Whether the function's NaN is one lineage (see [`canonical_nan`]), so it is
            /// returned as computed: `exp`, `exp_non_positive`, `sigmoid` (`1/(1 + exp(−|x|))`:
            /// the NaN `−|x|` throughout) and `tanh` (`f32`: a rational in the clamped `x`;
            /// `f64`: `expm1(2|x|)` and `x`'s sign copied at the end). Every other function
            /// returns the canonical NaN.
            pub fn keeps_one_nan(self) -> bool {
                matches!(self, MathFn::Exp | MathFn::ExpNonPositive | MathFn::Sigmoid | MathFn::Tanh)
            }

            /// Lower-case name, as in C's `math.h` where one exists.
            pub fn name(self) -> &'static str {
                match self {
                    $(MathFn::$v => $name,)*
                }
            }
        }
    };
}
math_fns!(define_math_fns);

/// Misuse of the emitter API by the code generator (these always represent a compiler bug).
#[cfg(feature = "jit")]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MathError {
    /// The value type is not `F32X4`, `F64X2`, `F32` or `F64`.
    #[error("math functions support f32x4, f64x2, f32 and f64, not {0}")]
    UnsupportedType(Type),
    /// Wrong number of arguments, or arguments of different types.
    #[error("`{name}` takes {expected} argument(s) of one type, got {got}")]
    BadArguments {
        /// The function's name.
        name: &'static str,
        /// Its arity.
        expected: usize,
        /// The number of arguments passed.
        got: usize,
    },
}

/// Emits `f(args)` at the builder's current position and returns the result, of the same type
/// as the arguments.
///
/// `consts` should have been created for the arguments' type with `f` in its list; otherwise the
/// constants are emitted inline (correct, but reloaded on every loop iteration).
#[cfg(feature = "jit")]
pub fn emit(
    b: &mut FunctionBuilder<'_>,
    consts: &MathConsts,
    f: MathFn,
    args: &[Value],
) -> Result<Value, MathError> {
    let bad = || MathError::BadArguments { name: f.name(), expected: f.arity(), got: args.len() };
    let (&x, rest) = args.split_first().ok_or_else(bad)?;
    if args.len() != f.arity() {
        return Err(bad());
    }
    let ty = b.func.dfg.value_type(x);
    if rest.iter().any(|&a| b.func.dfg.value_type(a) != ty) {
        return Err(bad());
    }
    consts::check_type(ty)?;
    let fmt = LaneFormat::of(ty).ok_or(MathError::UnsupportedType(ty))?;
    let mut cx = Ctx::new(b, consts, fmt, ty);
    let cx = &mut cx;
    let r = match f {
        MathFn::Exp => exp::exp(cx, x),
        MathFn::ExpNonPositive => exp::exp_non_positive(cx, x),
        MathFn::Expm1 => exp::expm1(cx, x),
        MathFn::Log => log::log(cx, x),
        MathFn::Log2 => log::log2(cx, x),
        MathFn::Log1p => log::log1p(cx, x),
        MathFn::Tanh => tanh::tanh(cx, x),
        MathFn::Sigmoid => tanh::sigmoid(cx, x),
        MathFn::Erf => erf::erf(cx, x),
        MathFn::Sin => trig::sin(cx, x),
        MathFn::Cos => trig::cos(cx, x),
        MathFn::Pow => pow::pow(cx, x, rest.first().copied().unwrap_or(x)),
        MathFn::Rsqrt => rsqrt::rsqrt(cx, x),
        MathFn::Sqrt => cx.sqrt(x),
        MathFn::Reciprocal => rsqrt::reciprocal(cx, x),
        MathFn::Asin => atan::asin(cx, x),
        MathFn::Acos => atan::acos(cx, x),
        MathFn::Atan => atan::atan(cx, x),
        MathFn::Sinh => hyperbolic::sinh(cx, x),
        MathFn::Cosh => hyperbolic::cosh(cx, x),
        MathFn::Atan2 => atan::atan2(cx, x, rest.first().copied().unwrap_or(x)),
    };
    Ok(if f.keeps_one_nan() { r } else { canonical_nan(cx, r) })
}
