//! Kernels along one axis on the JIT: scans (`cumsum`, `cumprod`, the gradient of `cumprod`;
//! [`compile_scan`], code in `crate::codegen::scan`) and `argmax`/`argmin` ([`compile_arg`],
//! code in `crate::codegen::arg`). The executor binds their operands viewed as
//! `[outer, n, inner]` around the axis ([`scan_sizes`]) and splits `outer` across threads.

use crate::abi::KernelFn;
#[cfg(feature = "jit")]
use crate::codegen::arg::build_arg;
#[cfg(feature = "jit")]
use crate::codegen::scan::{build_scan, ScanSpec};
#[cfg(feature = "jit")]
use crate::error::CodegenError;
#[cfg(feature = "jit")]
use crate::jit::Jit;
use tfn_ir::ValueId;
#[cfg(feature = "jit")]
use tfn_ir::{Graph, Op};
#[cfg(feature = "jit")]
use tfn_passes::fusion::Kernel;

/// A compiled kernel along one axis: the node, its axis and its kernel.
pub(crate) struct AxisKernel {
    pub node: ValueId,
    pub axis: usize,
    pub func: KernelFn,
}

/// Compiles the single scan node of `kernel`.
#[cfg(feature = "jit")]
pub(crate) fn compile_scan(
    jit: &Jit,
    graph: &Graph,
    kernel: &Kernel,
) -> Result<AxisKernel, CodegenError> {
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
    Ok(AxisKernel { node: *node, axis: axis as usize, func })
}

/// The sizes `[outer, n, inner]` of `shape` around `axis`.
pub(crate) fn scan_sizes(shape: &[usize], axis: usize) -> [usize; 3] {
    let outer = shape.iter().take(axis).product();
    let n = shape.get(axis).copied().unwrap_or(1);
    let inner = shape.iter().skip(axis + 1).product();
    [outer, n, inner]
}

/// Compiles the single `argmax`/`argmin` node of `kernel`.
#[cfg(feature = "jit")]
pub(crate) fn compile_arg(
    jit: &Jit,
    graph: &Graph,
    kernel: &Kernel,
) -> Result<AxisKernel, CodegenError> {
    let [node] = kernel.nodes.as_slice() else {
        return Err(CodegenError::Internal("an argmax/argmin kernel of several nodes".into()));
    };
    let n = graph.node(*node);
    let (max, axis) = match n.op {
        Op::ArgMax { axis, .. } => (true, axis),
        Op::ArgMin { axis, .. } => (false, axis),
        _ => return Err(CodegenError::Internal(format!("`{}` in an arg kernel", n.op.name()))),
    };
    let Some(&x) = n.inputs.first() else {
        return Err(CodegenError::Internal("argmax/argmin without input".into()));
    };
    let dtype = graph.ty(x).dtype;
    let func =
        jit.compile_fn(&|func, fctx, frontend| build_arg(max, dtype, func, fctx, frontend))?;
    Ok(AxisKernel { node: *node, axis: axis as usize, func })
}
