//! TEMPORARY shim of the wide-routine API (replaced by the real module on merge).
#![allow(dead_code)]
use crate::math::MathFn;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SimdLevel {
    V128,
    Avx2,
    Avx512,
}
impl SimdLevel {
    pub fn detect() -> SimdLevel {
        SimdLevel::Avx512
    }
    pub fn parse(s: &str) -> Option<SimdLevel> {
        match s {
            "128" => Some(SimdLevel::V128),
            "avx2" => Some(SimdLevel::Avx2),
            "avx512" => Some(SimdLevel::Avx512),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            SimdLevel::V128 => "128",
            SimdLevel::Avx2 => "avx2",
            SimdLevel::Avx512 => "avx512",
        }
    }
    pub fn clamp_to_cpu(self) -> SimdLevel {
        self
    }
}
pub type WideF32 = unsafe extern "C" fn(src: *const f32, dst: *mut f32, n: usize);
pub struct Routine {
    pub symbol: &'static str,
    pub addr: *const u8,
}
unsafe extern "C" fn tanh_s(src: *const f32, dst: *mut f32, n: usize) {
    for i in 0..n {
        unsafe { *dst.add(i) = (*src.add(i)).tanh() };
    }
}
unsafe extern "C" fn exp_s(src: *const f32, dst: *mut f32, n: usize) {
    for i in 0..n {
        unsafe { *dst.add(i) = (*src.add(i)).exp() };
    }
}
pub fn routine_f32(level: SimdLevel, f: MathFn) -> Option<Routine> {
    if level == SimdLevel::V128 {
        return None;
    }
    match f {
        MathFn::Tanh => Some(Routine { symbol: "tfn_shim_tanh", addr: tanh_s as *const u8 }),
        MathFn::Exp | MathFn::ExpNonPositive => {
            Some(Routine { symbol: "tfn_shim_exp", addr: exp_s as *const u8 })
        }
        _ => None,
    }
}
pub fn symbols() -> Vec<(&'static str, *const u8)> {
    vec![("tfn_shim_tanh", tanh_s as *const u8), ("tfn_shim_exp", exp_s as *const u8)]
}
