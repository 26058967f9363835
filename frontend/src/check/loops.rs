//! Loops, `var`s and indexing: the statements that carry values from one trip to the next.
//!
//! - `var x = e` binds a name that the loops after it may assign; `x = e` assigns only a
//!   visible `var` (`E0311` for a `let`, a parameter, a loop variable or an unknown name), only
//!   inside a loop entered after its `var` (`E0312`), and keeps its type: a tensor stays a
//!   tensor of a dtype the `var` may have, an `Int` stays an `Int` (`E0313`, naming the
//!   assignment and the `var`); and a loop carries tensors only, so a `var` holding an `Int`,
//!   a `Float` or a list is not assigned in one (`E0511`, as lowering would say at every call).
//! - `for i in A..B`: `A` and `B` are `Int`s (`E0314`): attributes, literals, sizes, not a
//!   negative literal nor a value that changes in an enclosing loop (its variable). The loop
//!   variable is an immutable `Int`, visible in the body only, known only at run time: an `if`
//!   on it is `E0319`.
//! - `while COND, at most N`: `COND` a `bool` tensor (`E0315`; a compile-time `Bool` wants
//!   `if`), `N` an `Int` attribute or literal, not negative (`E0316`).
//! - `e[i]`: `e` a tensor (the result: a tensor of its dtype, one axis fewer) or an `Int[]` (the
//!   result: an `Int`), `i` an `Int` (`E0317`).
//! - `return` inside a loop body is `E0318`: a loop's results are its `var`s.

use super::scope::{LocalKind, Walker};
use super::types::Ty;
use crate::ast::{Block, Expr, ExprKind, Ident};
use crate::suggest;
use tfn_ir::library::FunctionDef;
use tfn_ir::{Diagnostic, Span};

impl Walker<'_> {
    /// `var name = value`.
    pub fn var_stmt(&mut self, name: &Ident, value: &Expr) {
        let ty = self.value(value);
        self.bind(&name.name, ty, name.span, LocalKind::Var);
    }

    /// `name = value`.
    pub fn assign_stmt(&mut self, name: &Ident, value: &Expr) {
        let ty = self.value(value);
        let Some(local) = self.local(&name.name) else {
            let mut d = Diagnostic::error(
                "E0311",
                format!("cannot assign to `{}`: no such variable", name.name),
            )
            .at(name.span, "not declared");
            d = match suggest::closest(&name.name, self.local_names()) {
                Some(s) => d.with_help(format!("a variable with a similar name exists: `{s}`")),
                None => d.with_help(format!(
                    "declare it with `var` before the loop: `var {} = ...`",
                    name.name
                )),
            };
            self.diags.push(d);
            return;
        };
        let (kind, declared, var_ty, depth) =
            (local.kind, local.span, local.ty.clone(), local.loop_depth);
        let what = match kind {
            LocalKind::Var => None,
            LocalKind::Param => Some((
                "a parameter",
                format!(
                    "declare a `var` from it before the loop and assign that: `var v = {}`",
                    name.name
                ),
            )),
            LocalKind::LoopVar => Some((
                "a loop variable",
                "it counts the trips; declare a `var` for a value that changes".to_string(),
            )),
            LocalKind::Let | LocalKind::Implicit => Some((
                "a `let` binding",
                format!("declare it with `var` instead of `let`: `var {} = ...`", name.name),
            )),
        };
        if let Some((what, help)) = what {
            self.diags.push(
                Diagnostic::error("E0311", format!("cannot assign to `{}`, {what}", name.name))
                    .at(name.span, "assigned here")
                    .with_secondary(declared, format!("`{}` is {what} here", name.name))
                    .with_help(help),
            );
            return;
        }
        self.mark_assigned(&name.name);
        if self.loop_depth <= depth {
            self.diags.push(
                Diagnostic::error(
                    "E0312",
                    format!("`{}` is assigned outside a loop over it", name.name),
                )
                .at(name.span, "not inside a loop entered after its `var`")
                .with_secondary(declared, "declared here")
                .with_note("a `var` changes only from one trip of a loop to the next")
                .with_help("bind the new value to a new name with `let`"),
            );
            return;
        }
        if let Some((from, to)) = self.changed_type(&var_ty, &ty) {
            self.diags.push(
                Diagnostic::error(
                    "E0313",
                    format!(
                        "assignment changes the type of `{}` from `{from}` to `{to}`",
                        name.name
                    ),
                )
                .at(value.span, format!("`{to}`"))
                .with_secondary(declared, format!("`{}` is `{from}` here", name.name))
                .with_note("a `var` keeps its type, dtype and rank from one trip to the next"),
            );
            return;
        }
        // A compiled loop carries tensors only: an `Int`, a `Float` or a list is a value of
        // the call, fixed before the loop runs (lowering's E0511 would refuse it at every call).
        if !matches!(var_ty, Ty::Tensor(_) | Ty::Unknown) {
            self.diags.push(
                Diagnostic::error(
                    "E0511",
                    format!(
                        "`{}` is `{var_ty}` outside the loop; a loop may only update tensor `var`s",
                        name.name
                    ),
                )
                .at(name.span, "assigned in a loop")
                .with_secondary(declared, format!("`{}` is `{var_ty}` here", name.name))
                .with_help("compute it as a tensor (e.g. `full([], 0)`) to carry it"),
            );
        }
    }

    /// `Some((var's type, assigned type))` when a value of type `to` cannot replace one of
    /// type `from` for any instantiation.
    fn changed_type(&self, from: &Ty, to: &Ty) -> Option<(Ty, Ty)> {
        let same = match (from, to) {
            (Ty::Unknown, _) | (_, Ty::Unknown) => true,
            (Ty::Tensor(a), Ty::Tensor(b)) | (Ty::TensorList(a), Ty::TensorList(b)) => {
                let possible = self.vars.possible(b);
                self.vars.possible(a).iter().any(|d| possible.contains(d))
            }
            // `Scalar` is an int or a float.
            (Ty::Scalar, t) | (t, Ty::Scalar) => matches!(t, Ty::Int | Ty::Float | Ty::Scalar),
            (Ty::EmptyList, t) | (t, Ty::EmptyList) => {
                matches!(
                    t,
                    Ty::IntList | Ty::SizeList | Ty::FloatList | Ty::TensorList(_) | Ty::EmptyList
                )
            }
            (Ty::DType(_), Ty::DType(_)) => true,
            (Ty::Int | Ty::Size, Ty::Int | Ty::Size) => true,
            (Ty::IntList | Ty::SizeList, Ty::IntList | Ty::SizeList) => true,
            (a, b) => a == b,
        };
        (!same).then(|| (from.clone(), to.clone()))
    }

    /// `for var in start..end { body }`.
    pub fn for_stmt(
        &mut self,
        var: &Ident,
        start: &Expr,
        end: &Expr,
        body: &Block,
        def: &FunctionDef,
    ) {
        // The loop's scope opens before its bounds are checked: a bad bound is an error of
        // the loop, so its variable is not also reported unused.
        self.push_scope();
        for bound in [start, end] {
            let t = self.value(bound);
            if !matches!(t, Ty::Int | Ty::Size | Ty::Unknown) {
                let mut d = Diagnostic::error(
                    "E0314",
                    format!("a loop bound must be an `Int`, found `{t}`"),
                )
                .at(bound.span, "not an `Int`")
                .with_note("a bound is an `Int` attribute, a literal or a size, known before the loop runs");
                if t.is_tensor() {
                    d = d.with_help("a tensor's size along an axis is `size(x, dim)`");
                }
                self.diags.push(d);
            } else if let ExprKind::Int(n) = bound.kind {
                if n < 0 {
                    self.diags.push(
                        Diagnostic::error("E0314", format!("a loop bound must not be negative, found {n}"))
                            .at(bound.span, "negative")
                            .with_help("count from 0 and offset in the body: `for k in 0..n { let i = k - 3 ... }`"),
                    );
                }
            } else if let Some((name, span, kind)) = self.runtime_name(bound) {
                // The trip count is fixed when the loop starts, outside any enclosing loop's
                // body: a triangular loop is not a loop of this language.
                let what =
                    if kind == LocalKind::LoopVar { "the loop variable" } else { "the `var`" };
                self.diags.push(
                    Diagnostic::error(
                        "E0314",
                        format!("a loop bound must be known before the loops around it run, but it reads {what} `{name}`"),
                    )
                    .at(span, "changes from one trip to the next")
                    .with_note("a loop's body is compiled once, with its loops' trip counts known when the outermost loop starts")
                    .with_help("loop over the whole range and mask the trips past the bound with `where`"),
                );
            }
        }
        self.bind(&var.name, Ty::Int, var.span, LocalKind::LoopVar);
        self.loop_body(body, def);
        self.pop_scope();
    }

    /// `while cond, at most max_trips { body }`.
    pub fn while_stmt(&mut self, cond: &Expr, max_trips: &Expr, body: &Block, def: &FunctionDef) {
        match self.value(cond) {
            Ty::Unknown => {}
            Ty::Tensor(dt) => {
                if !self.vars.possible(&dt).contains(&tfn_ir::DType::Bool) {
                    self.diags.push(
                        Diagnostic::error(
                            "E0315",
                            format!("a `while` condition must be a `bool` tensor, found `{}`", Ty::Tensor(dt)),
                        )
                        .at(cond.span, "not `bool`")
                        .with_help("compare it: `while max(abs(d)) > 1e-6, at most N`"),
                    );
                }
            }
            Ty::Bool => self.diags.push(
                Diagnostic::error("E0315", "`while` on a compile-time `Bool`")
                    .at(cond.span, "an attribute, known when the function is compiled")
                    .with_note("a `while` condition is a `bool` tensor of shape `[]`, computed before each trip")
                    .with_help("use `if` for a compile-time condition"),
            ),
            t => self.diags.push(
                Diagnostic::error(
                    "E0315",
                    format!("a `while` condition must be a `bool` tensor, found `{t}`"),
                )
                .at(cond.span, "not a tensor"),
            ),
        }
        match (self.value(max_trips), &max_trips.kind) {
            (Ty::Int, ExprKind::Int(n)) if *n < 0 => self.diags.push(
                Diagnostic::error("E0316", "a `while` loop's limit must not be negative")
                    .at(max_trips.span, "negative"),
            ),
            (Ty::Int | Ty::Unknown, _) => {}
            (Ty::Size, _) => self.diags.push(
                Diagnostic::error(
                    "E0316",
                    "`at most` takes a compile-time `Int`, found a size (known only at the call)",
                )
                .at(max_trips.span, "a size")
                .with_note("the most trips a `while` may make: an `Int` attribute or a literal")
                .with_help(
                    "pass the bound as an `Int` argument (`*, Int n`) and write `at most n`",
                ),
            ),
            (t, _) => self.diags.push(
                Diagnostic::error("E0316", format!("`at most` takes an `Int`, found `{t}`"))
                    .at(max_trips.span, "not an `Int`")
                    .with_note(
                        "the most trips a `while` may make: an `Int` attribute or a literal",
                    ),
            ),
        }
        self.loop_body(body, def);
    }

    /// A loop's body. A loop may make no trip, so it never counts as returning.
    fn loop_body(&mut self, body: &Block, def: &FunctionDef) {
        self.loop_depth += 1;
        self.block(body, def);
        self.loop_depth -= 1;
    }

    /// `return` inside a loop body (`span`: the statement; the caret goes under `return`).
    pub fn return_in_loop(&mut self, span: Span) {
        if self.loop_depth == 0 {
            return;
        }
        self.returned_in_loop = true;
        // `return` is 6 bytes.
        let keyword = Span { end: span.start.saturating_add(6).min(span.end), ..span };
        self.diags.push(
            Diagnostic::error("E0318", "`return` inside a loop")
                .at(keyword, "returns from inside a loop body")
                .with_note("a loop's results are its `var`s")
                .with_help("assign the results to `var`s and return them after the loop"),
        );
    }

    /// An `if` condition that reads a value known only at run time (a loop variable, or an
    /// attribute `var` a loop assigns): `E0319`.
    pub fn if_on_runtime_value(&mut self, cond: &Expr) {
        let Some((name, span, kind)) = self.runtime_name(cond) else { return };
        let what = if kind == LocalKind::LoopVar { "the loop variable" } else { "the `var`" };
        self.diags.push(
            Diagnostic::error(
                "E0319",
                format!("`if` on {what} `{name}`, known only at run time"),
            )
            .at(span, "changes from one trip to the next")
            .with_note("`if` is resolved when the function is compiled, and a loop's body is compiled once")
            .with_help("choose elementwise with `where(cond, a, b)`"),
        );
    }

    pub(super) fn runtime_name(&self, e: &Expr) -> Option<(String, Span, LocalKind)> {
        match &e.kind {
            ExprKind::Name(n) => {
                let local = self.local(n)?;
                let runtime = local.kind == LocalKind::LoopVar
                    || (local.kind == LocalKind::Var
                        && local.assigned
                        && super::expr::is_attr(&local.ty));
                runtime.then(|| (n.clone(), e.span, local.kind))
            }
            ExprKind::List(items) | ExprKind::Tuple(items) => {
                items.iter().find_map(|i| self.runtime_name(i))
            }
            ExprKind::Call(call) => call.args.iter().find_map(|a| self.runtime_name(&a.value)),
            ExprKind::Binary { lhs, rhs, .. } => {
                self.runtime_name(lhs).or_else(|| self.runtime_name(rhs))
            }
            ExprKind::Neg { operand, .. } => self.runtime_name(operand),
            ExprKind::Index { base, index } => {
                self.runtime_name(base).or_else(|| self.runtime_name(index))
            }
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Bool(_)
            | ExprKind::DType(_)
            | ExprKind::PatVar(_) => None,
        }
    }

    /// `base[index]`.
    pub fn index(&mut self, base: &Expr, index: &Expr) -> Ty {
        let b = self.value(base);
        let i = self.value(index);
        let mut ok = true;
        if !matches!(i, Ty::Int | Ty::Size | Ty::Unknown) {
            let mut d =
                Diagnostic::error("E0317", format!("an index must be an `Int`, found `{i}`"))
                    .at(index.span, "not an `Int`");
            if i.is_tensor() {
                d = d
                    .with_help("to pick by a tensor of indices, use `index_select(x, idx, dim=0)`");
            }
            self.diags.push(d);
            ok = false;
        }
        let ty = match b {
            Ty::Tensor(dt) => Ty::Tensor(dt),
            Ty::IntList => Ty::Int,
            // An item of `shape(x)` is a size.
            Ty::SizeList => Ty::Size,
            Ty::Unknown => Ty::Unknown,
            t => {
                let mut d =
                    Diagnostic::error("E0317", format!("cannot index a value of type `{t}`"))
                        .at(base.span, "not a tensor or an `Int[]`");
                if matches!(t, Ty::TensorList(_)) {
                    d = d
                        .with_help("stack the tensors into one with a leading axis and index that");
                }
                self.diags.push(d);
                return Ty::Unknown;
            }
        };
        if ok {
            ty
        } else {
            Ty::Unknown
        }
    }
}
