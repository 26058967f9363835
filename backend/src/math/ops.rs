//! [`Ctx`], the [`Lanes`] implementation that emits Cranelift IR.
//!
//! [`Ctx`] wraps a [`FunctionBuilder`] together with the float type being computed on (`F32X4`,
//! `F64X2`, `F32` or `F64`) and implements the operations the approximations need —
//! arithmetic, `fma`-or-`mul+add`, lane-wise selects and integer reinterpretation — as
//! instructions, so that each function is written once for all four types (and, through
//! [`Lanes`], for the precompiled wide routines of `crate::wide`). Every operation is
//! branch-free: conditions are lane masks (`fcmp`/`icmp` results) consumed by `bitselect`
//! (vectors) or `select` (scalars).

use cranelift::codegen::ir::{
    types, InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, Type, Value,
};
use cranelift::frontend::FunctionBuilder;

use super::consts::{ConstKey, MathConsts};
use super::lanes::Lanes;
use super::Fallback;

pub use cranelift::codegen::ir::condcodes::{FloatCC, IntCC};

pub(crate) use super::lane_format::LaneFormat;

impl LaneFormat {
    /// The format of `ty`'s lanes, or `None` when the lanes are not `f32`/`f64`.
    pub fn of(ty: Type) -> Option<Self> {
        match ty.lane_type() {
            types::F32 => Some(Self::F32),
            types::F64 => Some(Self::F64),
            _ => None,
        }
    }
}

/// Emission context: the builder, the float type, the hoisted constants and the ISA features.
pub(crate) struct Ctx<'a, 'f> {
    pub b: &'a mut FunctionBuilder<'f>,
    consts: &'a MathConsts,
    /// Float type of every value this context computes on.
    pub ty: Type,
    /// Integer type with the same lane layout as `ty`.
    pub ity: Type,
    pub fmt: LaneFormat,
    fma: bool,
}

impl<'a, 'f> Ctx<'a, 'f> {
    /// A context for `ty`, which must be a float type with `f32` or `f64` lanes (checked by the
    /// caller through [`LaneFormat::of`]).
    pub fn new(
        b: &'a mut FunctionBuilder<'f>,
        consts: &'a MathConsts,
        fmt: LaneFormat,
        ty: Type,
    ) -> Self {
        let fma = consts.features().fma;
        Self { b, consts, ty, ity: ty.as_int(), fmt, fma }
    }

    /// The same context retargeted to another float type (used to compute `f32` pow in `f64`).
    pub fn with_type<'c>(&'c mut self, ty: Type, fmt: LaneFormat) -> Ctx<'c, 'f> {
        Ctx { b: &mut *self.b, consts: self.consts, ty, ity: ty.as_int(), fmt, fma: self.fma }
    }
}

impl Lanes for Ctx<'_, '_> {
    type F = Value;
    type I = Value;
    type M = Value;

    fn fmt(&self) -> LaneFormat {
        self.fmt
    }

    fn has_fma(&self) -> bool {
        self.fma
    }

    /// Hoisted when available (see `MathConsts`).
    fn c(&mut self, v: f64) -> Value {
        let bits = if self.fmt.is_f32() { u64::from((v as f32).to_bits()) } else { v.to_bits() };
        self.consts.get_or_emit(self.b, ConstKey { ty: self.ty, bits })
    }

    /// Hoisted when available (see `MathConsts`).
    fn ci(&mut self, v: i64) -> Value {
        let bits = if self.fmt.is_f32() { u64::from(v as u32) } else { v as u64 };
        self.consts.get_or_emit(self.b, ConstKey { ty: self.ity, bits })
    }

    fn add(&mut self, x: Value, y: Value) -> Value {
        self.b.ins().fadd(x, y)
    }
    fn sub(&mut self, x: Value, y: Value) -> Value {
        self.b.ins().fsub(x, y)
    }
    fn mul(&mut self, x: Value, y: Value) -> Value {
        self.b.ins().fmul(x, y)
    }
    fn div(&mut self, x: Value, y: Value) -> Value {
        self.b.ins().fdiv(x, y)
    }
    /// On vectors this clears the sign bits with a hoisted mask: Cranelift's `fabs` rebuilds
    /// its mask (`pcmpeqd` + `psrld`) at every use.
    fn abs(&mut self, x: Value) -> Value {
        if !self.ty.is_vector() {
            return self.b.ins().fabs(x);
        }
        let bits = self.bits_of(x);
        let magnitude_mask = !self.fmt.sign_mask() & self.fmt.all_ones();
        let magnitude = self.band_c(bits, magnitude_mask);
        self.float_of_bits(magnitude)
    }
    fn neg(&mut self, x: Value) -> Value {
        self.b.ins().fneg(x)
    }
    fn sqrt(&mut self, x: Value) -> Value {
        self.b.ins().sqrt(x)
    }

    /// Fused when the ISA has a native `fma`, otherwise a rounded `mul` then `add`.
    fn mul_add(&mut self, x: Value, y: Value, z: Value) -> Value {
        if self.fma {
            self.b.ins().fma(x, y, z)
        } else {
            let p = self.b.ins().fmul(x, y);
            self.b.ins().fadd(p, z)
        }
    }

    fn fcmp(&mut self, cc: FloatCC, x: Value, y: Value) -> Value {
        self.b.ins().fcmp(cc, x, y)
    }

    fn icmp(&mut self, cc: IntCC, x: Value, y: Value) -> Value {
        self.b.ins().icmp(cc, x, y)
    }

    /// For float or integer values of this context's lane layout (`pow` selects integers).
    fn select(&mut self, mask: Value, x: Value, y: Value) -> Value {
        if self.ty.is_vector() {
            let vty = self.b.func.dfg.value_type(x);
            let m = if self.b.func.dfg.value_type(mask) == vty {
                mask
            } else {
                self.b.ins().bitcast(vty, MemFlagsData::new(), mask)
            };
            self.b.ins().bitselect(m, x, y)
        } else {
            self.b.ins().select(mask, x, y)
        }
    }

    fn mask_and(&mut self, m: Value, n: Value) -> Value {
        self.b.ins().band(m, n)
    }
    fn mask_or(&mut self, m: Value, n: Value) -> Value {
        self.b.ins().bor(m, n)
    }
    fn mask_xor(&mut self, m: Value, n: Value) -> Value {
        self.b.ins().bxor(m, n)
    }

    fn bits_of(&mut self, x: Value) -> Value {
        self.b.ins().bitcast(self.ity, MemFlagsData::new(), x)
    }
    fn float_of_bits(&mut self, i: Value) -> Value {
        self.b.ins().bitcast(self.ty, MemFlagsData::new(), i)
    }

    fn iadd(&mut self, x: Value, y: Value) -> Value {
        self.b.ins().iadd(x, y)
    }
    fn isub(&mut self, x: Value, y: Value) -> Value {
        self.b.ins().isub(x, y)
    }
    fn band(&mut self, x: Value, y: Value) -> Value {
        self.b.ins().band(x, y)
    }
    fn bor(&mut self, x: Value, y: Value) -> Value {
        self.b.ins().bor(x, y)
    }
    fn bxor(&mut self, x: Value, y: Value) -> Value {
        self.b.ins().bxor(x, y)
    }
    fn shl(&mut self, x: Value, amount: u32) -> Value {
        self.b.ins().ishl_imm_u(x, i64::from(amount))
    }
    fn ushr(&mut self, x: Value, amount: u32) -> Value {
        self.b.ins().ushr_imm_u(x, i64::from(amount))
    }

    /// A branch to a cold block when any lane of `mask` is set; there, the vector goes
    /// through a stack slot to the `preserve_all` trampoline, which replaces every lane by
    /// its fallback, and the lanes of `mask` are kept. The code continues in a new block.
    fn fallback(&mut self, f: Fallback, mask: Value, x: Value, y: Value) -> Value {
        let Some(trampoline) = self.consts.trampoline() else {
            return self.select_c(mask, f64::NAN, y);
        };
        let any = if self.ty.is_vector() { self.b.ins().vany_true(mask) } else { mask };
        let cold = self.b.create_block();
        let done = self.b.create_block();
        let out = self.b.append_block_param(done, self.ty);
        self.b.set_cold_block(cold);
        self.b.ins().brif(any, cold, &[], done, &[y.into()]);
        self.b.switch_to_block(cold);
        self.b.seal_block(cold);
        let data = StackSlotData::new(StackSlotKind::ExplicitSlot, 16, 4);
        let slot = self.b.create_sized_stack_slot(data);
        self.b.ins().stack_store(types::I64, x, slot, 0);
        let lanes = self.b.ins().stack_addr(types::I64, slot, 0);
        let n = self.b.ins().iconst(types::I64, i64::from(self.ty.lane_count()));
        let kind = self.b.ins().iconst(types::I64, f.code(self.fmt.is_f32()));
        self.b.ins().call(trampoline, &[lanes, n, kind]);
        let v = self.b.ins().stack_load(types::I64, self.ty, slot, 0);
        let patched = self.select(mask, v, y);
        self.b.ins().jump(done, &[patched.into()]);
        self.b.switch_to_block(done);
        self.b.seal_block(done);
        out
    }
}
