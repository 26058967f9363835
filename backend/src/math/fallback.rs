//! Scalar fallbacks: the lanes a vector approximation cannot compute accurately.
//!
//! `sin` and `cos` reduce their argument by π/2 with a few-part constant (`trig.rs`), which is
//! accurate up to [`super::trig::reduction_limit`] (`2¹⁸` for `f32` with `fma`). A lane beyond
//! it (huge finite values, and `±inf`) is computed by the interpreter's own function instead —
//! the `libm` crate's `sinf`/`cosf`/`sin`/`cos`, whose Payne–Hanek reduction is exact — so the
//! JIT gives the interpreter's bits there, on every SIMD level and thread count.
//!
//! [`super::Lanes::fallback`] is how a generic approximation asks for it. The inline code
//! ([`super::emit`]) branches to a cold block when any lane of a vector needs it and calls
//! [`Fallback::addr`] once per lane there; the wide routines (`crate::wide`) do the same in Rust.
//! The symbols are registered with the JIT module (`isa::new_jit_module`) and exported by the
//! AOT runtime (`tfn-rt`, feature `rt-exports`). A self-contained (aarch64) object has no
//! runtime to call: its kernels keep NaN beyond the limit, as the docs say.

/// A scalar function a vector approximation hands its out-of-range lanes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fallback {
    Sin,
    Cos,
}

impl Fallback {
    /// Every fallback.
    pub const ALL: [Fallback; 2] = [Fallback::Sin, Fallback::Cos];

    /// The symbol of the `f32` (`is_f32`) or `f64` function, `extern "C" fn(x) -> x`.
    pub fn symbol(self, is_f32: bool) -> &'static str {
        match (self, is_f32) {
            (Fallback::Sin, true) => "tfn_fallback_sinf",
            (Fallback::Cos, true) => "tfn_fallback_cosf",
            (Fallback::Sin, false) => "tfn_fallback_sin",
            (Fallback::Cos, false) => "tfn_fallback_cos",
        }
    }

    /// The address of the function [`Self::symbol`] names.
    pub fn addr(self, is_f32: bool) -> *const u8 {
        match (self, is_f32) {
            (Fallback::Sin, true) => tfn_fallback_sinf as *const u8,
            (Fallback::Cos, true) => tfn_fallback_cosf as *const u8,
            (Fallback::Sin, false) => tfn_fallback_sin as *const u8,
            (Fallback::Cos, false) => tfn_fallback_cos as *const u8,
        }
    }

    /// `f(x)` on `f32`, as the JIT's call computes it.
    #[inline]
    pub fn f32(self, x: f32) -> f32 {
        match self {
            Fallback::Sin => libm::sinf(x),
            Fallback::Cos => libm::cosf(x),
        }
    }

    /// `ys[i] = f(xs[i])` for each lane `i` whose bit is set in `mask`: the wide routines'
    /// slow path, out of line so their loops stay small.
    #[cold]
    #[inline(never)]
    pub fn patch_f32(self, mask: u32, xs: &[f32], ys: &mut [f32]) {
        for (i, (x, y)) in xs.iter().zip(ys.iter_mut()).enumerate() {
            if mask >> i & 1 != 0 {
                *y = self.f32(*x);
            }
        }
    }

    /// Every `(symbol, address)`, for `JITBuilder::symbols`.
    pub fn symbols() -> Vec<(&'static str, *const u8)> {
        Fallback::ALL
            .into_iter()
            .flat_map(|f| [true, false].map(|is_f32| (f.symbol(is_f32), f.addr(is_f32))))
            .collect()
    }
}

/// `libm::sinf`: the interpreter's `f32` sine.
extern "C" fn tfn_fallback_sinf(x: f32) -> f32 {
    libm::sinf(x)
}

/// `libm::cosf`: the interpreter's `f32` cosine.
extern "C" fn tfn_fallback_cosf(x: f32) -> f32 {
    libm::cosf(x)
}

/// `libm::sin`: the interpreter's `f64` sine.
extern "C" fn tfn_fallback_sin(x: f64) -> f64 {
    libm::sin(x)
}

/// `libm::cos`: the interpreter's `f64` cosine.
extern "C" fn tfn_fallback_cos(x: f64) -> f64 {
    libm::cos(x)
}

/// The fallbacks under their symbol names, for the kernels of AOT objects (the `tfn-rt`
/// static library).
#[cfg(feature = "rt-exports")]
mod exports {
    /// See [`super::tfn_fallback_sinf`].
    #[export_name = "tfn_fallback_sinf"]
    extern "C" fn sinf(x: f32) -> f32 {
        libm::sinf(x)
    }
    /// See [`super::tfn_fallback_cosf`].
    #[export_name = "tfn_fallback_cosf"]
    extern "C" fn cosf(x: f32) -> f32 {
        libm::cosf(x)
    }
    /// See [`super::tfn_fallback_sin`].
    #[export_name = "tfn_fallback_sin"]
    extern "C" fn sin(x: f64) -> f64 {
        libm::sin(x)
    }
    /// See [`super::tfn_fallback_cos`].
    #[export_name = "tfn_fallback_cos"]
    extern "C" fn cos(x: f64) -> f64 {
        libm::cos(x)
    }
}
