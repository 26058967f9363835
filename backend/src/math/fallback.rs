//! Scalar fallbacks: the lanes a vector approximation cannot compute accurately.
//!
//! `sin` and `cos` reduce their argument by π/2 with a few-part constant (`trig.rs`), which is
//! accurate up to [`super::trig::reduction_limit`] (`2¹⁸` for `f32` with `fma`). A lane beyond
//! it (huge finite values, and `±inf`) is computed by the interpreter's own function instead —
//! the `libm` crate's `sinf`/`cosf`/`sin`/`cos`, whose Payne–Hanek reduction is exact — so the
//! JIT gives the interpreter's bits there, on every SIMD level and thread count.
//!
//! [`super::Lanes::fallback`] is how a generic approximation asks for it. The wide routines
//! (`crate::wide`) call [`Fallback::patch_f32`] in Rust. The inline code ([`super::emit`])
//! branches to a cold block when any lane of a vector needs it, stores the vector to a stack
//! slot and calls [`tfn_fallback_lanes_preserve_all`] on it: a trampoline in Cranelift's
//! `preserve_all` convention (it saves every register it or its callee touch), so the hot path
//! keeps every value in registers — a plain call would clobber every vector register and make
//! the register allocator spill the kernel's values on the hot path too (measured: ~10% on an
//! `f64` `sin` kernel).
//!
//! The trampoline is x86-64 assembly; it is registered with the JIT module
//! (`isa::new_jit_module`) and exported by the AOT runtime (`tfn-rt`, feature `rt-exports`).
//! Elsewhere (a self-contained aarch64 object, a JIT on another architecture) there is nothing
//! to call and those lanes are NaN, as the docs say.

/// A scalar function a vector approximation hands its out-of-range lanes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fallback {
    Sin,
    Cos,
}

/// The symbol of the `preserve_all` trampoline.
pub const TRAMPOLINE_SYMBOL: &str = "tfn_fallback_lanes_preserve_all";

impl Fallback {
    /// Every fallback.
    pub const ALL: [Fallback; 2] = [Fallback::Sin, Fallback::Cos];

    /// The trampoline's `kind` argument for `self` on `f32` (`is_f32`) or `f64` lanes.
    pub fn code(self, is_f32: bool) -> i64 {
        match (self, is_f32) {
            (Fallback::Sin, true) => 0,
            (Fallback::Cos, true) => 1,
            (Fallback::Sin, false) => 2,
            (Fallback::Cos, false) => 3,
        }
    }

    /// `f(x)` on `f32`: the interpreter's function.
    #[inline]
    pub fn f32(self, x: f32) -> f32 {
        match self {
            Fallback::Sin => libm::sinf(x),
            Fallback::Cos => libm::cosf(x),
        }
    }

    /// `f(x)` on `f64`: the interpreter's function.
    #[inline]
    pub fn f64(self, x: f64) -> f64 {
        match self {
            Fallback::Sin => libm::sin(x),
            Fallback::Cos => libm::cos(x),
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

    /// The trampoline's `(symbol, address)`, for `JITBuilder::symbols` (none where there is no
    /// trampoline).
    pub fn symbols() -> Vec<(&'static str, *const u8)> {
        trampoline().map(|addr| (TRAMPOLINE_SYMBOL, addr)).into_iter().collect()
    }
}

/// The address of the trampoline, on architectures that have one.
pub fn trampoline() -> Option<*const u8> {
    #[cfg(target_arch = "x86_64")]
    {
        Some(tfn_fallback_lanes_preserve_all as *const u8)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// Replaces each of the `n` lanes at `p` by `f(lane)` for the function `kind`
/// ([`Fallback::code`]). Called by the trampoline only.
///
/// # Safety
/// `p` points to `n` writable lanes of the kind's float type.
unsafe extern "C" fn fallback_lanes(p: *mut u8, n: usize, kind: i64) {
    let f = if kind & 1 == 0 { Fallback::Sin } else { Fallback::Cos };
    if kind < 2 {
        // SAFETY: the caller's contract.
        let lanes = unsafe { std::slice::from_raw_parts_mut(p.cast::<f32>(), n) };
        lanes.iter_mut().for_each(|x| *x = f.f32(*x));
    } else {
        // SAFETY: the caller's contract.
        let lanes = unsafe { std::slice::from_raw_parts_mut(p.cast::<f64>(), n) };
        lanes.iter_mut().for_each(|x| *x = f.f64(*x));
    }
}

/// `fallback_lanes(p = rdi, n = rsi, kind = rdx)` preserving every general-purpose register
/// and `xmm0`–`xmm15` (the registers Cranelift's x86-64 code uses), for calls in Cranelift's
/// `preserve_all` convention. The stack is realigned to 16 bytes for the call.
///
/// # Safety
/// As `fallback_lanes`; callable only with the `preserve_all` convention's expectations.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[cfg_attr(feature = "rt-exports", unsafe(export_name = "tfn_fallback_lanes_preserve_all"))]
pub unsafe extern "C" fn tfn_fallback_lanes_preserve_all() {
    std::arch::naked_asm!(
        "push rbp",
        "mov rbp, rsp",
        "push rax",
        "push rcx",
        "push rdx",
        "push rsi",
        "push rdi",
        "push r8",
        "push r9",
        "push r10",
        "push r11",
        "sub rsp, 264",
        "movdqu [rsp + 0], xmm0",
        "movdqu [rsp + 16], xmm1",
        "movdqu [rsp + 32], xmm2",
        "movdqu [rsp + 48], xmm3",
        "movdqu [rsp + 64], xmm4",
        "movdqu [rsp + 80], xmm5",
        "movdqu [rsp + 96], xmm6",
        "movdqu [rsp + 112], xmm7",
        "movdqu [rsp + 128], xmm8",
        "movdqu [rsp + 144], xmm9",
        "movdqu [rsp + 160], xmm10",
        "movdqu [rsp + 176], xmm11",
        "movdqu [rsp + 192], xmm12",
        "movdqu [rsp + 208], xmm13",
        "movdqu [rsp + 224], xmm14",
        "movdqu [rsp + 240], xmm15",
        "call {lanes}",
        "movdqu xmm0, [rsp + 0]",
        "movdqu xmm1, [rsp + 16]",
        "movdqu xmm2, [rsp + 32]",
        "movdqu xmm3, [rsp + 48]",
        "movdqu xmm4, [rsp + 64]",
        "movdqu xmm5, [rsp + 80]",
        "movdqu xmm6, [rsp + 96]",
        "movdqu xmm7, [rsp + 112]",
        "movdqu xmm8, [rsp + 128]",
        "movdqu xmm9, [rsp + 144]",
        "movdqu xmm10, [rsp + 160]",
        "movdqu xmm11, [rsp + 176]",
        "movdqu xmm12, [rsp + 192]",
        "movdqu xmm13, [rsp + 208]",
        "movdqu xmm14, [rsp + 224]",
        "movdqu xmm15, [rsp + 240]",
        "add rsp, 264",
        "pop r11",
        "pop r10",
        "pop r9",
        "pop r8",
        "pop rdi",
        "pop rsi",
        "pop rdx",
        "pop rcx",
        "pop rax",
        "pop rbp",
        "ret",
        lanes = sym fallback_lanes,
    )
}
