//! Counted loops in Cranelift IR: `loop_begin`/`loop_end` bracket a body that runs for
//! `i = var; i + step <= limit; i += step`.

use cranelift::codegen::ir::{condcodes::IntCC, Block, InstBuilder, Value};
use cranelift::frontend::{FunctionBuilder, Variable};

/// An open loop: its counter variable, blocks and the current and next counter values.
pub(crate) struct Loop {
    var: Variable,
    header: Block,
    exit: Block,
    pub i: Value,
    next: Value,
}

/// Starts `for (i = var; i + step <= limit; i += step)`; the body follows at the builder.
pub(crate) fn loop_begin(b: &mut FunctionBuilder, var: Variable, step: i64, limit: Value) -> Loop {
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

pub(crate) fn loop_end(b: &mut FunctionBuilder, l: Loop) {
    b.def_var(l.var, l.next);
    b.ins().jump(l.header, &[]);
    b.switch_to_block(l.exit);
}
