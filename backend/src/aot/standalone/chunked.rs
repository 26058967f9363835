//! Long reductions over few rows in a self-contained object: the executor's chunked form
//! (`executor/chunked.rs`), generated. The executor calls such a kernel once per fixed-size
//! chunk of the reduced axis into per-chunk partials and combines them in chunk order on the
//! host (floats in `f64`, rounded once); the entry point does the same, so its results are the
//! same bits. The constants, the eligibility and the combining rules are the executor's.

use super::entry::Emit;
use crate::abi::LoopAbi;
use crate::aot::c_abi::TFN_ERR_RUN;
use crate::error::CodegenError;
use crate::executor::{CHUNK, CHUNKED_MAX_ROWS, CHUNKED_MIN_LEN};
use crate::plan::LoopPlan;
use cranelift::codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift::codegen::ir::{types, InstBuilder, MemFlagsData, Type, Value};
use cranelift_module::FuncId;
use tfn_ir::{DType, Op, ReduceOp};

/// Whether a call over collapsed `sizes` runs in chunks (`ChunkedReduce::of`): at most
/// `MAX_ROWS` kept positions (at least one) and at least `MIN_LEN` reduced elements.
pub(super) fn taken(e: &mut Emit, sizes: &[Value]) -> Value {
    let Some((&len, outer)) = sizes.split_last() else { return e.int(0) };
    let kept = e.product(outer);
    let some = e.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, kept, 0);
    let few = e.b.ins().icmp_imm_s(IntCC::SignedLessThanOrEqual, kept, CHUNKED_MAX_ROWS as i64);
    let long = e.b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, len, CHUNKED_MIN_LEN as i64);
    let c = e.b.ins().band(some, few);
    e.b.ins().band(c, long)
}

/// One output of the kernel: its reduction, dtype, pointer slot and outer stride slots.
struct Output {
    op: ReduceOp,
    dtype: DType,
    ptr: usize,
    strides: std::ops::Range<usize>,
}

/// `ChunkedReduce::run` for `kernel` bound to `args` over `sizes`: the partials in a buffer
/// kept in intermediate slot `slot`.
pub(super) fn run(
    e: &mut Emit,
    plan: &LoopPlan,
    kernel: FuncId,
    args: &[Value],
    sizes: &[Value],
    slot: usize,
) -> Result<(), CodegenError> {
    let abi = LoopAbi::of(plan);
    let Some((&len, outer)) = sizes.split_last() else {
        return Err(CodegenError::Internal("a chunked reduction without axes".into()));
    };
    let rank = sizes.len();
    let mut outputs = Vec::new();
    for (i, o) in plan.outputs.iter().enumerate() {
        let node = o.node.and_then(|k| plan.nodes.get(k));
        let Some(Op::Reduce { op, .. }) = node.map(|n| &n.op) else {
            return Err(CodegenError::Internal("a chunked output that is not a reduction".into()));
        };
        let p = plan.inputs.len() + i;
        outputs.push(Output { op: *op, dtype: o.dtype, ptr: abi.ptr(p), strides: abi.strides(p) });
    }
    let kept = e.product(outer);
    let chunk = e.int(CHUNK as i64);
    let rounded = e.b.ins().iadd_imm_s(len, CHUNK as i64 - 1);
    let chunks = e.b.ins().udiv(rounded, chunk);
    // One 8-byte partial per (output, chunk, kept position).
    let per_output = e.b.ins().imul(chunks, kept);
    let bytes = e.b.ins().imul_imm_s(per_output, 8 * outputs.len() as i64);
    let call = e.b.ins().call(e.malloc, &[bytes]);
    let base = e.b.inst_results(call)[0];
    e.keep(slot, base);
    let null = e.b.ins().icmp_imm_s(IntCC::Equal, base, 0);
    e.fail_if(null, TFN_ERR_RUN, "out of memory (malloc failed)")?;
    // The chunks: the kernel on a shorter inner axis, inputs offset to the chunk, outputs
    // into the chunk's partials (row-major over the kept axes, 8 bytes a position).
    e.counted(chunks, &[], |e, c, _| {
        let lo = e.b.ins().imul(c, chunk);
        let rest = e.b.ins().isub(len, lo);
        let n = e.b.ins().umin(rest, chunk);
        let mut mine = args.to_vec();
        mine[abi.size(rank - 1)] = n;
        for (k, op) in plan.inputs.iter().enumerate() {
            if op.full.last() == Some(&true) {
                let offset = e.b.ins().imul_imm_s(lo, op.dtype.size_bytes() as i64);
                mine[abi.ptr(k)] = e.b.ins().iadd(args[abi.ptr(k)], offset);
            }
        }
        for (i, o) in outputs.iter().enumerate() {
            let row = e.b.ins().imul_imm_s(chunks, i as i64);
            let row = e.b.ins().iadd(row, c);
            let at = e.b.ins().imul(row, kept);
            let at = e.b.ins().imul_imm_s(at, 8);
            mine[o.ptr] = e.b.ins().iadd(base, at);
            let mut acc = e.int((8 / o.dtype.size_bytes()) as i64);
            for (s, &size) in o.strides.clone().zip(outer).rev() {
                mine[s] = acc;
                acc = e.b.ins().imul(acc, size);
            }
        }
        e.call_kernel(kernel, &mine);
        Ok(Vec::new())
    })?;
    // Each kept position's partials combined in chunk order into the real output.
    for (i, o) in outputs.iter().enumerate() {
        e.counted(kept, &[], |e, r, _| {
            // The position's element offset in the output.
            let (mut rest, mut offset) = (r, e.int(0));
            for (&size, s) in outer.iter().zip(o.strides.clone()).rev() {
                let digit = e.b.ins().urem(rest, size);
                let step = e.b.ins().imul(digit, args[s]);
                offset = e.b.ins().iadd(offset, step);
                rest = e.b.ins().udiv(rest, size);
            }
            let first = e.b.ins().imul_imm_s(chunks, i as i64);
            let partial = |e: &mut Emit, c: Value| {
                let row = e.b.ins().iadd(first, c);
                let at = e.b.ins().imul(row, kept);
                let at = e.b.ins().iadd(at, r);
                let at = e.b.ins().imul_imm_s(at, 8);
                e.b.ins().iadd(base, at)
            };
            let value = combine(e, o, chunks, len, &partial)?;
            let bytes = e.b.ins().imul_imm_s(offset, o.dtype.size_bytes() as i64);
            let dest = e.b.ins().iadd(args[o.ptr], bytes);
            e.b.ins().store(MemFlagsData::trusted(), value, dest, 0);
            Ok(Vec::new())
        })?;
    }
    Ok(())
}

/// The combined value of one kept position (`executor/chunked.rs`'s `combine`, `float` and
/// `int`): float sums, means and products in `f64` (a sum from `-0.0`, as Rust's `Sum`),
/// rounded once to the output's dtype; max and min keeping NaN; integers wrapping.
fn combine(
    e: &mut Emit,
    o: &Output,
    chunks: Value,
    len: Value,
    partial: &dyn Fn(&mut Emit, Value) -> Value,
) -> Result<Value, CodegenError> {
    let flags = MemFlagsData::trusted();
    match o.dtype {
        DType::F32 | DType::F64 => {
            let f64c = |e: &mut Emit, v: f64| e.b.ins().f64const(v);
            let init = match o.op {
                ReduceOp::Sum | ReduceOp::Mean => f64c(e, -0.0),
                ReduceOp::Prod => f64c(e, 1.0),
                ReduceOp::Max => f64c(e, f64::NEG_INFINITY),
                ReduceOp::Min => f64c(e, f64::INFINITY),
            };
            let op = o.op;
            let dtype = o.dtype;
            let acc = e.counted(chunks, &[init], |e, c, acc| {
                let at = partial(e, c);
                let v = if dtype == DType::F32 {
                    let v = e.b.ins().load(types::F32, flags, at, 0);
                    e.b.ins().fpromote(types::F64, v)
                } else {
                    e.b.ins().load(types::F64, flags, at, 0)
                };
                let a = acc[0];
                let next = match op {
                    ReduceOp::Sum => e.b.ins().fadd(a, v),
                    ReduceOp::Mean => {
                        // Weighted by the chunk's length.
                        let chunk = e.int(CHUNK as i64);
                        let lo = e.b.ins().imul(c, chunk);
                        let rest = e.b.ins().isub(len, lo);
                        let n = e.b.ins().umin(rest, chunk);
                        let weight = e.b.ins().fcvt_from_uint(types::F64, n);
                        let term = e.b.ins().fmul(v, weight);
                        e.b.ins().fadd(a, term)
                    }
                    ReduceOp::Prod => e.b.ins().fmul(a, v),
                    ReduceOp::Max | ReduceOp::Min => {
                        let cc = if op == ReduceOp::Max {
                            FloatCC::GreaterThan
                        } else {
                            FloatCC::LessThan
                        };
                        let pick = e.b.ins().fcmp(cc, v, a);
                        let r = e.b.ins().select(pick, v, a);
                        let nan = e.b.ins().fcmp(FloatCC::Unordered, a, v);
                        // The default NaN, as each chunk's kernel gives.
                        let qnan = e.b.ins().f64const(f64::from_bits(0xfff8_0000_0000_0000));
                        e.b.ins().select(nan, qnan, r)
                    }
                };
                Ok(vec![next])
            })?;
            let mut r = acc[0];
            if op == ReduceOp::Mean {
                let n = e.b.ins().fcvt_from_uint(types::F64, len);
                r = e.b.ins().fdiv(r, n);
            }
            Ok(if dtype == DType::F32 { e.b.ins().fdemote(types::F32, r) } else { r })
        }
        DType::I32 | DType::I64 => {
            let init = match o.op {
                ReduceOp::Sum | ReduceOp::Mean => 0,
                ReduceOp::Prod => 1,
                ReduceOp::Max => i64::MIN,
                ReduceOp::Min => i64::MAX,
            };
            let init = e.int(init);
            let (op, dtype) = (o.op, o.dtype);
            let acc = e.counted(chunks, &[init], |e, c, acc| {
                let at = partial(e, c);
                let v = if dtype == DType::I32 {
                    e.b.ins().sload32(flags, at, 0)
                } else {
                    e.b.ins().load(types::I64, flags, at, 0)
                };
                let a = acc[0];
                Ok(vec![match op {
                    ReduceOp::Sum | ReduceOp::Mean => e.b.ins().iadd(a, v),
                    ReduceOp::Prod => e.b.ins().imul(a, v),
                    ReduceOp::Max => e.b.ins().smax(a, v),
                    ReduceOp::Min => e.b.ins().smin(a, v),
                }])
            })?;
            let ty: Type = if dtype == DType::I32 { types::I32 } else { types::I64 };
            Ok(if ty == types::I32 { e.b.ins().ireduce(types::I32, acc[0]) } else { acc[0] })
        }
        other => Err(CodegenError::Internal(format!("a chunked reduction of {other}"))),
    }
}
