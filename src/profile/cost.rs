//! What one call of a kernel moves and computes, for the GB/s and GFLOP/s of a profile.
//!
//! **Bytes**: every operand read once and every result written once — each kernel input in
//! full (a broadcast operand counts its own size, not the loop's), except a source read only
//! through views folded into the kernel (`slice`, `transpose`), which counts the views'
//! elements; a zero-copy reshape moves nothing. This is the ideal traffic (what `tfnc ir
//! --stage fused` totals); caches can make the real traffic smaller (a row re-read from L1)
//! or larger (a GEMM re-reading panels).
//!
//! **Flops** (the convention of `docs/profiling.md`): one per element of the
//! result for every elementwise arithmetic, comparison or transcendental op (`exp` counts 1,
//! like `add`); one per input element for reductions, `argmax`/`argmin`, and one per element
//! for scans; `2·M·N·K` for a matmul (per batch); `2·N·Cout·OH·OW·(Cin/groups)·KH·KW` for every
//! convolution (forward, input or weight gradient: the same sum); one per window tap per
//! output element for pooling and its gradients. Data movement and selection (`where`,
//! `cast`, shape ops, indexed reads and writes, `full`, `iota`, random numbers) and extern
//! ops count 0.

use tfn_ir::bind::try_concrete_shape;
use tfn_ir::op_window::{conv_geom, pool_geom};
use tfn_ir::{Graph, Op, ValueId, WindowKind};
use tfn_passes::fusion::{Kernel, KernelKind};

/// A kernel's bytes and flops per call, for the bound `sizes`.
pub(super) fn kernel_cost(graph: &Graph, kernel: &Kernel, sizes: &[usize]) -> (u64, u64) {
    let shape = |v: ValueId| try_concrete_shape(&graph.ty(v).shape, sizes).unwrap_or_default();
    let elements = |v: ValueId| shape(v).iter().map(|&d| d as u64).product::<u64>();
    let bytes_of = |v: ValueId| elements(v).saturating_mul(graph.ty(v).dtype.size_bytes() as u64);
    if kernel.kind == KernelKind::View {
        return (0, 0);
    }
    let mut bytes = 0u64;
    for &input in &kernel.inputs {
        let uses: Vec<&ValueId> =
            kernel.nodes.iter().filter(|&&v| graph.node(v).inputs.contains(&input)).collect();
        let view = |v: &&ValueId| {
            let n = graph.node(**v);
            matches!(n.op, Op::Slice { .. } | Op::Transpose { .. })
                && n.inputs.first() == Some(&input)
        };
        let read = if !uses.is_empty() && uses.iter().all(view) {
            uses.iter().map(|&&v| bytes_of(v)).sum::<u64>().min(bytes_of(input))
        } else {
            bytes_of(input)
        };
        bytes = bytes.saturating_add(read);
    }
    for &output in &kernel.outputs {
        bytes = bytes.saturating_add(bytes_of(output));
    }
    let mut flops = 0u64;
    for &v in &kernel.nodes {
        let node = graph.node(v);
        let out = elements(v);
        let first_input = || node.inputs.first().map_or(0, |&i| elements(i));
        let f = match &node.op {
            Op::Unary(_) | Op::Binary(_) | Op::Scan { .. } | Op::CumprodGrad { .. } => out,
            // A multiply and an add.
            Op::MulAdd => out.saturating_mul(2),
            Op::Reduce { .. } | Op::ArgMax { .. } | Op::ArgMin { .. } => first_input(),
            Op::MatMul => {
                let k = node.inputs.first().and_then(|&a| shape(a).last().copied()).unwrap_or(0);
                out.saturating_mul(2 * k as u64)
            }
            Op::Window { kind, attrs } => {
                let inputs: Vec<Vec<usize>> = node.inputs.iter().map(|&i| shape(i)).collect();
                let refs: Vec<&[usize]> = inputs.iter().map(Vec::as_slice).collect();
                let operand = |i: usize| refs.get(i).copied().unwrap_or(&[]);
                let result = shape(v);
                // Pools: (x, pooled image) as the interpreter passes them to `pool_geom`.
                let pool = |x: &[usize], small: &[usize]| {
                    pool_geom(*kind, attrs, x, small).map_or(0, |g| {
                        [g.planes, g.oh, g.ow, g.kernel[0], g.kernel[1]]
                            .iter()
                            .fold(1u64, |acc, &d| acc.saturating_mul(d as u64))
                    })
                };
                match kind {
                    WindowKind::Conv | WindowKind::ConvTranspose | WindowKind::ConvWeight => {
                        conv_geom(*kind, attrs, &refs, &result).map_or(0, |g| {
                            [g.n, g.cout, g.oh, g.ow, g.cin / g.groups.max(1), g.kh, g.kw]
                                .iter()
                                .fold(2u64, |acc, &d| acc.saturating_mul(d as u64))
                        })
                    }
                    WindowKind::MaxPool | WindowKind::AvgPool => pool(operand(0), &result),
                    WindowKind::MaxPoolGrad => pool(operand(0), operand(1)),
                    WindowKind::AvgPoolGrad => pool(operand(1), operand(0)),
                }
            }
            Op::Param(_)
            | Op::Const(_)
            | Op::Where
            | Op::Cast(_)
            | Op::Iota { .. }
            | Op::Reshape
            | Op::Transpose { .. }
            | Op::BroadcastTo
            | Op::Concat { .. }
            | Op::Slice { .. }
            | Op::Full { .. }
            | Op::Random { .. }
            | Op::Extern { .. }
            | Op::Index { .. } => 0,
        };
        flops = flops.saturating_add(f);
    }
    (bytes, flops)
}

/// The ops a kernel fuses, for a table: names in order of first appearance with a count
/// when repeated (`mul×5 add×2 tanh`), without parameters and copied constants; shortened
/// to about `width` characters with `…`.
pub(super) fn ops_summary(graph: &Graph, kernel: &Kernel, width: usize) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for &v in &kernel.nodes {
        let op = &graph.node(v).op;
        if matches!(op, Op::Param(_) | Op::Const(_)) {
            continue;
        }
        let name = op.name();
        match counts.iter_mut().find(|(n, _)| *n == name) {
            Some((_, c)) => *c += 1,
            None => counts.push((name, 1)),
        }
    }
    let mut text = String::new();
    for (i, (name, count)) in counts.iter().enumerate() {
        let item = if *count > 1 { format!("{name}×{count}") } else { name.clone() };
        let sep = if text.is_empty() { 0 } else { 1 };
        if text.chars().count() + sep + item.chars().count() > width && i > 0 {
            text.push_str(" …");
            break;
        }
        if sep == 1 {
            text.push(' ');
        }
        text.push_str(&item);
    }
    if text.is_empty() {
        text.push('-');
    }
    text
}
