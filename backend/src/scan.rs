//! Kernels along one axis on the JIT: scans (`cumsum`, `cumprod`, the gradient of `cumprod`;
//! [`compile_scan`], code in `crate::codegen::scan`) and `argmax`/`argmin` ([`compile_arg`],
//! code in `crate::codegen::arg`). The executor binds their operands viewed as
//! `[outer, n, inner]` around the axis ([`scan_sizes`]) and splits `outer` across threads.

use crate::abi::KernelFn;
#[cfg(feature = "jit")]
use crate::codegen::arg::build_arg;
#[cfg(feature = "jit")]
use crate::codegen::scan::{build_scan, ScanSpec};
use crate::error::CodegenError;
#[cfg(feature = "jit")]
use cranelift::codegen::ir::Function;
#[cfg(feature = "jit")]
use cranelift::codegen::isa::TargetFrontendConfig;
#[cfg(feature = "jit")]
use cranelift::frontend::FunctionBuilderContext;
use tfn_ir::{DType, Graph, Op, ScanOp, ValueId};
use tfn_passes::fusion::Kernel;

/// A compiled kernel along one axis: the node, its axis and its kernel.
pub(crate) struct AxisKernel {
    pub node: ValueId,
    pub axis: usize,
    pub func: KernelFn,
}

/// What a kernel along one axis computes: everything its code generator reads (so, in an AOT
/// object, its fingerprint, as a loop plan is a loop kernel's).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum AxisSpec {
    /// A scan: `Some(op)`, a `cumsum`/`cumprod`; `None`, the gradient of `cumprod`.
    Scan { op: Option<ScanOp>, dtype: DType, exclusive: bool, reverse: bool },
    /// An `argmax` (`max`) or `argmin` over `dtype` values.
    Arg { max: bool, dtype: DType },
}

/// The spec, node and axis of the single scan (`scan`) or `argmax`/`argmin` node of `kernel`.
pub(crate) fn axis_spec(
    graph: &Graph,
    kernel: &Kernel,
    scan: bool,
) -> Result<(AxisSpec, ValueId, usize), CodegenError> {
    let what = if scan { "a scan kernel" } else { "an argmax/argmin kernel" };
    let [node] = kernel.nodes.as_slice() else {
        return Err(CodegenError::Internal(format!("{what} of several nodes")));
    };
    let n = graph.node(*node);
    let (spec, axis) = match (&n.op, scan) {
        (&Op::Scan { op, axis, exclusive, reverse }, true) => {
            (AxisSpec::Scan { op: Some(op), dtype: n.ty.dtype, exclusive, reverse }, axis)
        }
        (&Op::CumprodGrad { axis, exclusive, reverse }, true) => {
            (AxisSpec::Scan { op: None, dtype: n.ty.dtype, exclusive, reverse }, axis)
        }
        (&Op::ArgMax { axis, .. } | &Op::ArgMin { axis, .. }, false) => {
            let Some(&x) = n.inputs.first() else {
                return Err(CodegenError::Internal("argmax/argmin without input".into()));
            };
            let max = matches!(n.op, Op::ArgMax { .. });
            (AxisSpec::Arg { max, dtype: graph.ty(x).dtype }, axis)
        }
        (op, _) => return Err(CodegenError::Internal(format!("`{}` in {what}", op.name()))),
    };
    Ok((spec, *node, axis as usize))
}

/// Builds the kernel of `spec` into `func` (`crate::codegen::scan`, `crate::codegen::arg`):
/// the JIT and AOT objects compile axis kernels through here.
#[cfg(feature = "jit")]
pub(crate) fn build_axis(
    spec: AxisSpec,
    func: &mut Function,
    fctx: &mut FunctionBuilderContext,
    frontend: TargetFrontendConfig,
) -> Result<(), CodegenError> {
    match spec {
        AxisSpec::Scan { op, dtype, exclusive, reverse } => {
            build_scan(ScanSpec { op, dtype, exclusive, reverse }, func, fctx, frontend)
        }
        AxisSpec::Arg { max, dtype } => build_arg(max, dtype, func, fctx, frontend),
    }
}

/// The sizes `[outer, n, inner]` of `shape` around `axis`.
pub(crate) fn scan_sizes(shape: &[usize], axis: usize) -> [usize; 3] {
    let outer = shape.iter().take(axis).product();
    let n = shape.get(axis).copied().unwrap_or(1);
    let inner = shape.iter().skip(axis + 1).product();
    [outer, n, inner]
}
