//! Lowering of `rand_like`/`randn_like` ([`Op::Random`]): the argument checks that name the
//! culprit (a float `dtype`, an `i64` key of shape `[]` or `[2]`).

use super::call::BoundCall;
use super::instantiate::Lowerer;
use crate::diagnostic::Diagnostic;
use crate::dtype::DType;
use crate::graph::TensorType;
use crate::op::{Op, RandomDist};
use crate::shape::Dim;

impl Lowerer<'_> {
    pub(super) fn random(
        &mut self,
        dist: RandomDist,
        call: &BoundCall,
    ) -> Result<crate::ValueId, Diagnostic> {
        let x = call.tensor("x")?;
        let key = call.tensor("key")?;
        let dtype = call.dtype("dtype")?;
        let name = dist.name();
        if !dtype.is_float() {
            let msg = format!("`{name}` makes f32 or f64 values, not {dtype}");
            return Err(call.error("E0504", "dtype", msg));
        }
        let key_ty = self.ty(key);
        let bad_key = |shape: String| {
            let msg = format!(
                "the key of `{name}` must be an i64 tensor of shape [] or [2], but {} is {}{shape}",
                call.label("key"),
                key_ty.dtype
            );
            call.error("E0503", "key", msg)
        };
        if key_ty.dtype != DType::I64 {
            return Err(bad_key(self.syms.shown(&key_ty.shape).to_string()));
        }
        match key_ty.shape.dims() {
            [] => {}
            [d] => {
                // A size known to differ from 2 is an error here; a symbolic one becomes 2,
                // which the call checks.
                if self.syms.unify(*d, Dim::Const(2)).is_err() {
                    return Err(bad_key(self.syms.shown(&key_ty.shape).to_string()));
                }
            }
            _ => return Err(bad_key(self.syms.shown(&key_ty.shape).to_string())),
        }
        let ty = TensorType { dtype, shape: self.ty(x).shape };
        Ok(self.emit(Op::Random { dist }, vec![key, x], ty, call.span))
    }
}
