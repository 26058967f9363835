//! Constants hoisted out of kernel loops, and the ISA features the approximations may use.
//!
//! Cranelift rematerialises (reloads) constants at every use, so a polynomial inside a loop body
//! would reload its coefficients on every iteration. [`MathConsts::new`] therefore emits every
//! constant the requested functions need once, at the builder's current position (the entry
//! block, before the loop), and [`super::emit`] refers to those values. Which constants a
//! function needs is discovered by emitting it once into a throw-away scratch function that
//! records every constant request, so the hoisted set can never drift from the emitters.
//!
//! A constant that was not hoisted (a function missing from the list passed to `new`) is emitted
//! inline where it is used: slower, but still correct.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use cranelift::codegen::ir::immediates::{Ieee32, Ieee64};
use cranelift::codegen::ir::{types, FuncRef, Function, InstBuilder, Type, Value};
use cranelift::codegen::isa::TargetIsa;
use cranelift::frontend::{FunctionBuilder, FunctionBuilderContext};

use super::{emit, MathError, MathFn};

/// ISA features that change which instruction sequences the approximations use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MathFeatures {
    /// Emit fused multiply-add. Only set this when the target really has it: Cranelift lowers
    /// `fma` to a libcall otherwise (on x86-64 it needs both `has_fma` and `has_avx`).
    pub fma: bool,
}

impl MathFeatures {
    /// The features `isa` supports natively.
    pub fn of_isa(isa: &dyn TargetIsa) -> Self {
        Self { fma: isa.has_native_fma() }
    }
}

/// A constant of a given Cranelift type, identified by its bit pattern (so `-0.0 != 0.0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ConstKey {
    pub ty: Type,
    pub bits: u64,
}

/// Vector and scalar constants of the math functions, emitted once before a loop.
#[derive(Debug)]
pub struct MathConsts {
    ty: Type,
    features: MathFeatures,
    hoisted: HashMap<ConstKey, Value>,
    /// The function's import of the fallback trampoline (`fallback.rs`).
    trampoline: Option<FuncRef>,
    /// Keys requested but not hoisted, in first-request order (the scratch pass reads these).
    missing: RefCell<Vec<ConstKey>>,
}

impl MathConsts {
    /// Emits, at `b`'s current position, every constant that [`emit`] needs to compute `fns` on
    /// values of type `ty` (`F32X4`, `F64X2`, `F32` or `F64`).
    ///
    /// Call this in the function's entry block (or a loop preheader) so that the values dominate
    /// the loop body. One `MathConsts` per type: a kernel with an `F32X4` body and an `F32` tail
    /// creates two.
    pub fn new(
        b: &mut FunctionBuilder<'_>,
        ty: Type,
        fns: &[MathFn],
        features: MathFeatures,
    ) -> Result<Self, MathError> {
        check_type(ty)?;
        let recorder = Self::empty(ty, features);
        let mut scratch = Function::new();
        let mut scratch_ctx = FunctionBuilderContext::new();
        {
            let mut sb = FunctionBuilder::new(&mut scratch, &mut scratch_ctx);
            let block = sb.create_block();
            let args = [sb.append_block_param(block, ty), sb.append_block_param(block, ty)];
            sb.switch_to_block(block);
            for &f in fns {
                emit(&mut sb, &recorder, f, &args[..f.arity()])?;
            }
        }
        let mut consts = Self::empty(ty, features);
        let mut seen = HashSet::new();
        for key in recorder.missing.into_inner() {
            if seen.insert(key) {
                let v = materialize(b, key);
                consts.hoisted.insert(key, v);
            }
        }
        Ok(consts)
    }

    fn empty(ty: Type, features: MathFeatures) -> Self {
        Self {
            ty,
            features,
            hoisted: HashMap::new(),
            trampoline: None,
            missing: RefCell::new(Vec::new()),
        }
    }

    /// Lets the emitted code call the scalar fallbacks through `trampoline`: the function's
    /// import of [`super::fallback::TRAMPOLINE_SYMBOL`] with [`trampoline_signature`]. Without
    /// it, lanes that need a fallback are NaN.
    pub fn set_trampoline(&mut self, trampoline: FuncRef) {
        self.trampoline = Some(trampoline);
    }

    /// The function's import of the trampoline, if [`Self::set_trampoline`] gave one.
    pub(crate) fn trampoline(&self) -> Option<FuncRef> {
        self.trampoline
    }

    /// The type the constants were hoisted for.
    pub fn ty(&self) -> Type {
        self.ty
    }

    /// The ISA features the emitted code may use.
    pub fn features(&self) -> MathFeatures {
        self.features
    }

    /// Number of hoisted constant values (each costs a register or a spill slot in the loop).
    pub fn len(&self) -> usize {
        self.hoisted.len()
    }

    /// Whether nothing was hoisted.
    pub fn is_empty(&self) -> bool {
        self.hoisted.is_empty()
    }

    /// The hoisted value for `key`, or a freshly emitted one at the current position.
    pub(crate) fn get_or_emit(&self, b: &mut FunctionBuilder<'_>, key: ConstKey) -> Value {
        if let Some(&v) = self.hoisted.get(&key) {
            return v;
        }
        self.missing.borrow_mut().push(key);
        materialize(b, key)
    }
}

/// Checks that `ty` is one of the four float types the math functions support.
pub(crate) fn check_type(ty: Type) -> Result<(), MathError> {
    match ty {
        types::F32 | types::F64 | types::F32X4 | types::F64X2 => Ok(()),
        other => Err(MathError::UnsupportedType(other)),
    }
}

/// Emits the constant `key` at the builder's current position.
fn materialize(b: &mut FunctionBuilder<'_>, key: ConstKey) -> Value {
    let lane = key.ty.lane_type();
    let scalar = match lane {
        types::F32 => b.ins().f32const(Ieee32::with_bits(key.bits as u32)),
        types::F64 => b.ins().f64const(Ieee64::with_bits(key.bits)),
        types::I32 => b.ins().iconst(types::I32, i64::from(key.bits as u32)),
        _ => b.ins().iconst(lane, key.bits as i64),
    };
    if key.ty.is_vector() {
        b.ins().splat(key.ty, scalar)
    } else {
        scalar
    }
}

/// The signature of the fallback trampoline: `(lanes: ptr, n: i64, kind: i64)` in Cranelift's
/// `preserve_all` convention (it clobbers no register, so calls of it cost the hot path
/// nothing).
pub fn trampoline_signature() -> cranelift::codegen::ir::Signature {
    use cranelift::codegen::ir::AbiParam;
    let mut sig =
        cranelift::codegen::ir::Signature::new(cranelift::codegen::isa::CallConv::PreserveAll);
    sig.params.extend([AbiParam::new(types::I64); 3]);
    sig
}
