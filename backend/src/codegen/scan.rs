//! Cranelift IR for a scan kernel: `cumsum`/`cumprod` along one axis, and the gradient of
//! `cumprod` (`Op::CumprodGrad`).
//!
//! # Kernel ABI
//!
//! `extern "C" fn(args: *const i64)` where `args` holds the operand pointers (`x`, then `g` for
//! the gradient, then the output), the sizes `outer`, `n`, `inner` of the operand viewed as
//! `[outer, n, inner]` (the scanned axis is `n`; every operand is contiguous), then `begin`
//! and `end`, the range of `outer` this call covers (threads split it).
//!
//! # Shape of the code
//!
//! For each outer position, the `inner` columns are taken in blocks of 4 vectors, then single
//! vectors, then single elements; each block walks the `n` steps of the axis in scan order
//! with its running values in registers. Each element is computed by the same sequential
//! recurrence as the interpreter's (`ir/src/interp/scan.rs`), in the same operation order,
//! so results are identical to it for every block shape and thread count.

use super::ops::{self, lanes, Width};
use super::{loop_begin, loop_end, mem, UNROLL};
use crate::abi::AxisAbi;
use crate::error::CodegenError;
use cranelift::codegen::ir::{types, AbiParam, Function, InstBuilder, MemFlagsData, Value};
use cranelift::codegen::isa::TargetFrontendConfig;
use cranelift::frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use tfn_ir::{BinaryOp, DType, Scalar, ScanOp};

/// What a scan kernel computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ScanSpec {
    /// `Some`: a `cumsum`/`cumprod`; `None`: the gradient of `cumprod`.
    pub op: Option<ScanOp>,
    pub dtype: DType,
    pub exclusive: bool,
    pub reverse: bool,
}

impl ScanSpec {
    /// Operand pointers in the ABI (inputs and the output).
    pub fn operands(&self) -> usize {
        if self.op.is_some() {
            2
        } else {
            3
        }
    }
}

struct ScanEmitter {
    spec: ScanSpec,
    ptrs: Vec<Value>,
    n: Value,
    inner: Value,
}

/// Builds the scan kernel of `spec` into `func`.
pub(crate) fn build_scan(
    spec: ScanSpec,
    func: &mut Function,
    fctx: &mut FunctionBuilderContext,
    frontend: TargetFrontendConfig,
) -> Result<(), CodegenError> {
    if spec.op.is_none() && !spec.dtype.is_float() {
        return ops::unsupported(format!("`cumprod_grad` on {}", spec.dtype));
    }
    if spec.dtype == DType::Bool {
        return ops::unsupported("a scan of bool");
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
    let abi = AxisAbi { operands: spec.operands() };
    let ptrs: Vec<Value> = (0..abi.operands).map(|k| load_slot(&mut b, abi.ptr(k))).collect();
    let n = load_slot(&mut b, abi.len_slot());
    let inner = load_slot(&mut b, abi.inner());
    let begin = load_slot(&mut b, abi.begin());
    let end = load_slot(&mut b, abi.end());
    let em = ScanEmitter { spec, ptrs, n, inner };
    let plane = b.ins().imul(n, inner);

    let outer_var = b.declare_var(types::I64);
    b.def_var(outer_var, begin);
    let l = loop_begin(&mut b, outer_var, 1, end);
    let base = b.ins().imul(l.i, plane);
    let col = b.declare_var(types::I64);
    let zero = b.ins().iconst(types::I64, 0);
    b.def_var(col, zero);
    let lanes = lanes(spec.dtype);
    let blocks = [
        (Width::Vector(spec.dtype), UNROLL as usize),
        (Width::Vector(spec.dtype), 1),
        (Width::Scalar, 1),
    ];
    for (width, count) in blocks {
        let step = match width {
            Width::Vector(_) => lanes * count as i64,
            Width::Scalar => 1,
        };
        let cl = loop_begin(&mut b, col, step, inner);
        let off = b.ins().iadd(base, cl.i);
        em.block(&mut b, off, width, count)?;
        loop_end(&mut b, cl);
    }
    loop_end(&mut b, l);
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(frontend);
    Ok(())
}

impl ScanEmitter {
    fn width_lanes(&self, width: Width) -> i64 {
        match width {
            Width::Vector(t) => lanes(t),
            Width::Scalar => 1,
        }
    }

    /// Operand `p`'s `count` values at element offset `off` (+ `c` widths each).
    fn load(&self, b: &mut FunctionBuilder, p: usize, off: Value, width: Width, c: usize) -> Value {
        let d = self.spec.dtype;
        let addr = self.addr(b, p, off, width, c);
        let ty = match width.ty(d) {
            Ok(t) => t,
            Err(_) => ops::scalar_type(d),
        };
        b.ins().load(ty, mem(), addr, 0)
    }

    fn store(&self, b: &mut FunctionBuilder, off: Value, width: Width, c: usize, v: Value) {
        let p = self.spec.operands() - 1;
        let addr = self.addr(b, p, off, width, c);
        b.ins().store(mem(), v, addr, 0);
    }

    fn addr(&self, b: &mut FunctionBuilder, p: usize, off: Value, width: Width, c: usize) -> Value {
        let d = self.spec.dtype;
        let idx = b.ins().iadd_imm_s(off, c as i64 * self.width_lanes(width));
        let shift = d.size_bytes().trailing_zeros() as i64;
        let bytes = b.ins().ishl_imm_u(idx, shift);
        b.ins().iadd(self.ptrs[p], bytes)
    }

    fn constant(
        &self,
        b: &mut FunctionBuilder,
        width: Width,
        value: i64,
    ) -> Result<Value, CodegenError> {
        let d = self.spec.dtype;
        let s = ops::scalar_const(b, d, Scalar::Int(value));
        ops::splat(b, width, d, s)
    }

    fn binary(
        &self,
        b: &mut FunctionBuilder,
        width: Width,
        op: BinaryOp,
        x: Value,
        y: Value,
    ) -> Result<Value, CodegenError> {
        ops::emit_binary(b, width, op, self.spec.dtype, x, y, false)
    }

    /// The element offset of step `t` (scan order) of the column at `off`: position
    /// `n-1-t` when `from_end`, else `t`, times `inner`.
    fn step_offset(&self, b: &mut FunctionBuilder, off: Value, t: Value, from_end: bool) -> Value {
        let k = if from_end {
            let last = b.ins().iadd_imm_s(self.n, -1);
            b.ins().isub(last, t)
        } else {
            t
        };
        let row = b.ins().imul(k, self.inner);
        b.ins().iadd(off, row)
    }

    /// One block of `count` columns (`width` each) starting at element offset `off`.
    fn block(
        &self,
        b: &mut FunctionBuilder,
        off: Value,
        width: Width,
        count: usize,
    ) -> Result<(), CodegenError> {
        match self.spec.op {
            Some(op) => self.scan_block(b, op, off, width, count),
            None => self.grad_block(b, off, width, count),
        }
    }

    fn vars(
        &self,
        b: &mut FunctionBuilder,
        width: Width,
        count: usize,
        init: Value,
    ) -> Vec<Variable> {
        let ty = b.func.dfg.value_type(init);
        let _ = width;
        (0..count)
            .map(|_| {
                let v = b.declare_var(ty);
                b.def_var(v, init);
                v
            })
            .collect()
    }

    /// Walks the `n` steps: `body(b, t)` runs at step `t` (0-based in loop order).
    fn steps(
        &self,
        b: &mut FunctionBuilder,
        body: &mut dyn FnMut(&mut FunctionBuilder, Value) -> Result<(), CodegenError>,
    ) -> Result<(), CodegenError> {
        let t = b.declare_var(types::I64);
        let zero = b.ins().iconst(types::I64, 0);
        b.def_var(t, zero);
        let l = loop_begin(b, t, 1, self.n);
        body(b, l.i)?;
        loop_end(b, l);
        Ok(())
    }

    fn scan_block(
        &self,
        b: &mut FunctionBuilder,
        op: ScanOp,
        off: Value,
        width: Width,
        count: usize,
    ) -> Result<(), CodegenError> {
        let (bin, identity) = match op {
            ScanOp::Sum => (BinaryOp::Add, 0),
            ScanOp::Prod => (BinaryOp::Mul, 1),
        };
        let init = self.constant(b, width, identity)?;
        let acc = self.vars(b, width, count, init);
        let (exclusive, reverse) = (self.spec.exclusive, self.spec.reverse);
        self.steps(b, &mut |b, t| {
            let at = self.step_offset(b, off, t, reverse);
            for (c, var) in acc.iter().enumerate() {
                let x = self.load(b, 0, at, width, c);
                let prev = b.use_var(*var);
                let next = self.binary(b, width, bin, prev, x)?;
                self.store(b, at, width, c, if exclusive { prev } else { next });
                b.def_var(*var, next);
            }
            Ok(())
        })
    }

    /// `dx = E · S` (see `tfn_ir::interp::cumprod_grad_lane`): a pass against the scan order
    /// storing `S` (`S_t = own + x_{t+1} S_{t+1}`, `own = g_t`, or `g_{t+1}` when exclusive),
    /// then a pass in scan order multiplying by the running exclusive product `E`.
    fn grad_block(
        &self,
        b: &mut FunctionBuilder,
        off: Value,
        width: Width,
        count: usize,
    ) -> Result<(), CodegenError> {
        let (exclusive, reverse) = (self.spec.exclusive, self.spec.reverse);
        let zero = self.constant(b, width, 0)?;
        let one = self.constant(b, width, 1)?;
        let acc = self.vars(b, width, count, zero);
        let g_next = self.vars(b, width, count, zero);
        let x_next = self.vars(b, width, count, zero);
        // Against the scan order: from the end unless the scan itself runs from the end.
        self.steps(b, &mut |b, t| {
            let at = self.step_offset(b, off, t, !reverse);
            for c in 0..count {
                let x = self.load(b, 0, at, width, c);
                let g = self.load(b, 1, at, width, c);
                let own = if exclusive { b.use_var(g_next[c]) } else { g };
                let xn = b.use_var(x_next[c]);
                let prev = b.use_var(acc[c]);
                let prod = self.binary(b, width, BinaryOp::Mul, xn, prev)?;
                let s = self.binary(b, width, BinaryOp::Add, own, prod)?;
                self.store(b, at, width, c, s);
                b.def_var(acc[c], s);
                b.def_var(g_next[c], g);
                b.def_var(x_next[c], x);
            }
            Ok(())
        })?;
        let e = self.vars(b, width, count, one);
        self.steps(b, &mut |b, t| {
            let at = self.step_offset(b, off, t, reverse);
            for (c, var) in e.iter().enumerate() {
                let p = self.spec.operands() - 1;
                let s = self.load(b, p, at, width, c);
                let ev = b.use_var(*var);
                let d = self.binary(b, width, BinaryOp::Mul, ev, s)?;
                self.store(b, at, width, c, d);
                let x = self.load(b, 0, at, width, c);
                let next = self.binary(b, width, BinaryOp::Mul, ev, x)?;
                b.def_var(*var, next);
            }
            Ok(())
        })
    }
}
