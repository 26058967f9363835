//! Function bodies: statements, static `if`s, returns on every path, unused names.
//!
//! - `let x = e` binds one value; `let (a, b) = f(..)` destructures a call with as many
//!   results (`E0306` otherwise).
//! - A static `if` condition must be a `Bool` attribute (a `Bool` parameter, or a comparison of
//!   attributes); a tensor condition is `E0302` (use `where`).
//! - Every path must end in `return` (`E0303`, at the closing brace), each `return` gives as
//!   many values as the signature declares (`E0304`), of a matching kind and dtype (`E0305`).
//! - Statements after a `return` are unreachable (`W0303`).
//! - `var`, assignments, `for`, `while` and `return` inside loops: [`super::loops`].

use super::scope::{LocalKind, Walker};
use super::types::{Dt, DtypeVars, Ty};
use crate::ast::{Block, ExprKind, Stmt};
use crate::print::param_type;
use tfn_ir::library::{DTypeRef, FunctionDef, ParamType};
use tfn_ir::{Diagnostic, Span};

impl Walker<'_> {
    /// Declares the dtype variables and parameters of `def` in a new scope.
    /// `name_spans` are the parameters' name tokens when the source is at hand (else the whole
    /// parameter is used).
    /// `unknown[i]` marks parameters whose type had an error: they are typed unknown.
    pub fn enter_function(
        &mut self,
        def: &FunctionDef,
        name_spans: &[Span],
        unknown: &[bool],
        param_kind: LocalKind,
    ) {
        self.vars = DtypeVars::default();
        for tp in &def.type_params {
            self.vars.vars.insert(tp.name.clone(), tp.allowed.clone());
        }
        self.push_scope();
        for (i, p) in def.params.iter().enumerate() {
            let ty = match &p.ty {
                _ if unknown.get(i).copied().unwrap_or(false) => Ty::Unknown,
                ParamType::DType => Ty::DType(Dt::Var(p.name.clone())),
                other => Ty::of_param(other),
            };
            let span = name_spans.get(i).copied().unwrap_or(p.span);
            self.bind(&p.name, ty, span, param_kind);
        }
    }

    /// Checks a `fn` body against its signature.
    pub fn function_body(
        &mut self,
        def: &FunctionDef,
        name_spans: &[Span],
        unknown: &[bool],
        body: &Block,
    ) {
        self.enter_function(def, name_spans, unknown, LocalKind::Param);
        self.returned_in_loop = false;
        let returns = self.block(body, def);
        // A `return` inside a loop is already an error (`E0318`); do not add another.
        if !returns && !self.returned_in_loop {
            self.diags.push(
                Diagnostic::error(
                    "E0303",
                    format!("`{}` may finish without returning", def.full_name()),
                )
                .at(body.close, "reached without `return`")
                .with_help("end every path with `return`"),
            );
        }
        self.pop_scope();
    }

    /// Checks a block in its own scope; `true` if it always returns.
    pub(super) fn block(&mut self, block: &Block, def: &FunctionDef) -> bool {
        self.push_scope();
        let mut returns = false;
        for stmt in &block.stmts {
            if returns {
                self.diags.push(
                    Diagnostic::warning("W0303", "unreachable statement")
                        .at(stmt.span(), "after a `return`"),
                );
                break;
            }
            returns = self.stmt(stmt, def);
        }
        self.pop_scope();
        returns
    }

    fn stmt(&mut self, stmt: &Stmt, def: &FunctionDef) -> bool {
        match stmt {
            Stmt::Let { names, tuple, value, .. } => {
                let ty = if *tuple { self.expr(value) } else { self.value(value) };
                let tys: Vec<Ty> = match (tuple, ty) {
                    (false, t) => vec![t],
                    (true, Ty::Tuple(items)) if items.len() == names.len() => items,
                    (true, Ty::Unknown) => vec![Ty::Unknown; names.len()],
                    (true, t) => {
                        let found = match &t {
                            Ty::Tuple(items) => format!("{} results", items.len()),
                            _ => "one value".to_string(),
                        };
                        self.diags.push(
                            Diagnostic::error(
                                "E0306",
                                format!("cannot destructure {found} into {} names", names.len()),
                            )
                            .at(value.span, format!("gives {found}")),
                        );
                        vec![Ty::Unknown; names.len()]
                    }
                };
                for (n, t) in names.iter().zip(tys) {
                    self.bind(&n.name, t, n.span, LocalKind::Let);
                }
                false
            }
            Stmt::Var { name, value, .. } => {
                self.var_stmt(name, value);
                false
            }
            Stmt::Assign { name, value, .. } => {
                self.assign_stmt(name, value);
                false
            }
            Stmt::For { var, start, end, body, .. } => {
                self.for_stmt(var, start, end, body, def);
                false
            }
            Stmt::While { cond, max_trips, body, .. } => {
                self.while_stmt(cond, max_trips, body, def);
                false
            }
            Stmt::If { cond, then_block, else_block, .. } => {
                let cond_ty = self.value(cond);
                if matches!(cond_ty, Ty::Bool) {
                    self.if_on_runtime_value(cond);
                }
                match cond_ty {
                    Ty::Bool | Ty::Unknown => {}
                    Ty::Tensor(_) => self.diags.push(
                        Diagnostic::error("E0302", "`if` on a tensor")
                            .at(cond.span, "a tensor, not a compile-time `Bool`")
                            .with_note("`if` is resolved when the function is compiled, from its attributes")
                            .with_help("choose elementwise with `where(cond, a, b)`"),
                    ),
                    t => self.diags.push(
                        Diagnostic::error("E0302", format!("`if` condition must be a `Bool`, found `{t}`"))
                            .at(cond.span, "not a `Bool`"),
                    ),
                }
                let then_returns = self.block(then_block, def);
                let else_returns = else_block.as_ref().is_some_and(|b| self.block(b, def));
                then_returns && else_returns
            }
            Stmt::Return { value, span } => {
                self.return_in_loop(*span);
                let (values, tys): (Vec<&crate::ast::Expr>, Vec<Ty>) = match &value.kind {
                    ExprKind::Tuple(items) => {
                        let tys = items.iter().map(|e| self.value(e)).collect();
                        (items.iter().collect(), tys)
                    }
                    _ => (vec![value], vec![self.value(value)]),
                };
                if values.len() != def.returns.len() {
                    self.diags.push(
                        Diagnostic::error(
                            "E0304",
                            format!(
                                "`{}` returns {} value{}, found {}",
                                def.full_name(),
                                def.returns.len(),
                                if def.returns.len() == 1 { "" } else { "s" },
                                values.len()
                            ),
                        )
                        .at(value.span, "wrong number of values")
                        .with_secondary(def.span, "declared here"),
                    );
                    return true;
                }
                for ((e, t), declared) in values.iter().zip(&tys).zip(&def.returns) {
                    self.check_result(t, declared, e.span, *span);
                }
                true
            }
        }
    }

    /// A returned value (or gradient formula) against a declared result type.
    pub fn check_result(&mut self, t: &Ty, declared: &ParamType, span: Span, _stmt: Span) {
        let ParamType::Tensor(dref) = declared else { return };
        let ok = match t {
            Ty::Unknown => true,
            Ty::Tensor(dt) => {
                let want = match dref {
                    DTypeRef::Any => return,
                    DTypeRef::Fixed(d) => vec![*d],
                    DTypeRef::Var(v) => self.vars.possible(&Dt::Var(v.clone())),
                };
                self.vars.possible(dt).iter().any(|d| want.contains(d))
            }
            _ => false,
        };
        if !ok {
            self.diags.push(
                Diagnostic::error(
                    "E0305",
                    format!("expected `{}`, found `{t}`", param_type(declared)),
                )
                .at(span, "mismatched result type"),
            );
        }
    }
}
