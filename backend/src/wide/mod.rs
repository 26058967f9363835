//! Precompiled wide (AVX-512 / AVX2) math routines, bit-identical to the inline 128-bit code.
//!
//! Cranelift emits at most 128-bit vectors on x86, so a kernel whose time goes into `tanh` or
//! `exp` runs at a quarter of what AVX-512 allows. The kernel code generator can instead stage
//! a block of arguments (≤ 512 elements, in L1) and call a routine from here on it. The routines
//! are the *same source* as the inline code: the approximations in [`crate::math`] are generic
//! over `math::Lanes`, and each routine instantiates one of them on `__m512` (16 lanes,
//! [`SimdLevel::Avx512`]) or `__m256` (8 lanes, [`SimdLevel::Avx2`]) inside a
//! `#[target_feature]` function, with the operations, constants and rounding steps of
//! [`crate::math::emit`] on `F32X4` with `MathFeatures { fma: true }`. So a routine's result is
//! bit for bit the inline code's, NaNs included (both return NaNs as `math::canonical_nan`
//! says), whatever block size or level is chosen,
//! and the inline code stays every routine's twin (`tests/wide.rs` compares them exhaustively
//! on specials, strided bit patterns and every tail length).
//!
//! Routines exist only where the CPU has FMA (the inline code without FMA rounds differently),
//! for unary functions that are more than one instruction. Register them with the JIT through
//! [`symbols`] and look them up with [`routine_f32`].
//!
//! Code map: `avx512`, `avx2` the [`Lanes`](crate::math::Lanes) implementations and the
//! exported routines · `predicates` Cranelift condition codes as x86 compare predicates.

use crate::math::MathFn;

/// Calls `$callback! { (Variant, fn_name), … }` with every function that has wide routines
/// (`fn_name` is the generic function in `math::generic` and the routines' name).
macro_rules! for_each_routine {
    ($callback:ident) => {
        $callback! {
            (Tanh, tanh),
            (Exp, exp),
            (ExpNonPositive, exp_non_positive),
            (Sigmoid, sigmoid),
            (Erf, erf),
            (Log, log),
            (Log2, log2),
            (Expm1, expm1),
            (Log1p, log1p),
            (Sin, sin),
            (Cos, cos),
            (Atan, atan),
            (Asin, asin),
            (Acos, acos),
            (Sinh, sinh),
            (Cosh, cosh),
        }
    };
}
#[cfg(target_arch = "x86_64")]
use for_each_routine;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "x86_64")]
mod predicates;

/// How wide the math of a kernel may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SimdLevel {
    /// No wide routines: the kernel's inline 128-bit code.
    V128,
    /// AVX2 + FMA routines on 8 `f32` lanes.
    Avx2,
    /// AVX-512 (F, DQ, VL) + FMA routines on 16 `f32` lanes.
    Avx512,
}

impl SimdLevel {
    /// Every level, narrowest first.
    pub const ALL: [SimdLevel; 3] = [SimdLevel::V128, SimdLevel::Avx2, SimdLevel::Avx512];

    /// The widest level this CPU runs (features detected at run time).
    pub fn detect() -> SimdLevel {
        #[cfg(target_arch = "x86_64")]
        {
            let fma = std::arch::is_x86_feature_detected!("fma");
            if fma
                && std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512dq")
                && std::arch::is_x86_feature_detected!("avx512vl")
            {
                return SimdLevel::Avx512;
            }
            if fma && std::arch::is_x86_feature_detected!("avx2") {
                return SimdLevel::Avx2;
            }
        }
        SimdLevel::V128
    }

    /// `"128"`, `"avx2"` or `"avx512"` (the [`Self::name`]s); `None` for anything else.
    pub fn parse(s: &str) -> Option<SimdLevel> {
        SimdLevel::ALL.into_iter().find(|level| level.name() == s)
    }

    /// The level's name, as [`Self::parse`] reads it.
    pub fn name(self) -> &'static str {
        match self {
            SimdLevel::V128 => "128",
            SimdLevel::Avx2 => "avx2",
            SimdLevel::Avx512 => "avx512",
        }
    }

    /// The level `TFN_SIMD` asks for (`128`, `avx2`, `avx512`), clamped to this CPU; unset: the
    /// widest this CPU has (set but empty counts as unset). An unknown value is reported and
    /// ignored.
    pub fn from_env() -> SimdLevel {
        match std::env::var("TFN_SIMD") {
            Ok(v) if v.trim().is_empty() => SimdLevel::detect(),
            Ok(v) => match SimdLevel::parse(v.trim()) {
                Some(level) => level.clamp_to_cpu(),
                None => {
                    tfn_ir::tfn_log!(
                        "tfn: ignoring TFN_SIMD={v:?} (expected 128, avx2 or avx512); using {}",
                        SimdLevel::detect().name()
                    );
                    SimdLevel::detect()
                }
            },
            Err(_) => SimdLevel::detect(),
        }
    }

    /// `self`, lowered to [`Self::detect`]'s level when the CPU cannot run it.
    pub fn clamp_to_cpu(self) -> SimdLevel {
        let cpu = SimdLevel::detect();
        if self.rank() <= cpu.rank() {
            self
        } else {
            cpu
        }
    }

    /// The number of `f32` lanes a routine of this level computes at once (4 for the inline
    /// 128-bit code).
    pub fn f32_lanes(self) -> usize {
        match self {
            SimdLevel::V128 => 4,
            SimdLevel::Avx2 => 8,
            SimdLevel::Avx512 => 16,
        }
    }

    fn rank(self) -> u8 {
        match self {
            SimdLevel::V128 => 0,
            SimdLevel::Avx2 => 1,
            SimdLevel::Avx512 => 2,
        }
    }
}

/// A wide routine: `dst[i] = f(src[i])` for `i < n`.
///
/// `src == dst` is allowed (in place); otherwise the ranges must not overlap. Any `n` (the tail
/// is computed bit-identically through masked loads and stores); never reads or writes past
/// `n`. Safety: `src` valid for `n` reads, `dst` for `n` writes, and the CPU has the routine's
/// level (as [`routine_f32`] guarantees for levels clamped by [`SimdLevel::clamp_to_cpu`]).
pub type WideF32 = unsafe extern "C" fn(src: *const f32, dst: *mut f32, n: usize);

/// A summing wide routine: `dst[i] = f(src[i])` for `i < n` (as [`WideF32`]), and every result
/// added into the accumulators `acc[0..SUM_ACC]` in the order in which a kernel's inline row
/// pass (`codegen::rows`) adds an element node into a `sum`: `acc[4u + l]` is lane `l` of the
/// pass's unrolled 4-lane accumulator `u` (of [`ACC_VECTORS`]), `acc[ACC_LANES]` its scalar
/// tail's. Element `ACC_LANES·c + j` of each whole group of [`ACC_LANES`] goes into `acc[j]`;
/// of the last `n mod ACC_LANES`, each whole group of 4 into `acc[0..4]` (the pass's 1-vector
/// loop), the rest one by one into `acc[ACC_LANES]` (its scalar loop). So a kernel that calls
/// it on blocks of a multiple of [`ACC_LANES`] elements (all but the last) gets the bits of its
/// own loop, at any level. A non-null `shift` computes `f(src[i] - *shift)` instead (softmax's
/// `exp(x - max)`, read straight from `x`).
///
/// Safety: as [`WideF32`], `acc` valid for [`SUM_ACC`] reads and writes, `shift` null or
/// valid for one read.
pub type WideSumF32 = unsafe extern "C" fn(
    src: *const f32,
    dst: *mut f32,
    n: usize,
    acc: *mut f32,
    shift: *const f32,
);

/// A running maximum: `src[..n]` folded into the accumulators `acc[0..SUM_ACC]` (laid out as
/// [`WideSumF32`]'s, in the same order) by the inline row pass's `max` step: per vector lane
/// the larger of the two, ties and a NaN element keeping the accumulator (`maxps(x, acc)`),
/// then a NaN element's lane set to all-ones bits for good; the scalar tail as the scalar
/// step (`x` if `acc < x` or `x` is NaN). The kernel folds the lanes afterwards, as its own.
///
/// Safety: `src` valid for `n` reads, `acc` for [`SUM_ACC`] reads and writes, the CPU has the
/// routine's level.
pub type WideMaxF32 = unsafe extern "C" fn(src: *const f32, n: usize, acc: *mut f32);

/// A running sum: `src[..n]` added into the accumulators `acc[0..SUM_ACC]` exactly as a
/// [`WideSumF32`] adds its results (the inline row pass's `sum`/`mean` step on a plain input:
/// `acc + x` per lane, the same lanes in the same order), so the bits are the inline loop's.
///
/// Safety: `src` valid for `n` reads, `acc` for [`SUM_ACC`] reads and writes, the CPU has the
/// routine's level.
pub type WideAddF32 = unsafe extern "C" fn(src: *const f32, n: usize, acc: *mut f32);

/// A running sum of squares: `(src[i] - *shift)²`, or `src[i]²` with a null `shift`, added
/// into `acc` as [`WideAddF32`] adds `src[i]` (a variance's pass: `mean((x - mu)·(x - mu))`).
/// Per element one subtraction, one multiply and one add, unfused, as the inline step.
///
/// Safety: as [`WideAddF32`], and `shift` null or valid for one read.
pub type WideAddSquaresF32 =
    unsafe extern "C" fn(src: *const f32, n: usize, acc: *mut f32, shift: *const f32);

/// `dst[i] = (src[i] - *shift) · *s`, or `src[i] · *s` with a null `shift` (a normalisation's
/// last pass: `(x - mu) · rsqrt(var + eps)`), one subtraction and one multiply, unfused, as the
/// inline step; `src == dst` allowed, as [`WideF32`].
///
/// Safety: as [`WideF32`], `shift` null or valid for one read, `s` valid for one read.
pub type WideShiftScaleF32 = unsafe extern "C" fn(
    src: *const f32,
    dst: *mut f32,
    n: usize,
    shift: *const f32,
    s: *const f32,
);

/// `dst[i] = src[i] · *s` for `i < n` (one IEEE multiply, `src[i]` the first operand, as the
/// inline `fmul`); `src == dst` allowed, as [`WideF32`].
///
/// Safety: as [`WideF32`], and `s` valid for one read.
pub type WideScaleF32 =
    unsafe extern "C" fn(src: *const f32, dst: *mut f32, n: usize, s: *const f32);

/// The fixed routines beside the per-function ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Helper {
    /// [`WideMaxF32`], `tfn_wide_max_f32_<level>`.
    Max,
    /// [`WideScaleF32`], `tfn_wide_scale_f32_<level>`.
    Scale,
    /// [`WideAddF32`], `tfn_wide_add_f32_<level>`.
    Add,
    /// [`WideAddSquaresF32`], `tfn_wide_add_squares_f32_<level>`.
    AddSquares,
    /// [`WideShiftScaleF32`], `tfn_wide_shift_scale_f32_<level>`.
    ShiftScale,
}

impl Helper {
    /// Every helper.
    pub const ALL: [Helper; 5] =
        [Helper::Max, Helper::Scale, Helper::Add, Helper::AddSquares, Helper::ShiftScale];

    /// How many pointer-sized parameters the routine takes.
    pub fn params(self) -> usize {
        match self {
            Helper::Max | Helper::Add => 3,
            Helper::Scale | Helper::AddSquares => 4,
            Helper::ShiftScale => 5,
        }
    }
}

/// The symbol and address of helper `h` at `level` (whether or not this CPU runs it); `None` at
/// [`SimdLevel::V128`].
fn helper_row(level: SimdLevel, h: Helper) -> Option<(&'static str, *const u8)> {
    #[cfg(target_arch = "x86_64")]
    {
        let row: (&'static str, *const u8) = match (level, h) {
            (SimdLevel::V128, _) => return None,
            (SimdLevel::Avx2, Helper::Max) => ("tfn_wide_max_f32_avx2", avx2::max as *const u8),
            (SimdLevel::Avx2, Helper::Scale) => {
                ("tfn_wide_scale_f32_avx2", avx2::scale as *const u8)
            }
            (SimdLevel::Avx512, Helper::Max) => {
                ("tfn_wide_max_f32_avx512", avx512::max as *const u8)
            }
            (SimdLevel::Avx512, Helper::Scale) => {
                ("tfn_wide_scale_f32_avx512", avx512::scale as *const u8)
            }
            (SimdLevel::Avx2, Helper::Add) => ("tfn_wide_add_f32_avx2", avx2::add as *const u8),
            (SimdLevel::Avx512, Helper::Add) => {
                ("tfn_wide_add_f32_avx512", avx512::add as *const u8)
            }
            (SimdLevel::Avx2, Helper::AddSquares) => {
                ("tfn_wide_add_squares_f32_avx2", avx2::add_squares as *const u8)
            }
            (SimdLevel::Avx512, Helper::AddSquares) => {
                ("tfn_wide_add_squares_f32_avx512", avx512::add_squares as *const u8)
            }
            (SimdLevel::Avx2, Helper::ShiftScale) => {
                ("tfn_wide_shift_scale_f32_avx2", avx2::shift_scale as *const u8)
            }
            (SimdLevel::Avx512, Helper::ShiftScale) => {
                ("tfn_wide_shift_scale_f32_avx512", avx512::shift_scale as *const u8)
            }
        };
        Some(row)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (level, h);
        None
    }
}

/// Helper `h` at `level` as (symbol, address), when this CPU runs `level` (as [`routine_f32`]).
pub fn helper(level: SimdLevel, h: Helper) -> Option<(&'static str, *const u8)> {
    if level.clamp_to_cpu() != level {
        return None;
    }
    helper_row(level, h)
}

/// The symbol of helper `h` at `level` (for AOT objects), runnable here or not.
pub fn helper_symbol(level: SimdLevel, h: Helper) -> Option<&'static str> {
    helper_row(level, h).map(|(symbol, _)| symbol)
}

/// The symbol of helper `h` the AOT runtime dispatches to the widest level the CPU has.
pub fn dispatched_helper_symbol(h: Helper) -> Option<&'static str> {
    if !cfg!(target_arch = "x86_64") {
        return None;
    }
    Some(match h {
        Helper::Max => "tfn_wide_max_f32_best",
        Helper::Scale => "tfn_wide_scale_f32_best",
        Helper::Add => "tfn_wide_add_f32_best",
        Helper::AddSquares => "tfn_wide_add_squares_f32_best",
        Helper::ShiftScale => "tfn_wide_shift_scale_f32_best",
    })
}

/// Four accumulators at `p`, as one 128-bit load that the compiler may not merge with its
/// neighbours: the kernel stores its accumulators as 128-bit vectors right before the call, and
/// a wider load of several such stores cannot be forwarded from the store buffer (it waits for
/// them to reach the cache, about as long as a whole 1024-element row's additions). LLVM merges
/// adjacent `_mm_loadu_ps` into one 512-bit load unless it cannot see that they are adjacent.
///
/// Safety: `p` valid for 4 reads; SSE.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn load_128(p: *const f32) -> std::arch::x86_64::__m128 {
    // SAFETY: the caller's promise.
    unsafe { std::arch::x86_64::_mm_loadu_ps(std::hint::black_box(p)) }
}

/// Folds the last `vals.len() < ACC_LANES` elements of a [`WideMaxF32`] into `acc`.
///
/// Safety: `acc` valid for [`SUM_ACC`] reads and writes.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn max_tail(vals: &[f32], acc: *mut f32) {
    // SAFETY: the caller's promise.
    let acc = unsafe { &mut *(acc as *mut [f32; SUM_ACC]) };
    let groups = vals.len() / 4 * 4;
    for group in vals[..groups].chunks_exact(4) {
        for (a, &x) in acc.iter_mut().zip(group) {
            let picked = if *a < x { x } else { *a };
            let nan = if x.is_nan() { u32::MAX } else { 0 };
            *a = f32::from_bits(picked.to_bits() | nan);
        }
    }
    for &x in &vals[groups..] {
        if acc[ACC_LANES] < x || x.is_nan() {
            acc[ACC_LANES] = x;
        }
    }
}

/// How many unrolled 4-lane vector accumulators a kernel's row pass keeps per reduction (and
/// how many vectors its unrolled loop takes per step): eight, so that a sum is eight
/// independent dependency chains, enough to hide the add's latency at two loads a cycle.
pub const ACC_VECTORS: usize = 8;

/// The lanes of those accumulators side by side: element `ACC_LANES·c + j` of a row's whole
/// groups goes into lane `j` (one 512-bit register holds 16 of them, a 256-bit one 8).
pub const ACC_LANES: usize = 4 * ACC_VECTORS;

/// The accumulators of a [`WideSumF32`]: [`ACC_VECTORS`] 4-lane vectors and a scalar.
pub const SUM_ACC: usize = ACC_LANES + 1;

/// Adds the last `vals.len() < ACC_LANES` results of a summing routine into `acc`: whole
/// groups of 4 lane by lane into `acc[0..4]`, then the rest one by one into `acc[ACC_LANES]`.
///
/// Safety: `acc` valid for [`SUM_ACC`] reads and writes.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn sum_tail(vals: &[f32], acc: *mut f32) {
    let groups = vals.len() / 4 * 4;
    // SAFETY: the caller's promise.
    let acc = unsafe { &mut *(acc as *mut [f32; SUM_ACC]) };
    for group in vals[..groups].chunks_exact(4) {
        for (a, v) in acc.iter_mut().zip(group) {
            *a += v;
        }
    }
    for v in &vals[groups..] {
        acc[ACC_LANES] += v;
    }
}

/// Which kind of routine: a map ([`WideF32`]) or a summing map ([`WideSumF32`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RoutineKind {
    /// `dst[i] = f(src[i])`.
    Map,
    /// `dst[i] = f(src[i])` and the sum of the results (see [`WideSumF32`]).
    Sum,
}

/// A routine's symbol (for `JITBuilder::symbol` and kernels' imports) and address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Routine {
    /// Unique across levels and functions: `tfn_wide_<fn>_f32_<level>`.
    pub symbol: &'static str,
    /// The [`WideF32`] function's address.
    pub addr: *const u8,
}

impl Routine {
    /// The routine as a callable function pointer.
    pub fn as_fn(self) -> WideF32 {
        // SAFETY: `addr` was taken from a `WideF32` in this module's tables.
        unsafe { std::mem::transmute::<*const u8, WideF32>(self.addr) }
    }
}

/// `(function, symbol, routine)` rows of one level.
type Table = &'static [(MathFn, &'static str, WideF32)];

/// `(function, symbol, summing routine)` rows of one level.
type SumTable = &'static [(MathFn, &'static str, WideSumF32)];

/// The rows of one level's [`Table`]: `$callback! { $module, "suffix" }` expands to the
/// rows of every function of [`for_each_routine`].
#[cfg(target_arch = "x86_64")]
macro_rules! rows {
    ($module:ident, $suffix:literal, $(($variant:ident, $fn_name:ident)),* $(,)?) => {
        &[$((
            MathFn::$variant,
            concat!("tfn_wide_", stringify!($fn_name), "_f32_", $suffix),
            $module::$fn_name as WideF32,
        )),*]
    };
}

/// The rows of one level's [`SumTable`] (symbols `tfn_wide_<fn>_sum_f32_<level>`).
#[cfg(target_arch = "x86_64")]
macro_rules! sum_rows {
    ($module:ident, $suffix:literal, $(($variant:ident, $fn_name:ident)),* $(,)?) => {
        &[$((
            MathFn::$variant,
            concat!("tfn_wide_", stringify!($fn_name), "_sum_f32_", $suffix),
            $module::sum::$fn_name as WideSumF32,
        )),*]
    };
}

#[cfg(target_arch = "x86_64")]
macro_rules! avx2_sum_rows {
    ($($row:tt)*) => { sum_rows!(avx2, "avx2", $($row)*) };
}

#[cfg(target_arch = "x86_64")]
macro_rules! avx512_sum_rows {
    ($($row:tt)*) => { sum_rows!(avx512, "avx512", $($row)*) };
}

#[cfg(target_arch = "x86_64")]
macro_rules! avx2_rows {
    ($($row:tt)*) => { rows!(avx2, "avx2", $($row)*) };
}

#[cfg(target_arch = "x86_64")]
macro_rules! avx512_rows {
    ($($row:tt)*) => { rows!(avx512, "avx512", $($row)*) };
}

/// The routines under their symbol names (`tfn_wide_<fn>_f32_<level>`), for the kernels of AOT
/// objects, which import them by name (feature `rt-exports`: the `tfn-rt` static library).
#[cfg(all(feature = "rt-exports", target_arch = "x86_64"))]
mod exports {
    macro_rules! exports {
        ($level:ident, $suffix:literal, $(($variant:ident, $fn_name:ident)),* $(,)?) => {
            mod $level {
            $(
                /// The routine of this name at this level (see [`super::super::WideF32`]).
                #[export_name = concat!("tfn_wide_", stringify!($fn_name), "_f32_", $suffix)]
                unsafe extern "C" fn $fn_name(src: *const f32, dst: *mut f32, n: usize) {
                    // SAFETY: the caller (a kernel) keeps the routine's contract.
                    unsafe { super::super::$level::$fn_name(src, dst, n) }
                }
            )*
            /// The summing routines (see [`crate::wide::WideSumF32`]).
            mod sum {$(
                /// The summing routine of this name at this level.
                #[export_name = concat!("tfn_wide_", stringify!($fn_name), "_sum_f32_", $suffix)]
                unsafe extern "C" fn $fn_name(
                    src: *const f32,
                    dst: *mut f32,
                    n: usize,
                    acc: *mut f32,
                    shift: *const f32,
                ) {
                    // SAFETY: the caller (a kernel) keeps the routine's contract.
                    unsafe { super::super::super::$level::sum::$fn_name(src, dst, n, acc, shift) }
                }
            )*}
            /// The running max at this level.
            #[export_name = concat!("tfn_wide_max_f32_", $suffix)]
            unsafe extern "C" fn max(src: *const f32, n: usize, acc: *mut f32) {
                // SAFETY: the caller (a kernel) keeps the routine's contract.
                unsafe { super::super::$level::max(src, n, acc) }
            }
            /// The running sum at this level.
            #[export_name = concat!("tfn_wide_add_f32_", $suffix)]
            unsafe extern "C" fn add(src: *const f32, n: usize, acc: *mut f32) {
                // SAFETY: the caller (a kernel) keeps the routine's contract.
                unsafe { super::super::$level::add(src, n, acc) }
            }
            /// The running sum of squares at this level.
            #[export_name = concat!("tfn_wide_add_squares_f32_", $suffix)]
            unsafe extern "C" fn add_squares(
                src: *const f32,
                n: usize,
                acc: *mut f32,
                shift: *const f32,
            ) {
                // SAFETY: the caller (a kernel) keeps the routine's contract.
                unsafe { super::super::$level::add_squares(src, n, acc, shift) }
            }
            /// The shifting and scaling routine at this level.
            #[export_name = concat!("tfn_wide_shift_scale_f32_", $suffix)]
            unsafe extern "C" fn shift_scale(
                src: *const f32,
                dst: *mut f32,
                n: usize,
                shift: *const f32,
                s: *const f32,
            ) {
                // SAFETY: the caller (a kernel) keeps the routine's contract.
                unsafe { super::super::$level::shift_scale(src, dst, n, shift, s) }
            }
            /// The scaling routine at this level.
            #[export_name = concat!("tfn_wide_scale_f32_", $suffix)]
            unsafe extern "C" fn scale(src: *const f32, dst: *mut f32, n: usize, s: *const f32) {
                // SAFETY: the caller (a kernel) keeps the routine's contract.
                unsafe { super::super::$level::scale(src, dst, n, s) }
            }
            }
        };
    }
    macro_rules! avx2_exports {
        ($($row:tt)*) => { exports!(avx2, "avx2", $($row)*); };
    }
    macro_rules! avx512_exports {
        ($($row:tt)*) => { exports!(avx512, "avx512", $($row)*); };
    }
    super::for_each_routine!(avx2_exports);
    super::for_each_routine!(avx512_exports);

    /// The body of a `_best` routine: the routine of type `$ty` at the widest level this CPU
    /// runs (`$avx512` or `$avx2`), chosen at the first call (`SimdLevel::from_env`:
    /// `TFN_SIMD=avx2` keeps AVX2 on an AVX-512 CPU) and kept, called with `$args`.
    macro_rules! dispatch_best {
        ($ty:ty, $avx512:path, $avx2:path, ($($arg:expr),*)) => {{
            static CHOSEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let mut chosen = CHOSEN.load(std::sync::atomic::Ordering::Relaxed);
            if chosen == 0 {
                let f: $ty = match $crate::wide::SimdLevel::from_env() {
                    $crate::wide::SimdLevel::Avx512 => $avx512,
                    _ => $avx2,
                };
                chosen = f as usize;
                CHOSEN.store(chosen, std::sync::atomic::Ordering::Relaxed);
            }
            // SAFETY: `chosen` is one of the two routines, of a level this CPU runs (the
            // caller's tier needs AVX2 and FMA); the caller keeps the routine's contract.
            unsafe { std::mem::transmute::<usize, $ty>(chosen)($($arg),*) }
        }};
    }

    /// `tfn_wide_<fn>_f32_best` and `tfn_wide_<fn>_sum_f32_best`: the widest level this CPU
    /// runs ([`dispatch_best`]), what the kernels of a portable object's x86-64-v3 tier call
    /// (the runtime runs that tier only where AVX2 and FMA are).
    macro_rules! best_exports {
        ($(($variant:ident, $fn_name:ident)),* $(,)?) => {
            mod best {
                use crate::wide::{avx2, avx512, WideF32, WideSumF32};
                $(
                    /// The routine of this name at the widest level this CPU runs.
                    #[export_name = concat!("tfn_wide_", stringify!($fn_name), "_f32_best")]
                    unsafe extern "C" fn $fn_name(src: *const f32, dst: *mut f32, n: usize) {
                        dispatch_best!(WideF32, avx512::$fn_name, avx2::$fn_name, (src, dst, n))
                    }
                )*
                /// The summing routines at the widest level this CPU runs.
                mod sum {
                    use super::*;
                    $(
                        /// The summing routine of this name at the widest level this CPU runs.
                        #[export_name = concat!("tfn_wide_", stringify!($fn_name), "_sum_f32_best")]
                        unsafe extern "C" fn $fn_name(
                            src: *const f32,
                            dst: *mut f32,
                            n: usize,
                            acc: *mut f32,
                            shift: *const f32,
                        ) {
                            dispatch_best!(
                                WideSumF32,
                                avx512::sum::$fn_name,
                                avx2::sum::$fn_name,
                                (src, dst, n, acc, shift)
                            )
                        }
                    )*
                }
            }
        };
    }
    super::for_each_routine!(best_exports);

    /// `tfn_wide_<helper>_f32_best` of every helper, dispatched as the functions'.
    mod best_helpers {
        use crate::wide::{avx2, avx512, WideAddF32, WideMaxF32, WideScaleF32};
        use crate::wide::{WideAddSquaresF32, WideShiftScaleF32};

        /// The running sum of squares at the widest level this CPU runs.
        #[export_name = "tfn_wide_add_squares_f32_best"]
        unsafe extern "C" fn add_squares(src: *const f32, n: usize, acc: *mut f32, m: *const f32) {
            dispatch_best!(
                WideAddSquaresF32,
                avx512::add_squares,
                avx2::add_squares,
                (src, n, acc, m)
            )
        }

        /// The shifting and scaling routine at the widest level this CPU runs.
        #[export_name = "tfn_wide_shift_scale_f32_best"]
        unsafe extern "C" fn shift_scale(
            src: *const f32,
            dst: *mut f32,
            n: usize,
            m: *const f32,
            s: *const f32,
        ) {
            dispatch_best!(
                WideShiftScaleF32,
                avx512::shift_scale,
                avx2::shift_scale,
                (src, dst, n, m, s)
            )
        }

        /// The running sum at the widest level this CPU runs.
        #[export_name = "tfn_wide_add_f32_best"]
        unsafe extern "C" fn add(src: *const f32, n: usize, acc: *mut f32) {
            dispatch_best!(WideAddF32, avx512::add, avx2::add, (src, n, acc))
        }

        /// The running max at the widest level this CPU runs.
        #[export_name = "tfn_wide_max_f32_best"]
        unsafe extern "C" fn max(src: *const f32, n: usize, acc: *mut f32) {
            dispatch_best!(WideMaxF32, avx512::max, avx2::max, (src, n, acc))
        }

        /// The scaling routine at the widest level this CPU runs.
        #[export_name = "tfn_wide_scale_f32_best"]
        unsafe extern "C" fn scale(src: *const f32, dst: *mut f32, n: usize, s: *const f32) {
            dispatch_best!(WideScaleF32, avx512::scale, avx2::scale, (src, dst, n, s))
        }
    }
}

/// `(function, symbol)` of the run-time dispatched routines (`tfn_wide_<fn>_f32_best`).
#[cfg(target_arch = "x86_64")]
macro_rules! best_rows {
    ($(($variant:ident, $fn_name:ident)),* $(,)?) => {
        &[$((MathFn::$variant, concat!("tfn_wide_", stringify!($fn_name), "_f32_best"))),*]
    };
}

/// `(function, symbol)` of the run-time dispatched summing routines.
#[cfg(target_arch = "x86_64")]
macro_rules! best_sum_rows {
    ($(($variant:ident, $fn_name:ident)),* $(,)?) => {
        &[$((MathFn::$variant, concat!("tfn_wide_", stringify!($fn_name), "_sum_f32_best"))),*]
    };
}

/// [`dispatched_symbol_f32`] of either kind of routine.
pub fn dispatched_symbol(f: MathFn, kind: RoutineKind) -> Option<&'static str> {
    match kind {
        RoutineKind::Map => dispatched_symbol_f32(f),
        #[cfg(target_arch = "x86_64")]
        RoutineKind::Sum => {
            let rows: &[(MathFn, &str)] = for_each_routine!(best_sum_rows);
            rows.iter().find(|row| row.0 == f).map(|&(_, symbol)| symbol)
        }
        #[cfg(not(target_arch = "x86_64"))]
        RoutineKind::Sum => None,
    }
}

/// The symbol of the routine for unary `f` on `f32` that the AOT runtime dispatches at run time
/// to the widest level the CPU has (AVX-512 or AVX2): the imports of a portable object's
/// x86-64-v3 tier. `None` where there is no routine (as [`routine_f32`]).
pub fn dispatched_symbol_f32(f: MathFn) -> Option<&'static str> {
    #[cfg(target_arch = "x86_64")]
    {
        let rows: &[(MathFn, &str)] = for_each_routine!(best_rows);
        rows.iter().find(|row| row.0 == f).map(|&(_, symbol)| symbol)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = f;
        None
    }
}

/// The routines of `level`, whether or not this CPU can run them.
fn table(level: SimdLevel) -> Table {
    match level {
        SimdLevel::V128 => &[],
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx2 => for_each_routine!(avx2_rows),
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx512 => for_each_routine!(avx512_rows),
        #[cfg(not(target_arch = "x86_64"))]
        SimdLevel::Avx2 | SimdLevel::Avx512 => &[],
    }
}

/// The summing routines of `level`, whether or not this CPU can run them.
fn sum_table(level: SimdLevel) -> SumTable {
    match level {
        SimdLevel::V128 => &[],
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx2 => for_each_routine!(avx2_sum_rows),
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx512 => for_each_routine!(avx512_sum_rows),
        #[cfg(not(target_arch = "x86_64"))]
        SimdLevel::Avx2 | SimdLevel::Avx512 => &[],
    }
}

/// The summing routine ([`WideSumF32`]) for unary `f` on `f32` at `level`, under the same
/// conditions as [`routine_f32`] (every function with a map routine has one).
pub fn routine_sum_f32(level: SimdLevel, f: MathFn) -> Option<(&'static str, WideSumF32)> {
    if level.clamp_to_cpu() != level {
        return None;
    }
    sum_table(level).iter().find(|row| row.0 == f).map(|&(_, symbol, routine)| (symbol, routine))
}

/// The symbol of the routine of `kind` for `f` at `level` (as [`symbol_f32`]).
pub fn symbol(level: SimdLevel, f: MathFn, kind: RoutineKind) -> Option<&'static str> {
    match kind {
        RoutineKind::Map => symbol_f32(level, f),
        RoutineKind::Sum => {
            sum_table(level).iter().find(|row| row.0 == f).map(|&(_, symbol, _)| symbol)
        }
    }
}

/// The routine for unary `f` on `f32` at `level`, or `None`: at [`SimdLevel::V128`], for
/// binary functions (`pow`, `atan2`), single-instruction ones (`sqrt`, `reciprocal`, `rsqrt`),
/// or when `level` is above what this CPU runs (so a returned routine is always safe to call
/// with valid pointers).
pub fn routine_f32(level: SimdLevel, f: MathFn) -> Option<Routine> {
    if level.clamp_to_cpu() != level {
        return None;
    }
    table(level)
        .iter()
        .find(|row| row.0 == f)
        .map(|&(_, symbol, routine)| Routine { symbol, addr: routine as *const u8 })
}

/// The symbol of the routine for unary `f` on `f32` at `level` (as [`routine_f32`], whether
/// or not this CPU runs it): what the kernels of an AOT object's tier of that level import.
pub fn symbol_f32(level: SimdLevel, f: MathFn) -> Option<&'static str> {
    table(level).iter().find(|row| row.0 == f).map(|&(_, symbol, _)| symbol)
}

/// Every routine's `(symbol, address)` at every level, for `JITBuilder::symbol` (registering a
/// routine the CPU cannot run is harmless: [`routine_f32`] never hands it to a kernel).
pub fn symbols() -> Vec<(&'static str, *const u8)> {
    SimdLevel::ALL
        .into_iter()
        .flat_map(|level| {
            let maps = table(level).iter().map(|&(_, symbol, r)| (symbol, r as *const u8));
            let sums = sum_table(level).iter().map(|&(_, symbol, r)| (symbol, r as *const u8));
            let helpers = Helper::ALL.into_iter().filter_map(move |h| helper_row(level, h));
            maps.chain(sums).chain(helpers)
        })
        .collect()
}
