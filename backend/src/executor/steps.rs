//! How each fused kernel runs ([`Step`]) and how a kernel is compiled into one.

use crate::abi::KernelFn;
use crate::error::CodegenError;
use crate::plan::LoopPlan;
use crate::scan::{axis_spec, AxisKernel, AxisSpec};
use tfn_ir::{Graph, Op, ReduceOp, ValueId};
use tfn_passes::fusion::{matmul_operand_chain, Kernel, KernelKind};

pub(super) enum Step {
    Loop {
        plan: LoopPlan,
        func: KernelFn,
        checks_empty: bool,
        /// Its 16-bit float operands run as f32 blocks (`widened.rs`).
        widened: Option<super::widened::Widened>,
    },
    MatMul {
        node: ValueId,
        /// Per operand (`a`, `b`): read it through nodes fusion folded into this kernel (a
        /// transpose, a widening cast of a 16-bit value), from their source (no copy is made).
        folded: [Option<FoldedOperand>; 2],
        epilogue: Option<Epilogue>,
    },
    View {
        input: ValueId,
        output: ValueId,
    },
    /// `Transpose`, `Slice`, `Concat`: a native strided copy.
    Copy {
        node: ValueId,
    },
    /// `Scan`, `CumprodGrad`: a generated scan kernel (`crate::codegen::scan`).
    Scan(crate::scan::AxisKernel),
    /// `ArgMax`, `ArgMin`: a generated kernel (`crate::codegen::arg`).
    Arg(crate::scan::AxisKernel),
    /// `scatter_add`, `index_add`: a native copy-then-accumulate kernel (`crate::scatter`).
    Scatter {
        node: ValueId,
    },
    /// A window op (`crate::window`), with the elementwise epilogue fused into a forward
    /// convolution (run per image as it becomes final).
    Window {
        node: ValueId,
        epilogue: Option<Epilogue>,
    },
    /// The interpreter, on this kernel's nodes: by design for the kinds listed in
    /// [`compile_kernel`] (`fallback: false`), or because the code generator rejected a kernel
    /// it should handle (`fallback: true`, a bug that the session counts and strict mode
    /// refuses).
    Interp {
        reason: String,
        fallback: bool,
    },
}

/// Where the machine code of a step's kernels comes from: the JIT compiles each plan, an AOT
/// build compiles it into an object file, and the AOT runtime takes it from the object's
/// table (checking that the plan is the one the object was built from). Steps, plans and the
/// executor are the same code in every case.
pub(crate) trait KernelSource {
    /// The kernel of a loop plan (elementwise/reduction kernels, GEMM and window epilogues),
    /// asked for in step order.
    fn loop_kernel(&self, plan: &LoopPlan) -> Result<KernelFn, CodegenError>;
    /// The kernel of a scan or an `argmax`/`argmin` (built by their own code generators),
    /// asked for in step order among the loop kernels.
    fn axis_kernel(&self, spec: &AxisSpec) -> Result<KernelFn, CodegenError>;
}

/// A kernel a step asks its [`KernelSource`] for.
#[derive(Clone, Debug)]
pub(crate) enum KernelRequest {
    Loop(LoopPlan),
    Axis(AxisSpec),
}

/// A [`KernelSource`] that compiles nothing: it records what each step asks for and hands out
/// a placeholder, which [`Step::kernel_mut`] later replaces with the kernel compiled for the
/// request (the JIT compiles a function's kernels as one batch, on several threads).
#[derive(Default)]
pub(crate) struct Requests(std::cell::RefCell<Vec<KernelRequest>>);

impl Requests {
    pub fn into_inner(self) -> Vec<KernelRequest> {
        self.0.into_inner()
    }
}

/// What a step holds until its kernel is compiled. Never called: every step that asked for a
/// kernel gets its own before the function is returned (`CompiledFunction::compile_in`).
extern "C" fn placeholder(_: *const i64) {
    std::process::abort()
}

impl KernelSource for Requests {
    fn loop_kernel(&self, plan: &LoopPlan) -> Result<KernelFn, CodegenError> {
        self.0.borrow_mut().push(KernelRequest::Loop(plan.clone()));
        Ok(placeholder as KernelFn)
    }

    fn axis_kernel(&self, spec: &AxisSpec) -> Result<KernelFn, CodegenError> {
        self.0.borrow_mut().push(KernelRequest::Axis(*spec));
        Ok(placeholder as KernelFn)
    }
}

/// The elementwise kernel fused after a native kernel (a GEMM, a window op), run on the
/// native kernel's output as it becomes final.
#[derive(Clone)]
pub(crate) struct Epilogue {
    pub plan: LoopPlan,
    pub func: KernelFn,
    /// Its 16-bit float operands run as f32 blocks (`widened.rs`).
    pub widened: Option<super::widened::Widened>,
}

/// A matmul operand read through nodes fusion folded into its kernel
/// (`tfn_passes::fusion::matmul_operand_chain`).
#[derive(Clone, Debug)]
pub(crate) struct FoldedOperand {
    /// The value the GEMM reads (`f16`/`bf16` under a widening cast: widened while packing).
    pub source: ValueId,
    /// The folded nodes, from the operand down to `source`'s reader.
    pub nodes: Vec<ValueId>,
    /// Operand axis `i` is axis `perm[i]` of `source` (`None`: the same axes).
    pub perm: Option<Vec<u32>>,
}

impl Step {
    /// The step's compiled kernel, if it has one (each step asks its source for at most one).
    pub fn kernel_mut(&mut self) -> Option<&mut KernelFn> {
        match self {
            Step::Loop { func, .. } => Some(func),
            Step::MatMul { epilogue, .. } | Step::Window { epilogue, .. } => {
                epilogue.as_mut().map(|e| &mut e.func)
            }
            Step::Scan(k) | Step::Arg(k) => Some(&mut k.func),
            Step::View { .. } | Step::Copy { .. } | Step::Scatter { .. } | Step::Interp { .. } => {
                None
            }
        }
    }
}

/// The step of an `argmax`/`argmin` kernel (`scan: false`) or a scan kernel.
fn axis_step(
    src: &dyn KernelSource,
    graph: &Graph,
    kernel: &Kernel,
    scan: bool,
) -> Result<Step, CodegenError> {
    let (spec, node, axis) = axis_spec(graph, kernel, scan)?;
    let func = src.axis_kernel(&spec)?;
    let k = AxisKernel { node, axis, func };
    Ok(if scan { Step::Scan(k) } else { Step::Arg(k) })
}

pub(super) fn compile_kernel(
    jit: &dyn KernelSource,
    graph: &Graph,
    kernel: &Kernel,
) -> Result<Step, CodegenError> {
    match kernel.kind {
        KernelKind::Elementwise | KernelKind::Reduction => {
            let plan = LoopPlan::build(
                graph,
                &kernel.nodes,
                &kernel.inputs,
                &kernel.outputs,
                &kernel.domain,
                &kernel.axes,
            )?;
            let checks_empty = plan
                .nodes
                .iter()
                .any(|n| matches!(n.op, Op::Reduce { op: ReduceOp::Max | ReduceOp::Min, .. }));
            let (plan, widened) = super::widened::Widened::plan(plan);
            let func = jit.loop_kernel(&plan)?;
            Ok(Step::Loop { plan, func, checks_empty, widened })
        }
        KernelKind::MatMul => {
            let Some(&node) =
                kernel.nodes.iter().find(|v| matches!(graph.node(**v).op, Op::MatMul))
            else {
                return Err(CodegenError::Internal("matmul kernel without matmul".into()));
            };
            let dtype = graph.ty(node).dtype;
            if !dtype.is_float() {
                // By design: the GEMMs are float; integer products are rare and small.
                let reason = format!("integer matmul ({dtype}): reference kernel");
                return Ok(Step::Interp { reason, fallback: false });
            }
            // Operands read through a transpose or a widening cast that fusion folded into this
            // kernel: the GEMM reads their source with permuted strides, widening 16-bit values
            // while packing.
            let mut folded = [None, None];
            for (slot, x) in graph.node(node).inputs.iter().take(2).enumerate() {
                let (nodes, source, perm) = matmul_operand_chain(graph, &kernel.nodes, *x);
                if !nodes.is_empty() {
                    folded[slot] = Some(FoldedOperand { source, nodes, perm });
                }
            }
            let in_operand = |v: &ValueId| folded.iter().flatten().any(|f| f.nodes.contains(v));
            let rest: Vec<ValueId> =
                kernel.nodes.iter().copied().filter(|v| *v != node && !in_operand(v)).collect();
            let epilogue = if rest.iter().any(|v| !matches!(graph.node(*v).op, Op::Const(_))) {
                let used = |v: &ValueId| rest.iter().any(|n| graph.node(*n).inputs.contains(v));
                let mut inputs: Vec<ValueId> = kernel.inputs.iter().copied().filter(used).collect();
                inputs.push(node);
                let outputs: Vec<ValueId> =
                    kernel.outputs.iter().copied().filter(|v| *v != node).collect();
                let plan = LoopPlan::build(graph, &rest, &inputs, &outputs, &kernel.domain, &[])?;
                let (plan, widened) = super::widened::Widened::plan(plan);
                let func = jit.loop_kernel(&plan)?;
                Some(Epilogue { plan, func, widened })
            } else {
                None
            };
            Ok(Step::MatMul { node, folded, epilogue })
        }
        KernelKind::View => match kernel.nodes.as_slice() {
            [v] if matches!(graph.node(*v).op, Op::Reshape) => {
                match graph.node(*v).inputs.first() {
                    Some(&input) => Ok(Step::View { input, output: *v }),
                    None => Err(CodegenError::Internal("reshape without input".into())),
                }
            }
            _ => Err(CodegenError::Unsupported("view kernel".into())),
        },
        KernelKind::Copy => match kernel.nodes.as_slice() {
            [v] if matches!(
                graph.node(*v).op,
                Op::Transpose { .. } | Op::Slice { .. } | Op::Concat { .. }
            ) =>
            {
                Ok(Step::Copy { node: *v })
            }
            _ => Err(CodegenError::Unsupported("copy kernel of several nodes".into())),
        },
        // By design: an extern op's kernel is the user's, called through the interpreter's
        // extern mechanism.
        KernelKind::Extern => {
            Ok(Step::Interp { reason: "extern op: the registered kernel".into(), fallback: false })
        }
        KernelKind::Scatter => match kernel.nodes.as_slice() {
            [v] if matches!(graph.node(*v).op, Op::Index { .. }) => Ok(Step::Scatter { node: *v }),
            _ => Err(CodegenError::Unsupported("scatter kernel of several nodes".into())),
        },
        KernelKind::ArgMax | KernelKind::ArgMin => axis_step(jit, graph, kernel, false),
        KernelKind::Window => {
            let Some(&node) =
                kernel.nodes.iter().find(|v| matches!(graph.node(**v).op, Op::Window { .. }))
            else {
                return Err(CodegenError::Internal("window kernel without window op".into()));
            };
            let rest: Vec<ValueId> = kernel.nodes.iter().copied().filter(|v| *v != node).collect();
            let epilogue = if rest.iter().any(|v| !matches!(graph.node(*v).op, Op::Const(_))) {
                let used = |v: &ValueId| rest.iter().any(|n| graph.node(*n).inputs.contains(v));
                let mut inputs: Vec<ValueId> = kernel.inputs.iter().copied().filter(used).collect();
                inputs.push(node);
                let outputs: Vec<ValueId> =
                    kernel.outputs.iter().copied().filter(|v| *v != node).collect();
                let plan = LoopPlan::build(graph, &rest, &inputs, &outputs, &kernel.domain, &[])?;
                let (plan, widened) = super::widened::Widened::plan(plan);
                let func = jit.loop_kernel(&plan)?;
                Some(Epilogue { plan, func, widened })
            } else {
                None
            };
            Ok(Step::Window { node, epilogue })
        }
        KernelKind::Scan => axis_step(jit, graph, kernel, true),
    }
}
