//! The JIT harness of the math tests (`math_accuracy.rs`, `wide.rs`): `math::emit` compiled into
//! a kernel `out[i] = f(x[i], y[i])` of exactly the shape the kernel code generator emits — an
//! `f32x4`/`f64x2` loop body with hoisted constants plus a scalar tail.

#![allow(dead_code)]

use std::mem::transmute;

use cranelift::codegen::ir::{types, AbiParam, FuncRef, InstBuilder, MemFlagsData, Type, Value};
use cranelift::frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::JITModule;
use cranelift_module::{FuncId, Linkage, Module};
use tfn_backend::isa::native_jit_module;
use tfn_backend::math::{
    emit, trampoline_signature, MathConsts, MathFeatures, MathFn, TRAMPOLINE_SYMBOL,
};

pub type Kernel = unsafe extern "C" fn(*const u8, *const u8, *mut u8, u64);

/// JIT-compiled kernels `out[i] = f(x[i], y[i])` for `i < n`.
pub struct Jit {
    pub module: JITModule,
    counter: usize,
}

impl Jit {
    pub fn new() -> Self {
        Self { module: native_jit_module().expect("host ISA"), counter: 0 }
    }

    pub fn features(&self) -> MathFeatures {
        MathFeatures::of_isa(self.module.isa())
    }

    /// Compiles `f` for lanes of `lane` (`F32`/`F64`): a vector body and a scalar tail.
    pub fn kernel(&mut self, f: MathFn, lane: Type, features: MathFeatures) -> Kernel {
        self.kernel_unrolled(f, lane, features, 1)
    }

    /// [`Self::kernel`] with the vector loop unrolled `unroll` times.
    pub fn kernel_unrolled(
        &mut self,
        f: MathFn,
        lane: Type,
        features: MathFeatures,
        unroll: i64,
    ) -> Kernel {
        let id = self.define(f, lane, features, unroll);
        self.module.finalize_definitions().expect("finalize");
        let code = self.module.get_finalized_function(id);
        // SAFETY: the function was just defined with exactly this signature.
        unsafe { transmute::<*const u8, Kernel>(code) }
    }

    pub fn define(&mut self, f: MathFn, lane: Type, features: MathFeatures, unroll: i64) -> FuncId {
        let ptr = self.module.target_config().pointer_type();
        let mut ctx = self.module.make_context();
        for _ in 0..4 {
            ctx.func.signature.params.push(AbiParam::new(ptr));
        }
        self.counter += 1;
        let name = format!("{}_{}_{}", f.name(), lane, self.counter);
        let id = self
            .module
            .declare_function(&name, Linkage::Local, &ctx.func.signature)
            .expect("declare");
        // The fallback trampoline, as the code generator imports it (`math::Fallback`).
        let sig = trampoline_signature();
        let imported = self.module.declare_function(TRAMPOLINE_SYMBOL, Linkage::Import, &sig);
        let trampoline = self.module.declare_func_in_func(imported.expect("import"), &mut ctx.func);
        let mut fctx = FunctionBuilderContext::new();
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        build_loop_unrolled(&mut b, f, lane, features, unroll, Some(trampoline));
        self.module.define_function(id, &mut ctx).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        id
    }
}

/// The kernel body: `for i in (0..n).step_by(lanes)` vector, then `for i in ..n` scalar.
/// Without fallbacks (lanes beyond `sin`/`cos`'s range are NaN).
pub fn build_loop(b: &mut FunctionBuilder, f: MathFn, lane: Type, features: MathFeatures) {
    build_loop_unrolled(b, f, lane, features, 1, None);
}

/// [`build_loop`] with a first loop of `unroll` vectors per iteration (the code generator's
/// kernels are 4× unrolled), then one vector per iteration, then scalars.
pub fn build_loop_unrolled(
    b: &mut FunctionBuilder,
    f: MathFn,
    lane: Type,
    features: MathFeatures,
    unroll: i64,
    trampoline: Option<FuncRef>,
) {
    let vty = if lane == types::F32 { types::F32X4 } else { types::F64X2 };
    let lanes = i64::from(vty.lane_count());
    let size = i64::from(lane.bytes());
    let entry = b.create_block();
    let count = if unroll > 1 { 7 } else { 5 };
    let mut blocks: Vec<_> = (0..count).map(|_| b.create_block()).collect();
    let unrolled = if unroll > 1 { Some((blocks.remove(0), blocks.remove(0))) } else { None };
    let [v_head, v_body, s_head, s_body, exit] = blocks[..] else { unreachable!() };
    b.append_block_params_for_function_params(entry);
    for &block in blocks.iter().chain(unrolled.iter().flat_map(|(h, b)| [h, b])) {
        b.append_block_param(block, types::I64);
    }
    b.switch_to_block(entry);
    let [x, y, out, n] = b.block_params(entry) else { unreachable!() };
    let (x, y, out, n) = (*x, *y, *out, *n);
    let mut vconsts = MathConsts::new(b, vty, &[f], features).expect("vector consts");
    let mut sconsts = MathConsts::new(b, lane, &[f], features).expect("scalar consts");
    if let Some(t) = trampoline {
        vconsts.set_trampoline(t);
        sconsts.set_trampoline(t);
    }
    let n_unrolled = b.ins().band_imm_s(n, !(lanes * unroll - 1));
    let n_vec = b.ins().band_imm_s(n, !(lanes - 1));
    let zero = b.ins().iconst(types::I64, 0);
    b.ins().jump(unrolled.map_or(v_head, |(head, _)| head), &[zero.into()]);

    let flags = MemFlagsData::new().with_notrap();
    let step = |b: &mut FunctionBuilder, head, body, next, bound, ty: Type, consts, count: i64| {
        b.switch_to_block(head);
        let i = b.block_params(head)[0];
        let more =
            b.ins().icmp(cranelift::codegen::ir::condcodes::IntCC::UnsignedLessThan, i, bound);
        b.ins().brif(more, body, &[i.into()], next, &[i.into()]);
        b.switch_to_block(body);
        let i = b.block_params(body)[0];
        let offset = b.ins().imul_imm_s(i, size);
        let bytes = i64::from(ty.bytes());
        for k in 0..count {
            let load = |b: &mut FunctionBuilder, base: Value| {
                let addr = b.ins().iadd(base, offset);
                b.ins().load(ty, flags, addr, (k * bytes) as i32)
            };
            let xv = load(b, x);
            let args = if f.arity() == 2 { vec![xv, load(b, y)] } else { vec![xv] };
            let r = emit(b, consts, f, &args).expect("emit");
            let addr = b.ins().iadd(out, offset);
            b.ins().store(flags, r, addr, (k * bytes) as i32);
        }
        let i_next = b.ins().iadd_imm_s(i, count * i64::from(ty.lane_count()));
        b.ins().jump(head, &[i_next.into()]);
    };
    if let Some((u_head, u_body)) = unrolled {
        step(b, u_head, u_body, v_head, n_unrolled, vty, &vconsts, unroll);
    }
    step(b, v_head, v_body, s_head, n_vec, vty, &vconsts, 1);
    step(b, s_head, s_body, exit, n, lane, &sconsts, 1);
    b.switch_to_block(exit);
    b.ins().return_(&[]);
    b.seal_all_blocks();
}

/// Runs `kernel` over `xs` (and `ys`) in chunks, returning outputs.
pub fn run<T: Copy + Default>(kernel: Kernel, xs: &[T], ys: &[T]) -> Vec<T> {
    assert_eq!(xs.len(), ys.len());
    let mut out = vec![T::default(); xs.len()];
    // SAFETY: the kernel reads `n` elements of `xs`/`ys` and writes `n` of `out`.
    unsafe {
        kernel(xs.as_ptr().cast(), ys.as_ptr().cast(), out.as_mut_ptr().cast(), xs.len() as u64)
    };
    out
}
