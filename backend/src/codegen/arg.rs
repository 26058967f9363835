//! Cranelift IR for `argmax`/`argmin` along one axis: a walk along the axis carrying the best
//! value and its index.
//!
//! # Kernel ABI
//!
//! `extern "C" fn(args: *const i64)` where `args` holds the input pointer, the output (`i64`)
//! pointer, the sizes `outer`, `n`, `inner` of the input viewed as `[outer, n, inner]` (the
//! reduced axis is `n >= 1`; the output is `[outer, inner]` whatever `keepdim` says), then
//! `begin` and `end`, the range of `outer` this call covers.
//!
//! Each `(outer, inner)` position walks its `n` elements in order and replaces the best so far
//! when the new element is strictly better — greater (smaller), or NaN where the best is not —
//! so the first maximum (minimum) wins and the first NaN beats everything, exactly the
//! interpreter's rule (`ir/src/interp/reduce.rs`) and NumPy's.

use super::ops::{self, scalar_type};
use super::{loop_begin, loop_end, mem};
use crate::abi::AxisAbi;
use crate::error::CodegenError;
use cranelift::codegen::ir::{
    condcodes::FloatCC, condcodes::IntCC, types, AbiParam, Function, InstBuilder, MemFlagsData,
    Value,
};
use cranelift::codegen::isa::TargetFrontendConfig;
use cranelift::frontend::{FunctionBuilder, FunctionBuilderContext};
use tfn_ir::DType;

/// Builds the `argmax` (`max`) or `argmin` kernel of input dtype `dtype` into `func`.
pub(crate) fn build_arg(
    max: bool,
    dtype: DType,
    func: &mut Function,
    fctx: &mut FunctionBuilderContext,
    frontend: TargetFrontendConfig,
) -> Result<(), CodegenError> {
    if dtype == DType::Bool {
        return ops::unsupported("argmax/argmin of bool");
    }
    let ptr_ty = frontend.pointer_type();
    func.signature.params.push(AbiParam::new(ptr_ty));
    let mut b = FunctionBuilder::new(func, fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let args = b.block_params(entry)[0];
    let load_slot = |b: &mut FunctionBuilder, slot: usize| {
        b.ins().load(types::I64, MemFlagsData::trusted(), args, (slot * 8) as i32)
    };
    let abi = AxisAbi { operands: 2 };
    let (x_ptr, out_ptr) = (load_slot(&mut b, abi.ptr(0)), load_slot(&mut b, abi.ptr(1)));
    let n = load_slot(&mut b, abi.len_slot());
    let inner = load_slot(&mut b, abi.inner());
    let (begin, end) = (load_slot(&mut b, abi.begin()), load_slot(&mut b, abi.end()));
    let ty = scalar_type(dtype);
    let shift = dtype.size_bytes().trailing_zeros() as i64;
    let plane = b.ins().imul(n, inner);

    let o_var = b.declare_var(types::I64);
    b.def_var(o_var, begin);
    let lo = loop_begin(&mut b, o_var, 1, end);
    let base = b.ins().imul(lo.i, plane);
    let out_base = b.ins().imul(lo.i, inner);
    let j_var = b.declare_var(types::I64);
    let zero = b.ins().iconst(types::I64, 0);
    b.def_var(j_var, zero);
    let lj = loop_begin(&mut b, j_var, 1, inner);
    let col = b.ins().iadd(base, lj.i);
    let load_at = |b: &mut FunctionBuilder, off: Value| -> Value {
        let bytes = b.ins().ishl_imm_u(off, shift);
        let addr = b.ins().iadd(x_ptr, bytes);
        b.ins().load(ty, mem(), addr, 0)
    };
    let first = load_at(&mut b, col);
    let best = b.declare_var(ty);
    b.def_var(best, first);
    let best_index = b.declare_var(types::I64);
    b.def_var(best_index, zero);
    let k_var = b.declare_var(types::I64);
    let one = b.ins().iconst(types::I64, 1);
    b.def_var(k_var, one);
    let lk = loop_begin(&mut b, k_var, 1, n);
    let row = b.ins().imul(lk.i, inner);
    let off = b.ins().iadd(col, row);
    let x = load_at(&mut b, off);
    let current = b.use_var(best);
    let better = if dtype.is_float() {
        let cc = if max { FloatCC::GreaterThan } else { FloatCC::LessThan };
        let strictly = b.ins().fcmp(cc, x, current);
        let x_nan = b.ins().fcmp(FloatCC::Unordered, x, x);
        let best_ordered = b.ins().fcmp(FloatCC::Ordered, current, current);
        let nan_wins = b.ins().band(x_nan, best_ordered);
        b.ins().bor(strictly, nan_wins)
    } else {
        let cc = if max { IntCC::SignedGreaterThan } else { IntCC::SignedLessThan };
        b.ins().icmp(cc, x, current)
    };
    let next = b.ins().select(better, x, current);
    b.def_var(best, next);
    let index = b.use_var(best_index);
    let next_index = b.ins().select(better, lk.i, index);
    b.def_var(best_index, next_index);
    loop_end(&mut b, lk);
    let result = b.use_var(best_index);
    let at = b.ins().iadd(out_base, lj.i);
    let bytes = b.ins().ishl_imm_u(at, 3);
    let addr = b.ins().iadd(out_ptr, bytes);
    b.ins().store(mem(), result, addr, 0);
    loop_end(&mut b, lj);
    loop_end(&mut b, lo);
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(frontend);
    Ok(())
}
