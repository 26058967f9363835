//! Lowering of the index and scan primitives: `iota_like`, `arange`, `argmin`, `cumsum`,
//! `cumprod` and the internal `cumprod_grad` (the gradient `grads.tfn` gives `cumprod`).
//!
//! `arange(n)`'s `n` is an `Int` argument, so, like `full`'s `shape`, it is an attribute of the
//! call's signature (part of the cache key) and a constant size of the graph.

use super::call::{diag, BoundCall};
use super::instantiate::Lowerer;
use super::primitives::Prim;
use crate::diagnostic::Diagnostic;
use crate::dtype::DType;
use crate::graph::TensorType;
use crate::op::Op;
use crate::shape::Shape;

impl Lowerer<'_> {
    /// The `dtype` argument of `iota_like`/`arange`: [`Op::accepted_created_dtypes`] (which
    /// the prelude declares, so a call of another dtype does not get here).
    fn index_dtype(&self, call: &BoundCall) -> Result<DType, Diagnostic> {
        let dtype = call.dtype("dtype")?;
        let allowed = Op::Iota { axis: 0 }.accepted_created_dtypes();
        if !allowed.contains(dtype) {
            let msg = format!("an index cannot have dtype {dtype} (only {allowed})");
            return Err(call.error("E0504", "dtype", msg));
        }
        Ok(dtype)
    }

    /// `iota` of type `ty`: counted in the compute dtype of a storage dtype and cast — so
    /// `i8`/`u8` indices wrap (NumPy's `arange(300, dtype=uint8)`) and `f16`/`bf16` ones
    /// round to nearest even — the exact count carried for later ops ([`crate::storage`]).
    fn iota(
        &mut self,
        axis: u32,
        inputs: Vec<crate::ValueId>,
        ty: TensorType,
        span: Option<crate::span::Span>,
    ) -> crate::ValueId {
        let wide = ty.dtype.compute();
        if wide == ty.dtype {
            return self.emit(Op::Iota { axis }, inputs, ty, span);
        }
        let count = TensorType { dtype: wide, shape: ty.shape.clone() };
        let exact = self.emit(Op::Iota { axis }, inputs, count, span);
        let narrow = self.emit(Op::Cast(ty.dtype), vec![exact], ty, span);
        self.carried.insert(narrow, exact);
        narrow
    }

    pub(super) fn lower_scan_primitive(
        &mut self,
        prim: Prim,
        call: &BoundCall,
    ) -> Result<crate::ValueId, Diagnostic> {
        let span = call.span;
        let infer_err = |m: String| diag("E0503", m, span);
        match prim {
            Prim::IotaLike => {
                let x = call.tensor("x")?;
                let shape = self.graph.ty(x).shape.clone();
                let axis = self.axis(call, "dim", "x", call.int("dim")?, shape.rank())? as u32;
                let ty = TensorType { dtype: self.index_dtype(call)?, shape };
                Ok(self.iota(axis, vec![x], ty, span))
            }
            Prim::Arange => {
                let n = call.size_item("n")?;
                let mut n = self.shape_dims(&[n], |n| {
                    let msg = format!("invalid size {n} in `arange` (it must be >= 0)");
                    call.error("E0503", "n", msg)
                })?;
                let ty =
                    TensorType { dtype: self.index_dtype(call)?, shape: Shape(vec![n.remove(0)]) };
                Ok(self.iota(0, Vec::new(), ty, span))
            }
            Prim::ArgMin => {
                let x = call.tensor("x")?;
                let rank = self.graph.ty(x).shape.rank();
                let axis = self.axis(call, "dim", "x", call.int("dim")?, rank)? as u32;
                self.no_empty_extremum(call, "argmin", x, &[axis])?;
                let op = Op::ArgMin { axis, keepdim: call.bool("keepdim")? };
                self.emit_inferred(op, vec![x], span).map_err(infer_err)
            }
            Prim::Scan(op) => {
                let x = call.tensor("x")?;
                let rank = self.graph.ty(x).shape.rank();
                if rank == 0 {
                    let msg = format!("`{}` of a rank-0 tensor: there is no dim", op.name());
                    return Err(call.error("E0505", "x", msg));
                }
                let axis = self.axis(call, "dim", "x", call.int("dim")?, rank)? as u32;
                let (exclusive, reverse) = (call.bool("exclusive")?, call.bool("reverse")?);
                let op = Op::Scan { op, axis, exclusive, reverse };
                self.emit_inferred(op, vec![x], span).map_err(infer_err)
            }
            Prim::CumprodGrad => {
                let (x, g) = (call.tensor("x")?, call.tensor("g")?);
                let shapes = [self.ty(x).shape, self.ty(g).shape];
                if shapes[0].rank() != shapes[1].rank() || self.unify_broadcast(&shapes).is_err() {
                    let msg = format!(
                        "`cumprod_grad` of shape {} with a gradient of shape {}",
                        self.syms.shown(&shapes[0]),
                        self.syms.shown(&shapes[1])
                    );
                    return Err(call.error("E0503", "g", msg));
                }
                let rank = self.graph.ty(x).shape.rank();
                let axis = self.axis(call, "dim", "x", call.int("dim")?, rank)? as u32;
                let (exclusive, reverse) = (call.bool("exclusive")?, call.bool("reverse")?);
                let op = Op::CumprodGrad { axis, exclusive, reverse };
                self.emit_inferred(op, vec![x, g], span).map_err(infer_err)
            }
            _ => Err(diag("E0503", format!("{prim:?} is not an index or scan primitive"), span)),
        }
    }
}
