//! The value of one element step: evaluating a node of the kernel at the current position
//! (operand loads, row values, math functions, the op's instruction sequence), shared by the
//! elementwise passes, row reductions (`rows.rs`) and column reductions (`columns.rs`).

use super::*;

impl Emitter<'_> {
    pub(super) fn eval_ref(
        &self,
        b: &mut FunctionBuilder,
        vals: &RowVals,
        r: Ref,
        at: At<'_>,
        memo: &mut Memo,
    ) -> Result<Value, CodegenError> {
        let j = match r {
            Ref::Node(m) => return self.eval_elem(b, vals, m, at, memo),
            Ref::Input(j) => j,
        };
        if let Some(v) = memo.get(&r) {
            return Ok(*v);
        }
        let input = &self.plan.inputs[j];
        let v = if input.index && !self.is_row_input(j) {
            // An iota: the index is the operand's offset, plus the inner position when the
            // iota runs along the inner axis.
            let base = if self.inner_full(&input.full) {
                let i = b.ins().iadd(at.offs[j], at.i);
                b.ins().iadd_imm_s(i, at.delta)
            } else {
                at.offs[j]
            };
            let lane_step = self.inner_full(&input.full);
            index_value(b, base, at.width, narrow_index(at.width, input.dtype), lane_step)?
        } else if self.inner_full(&input.full) {
            let addr = self.address(b, j, at.offs[j], Some(at.i), input.dtype);
            let off = (at.delta * input.dtype.size_bytes() as i64) as i32;
            storage::load(b, at.width, input.dtype, addr, off)?
        } else if self.is_row_input(j) {
            let map =
                if at.width == Width::Scalar { &vals.input_scalar } else { &vals.input_splat };
            map.get(&j)
                .copied()
                .ok_or_else(|| CodegenError::Internal(format!("row input {j} not loaded")))?
        } else {
            // Constant along the inner axis but not along a reduced one: one scalar per step.
            let addr = self.address(b, j, at.offs[j], None, input.dtype);
            let s = storage::load(b, Width::Scalar, input.dtype, addr, 0)?;
            ops::splat(b, at.width, input.dtype, s)?
        };
        memo.insert(r, v);
        Ok(v)
    }

    pub(super) fn eval_elem(
        &self,
        b: &mut FunctionBuilder,
        vals: &RowVals,
        k: usize,
        at: At<'_>,
        memo: &mut Memo,
    ) -> Result<Value, CodegenError> {
        let node = &self.plan.nodes[k];
        if self.is_row_node(k) {
            let map = if at.width == Width::Scalar { &vals.node_scalar } else { &vals.node_splat };
            return map
                .get(&k)
                .copied()
                .ok_or_else(|| CodegenError::Internal(format!("row value {k} missing")));
        }
        if let Some(v) = memo.get(&Ref::Node(k)) {
            return Ok(*v);
        }
        if let Some(&adj) = vals.staged.get(&k) {
            let v = self.load_staged(b, adj, at)?;
            memo.insert(Ref::Node(k), v);
            return Ok(v);
        }
        if matches!(node.op, Op::Index { .. }) {
            return self.indexed_read(b, vals, k, at, memo);
        }
        if matches!(node.op, Op::Random { .. }) {
            let v = self.random_value(b, k, at)?;
            memo.insert(Ref::Node(k), v);
            return Ok(v);
        }
        let v = match self.stash.get(&k) {
            Some(&o) if vals.stashed.contains(&k) => {
                let out = &self.plan.outputs[o];
                let p = self.plan.inputs.len() + o;
                let addr = self.address(b, p, at.offs[p], Some(at.i), out.dtype);
                let off = (at.delta * out.dtype.size_bytes() as i64) as i32;
                storage::load(b, at.width, out.dtype, addr, off)?
            }
            _ => {
                self.eval_operands_first(b, vals, k, at, memo)?;
                self.eval_computed(b, vals, k, at, memo)?
            }
        };
        memo.insert(Ref::Node(k), v);
        Ok(v)
    }

    /// The nodes [`Self::eval_elem`] evaluates as operands of node `k`: none where `k`'s value
    /// comes from elsewhere (a row value, the memo, a staged block, a stashed output, a random
    /// draw; an indexed read evaluates its own), only `x` of `x / s` by a row reciprocal.
    fn operand_nodes(&self, vals: &RowVals, k: usize, at: At<'_>, memo: &Memo) -> &[Ref] {
        let node = &self.plan.nodes[k];
        let elsewhere = self.is_row_node(k)
            || memo.contains_key(&Ref::Node(k))
            || vals.staged.contains_key(&k)
            || matches!(node.op, Op::Index { .. } | Op::Random { .. })
            || (self.stash.contains_key(&k) && vals.stashed.contains(&k));
        if elsewhere {
            &[]
        } else if self.row_reciprocal(vals, k, at.width).is_some() {
            node.args.get(..1).unwrap_or(&[])
        } else {
            &node.args
        }
    }

    /// Evaluates the not yet evaluated nodes `k` depends on, deepest first and in the order
    /// the recursion of [`Self::eval_elem`] would (operands left to right, each before its
    /// user), so that it then recurses one level at most: the depth of a kernel's expression
    /// (20,000 chained `let`s fuse into one kernel) is bounded by the heap, not the stack.
    fn eval_operands_first(
        &self,
        b: &mut FunctionBuilder,
        vals: &RowVals,
        k: usize,
        at: At<'_>,
        memo: &mut Memo,
    ) -> Result<(), CodegenError> {
        let pending = |m: usize, memo: &Memo| {
            self.operand_nodes(vals, m, at, memo)
                .iter()
                .filter_map(|r| match *r {
                    Ref::Node(n) if !memo.contains_key(r) => Some(n),
                    _ => None,
                })
                .collect::<Vec<_>>()
        };
        let first = pending(k, memo);
        if first.iter().all(|&n| pending(n, memo).is_empty()) {
            return Ok(()); // one level deep already: the plain recursion is enough
        }
        // (node, its operands pushed): a node is evaluated when popped the second time.
        let mut stack: Vec<(usize, bool)> = first.into_iter().rev().map(|n| (n, false)).collect();
        while let Some((m, expanded)) = stack.pop() {
            if memo.contains_key(&Ref::Node(m)) {
                continue;
            }
            if expanded {
                self.eval_elem(b, vals, m, at, memo)?;
                continue;
            }
            stack.push((m, true));
            stack.extend(pending(m, memo).into_iter().rev().map(|n| (n, false)));
        }
        Ok(())
    }

    /// Node `k` computed from its operands (see [`Self::eval_elem`]).
    fn eval_computed(
        &self,
        b: &mut FunctionBuilder,
        vals: &RowVals,
        k: usize,
        at: At<'_>,
        memo: &mut Memo,
    ) -> Result<Value, CodegenError> {
        let node = &self.plan.nodes[k];
        Ok(match self.row_reciprocal(vals, k, at.width) {
            Some((c, r)) => {
                let x = match node.args.first() {
                    Some(&a) => self.eval_ref(b, vals, a, at, memo)?,
                    None => return Err(CodegenError::Internal("division lacks x".into())),
                };
                let scaled = b.ins().fmul(x, c);
                b.ins().fmul(scaled, r)
            }
            None => {
                let mut args = Vec::with_capacity(node.args.len());
                for &a in &node.args {
                    args.push(self.eval_ref(b, vals, a, at, memo)?);
                }
                self.op(b, k, at.width, &args)?
            }
        })
    }

    /// Row node `m` is a float divisor of an element-level division (`e / sum(e)` in softmax).
    pub(super) fn divides_elements(&self, m: usize) -> bool {
        self.plan.nodes[m].dtype.is_float()
            && self.plan.nodes.iter().enumerate().any(|(k, n)| {
                matches!(n.op, Op::Binary(BinaryOp::Div))
                    && n.args.get(1) == Some(&Ref::Node(m))
                    && !self.is_row_node(k)
            })
    }

    /// For a float division of node `k` by a row value whose reciprocal this pass holds:
    /// `(c, r)` of [`super::RowReciprocal`] at `width`. `(x · c) · r` may differ from `x / s`
    /// by one rounding (within the JIT-vs-interpreter tolerance); body and tail use the same
    /// form, so results do not depend on where the vector loop ends.
    pub(super) fn row_reciprocal(
        &self,
        vals: &RowVals,
        k: usize,
        width: Width,
    ) -> Option<(Value, Value)> {
        let node = &self.plan.nodes[k];
        if !matches!(node.op, Op::Binary(BinaryOp::Div)) || !node.dtype.is_float() {
            return None;
        }
        let Some(Ref::Node(m)) = node.args.get(1) else { return None };
        let recip = vals.node_recip.get(m)?;
        match width {
            Width::Scalar => Some((recip.c, recip.r)),
            Width::Vector(_) => Some((recip.c_splat?, recip.r_splat?)),
        }
    }

    /// The math function node `k` needs: [`math_fn`], specialised where the argument's range
    /// allows a cheaper form (`exp` of a value known to be `≤ 0`).
    pub(super) fn math_fn_of(&self, k: usize) -> Option<MathFn> {
        let node = &self.plan.nodes[k];
        match math_fn(&node.op)? {
            MathFn::Exp if node.args.first().is_some_and(|&a| self.non_positive(a)) => {
                Some(MathFn::ExpNonPositive)
            }
            f => Some(f),
        }
    }

    /// Every element of `r` is `≤ 0` or NaN: `x − max(x)` (the max reducing over `x` itself,
    /// so each element is among those maximised over; a reduction *node* of the plan is a row
    /// value, broadcast back along exactly the axes it reduced), `−|x|`, `min(x, c)` with
    /// `c ≤ 0`.
    pub(super) fn non_positive(&self, r: Ref) -> bool {
        let Ref::Node(k) = r else { return false };
        let node = &self.plan.nodes[k];
        let arg = |i: usize| node.args.get(i).copied();
        let node_op = |r: Option<Ref>| match r {
            Some(Ref::Node(m)) => Some(&self.plan.nodes[m]),
            _ => None,
        };
        match node.op {
            Op::Binary(BinaryOp::Sub) => node_op(arg(1)).is_some_and(|m| {
                matches!(m.op, Op::Reduce { op: ReduceOp::Max, .. })
                    && m.args.first() == arg(0).as_ref()
            }),
            Op::Unary(UnaryOp::Neg) => {
                node_op(arg(0)).is_some_and(|m| matches!(m.op, Op::Unary(UnaryOp::Abs)))
            }
            Op::Binary(BinaryOp::Minimum) => [arg(0), arg(1)].into_iter().any(|a| {
                node_op(a).is_some_and(|m| match m.op {
                    Op::Const(Scalar::Float(c)) | Op::Full { value: Scalar::Float(c) } => c <= 0.0,
                    _ => false,
                }) || a.is_some_and(|a| self.non_positive(a))
            }),
            _ => false,
        }
    }

    /// Stores `v` (one step's value) into output `o` at the step's position.
    pub(super) fn store_output(&self, b: &mut FunctionBuilder, o: usize, v: Value, at: At<'_>) {
        let out = &self.plan.outputs[o];
        let p = self.plan.inputs.len() + o;
        let addr = self.address(b, p, at.offs[p], Some(at.i), out.dtype);
        let off = (at.delta * out.dtype.size_bytes() as i64) as i32;
        storage::store(b, at.width, out.dtype, v, addr, off);
    }

    pub(super) fn row_input(
        &self,
        b: &mut FunctionBuilder,
        offs: &[Value],
        vals: &mut RowVals,
        j: usize,
    ) -> Result<Value, CodegenError> {
        if let Some(v) = vals.input_scalar.get(&j) {
            return Ok(*v);
        }
        let d = self.plan.inputs[j].dtype;
        let v = if self.plan.inputs[j].index {
            index_value(b, offs[j], Width::Scalar, d, false)?
        } else {
            let addr = self.address(b, j, offs[j], None, d);
            storage::load(b, Width::Scalar, d, addr, 0)?
        };
        vals.input_scalar.insert(j, v);
        Ok(v)
    }

    /// A row-level value as a scalar (reductions must already have run).
    pub(super) fn eval_row(
        &self,
        b: &mut FunctionBuilder,
        offs: &[Value],
        vals: &mut RowVals,
        k: usize,
    ) -> Result<Value, CodegenError> {
        if let Some(v) = vals.node_scalar.get(&k) {
            return Ok(*v);
        }
        let node = &self.plan.nodes[k];
        if matches!(node.op, Op::Reduce { .. }) {
            return Err(CodegenError::Internal(format!("reduction {k} used before its pass")));
        }
        if matches!(node.op, Op::Index { .. }) {
            let v = self.indexed_read_row(b, offs, vals, k)?;
            vals.node_scalar.insert(k, v);
            return Ok(v);
        }
        if matches!(node.op, Op::Random { .. }) {
            // Constant along the inner axis: its index is the counter's offset at the row.
            let zero = b.ins().iconst(types::I64, 0);
            let at = At { offs, i: zero, delta: 0, width: Width::Scalar };
            let v = self.random_value(b, k, at)?;
            vals.node_scalar.insert(k, v);
            return Ok(v);
        }
        let mut args = Vec::with_capacity(node.args.len());
        for &a in &node.args {
            args.push(match a {
                Ref::Node(m) => self.eval_row(b, offs, vals, m)?,
                Ref::Input(j) => self.row_input(b, offs, vals, j)?,
            });
        }
        let v = self.op(b, k, Width::Scalar, &args)?;
        vals.node_scalar.insert(k, v);
        Ok(v)
    }

    /// The instructions of node `k` on already computed arguments.
    pub(super) fn op(
        &self,
        b: &mut FunctionBuilder,
        k: usize,
        width: Width,
        args: &[Value],
    ) -> Result<Value, CodegenError> {
        let node = &self.plan.nodes[k];
        let arg = |i: usize| {
            args.get(i)
                .copied()
                .ok_or_else(|| CodegenError::Internal(format!("node {k} lacks argument {i}")))
        };
        let arg_dtype = self.arg_dtype(node.args.first().copied()).unwrap_or(node.dtype);
        if let Some(f) = self.math_fn_of(k) {
            let ty = width.ty(arg_dtype)?;
            let consts = self
                .math
                .get(&ty)
                .ok_or_else(|| CodegenError::Internal("math constants not hoisted".into()))?;
            return math::emit(b, consts, f, args)
                .map_err(|e| CodegenError::Unsupported(e.to_string()));
        }
        match &node.op {
            Op::Const(_) | Op::Full { .. } => {
                let (s, v) = self
                    .consts
                    .get(&k)
                    .copied()
                    .ok_or_else(|| CodegenError::Internal("constant".into()))?;
                match width {
                    Width::Scalar => Ok(s),
                    Width::Vector(_) => {
                        v.ok_or_else(|| CodegenError::Internal("constant splat".into()))
                    }
                }
            }
            Op::Unary(u) => ops::emit_unary(b, width, *u, arg_dtype, arg(0)?),
            Op::Binary(op) => {
                let y_not_nan = match node.args.get(1) {
                    Some(Ref::Node(m)) => match self.plan.nodes[*m].op {
                        Op::Const(Scalar::Float(f)) | Op::Full { value: Scalar::Float(f) } => {
                            !f.is_nan()
                        }
                        Op::Const(_) | Op::Full { .. } => true,
                        _ => false,
                    },
                    _ => false,
                };
                ops::emit_binary(b, width, *op, arg_dtype, arg(0)?, arg(1)?, y_not_nan)
            }
            Op::Where => Ok(ops::blend(b, arg(0)?, arg(1)?, arg(2)?)),
            Op::MulAdd => Ok(ops::mul_add(b, arg(0)?, arg(1)?, arg(2)?)),
            Op::Cast(to) => ops::emit_cast(b, width, arg_dtype, *to, arg(0)?),
            Op::BroadcastTo => arg(0),
            // Its index operand already holds the index (see `eval_ref`).
            Op::Iota { .. } => arg(0),
            // Evaluated with its position by `eval_elem`/`eval_row` (`random.rs`).
            Op::Random { .. } => {
                Err(CodegenError::Internal("`rand_like` reached the instruction emitter".into()))
            }
            // Reductions and views are emitted by the row/column passes and the operand
            // addressing, never as a plain instruction; the rest never joins a loop kernel.
            // Reaching here is a planner bug: the kernel falls back, loudly.
            Op::Param(_)
            | Op::Reduce { .. }
            | Op::ArgMax { .. }
            | Op::ArgMin { .. }
            | Op::Scan { .. }
            | Op::CumprodGrad { .. }
            | Op::MatMul
            | Op::Reshape
            | Op::Transpose { .. }
            | Op::Concat { .. }
            | Op::Slice { .. }
            | Op::Index { .. }
            | Op::Window { .. }
            | Op::Extern { .. } => {
                unsupported(format!("`{}` inside a loop kernel", node.op.name()))
            }
        }
    }
}
