//! Scan kernels on the JIT (`cumsum`, `cumprod`, the gradient of `cumprod`): compiling one
//! ([`compile_scan`]); the executor binds `[outer, n, inner]` ([`scan_sizes`]). The code is in
//! `crate::codegen::scan`.

use crate::codegen::scan::{build_scan, ScanSpec};
use crate::error::CodegenError;
use crate::jit::{Jit, KernelFn};
use tfn_ir::{Graph, Op, ValueId};
use tfn_passes::fusion::Kernel;

/// A compiled scan node: the node, its axis and its kernel.
pub(crate) struct CompiledScan {
    pub node: ValueId,
    pub axis: usize,
    pub func: KernelFn,
}

/// Compiles the single scan node of `kernel`.
pub(crate) fn compile_scan(
    jit: &Jit,
    graph: &Graph,
    kernel: &Kernel,
) -> Result<CompiledScan, CodegenError> {
    let [node] = kernel.nodes.as_slice() else {
        return Err(CodegenError::Internal("a scan kernel of several nodes".into()));
    };
    let n = graph.node(*node);
    let (op, axis, exclusive, reverse) = match n.op {
        Op::Scan { op, axis, exclusive, reverse } => (Some(op), axis, exclusive, reverse),
        Op::CumprodGrad { axis, exclusive, reverse } => (None, axis, exclusive, reverse),
        _ => return Err(CodegenError::Internal(format!("`{}` in a scan kernel", n.op.name()))),
    };
    let spec = ScanSpec { op, dtype: n.ty.dtype, exclusive, reverse };
    let func = jit.compile_fn(&|func, fctx, frontend| build_scan(spec, func, fctx, frontend))?;
    Ok(CompiledScan { node: *node, axis: axis as usize, func })
}

/// The sizes `[outer, n, inner]` of `shape` around `axis`.
pub(crate) fn scan_sizes(shape: &[usize], axis: usize) -> [usize; 3] {
    let outer = shape.iter().take(axis).product();
    let n = shape.get(axis).copied().unwrap_or(1);
    let inner = shape.iter().skip(axis + 1).product();
    [outer, n, inner]
}
