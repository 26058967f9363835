//! Inlined calls of composed functions that have their own `grad` block (custom VJPs).

use super::prim_call::PrimCall;
use std::ops::Range;
use tfn_ir::{Graph, Library, ValueId};

/// An inlined call whose gradient comes from its function's `grad` block: the sweep applies
/// the block at `anchor` (the last node of `body`) and does not differentiate `body`.
pub(crate) struct CustomRegion {
    pub anchor: usize,
    pub body: Range<usize>,
    pub call: PrimCall,
    pub outputs: Vec<ValueId>,
}

/// The outermost custom-VJP regions of `graph`.
pub(crate) fn custom_regions(_lib: &Library, _graph: &Graph) -> Vec<CustomRegion> {
    Vec::new()
}
