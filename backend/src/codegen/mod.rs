//! Cranelift IR for one loop kernel ([`LoopPlan`]): the loop nest, the row passes, the
//! unrolled vector inner loops, reductions with independent accumulators, and scalar tails.
//!
//! # Kernel ABI
//!
//! `extern "C" fn(args: *const i64)` where, with `P` operands (inputs then outputs) and `R`
//! collapsed axes, `args` holds: `P` base pointers, `R` sizes, `P × (R-1)` outer strides (in
//! elements, operand-major), then `begin` and `end`, the range of axis 0 this call covers (so
//! threads can split it). For `R = 1` (a flat elementwise loop) axis 0 is the inner axis.
//!
//! # Shape of the code
//!
//! Constants, splats and math coefficients are emitted in the entry block. Outer axes are plain
//! loops that carry per-operand element offsets. Each row runs one pass per reduction level
//! (softmax: max; sum of exp; normalise) and a final pass storing elementwise outputs. A pass
//! is a 4×-unrolled vector loop (4 independent accumulators for reductions), a 1-vector loop,
//! then a scalar tail. Values constant along the inner axis ("row" values: reduction results,
//! broadcast operands, constants) are computed once per row as scalars and splatted before the
//! pass that uses them.

pub(crate) mod ops;

use crate::error::CodegenError;
use crate::math::{self, MathConsts, MathFeatures, MathFn};
use crate::plan::{LoopPlan, Ref};
use cranelift::codegen::ir::{
    condcodes::IntCC, types, AbiParam, Function, InstBuilder, Type, Value,
};
use cranelift::codegen::ir::{Block, MemFlagsData};
use cranelift::codegen::isa::TargetFrontendConfig;
use cranelift::frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use ops::{lanes, scalar_type, unsupported, Width};
use std::collections::HashMap;
use tfn_ir::{BinaryOp, DType, Op, ReduceOp, Scalar, UnaryOp};

/// Vectors per iteration of the main loop.
const UNROLL: i64 = 4;

/// Argument slots of the kernel ABI.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Abi {
    pub operands: usize,
    pub rank: usize,
}

impl Abi {
    pub fn size(&self, j: usize) -> usize {
        self.operands + j
    }
    pub fn stride(&self, p: usize, j: usize) -> usize {
        self.operands + self.rank + p * (self.rank - 1) + j
    }
    pub fn begin(&self) -> usize {
        self.operands + self.rank + self.operands * (self.rank - 1)
    }
}

/// The math function behind a unary or binary op, if it needs one.
fn math_fn(op: &Op) -> Option<MathFn> {
    Some(match op {
        Op::Unary(UnaryOp::Exp) => MathFn::Exp,
        Op::Unary(UnaryOp::Expm1) => MathFn::Expm1,
        Op::Unary(UnaryOp::Log) => MathFn::Log,
        Op::Unary(UnaryOp::Log1p) => MathFn::Log1p,
        Op::Unary(UnaryOp::Tanh) => MathFn::Tanh,
        Op::Unary(UnaryOp::Sigmoid) => MathFn::Sigmoid,
        Op::Unary(UnaryOp::Erf) => MathFn::Erf,
        Op::Unary(UnaryOp::Sin) => MathFn::Sin,
        Op::Unary(UnaryOp::Cos) => MathFn::Cos,
        Op::Binary(BinaryOp::Pow) => MathFn::Pow,
        _ => return None,
    })
}

/// Picks the vector lane dtype for a plan, or `None` when it needs the scalar path (bool or
/// mixed-dtype operands, casts between number types).
pub(crate) fn vector_lane(plan: &LoopPlan) -> Option<DType> {
    let lane = plan.operands().map(|o| o.dtype).next()?;
    if lane == DType::Bool || plan.operands().any(|o| o.dtype != lane) {
        return None;
    }
    for n in &plan.nodes {
        if n.dtype != lane && n.dtype != DType::Bool {
            return None;
        }
    }
    Some(lane)
}

/// Per-row state: scalars and splats of row values, offsets of each operand.
struct Row {
    offs: Vec<Value>,
    node_scalar: HashMap<usize, Value>,
    input_scalar: HashMap<usize, Value>,
    node_splat: HashMap<usize, Value>,
    input_splat: HashMap<usize, Value>,
}

struct Emitter<'p> {
    plan: &'p LoopPlan,
    abi: Abi,
    vector: Option<DType>,
    ptrs: Vec<Value>,
    sizes: Vec<Value>,
    strides: Vec<Vec<Value>>,
    /// Hoisted constants: node → (scalar, vector splat).
    consts: HashMap<usize, (Value, Option<Value>)>,
    /// Hoisted math coefficients per Cranelift type.
    math: HashMap<Type, MathConsts>,
    levels: Vec<usize>,
}

fn mem() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

/// Builds the kernel function of `plan` into `func`; `vector` picks the lane dtype of the
/// vectorised path (`None`: scalar loops only).
pub(crate) fn build(
    plan: &LoopPlan,
    func: &mut Function,
    fctx: &mut FunctionBuilderContext,
    vector: Option<DType>,
    features: MathFeatures,
    frontend: TargetFrontendConfig,
) -> Result<(), CodegenError> {
    let ptr_ty = frontend.pointer_type();
    func.signature.params.push(AbiParam::new(ptr_ty));
    let mut b = FunctionBuilder::new(func, fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let args = b.block_params(entry)[0];
    let abi = Abi { operands: plan.inputs.len() + plan.outputs.len(), rank: plan.rank() };
    let load_slot = |b: &mut FunctionBuilder, slot: usize| {
        b.ins().load(types::I64, MemFlagsData::trusted(), args, (slot * 8) as i32)
    };
    let ptrs: Vec<Value> = (0..abi.operands).map(|p| load_slot(&mut b, p)).collect();
    let sizes: Vec<Value> = (0..abi.rank).map(|j| load_slot(&mut b, abi.size(j))).collect();
    let strides: Vec<Vec<Value>> = (0..abi.operands)
        .map(|p| (0..abi.rank - 1).map(|j| load_slot(&mut b, abi.stride(p, j))).collect())
        .collect();
    let begin = load_slot(&mut b, abi.begin());
    let end = load_slot(&mut b, abi.begin() + 1);

    let mut em = Emitter {
        plan,
        abi,
        vector,
        ptrs,
        sizes,
        strides,
        consts: HashMap::new(),
        math: HashMap::new(),
        levels: levels(plan),
    };
    em.hoist_constants(&mut b, features)?;
    let zero = b.ins().iconst(types::I64, 0);
    let offs = vec![zero; abi.operands];
    em.outer(&mut b, 0, offs, begin, end)?;
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(frontend);
    Ok(())
}

/// Reduction level of every node: a reduction is one more than its argument, everything else
/// the maximum of its arguments.
fn levels(plan: &LoopPlan) -> Vec<usize> {
    let mut level = vec![0usize; plan.nodes.len()];
    for (k, n) in plan.nodes.iter().enumerate() {
        let arg_level = n
            .args
            .iter()
            .map(|a| match a {
                Ref::Node(m) => level.get(*m).copied().unwrap_or(0),
                Ref::Input(_) => 0,
            })
            .max()
            .unwrap_or(0);
        level[k] = if matches!(n.op, Op::Reduce { .. }) { arg_level + 1 } else { arg_level };
    }
    level
}

struct Loop {
    var: Variable,
    header: Block,
    exit: Block,
    i: Value,
    next: Value,
}

/// Starts `for (i = var; i + step <= limit; i += step)`; the body follows at the builder.
fn loop_begin(b: &mut FunctionBuilder, var: Variable, step: i64, limit: Value) -> Loop {
    let header = b.create_block();
    let body = b.create_block();
    let exit = b.create_block();
    b.ins().jump(header, &[]);
    b.switch_to_block(header);
    let i = b.use_var(var);
    let next = b.ins().iadd_imm_s(i, step);
    let ok = b.ins().icmp(IntCC::SignedLessThanOrEqual, next, limit);
    b.ins().brif(ok, body, &[], exit, &[]);
    b.switch_to_block(body);
    Loop { var, header, exit, i, next }
}

fn loop_end(b: &mut FunctionBuilder, l: Loop) {
    b.def_var(l.var, l.next);
    b.ins().jump(l.header, &[]);
    b.switch_to_block(l.exit);
}

impl Emitter<'_> {
    fn inner_full(&self, full: &[bool]) -> bool {
        full.last().copied().unwrap_or(false)
    }

    fn hoist_constants(
        &mut self,
        b: &mut FunctionBuilder,
        features: MathFeatures,
    ) -> Result<(), CodegenError> {
        for (k, n) in self.plan.nodes.iter().enumerate() {
            let value = match n.op {
                Op::Const(s) | Op::Full { value: s } => s,
                _ => continue,
            };
            let s = ops::scalar_const(b, n.dtype, value);
            let v = match self.vector {
                Some(t) => Some(ops::splat(b, Width::Vector(t), n.dtype, s)?),
                None => None,
            };
            self.consts.insert(k, (s, v));
        }
        let mut fns: HashMap<DType, Vec<MathFn>> = HashMap::new();
        for n in &self.plan.nodes {
            if let Some(f) = math_fn(&n.op) {
                let d = self.arg_dtype(n.args.first().copied()).unwrap_or(n.dtype);
                if !d.is_float() {
                    return unsupported(format!("`{}` on {d}", n.op.name()));
                }
                let list = fns.entry(d).or_default();
                if !list.contains(&f) {
                    list.push(f);
                }
            }
        }
        for (d, list) in fns {
            let mut tys = vec![scalar_type(d)];
            if let Some(t) = self.vector {
                tys.push(Width::Vector(t).ty(d)?);
            }
            for ty in tys {
                let consts = MathConsts::new(b, ty, &list, features)
                    .map_err(|e| CodegenError::Unsupported(e.to_string()))?;
                self.math.insert(ty, consts);
            }
        }
        Ok(())
    }

    fn arg_dtype(&self, r: Option<Ref>) -> Option<DType> {
        match r? {
            Ref::Node(m) => self.plan.nodes.get(m).map(|n| n.dtype),
            Ref::Input(j) => self.plan.inputs.get(j).map(|o| o.dtype),
        }
    }

    /// Loops over outer axis `depth` (axis 0 covers `begin..end`), then the row body.
    fn outer(
        &self,
        b: &mut FunctionBuilder,
        depth: usize,
        offs: Vec<Value>,
        begin: Value,
        end: Value,
    ) -> Result<(), CodegenError> {
        let rank = self.abi.rank;
        if depth + 1 >= rank {
            let (lo, hi) = if rank == 1 {
                (begin, end)
            } else {
                (b.ins().iconst(types::I64, 0), self.sizes[rank - 1])
            };
            return self.row(b, offs, lo, hi);
        }
        let var = b.declare_var(types::I64);
        let (lo, hi) = if depth == 0 {
            (begin, end)
        } else {
            (b.ins().iconst(types::I64, 0), self.sizes[depth])
        };
        b.def_var(var, lo);
        let l = loop_begin(b, var, 1, hi);
        let inner: Vec<Value> = offs
            .iter()
            .enumerate()
            .map(|(p, &o)| {
                let step = b.ins().imul(l.i, self.strides[p][depth]);
                b.ins().iadd(o, step)
            })
            .collect();
        self.outer(b, depth + 1, inner, begin, end)?;
        loop_end(b, l);
        Ok(())
    }

    /// One row: a pass per reduction level, a pass storing elementwise outputs, then the
    /// row-level outputs.
    fn row(
        &self,
        b: &mut FunctionBuilder,
        offs: Vec<Value>,
        lo: Value,
        hi: Value,
    ) -> Result<(), CodegenError> {
        let mut row = Row {
            offs,
            node_scalar: HashMap::new(),
            input_scalar: HashMap::new(),
            node_splat: HashMap::new(),
            input_splat: HashMap::new(),
        };
        let max_level = self.levels.iter().copied().max().unwrap_or(0);
        for level in 1..=max_level {
            let reduces: Vec<usize> = (0..self.plan.nodes.len())
                .filter(|&k| {
                    matches!(self.plan.nodes[k].op, Op::Reduce { .. }) && self.levels[k] == level
                })
                .collect();
            if !reduces.is_empty() {
                self.pass(b, &mut row, &reduces, &[], lo, hi)?;
            }
        }
        let n_in = self.plan.inputs.len();
        let elem_outputs: Vec<usize> = (0..self.plan.outputs.len())
            .filter(|&o| self.plan.outputs[o].node.is_some_and(|k| !self.plan.nodes[k].row))
            .collect();
        if !elem_outputs.is_empty() {
            self.pass(b, &mut row, &[], &elem_outputs, lo, hi)?;
        }
        for (o, out) in self.plan.outputs.iter().enumerate() {
            let Some(k) = out.node else { continue };
            if !self.plan.nodes[k].row {
                continue;
            }
            let v = self.eval_row(b, &mut row, k)?;
            let addr = self.address(b, n_in + o, row.offs[n_in + o], None, out.dtype);
            b.ins().store(mem(), v, addr, 0);
        }
        Ok(())
    }

    /// `ptr[p] + (off + i) * size_of(dtype)`.
    fn address(
        &self,
        b: &mut FunctionBuilder,
        p: usize,
        off: Value,
        i: Option<Value>,
        d: DType,
    ) -> Value {
        let idx = match i {
            Some(i) => b.ins().iadd(off, i),
            None => off,
        };
        let shift = d.size_bytes().trailing_zeros() as i64;
        let bytes = if shift == 0 { idx } else { b.ins().ishl_imm_u(idx, shift) };
        b.ins().iadd(self.ptrs[p], bytes)
    }

    /// Element-level nodes needed to compute `roots`, and the row values they read.
    fn needs(&self, roots: &[usize]) -> (Vec<bool>, Vec<usize>, Vec<usize>) {
        let mut elem = vec![false; self.plan.nodes.len()];
        let mut row_nodes = Vec::new();
        let mut row_inputs = Vec::new();
        let mut stack: Vec<usize> = roots.to_vec();
        while let Some(k) = stack.pop() {
            if elem[k] {
                continue;
            }
            elem[k] = true;
            for a in &self.plan.nodes[k].args {
                match *a {
                    Ref::Node(m) if self.plan.nodes[m].row => {
                        if !row_nodes.contains(&m) {
                            row_nodes.push(m)
                        }
                    }
                    Ref::Node(m) => stack.push(m),
                    Ref::Input(j) if !self.inner_full(&self.plan.inputs[j].full) => {
                        if !row_inputs.contains(&j) {
                            row_inputs.push(j)
                        }
                    }
                    Ref::Input(_) => {}
                }
            }
        }
        (elem, row_nodes, row_inputs)
    }

    /// One pass over the inner axis accumulating `reduces` and storing `outputs`.
    fn pass(
        &self,
        b: &mut FunctionBuilder,
        row: &mut Row,
        reduces: &[usize],
        outputs: &[usize],
        lo: Value,
        hi: Value,
    ) -> Result<(), CodegenError> {
        // Roots: reduction arguments (element or row level) and output nodes.
        let mut roots = Vec::new();
        let mut row_roots = Vec::new();
        for &r in reduces {
            match self.plan.nodes[r].args.first() {
                Some(Ref::Node(m)) if !self.plan.nodes[*m].row => roots.push(*m),
                Some(Ref::Node(m)) => row_roots.push(*m),
                Some(Ref::Input(_)) => {}
                None => return Err(CodegenError::Internal("reduction without argument".into())),
            }
        }
        for &o in outputs {
            if let Some(k) = self.plan.outputs[o].node {
                roots.push(k);
            }
        }
        let (_, row_nodes, row_inputs) = self.needs(&roots);
        for m in row_nodes.iter().chain(row_roots.iter()) {
            let s = self.eval_row(b, row, *m)?;
            if let Some(t) = self.vector {
                if !row.node_splat.contains_key(m) {
                    let v = ops::splat(b, Width::Vector(t), self.plan.nodes[*m].dtype, s)?;
                    row.node_splat.insert(*m, v);
                }
            }
        }
        for j in row_inputs {
            let s = self.row_input(b, row, j)?;
            if let Some(t) = self.vector {
                if let std::collections::hash_map::Entry::Vacant(e) = row.input_splat.entry(j) {
                    e.insert(ops::splat(b, Width::Vector(t), self.plan.inputs[j].dtype, s)?);
                }
            }
        }
        // Reduction arguments that are inputs.
        for &r in reduces {
            if let Some(&Ref::Input(j)) = self.plan.nodes[r].args.first() {
                if !self.inner_full(&self.plan.inputs[j].full) {
                    let s = self.row_input(b, row, j)?;
                    if let Some(t) = self.vector {
                        let v = ops::splat(b, Width::Vector(t), self.plan.inputs[j].dtype, s)?;
                        row.input_splat.insert(j, v);
                    }
                }
            }
        }

        let reduce_info: Vec<(usize, ReduceOp, DType)> = reduces
            .iter()
            .map(|&r| match self.plan.nodes[r].op {
                Op::Reduce { op, .. } => Ok((r, op, self.plan.nodes[r].dtype)),
                _ => Err(CodegenError::Internal("not a reduction".into())),
            })
            .collect::<Result<_, _>>()?;
        let i_var = b.declare_var(types::I64);
        b.def_var(i_var, lo);
        let mut scalar_acc: Vec<Variable> = Vec::new();
        if let Some(t) = self.vector {
            let width = Width::Vector(t);
            let l = lanes(t);
            let mut acc: Vec<Vec<Variable>> = Vec::new();
            for &(_, op, d) in &reduce_info {
                let ty = width.ty(d)?;
                let init = ops::reduce_init(b, width, op, d)?;
                let vars = (0..UNROLL)
                    .map(|_| {
                        let var = b.declare_var(ty);
                        b.def_var(var, init);
                        var
                    })
                    .collect();
                acc.push(vars);
            }
            for unroll in [UNROLL, 1] {
                let lp = loop_begin(b, i_var, unroll * l, hi);
                for u in 0..unroll {
                    let mut memo = HashMap::new();
                    self.body_step(
                        b,
                        row,
                        &reduce_info,
                        outputs,
                        &acc,
                        u as usize,
                        width,
                        lp.i,
                        u * l,
                        &mut memo,
                    )?;
                }
                loop_end(b, lp);
            }
            // Fold the vector accumulators into scalars.
            for (ri, &(_, op, d)) in reduce_info.iter().enumerate() {
                let mut v = b.use_var(acc[ri][0]);
                for &var in &acc[ri][1..] {
                    let w = b.use_var(var);
                    v = ops::reduce_combine(b, op, d, v, w);
                }
                let mut s = b.ins().extractlane(v, 0u8);
                for lane in 1..l {
                    let x = b.ins().extractlane(v, lane as u8);
                    s = ops::reduce_combine(b, op, d, s, x);
                }
                let var = b.declare_var(scalar_type(d));
                b.def_var(var, s);
                scalar_acc.push(var);
            }
        } else {
            for &(_, op, d) in &reduce_info {
                let init = ops::reduce_init(b, Width::Scalar, op, d)?;
                let var = b.declare_var(scalar_type(d));
                b.def_var(var, init);
                scalar_acc.push(var);
            }
        }
        let tail_acc: Vec<Vec<Variable>> = scalar_acc.iter().map(|v| vec![*v]).collect();
        let lp = loop_begin(b, i_var, 1, hi);
        let mut memo = HashMap::new();
        self.body_step(
            b,
            row,
            &reduce_info,
            outputs,
            &tail_acc,
            0,
            Width::Scalar,
            lp.i,
            0,
            &mut memo,
        )?;
        loop_end(b, lp);
        for (ri, &(r, op, d)) in reduce_info.iter().enumerate() {
            let mut s = b.use_var(scalar_acc[ri]);
            if op == ReduceOp::Mean {
                let count = b.ins().isub(hi, lo);
                let n = b.ins().fcvt_from_sint(scalar_type(d), count);
                s = b.ins().fdiv(s, n);
            }
            row.node_scalar.insert(r, s);
        }
        Ok(())
    }

    /// One step (one vector or one scalar) of a pass at element offset `i + delta`.
    #[allow(clippy::too_many_arguments)]
    fn body_step(
        &self,
        b: &mut FunctionBuilder,
        row: &Row,
        reduces: &[(usize, ReduceOp, DType)],
        outputs: &[usize],
        acc: &[Vec<Variable>],
        slot: usize,
        width: Width,
        i: Value,
        delta: i64,
        memo: &mut HashMap<usize, Value>,
    ) -> Result<(), CodegenError> {
        for (ri, &(r, op, d)) in reduces.iter().enumerate() {
            let x = match self.plan.nodes[r].args.first() {
                Some(&a) => self.eval_ref(b, row, a, width, i, delta, memo)?,
                None => return Err(CodegenError::Internal("reduction without argument".into())),
            };
            let a = b.use_var(acc[ri][slot]);
            let next = ops::reduce_combine(b, op, d, a, x);
            b.def_var(acc[ri][slot], next);
        }
        let n_in = self.plan.inputs.len();
        for &o in outputs {
            let out = &self.plan.outputs[o];
            let Some(k) = out.node else { continue };
            let v = self.eval_elem(b, row, k, width, i, delta, memo)?;
            let addr = self.address(b, n_in + o, row.offs[n_in + o], Some(i), out.dtype);
            b.ins().store(mem(), v, addr, (delta * out.dtype.size_bytes() as i64) as i32);
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn eval_ref(
        &self,
        b: &mut FunctionBuilder,
        row: &Row,
        r: Ref,
        width: Width,
        i: Value,
        delta: i64,
        memo: &mut HashMap<usize, Value>,
    ) -> Result<Value, CodegenError> {
        match r {
            Ref::Node(m) => self.eval_elem(b, row, m, width, i, delta, memo),
            Ref::Input(j) => {
                let input = &self.plan.inputs[j];
                if self.inner_full(&input.full) {
                    let ty = width.ty(input.dtype)?;
                    let addr = self.address(b, j, row.offs[j], Some(i), input.dtype);
                    let off = (delta * input.dtype.size_bytes() as i64) as i32;
                    Ok(b.ins().load(ty, mem(), addr, off))
                } else {
                    let map =
                        if width == Width::Scalar { &row.input_scalar } else { &row.input_splat };
                    map.get(&j)
                        .copied()
                        .ok_or_else(|| CodegenError::Internal(format!("row input {j} not loaded")))
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn eval_elem(
        &self,
        b: &mut FunctionBuilder,
        row: &Row,
        k: usize,
        width: Width,
        i: Value,
        delta: i64,
        memo: &mut HashMap<usize, Value>,
    ) -> Result<Value, CodegenError> {
        let node = &self.plan.nodes[k];
        if node.row {
            let map = if width == Width::Scalar { &row.node_scalar } else { &row.node_splat };
            return map
                .get(&k)
                .copied()
                .ok_or_else(|| CodegenError::Internal(format!("row value {k} missing")));
        }
        if let Some(v) = memo.get(&k) {
            return Ok(*v);
        }
        let mut args = Vec::with_capacity(node.args.len());
        for &a in &node.args {
            args.push(self.eval_ref(b, row, a, width, i, delta, memo)?);
        }
        let v = self.op(b, k, width, &args)?;
        memo.insert(k, v);
        Ok(v)
    }

    fn row_input(
        &self,
        b: &mut FunctionBuilder,
        row: &mut Row,
        j: usize,
    ) -> Result<Value, CodegenError> {
        if let Some(v) = row.input_scalar.get(&j) {
            return Ok(*v);
        }
        let d = self.plan.inputs[j].dtype;
        let addr = self.address(b, j, row.offs[j], None, d);
        let v = b.ins().load(scalar_type(d), mem(), addr, 0);
        row.input_scalar.insert(j, v);
        Ok(v)
    }

    /// A row-level value as a scalar (reductions must already have run).
    fn eval_row(
        &self,
        b: &mut FunctionBuilder,
        row: &mut Row,
        k: usize,
    ) -> Result<Value, CodegenError> {
        if let Some(v) = row.node_scalar.get(&k) {
            return Ok(*v);
        }
        let node = &self.plan.nodes[k];
        if matches!(node.op, Op::Reduce { .. }) {
            return Err(CodegenError::Internal(format!("reduction {k} used before its pass")));
        }
        let mut args = Vec::with_capacity(node.args.len());
        for &a in &node.args {
            args.push(match a {
                Ref::Node(m) => self.eval_row(b, row, m)?,
                Ref::Input(j) => self.row_input(b, row, j)?,
            });
        }
        let v = self.op(b, k, Width::Scalar, &args)?;
        row.node_scalar.insert(k, v);
        Ok(v)
    }

    /// The instructions of node `k` on already computed arguments.
    fn op(
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
        if let Some(f) = math_fn(&node.op) {
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
            Op::Cast(to) => ops::emit_cast(b, width, arg_dtype, *to, arg(0)?),
            Op::BroadcastTo => arg(0),
            other => unsupported(format!("`{}` inside a loop kernel", other.name())),
        }
    }
}
