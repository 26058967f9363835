//! Builders of the window primitives (`conv2d`, `conv_transpose2d`, `max_pool2d`,
//! `avg_pool2d`, the internal ops of their gradients) and of `pad`, with the argument checks
//! that name the offending argument. Semantics: `crate::op_window`.

use super::call::{diag, BoundCall};
use super::instantiate::Lowerer;
use crate::diagnostic::Diagnostic;
use crate::graph::TensorType;
use crate::op::Op;
use crate::op_window::{window_len, WindowAttrs, WindowKind};
use crate::shape::{Dim, Shape};

impl Lowerer<'_> {
    /// A per-axis pair (`[h, w]`) from an `Int[]` argument of one or two items.
    fn window_pair(&self, call: &BoundCall, param: &str, min: i64) -> Result<[u32; 2], Diagnostic> {
        let v = call.int_list(param)?;
        let pair = match v.as_slice() {
            [a] => [*a, *a],
            [a, b] => [*a, *b],
            _ => {
                let msg = format!(
                    "`{param}` must have 2 items (height, width) or 1 for both (as in PyTorch), \
                     got {}",
                    v.len()
                );
                return Err(call.error("E0505", param, msg));
            }
        };
        let mut out = [0u32; 2];
        for (o, &p) in out.iter_mut().zip(&pair) {
            *o = match u32::try_from(p) {
                Ok(p) if i64::from(p) >= min => p,
                _ if p >= min => {
                    let msg = format!("`{param}` must be at most {}, got {p}", u32::MAX);
                    return Err(call.error("E0505", param, msg));
                }
                _ => {
                    let what = if min > 0 { "positive" } else { "non-negative" };
                    let msg = format!("`{param}` must be {what}, got {p}");
                    return Err(call.error("E0505", param, msg));
                }
            };
        }
        Ok(out)
    }

    /// `conv2d`, `conv_transpose2d` (with `like`: the gradients' variants of given size),
    /// `conv2d_weight`, the pooling ops and their gradients.
    pub(super) fn window_op(
        &mut self,
        kind: WindowKind,
        like: bool,
        call: &BoundCall,
    ) -> Result<crate::ValueId, Diagnostic> {
        let name = kind.name();
        let mut attrs = WindowAttrs::default();
        let pooling = !kind.is_conv();
        if pooling {
            attrs.kernel = self.window_pair(call, "kernel", 1)?;
            attrs.stride = if call.int_list("stride")?.is_empty() {
                attrs.kernel
            } else {
                self.window_pair(call, "stride", 1)?
            };
            attrs.padding = self.window_pair(call, "padding", 0)?;
            if matches!(kind, WindowKind::MaxPool | WindowKind::MaxPoolGrad) {
                attrs.dilation = self.window_pair(call, "dilation", 1)?;
            } else {
                attrs.count_include_pad = call.bool("count_include_pad")?;
            }
            attrs.ceil_mode = call.bool("ceil_mode")?;
            for axis in 0..2 {
                if attrs.padding[axis] > attrs.kernel[axis] / 2 {
                    let msg = format!(
                        "`{name}`: padding {} must be at most half the kernel ({})",
                        attrs.padding[axis], attrs.kernel[axis]
                    );
                    return Err(call.error("E0505", "padding", msg));
                }
            }
        } else {
            attrs.stride = self.window_pair(call, "stride", 1)?;
            attrs.padding = self.window_pair(call, "padding", 0)?;
            attrs.dilation = self.window_pair(call, "dilation", 1)?;
            let groups = call.int("groups")?;
            attrs.groups = match u32::try_from(groups) {
                Ok(g) if g > 0 => g,
                _ if groups > 0 => {
                    let msg =
                        format!("`{name}`: groups must be at most {}, got {groups}", u32::MAX);
                    return Err(call.error("E0505", "groups", msg));
                }
                _ => {
                    let msg = format!("`{name}`: groups must be positive, got {groups}");
                    return Err(call.error("E0505", "groups", msg));
                }
            };
            if kind == WindowKind::ConvTranspose && !like {
                attrs.output_padding = self.window_pair(call, "output_padding", 0)?;
                for axis in 0..2 {
                    let (op, s, d) =
                        (attrs.output_padding[axis], attrs.stride[axis], attrs.dilation[axis]);
                    if op >= s.max(d) {
                        let msg = format!(
                            "`{name}`: output_padding {op} must be smaller than the stride ({s}) \
                             or the dilation ({d})"
                        );
                        return Err(call.error("E0505", "output_padding", msg));
                    }
                }
            }
        }
        // The tensor operands in declaration order.
        let names: Vec<&str> = call
            .fdef
            .params
            .iter()
            .filter(|p| matches!(p.ty, crate::library::ParamType::Tensor(_)))
            .map(|p| p.name.as_str())
            .collect();
        let inputs = names.iter().map(|n| call.tensor(n)).collect::<Result<Vec<_>, _>>()?;
        let first = names.first().copied().unwrap_or("x");
        let x = inputs[0];
        let xt = self.ty(x);
        // Unbatched `[c, h, w]` convolutions run as a batch of one.
        let unbatched = kind.is_conv() && !like && xt.shape.rank() == 3;
        let mut inputs = inputs;
        if unbatched {
            let mut s = xt.shape.clone();
            s.0.insert(0, Dim::Const(1));
            inputs[0] = self.reshape(x, s, call.span);
        }
        for (i, v) in inputs.iter().enumerate() {
            let t = self.ty(*v);
            let ok = match kind {
                WindowKind::MaxPool | WindowKind::AvgPool => (3..=4).contains(&t.shape.rank()),
                WindowKind::MaxPoolGrad | WindowKind::AvgPoolGrad => t.shape.rank() >= 3,
                _ => t.shape.rank() == 4,
            };
            if !ok {
                let what = if pooling && i == 0 { "rank 3 or 4" } else { "rank 4 (NCHW)" };
                let msg = format!(
                    "`{name}` needs {} of {what}, got shape {}",
                    call.label(names[i]),
                    self.syms.shown(&t.shape)
                );
                return Err(call.error("E0503", names[i], msg));
            }
        }
        if matches!(kind, WindowKind::Conv | WindowKind::ConvTranspose) && !like {
            self.check_channels(kind, &attrs, call, &inputs)?;
        }
        if matches!(kind, WindowKind::Conv | WindowKind::MaxPool | WindowKind::AvgPool) && !like {
            self.check_window_fits(kind, &attrs, call, &inputs, first)?;
        }
        let op = Op::Window { kind, attrs };
        let out =
            self.emit_inferred(op, inputs, call.span).map_err(|m| diag("E0503", m, call.span))?;
        if unbatched {
            let mut s = self.ty(out).shape;
            s.0.remove(0);
            return Ok(self.reshape(out, s, call.span));
        }
        Ok(out)
    }

    /// Channels against groups and the weight: unified when `groups = 1`, checked against
    /// the call's sizes otherwise (and at run time).
    fn check_channels(
        &mut self,
        kind: WindowKind,
        attrs: &WindowAttrs,
        call: &BoundCall,
        inputs: &[crate::ValueId],
    ) -> Result<(), Diagnostic> {
        let name = kind.name();
        let (xs, ws) = (self.ty(inputs[0]).shape, self.ty(inputs[1]).shape);
        // conv2d: x's channels = groups · w[1]; conv_transpose2d: x's channels = w[0].
        let (x_c, w_dim, w_axis) = match kind {
            WindowKind::Conv => (xs.0[1], ws.0[1], 1),
            _ => (xs.0[1], ws.0[0], 0),
        };
        let g = u64::from(attrs.groups);
        let fail = |this: &Self, why: String| {
            let msg = format!(
                "`{name}`: {} of shape {} does not fit {} of shape {} (groups = {g}): {why}",
                call.label("x"),
                this.syms.shown(&xs),
                call.label("w"),
                this.syms.shown(&ws)
            );
            call.error("E0503", "w", msg)
        };
        if kind == WindowKind::Conv && g == 1 || kind == WindowKind::ConvTranspose {
            if self.syms.unify(x_c, w_dim).is_err() {
                return Err(fail(self, format!("x's channels must equal w's axis {w_axis}")));
            }
        } else if let (Some(c), Some(wc)) = (self.syms.hint(x_c), self.syms.hint(w_dim)) {
            if c != wc * g {
                return Err(fail(self, format!("x has {c} channels, not {g} × {wc}")));
            }
        }
        // The other channel count must split into the groups.
        let other = match kind {
            WindowKind::Conv => ws.0[0],
            _ => x_c,
        };
        if let Some(o) = self.syms.hint(other) {
            if o % g != 0 {
                return Err(fail(self, format!("{o} channels do not split into {g} groups")));
            }
        }
        Ok(())
    }

    /// With the call's sizes, a window larger than the padded input is reported at the op.
    fn check_window_fits(
        &mut self,
        kind: WindowKind,
        a: &WindowAttrs,
        call: &BoundCall,
        inputs: &[crate::ValueId],
        first: &str,
    ) -> Result<(), Diagnostic> {
        let xs = self.ty(inputs[0]).shape;
        let rank = xs.rank();
        for axis in 0..2 {
            let size = self.syms.hint(xs.0[rank - 2 + axis]);
            let k = if kind.is_conv() {
                self.syms.hint(self.ty(inputs[1]).shape.0[2 + axis])
            } else {
                Some(u64::from(a.kernel[axis]))
            };
            let (Some(size), Some(k)) = (size, k) else { continue };
            let len = window_len(
                size as i64,
                k as i64,
                i64::from(a.stride[axis]),
                i64::from(a.padding[axis]),
                i64::from(a.dilation[axis]),
                a.ceil_mode,
            );
            if let Err(m) = len {
                let msg = format!("`{}` along axis {}: {m}", kind.name(), rank - 2 + axis);
                return Err(call.error("E0510", first, msg));
            }
        }
        Ok(())
    }

    /// `pad(x, pads, value)`: `full` blocks concatenated before and after each axis (a
    /// negative amount removes elements: a slice). Gradients follow from `concat`/`slice`.
    pub(super) fn pad_op(&mut self, call: &BoundCall) -> Result<crate::ValueId, Diagnostic> {
        let mut x = call.tensor("x")?;
        let ty = self.ty(x);
        let rank = ty.shape.rank();
        let pads = call.int_list("pads")?;
        if pads.len() != 2 * rank {
            let msg = format!(
                "`pad` needs 2 amounts per axis of {} (rank {rank}: {} items, [before0, after0, \
                 before1, after1, ...]), got {}",
                call.label("x"),
                2 * rank,
                pads.len()
            );
            return Err(call.error("E0505", "pads", msg));
        }
        let value = super::call::scalar_of(call.attr("value")?, ty.dtype)
            .map_err(|m| call.error("E0504", "value", m))?;
        let infer_err = |m: String| diag("E0503", m, call.span);
        for axis in 0..rank {
            let (before, after) = (pads[2 * axis], pads[2 * axis + 1]);
            if before < 0 || after < 0 {
                // How many elements each side removes, as unsigned: `-i64::MIN` does not fit.
                let cut = |amount: i64| if amount < 0 { amount.unsigned_abs() } else { 0 };
                let (cut_before, cut_after) = (cut(before), cut(after));
                let size = self.syms.hint(self.ty(x).shape.0[axis]);
                let too_many = match size {
                    Some(n) => cut_before.saturating_add(cut_after) > n,
                    None => cut_before > i64::MAX as u64 || cut_after > i64::MAX as u64,
                };
                if too_many {
                    let of = size.map_or(String::new(), |n| format!(" of size {n}"));
                    let msg = format!(
                        "`pad`: removing {cut_before} and {cut_after} elements of axis {axis}{of}"
                    );
                    return Err(call.error("E0510", "pads", msg));
                }
                let start = cut_before as i64;
                let end = (after < 0).then_some(after);
                let op = Op::Slice { axis: axis as u32, start, end, step: 1 };
                x = self.emit_inferred(op, vec![x], call.span).map_err(infer_err)?;
            }
            if before <= 0 && after <= 0 {
                continue;
            }
            let mut parts = Vec::new();
            let shape = self.ty(x).shape;
            let block = |amount: i64| {
                let mut s: Shape = shape.clone();
                s.0[axis] = Dim::Const(amount as u64);
                TensorType { dtype: ty.dtype, shape: s }
            };
            if before > 0 {
                parts.push(self.emit(Op::Full { value }, Vec::new(), block(before), call.span));
            }
            parts.push(x);
            if after > 0 {
                parts.push(self.emit(Op::Full { value }, Vec::new(), block(after), call.span));
            }
            let op = Op::Concat { axis: axis as u32 };
            x = self.emit_inferred(op, parts, call.span).map_err(infer_err)?;
        }
        Ok(x)
    }
}
