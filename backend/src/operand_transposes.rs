//! Matmul operands read through a transpose instead of materialising it.
//!
//! A `Transpose` that swaps the last two axes and feeds only a matmul (autodiff's
//! `ct @ transpose(b)` and `transpose(a) @ ct`) need not be copied: the packed GEMM reads any
//! strides, so the matmul reads the transpose's source with swapped strides and the copy
//! kernel is skipped. This finds those transposes in a fused graph; the executor applies them
//! when both kernels compiled natively (a matmul run by the interpreter needs the copy).

use std::collections::HashMap;
use tfn_ir::{Graph, Op, ValueId};
use tfn_passes::fusion::{FusedGraph, KernelKind};

/// One matmul operand that can be read from a transpose's source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OperandTranspose {
    /// Index of the matmul kernel.
    pub matmul_kernel: usize,
    /// Operand slot of the matmul: 0 = `a`, 1 = `b`.
    pub slot: usize,
    /// Index of the copy kernel computing the transpose (skipped when applied).
    pub copy_kernel: usize,
    /// The transpose's input, read as the operand with its last two axes swapped.
    pub source: ValueId,
}

/// Whether `perm` swaps the last two axes and keeps the others.
fn swaps_last_two(perm: &[u32]) -> bool {
    let r = perm.len();
    r >= 2
        && perm.iter().take(r - 2).enumerate().all(|(i, &p)| p as usize == i)
        && perm[r - 2] as usize == r - 1
        && perm[r - 1] as usize == r - 2
}

/// Every matmul operand of `fused` computed by a last-two-axes transpose copy kernel that
/// nothing else reads (no other kernel, no epilogue node, not a graph output).
pub(crate) fn operand_transposes(graph: &Graph, fused: &FusedGraph) -> Vec<OperandTranspose> {
    let mut producer: HashMap<ValueId, usize> = HashMap::new();
    for (index, kernel) in fused.kernels.iter().enumerate() {
        for v in &kernel.outputs {
            producer.insert(*v, index);
        }
    }
    let mut found = Vec::new();
    for (matmul_kernel, kernel) in fused.kernels.iter().enumerate() {
        if kernel.kind != KernelKind::MatMul {
            continue;
        }
        let Some(&mm) = kernel.nodes.iter().find(|v| matches!(graph.node(**v).op, Op::MatMul))
        else {
            continue;
        };
        for (slot, &x) in graph.node(mm).inputs.iter().enumerate().take(2) {
            let Some(&copy_kernel) = producer.get(&x) else { continue };
            let copy = &fused.kernels[copy_kernel];
            let node = graph.node(x);
            let Op::Transpose { perm } = &node.op else { continue };
            let Some(&source) = node.inputs.first() else { continue };
            let only_user = !graph.outputs.contains(&x)
                && !fused
                    .kernels
                    .iter()
                    .enumerate()
                    .any(|(j, k)| j != matmul_kernel && k.inputs.contains(&x))
                && !kernel.nodes.iter().any(|v| *v != mm && graph.node(*v).inputs.contains(&x));
            if copy.kind == KernelKind::Copy
                && copy.nodes.as_slice() == [x]
                && swaps_last_two(perm)
                && graph.ty(source).dtype == node.ty.dtype
                && only_user
            {
                found.push(OperandTranspose { matmul_kernel, slot, copy_kernel, source });
            }
        }
    }
    found
}
