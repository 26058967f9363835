//! Inlined calls of composed functions that have their own `grad` block (custom VJPs), as
//! lowering recorded them ([`CallRegion`]), and their renumbering when nodes are pruned.

use super::prim_call::{PrimCall, TensorArg};
use std::ops::Range;
use tfn_ir::lower::{CallRegion, RegionArg};
use tfn_ir::ValueId;

/// An inlined call whose gradient comes from its function's `grad` block: the sweep applies
/// the block at `anchor` (the last node of `body`) and does not differentiate `body`.
pub(crate) struct CustomRegion {
    pub anchor: usize,
    pub body: Range<usize>,
    pub call: PrimCall,
    pub outputs: Vec<ValueId>,
}

/// The outermost regions of `regions` that can be used as custom VJPs in a graph of
/// `node_count` nodes: a non-empty body that computes every output.
pub(crate) fn custom_regions(regions: &[CallRegion], node_count: usize) -> Vec<CustomRegion> {
    let usable = |r: &CallRegion| {
        let (a, b) = (r.nodes.0 as usize, r.nodes.1 as usize);
        a < b
            && b <= node_count
            && !r.outputs.is_empty()
            && r.outputs.iter().all(|o| (a..b).contains(&o.index()))
    };
    let candidates: Vec<&CallRegion> = regions.iter().filter(|r| usable(r)).collect();
    let inside = |r: &CallRegion, s: &CallRegion| {
        s.nodes.0 <= r.nodes.0 && r.nodes.1 <= s.nodes.1 && s.nodes != r.nodes
    };
    let mut out: Vec<CustomRegion> = Vec::new();
    for (i, r) in candidates.iter().enumerate() {
        // Outermost only; of two regions with the same nodes, the later recorded (outer) one.
        let nested = candidates
            .iter()
            .enumerate()
            .any(|(j, s)| inside(r, s) || (s.nodes == r.nodes && j > i));
        if nested {
            continue;
        }
        let tensors = r
            .inputs
            .iter()
            .map(|(n, a)| {
                let arg = match a {
                    RegionArg::One(v) => TensorArg::One(*v),
                    RegionArg::List(vs) => TensorArg::List(vs.clone()),
                };
                (n.clone(), arg)
            })
            .collect();
        let call = PrimCall {
            name: r.function.clone(),
            overload: r.overload.clone(),
            tensors,
            attrs: r.attrs.clone(),
        };
        let body = r.nodes.0 as usize..r.nodes.1 as usize;
        out.push(CustomRegion { anchor: body.end - 1, body, call, outputs: r.outputs.clone() });
    }
    out
}

/// `regions` after the graph's nodes were renumbered by `renumber` (`None`: removed). A region
/// survives when its outputs and inputs do and its body stays contiguous.
pub(crate) fn renumber_regions(
    regions: &[CallRegion],
    renumber: &[Option<ValueId>],
) -> Vec<CallRegion> {
    let map = |v: &ValueId| renumber.get(v.index()).copied().flatten();
    let map_arg = |a: &RegionArg| -> Option<RegionArg> {
        Some(match a {
            RegionArg::One(v) => RegionArg::One(map(v)?),
            RegionArg::List(vs) => RegionArg::List(vs.iter().map(map).collect::<Option<_>>()?),
        })
    };
    regions
        .iter()
        .filter_map(|r| {
            let kept: Vec<ValueId> =
                (r.nodes.0..r.nodes.1).filter_map(|i| map(&ValueId(i))).collect();
            let (first, last) = (kept.first()?, kept.last()?);
            if (last.0 - first.0) as usize + 1 != kept.len() {
                return None;
            }
            let inputs = r
                .inputs
                .iter()
                .map(|(n, a)| Some((n.clone(), map_arg(a)?)))
                .collect::<Option<Vec<_>>>()?;
            let outputs = r.outputs.iter().map(map).collect::<Option<Vec<_>>>()?;
            Some(CallRegion { inputs, outputs, nodes: (first.0, last.0 + 1), ..r.clone() })
        })
        .collect()
}
