//! Lowering of `rand_like`/`randn_like` ([`Op::Random`]): the argument checks that name the
//! culprit (a float `dtype`, an `i64` key of shape `[]` or `[2]`); and of `std:nn`'s
//! `dropout`, which lowers to primitives (`rand_like`, `ge`, `mul`, `where`) after checking
//! its probability `p` — something a `.tfn` function cannot express.

use super::call::BoundCall;
use super::instantiate::Lowerer;
use crate::attr::{Attr, Scalar};
use crate::diagnostic::Diagnostic;
use crate::dtype::DType;
use crate::graph::TensorType;
use crate::op::{BinaryOp, Op, RandomDist, UnaryOp};
use crate::shape::Dim;

impl Lowerer<'_> {
    pub(super) fn random(
        &mut self,
        dist: RandomDist,
        call: &BoundCall,
    ) -> Result<crate::ValueId, Diagnostic> {
        let dtype = call.dtype("dtype")?;
        // (The prelude declares this set: a call of another dtype does not get here.)
        let allowed = Op::Random { dist }.accepted_created_dtypes();
        if !allowed.contains(dtype) {
            let msg = format!("`{}` makes float values, not {dtype}", dist.name());
            return Err(call.error("E0504", "dtype", msg));
        }
        if dtype.is_storage() {
            // f16/bf16: the f32 value, rounded once (`crate::storage`).
            let mut wide = self.random_checked(dist, call, dtype.compute())?;
            if dist == RandomDist::Uniform {
                wide = self.keep_top_bits(wide, dtype, call)?;
            }
            let ty = TensorType { dtype, shape: self.ty(wide).shape };
            return Ok(self.emit(Op::Cast(dtype), vec![wide], ty, call.span));
        }
        self.random_checked(dist, call, dtype)
    }

    /// An f32 uniform draw `u` cut to the significand of `dtype` (11 bits for f16, 8 for bf16):
    /// `floor(u · 2^p) · 2^-p`, every step exact. The narrow value is then `u` exactly, still
    /// in `[0, 1)`, where rounding the 24-bit draw would give 1.0 for the draws closest to 1
    /// (1 in 512 for bf16).
    fn keep_top_bits(
        &mut self,
        u: crate::ValueId,
        dtype: DType,
        call: &BoundCall,
    ) -> Result<crate::ValueId, Diagnostic> {
        let bits = match dtype {
            DType::F16 => 11,
            _ => 8,
        };
        let span = call.span;
        let infer_err = |m: String| super::call::diag("E0503", m, span);
        let wide = self.ty(u).dtype;
        let up = self.literal(&Attr::Float(2f64.powi(bits)), wide, span)?;
        let down = self.literal(&Attr::Float(2f64.powi(-bits)), wide, span)?;
        let scaled = self.emit_inferred(Op::Binary(BinaryOp::Mul), vec![u, up], span);
        let whole =
            self.emit_inferred(Op::Unary(UnaryOp::Floor), vec![scaled.map_err(infer_err)?], span);
        let cut = self.emit_inferred(
            Op::Binary(BinaryOp::Mul),
            vec![whole.map_err(infer_err)?, down],
            span,
        );
        cut.map_err(infer_err)
    }

    /// `rand_like(x, key, dtype=dtype)` of the call's `x` and `key`, after checking the key.
    fn random_checked(
        &mut self,
        dist: RandomDist,
        call: &BoundCall,
        dtype: DType,
    ) -> Result<crate::ValueId, Diagnostic> {
        let x = call.tensor("x")?;
        let key = call.tensor("key")?;
        let name = dist.name();
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

    /// `dropout(x, key, *, p)`: each element is zeroed with probability `p` (kept when
    /// `rand_like(x, key, dtype=x's dtype) >= p`) and the kept ones are scaled by `1/(1-p)`.
    /// `p = 0` is `x` itself; `p = 1` gives zeros (no `0 · ∞`); `p` outside `[0, 1]` is an
    /// error naming `p`.
    pub(super) fn dropout(&mut self, call: &BoundCall) -> Result<crate::ValueId, Diagnostic> {
        let x = call.tensor("x")?;
        let p = match call.attr("p")? {
            Attr::Float(p) => *p,
            Attr::Int(p) => *p as f64,
            other => {
                let msg = format!("`p` must be a float, got {other}");
                return Err(call.error("E0504", "p", msg));
            }
        };
        if !(0.0..=1.0).contains(&p) {
            let msg = format!("the dropout probability `p` must be in [0, 1], got {p}");
            return Err(call.error("E0504", "p", msg));
        }
        let ty = self.ty(x);
        if p == 0.0 {
            // Still check the key, so a bad key is an error whatever `p` is.
            self.random_checked(RandomDist::Uniform, call, ty.dtype)?;
            return Ok(x);
        }
        let u = self.random_checked(RandomDist::Uniform, call, ty.dtype)?;
        if p == 1.0 {
            return Ok(self.emit(Op::Full { value: Scalar::Float(0.0) }, vec![x], ty, call.span));
        }
        let span = call.span;
        let infer_err = |m: String| super::call::diag("E0503", m, span);
        let threshold = self.literal(&Attr::Float(p), ty.dtype, span)?;
        let keep = self.emit_inferred(Op::Binary(BinaryOp::Ge), vec![u, threshold], span);
        let keep = keep.map_err(infer_err)?;
        let scale = self.literal(&Attr::Float(1.0 / (1.0 - p)), ty.dtype, span)?;
        let scaled = self.emit_inferred(Op::Binary(BinaryOp::Mul), vec![x, scale], span);
        let scaled = scaled.map_err(infer_err)?;
        let zero = self.literal(&Attr::Float(0.0), ty.dtype, span)?;
        self.emit_inferred(Op::Where, vec![keep, scaled, zero], span).map_err(infer_err)
    }
}
