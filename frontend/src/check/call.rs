//! Calls: name resolution, argument binding and overload dispatch at load time.
//!
//! Overloads are chosen by the one dispatcher of the project, [`tfn_ir::dispatch::dispatch`],
//! with what is statically known about each argument (a tensor's dtype when fixed, a literal's
//! value). For a name with a single candidate (or an explicit `name.overload`), argument binding
//! is checked here first so that each mistake gets its own code and the smallest span: too many
//! arguments (`E0204`, at the first extra one), a missing one (`E0205`, at the closing paren), an
//! unknown keyword (`E0206`), a positional argument after a keyword one (`E0207`), an argument
//! given twice (`E0208`), a keyword-only parameter passed positionally (`E0209`). Dispatcher
//! rejections become `E0211`–`E0213`/`E0217` for one candidate and `E0210` (one note per
//! candidate) for several. A literal that does not fit the dtype the chosen overload gives it
//! is `E0216` ([`super::literal`]).
//!
//! `size(x, dim)` and `shape(x)` are built-ins (sizes as values, [`Ty::Size`]) unless a
//! function or op of that name is visible, which then hides them.

use super::literal::{misfit_literals, BoundLiteral};
use super::scope::{CallEdge, Walker};
use super::types::{Dt, Ty};
use crate::ast::{self, Expr, ExprKind, FnName};
use crate::print::signature_text;
use crate::suggest;
use tfn_ir::dispatch::{
    dispatch, ArgKind, ArgRef, AttrType, BoundArg, Rejection, RejectionKind, Resolved,
};
use tfn_ir::library::{DTypeRef, FunctionDef, ParamType};
use tfn_ir::{Attr, Diagnostic, Span};

/// One typed argument.
struct TypedArg<'e> {
    keyword: Option<&'e ast::Ident>,
    ty: Ty,
    expr: &'e Expr,
}

impl TypedArg<'_> {
    fn span(&self) -> Span {
        match self.keyword {
            Some(k) => k.span.to(self.expr.span),
            None => self.expr.span,
        }
    }
}

impl Walker<'_> {
    /// A call written `f(...)`.
    pub fn call(&mut self, call: &ast::Call, _hint: Option<&str>) -> Ty {
        let mut args = Vec::new();
        let mut bad = false;
        let mut seen_keyword = false;
        for a in &call.args {
            let ty = self.value(&a.value);
            if a.keyword.is_some() {
                seen_keyword = true;
            } else if seen_keyword {
                self.diags.push(
                    Diagnostic::error("E0207", "positional argument after a keyword argument")
                        .at(a.value.span, "positional")
                        .with_help("move it before the keyword arguments, or name it"),
                );
                bad = true;
            }
            args.push(TypedArg { keyword: a.keyword.as_ref(), ty, expr: &a.value });
        }
        let display = format!("`{}`", call.name.full());
        let base = call.name.base.name.as_str();
        if call.name.overload.is_none()
            && matches!(base, "size" | "shape")
            && self.env.overloads(base).is_empty()
        {
            return self.size_builtin(base, &args, call.close, bad);
        }
        // `cast(size(x, 0), f64)`: a size (or a loop variable, `cast(i, f32)`) cast to a dtype
        // is a rank-0 tensor of that dtype.
        if base == "cast" && call.name.overload.is_none() {
            let runtime = |a: &TypedArg| a.ty == Ty::Int && self.runtime_name(a.expr).is_some();
            if let Some(first) = args.first_mut() {
                if first.ty == Ty::Size || runtime(first) {
                    first.ty = Ty::Tensor(super::types::Dt::Any);
                }
            }
        }
        // Calls of static ops on attributes only are attribute arithmetic, like the operators
        // they are spelled as (`sub(dim, 1)` is `dim - 1`).
        let overload = call.name.overload.as_ref().map(|o| o.name.as_str());
        let all_attrs = !args.is_empty()
            && args.iter().all(|a| a.keyword.is_none() && super::expr::is_attr(&a.ty));
        if !bad && all_attrs && tfn_ir::lower::is_static_op(&call.name.base.name, overload) {
            let tys: Vec<Ty> = args.iter().map(|a| a.ty.clone()).collect();
            if let Some(t) =
                self.static_op(&call.name.base.name, &call.name.full(), &tys, call.name.span)
            {
                return t;
            }
        }
        self.resolve(&call.name, &display, &args, call.close, bad)
    }

    /// The built-ins `size(Tensor x, Int dim) -> Int` (a size: [`Ty::Size`]) and
    /// `shape(Tensor x) -> Int[]`, used when no function of the name is visible.
    fn size_builtin(&mut self, name: &str, args: &[TypedArg], close: Span, bad: bool) -> Ty {
        let result = if name == "size" { Ty::Size } else { Ty::SizeList };
        let params: &[&str] = if name == "size" { &["x", "dim"] } else { &["x"] };
        let usage = if name == "size" {
            "size(Tensor x, Int dim) -> Int"
        } else {
            "shape(Tensor x) -> Int[]"
        };
        let mut given: Vec<Option<&TypedArg>> = vec![None; params.len()];
        let mut ok = !bad;
        for (i, a) in args.iter().enumerate() {
            let slot = match a.keyword {
                None => i,
                Some(k) => match params.iter().position(|p| *p == k.name) {
                    Some(p) => p,
                    None => {
                        self.diags.push(
                            Diagnostic::error(
                                "E0206",
                                format!("`{name}` has no parameter named `{}`", k.name),
                            )
                            .at(k.span, "unknown keyword")
                            .with_note(format!("`{usage}` (a built-in)")),
                        );
                        ok = false;
                        continue;
                    }
                },
            };
            match given.get_mut(slot) {
                None => {
                    self.diags.push(
                        Diagnostic::error(
                            "E0204",
                            format!("too many arguments to `{name}`: expected {}", params.len()),
                        )
                        .at(a.span(), "unexpected argument")
                        .with_note(format!("`{usage}` (a built-in)")),
                    );
                    ok = false;
                }
                Some(Some(_)) => {
                    self.diags.push(
                        Diagnostic::error(
                            "E0208",
                            format!("argument `{}` is given twice", params[slot]),
                        )
                        .at(a.span(), "given again"),
                    );
                    ok = false;
                }
                Some(s) => *s = Some(a),
            }
        }
        if !ok {
            return result;
        }
        for (p, a) in params.iter().zip(&given) {
            let Some(a) = a else {
                self.diags.push(
                    Diagnostic::error(
                        "E0205",
                        format!("missing argument `{p}` in call to `{name}`"),
                    )
                    .at(close, format!("expected `{p}`"))
                    .with_note(format!("`{usage}` (a built-in)")),
                );
                continue;
            };
            let fits = match (*p, &a.ty) {
                (_, Ty::Unknown) => true,
                ("x", t) => t.is_tensor(),
                (_, t) => *t == Ty::Int,
            };
            if !fits {
                let why = match (*p, &a.ty) {
                    ("x", t) => format!("`x` must be a tensor, found `{t}`"),
                    (_, Ty::Size) => "`dim` must be a compile-time `Int`, not a size".to_string(),
                    (_, t) => format!("`dim` must be `Int`, found `{t}`"),
                };
                self.diags.push(
                    Diagnostic::error("E0211", format!("mismatched argument in call to `{name}`"))
                        .at(a.span(), why)
                        .with_note(format!("`{usage}` (a built-in)")),
                );
            }
        }
        result
    }

    /// An operator, checked as a call of its prelude op.
    pub fn operator_call(
        &mut self,
        name: &FnName,
        symbol: &str,
        operands: &[(&Expr, Ty)],
        span: Span,
    ) -> Ty {
        let args: Vec<TypedArg> = operands
            .iter()
            .map(|(e, t)| TypedArg { keyword: None, ty: t.clone(), expr: e })
            .collect();
        let display = format!("`{symbol}` (`{}`)", name.base.name);
        let close = Span { start: span.end.saturating_sub(1), ..span };
        self.resolve(name, &display, &args, close, false)
    }

    fn resolve(
        &mut self,
        name: &FnName,
        display: &str,
        args: &[TypedArg],
        close: Span,
        bad: bool,
    ) -> Ty {
        let env = self.env;
        let all = env.overloads(&name.base.name);
        let metas = env.metas(&name.base.name);
        if all.is_empty() {
            let mut d =
                Diagnostic::error("E0201", format!("unknown function `{}`", name.base.name))
                    .at(name.base.span, "not found");
            if let Some(s) = self.suggest(&name.base.name, env.names()) {
                d = d.with_help(format!("a function with a similar name exists: `{s}`"));
            } else if self.is_local(&name.base.name) {
                d = d.with_note(format!("`{}` is a variable, not a function", name.base.name));
            }
            self.diags.push(d);
            return Ty::Unknown;
        }
        // Candidates: every overload, or the one named explicitly.
        let (candidates, offset): (&[FunctionDef], usize) = match &name.overload {
            None => (all, 0),
            Some(o) => match all.iter().position(|f| f.overload.as_deref() == Some(&o.name)) {
                Some(i) => (&all[i..=i], i),
                None => {
                    let names: Vec<String> =
                        all.iter().map(|f| format!("`{}`", f.full_name())).collect();
                    let mut d = Diagnostic::error(
                        "E0203",
                        format!("`{}` has no overload `{}`", name.base.name, o.name),
                    )
                    .at(o.span, "unknown overload")
                    .with_note(format!("overloads: {}", names.join(", ")));
                    let suffixes = all.iter().filter_map(|f| f.overload.as_deref());
                    if let Some(s) = suggest::closest(&o.name, suffixes) {
                        d = d.with_help(format!(
                            "an overload with a similar name exists: `{}.{s}`",
                            name.base.name
                        ));
                    }
                    self.diags.push(d);
                    return Ty::Unknown;
                }
            },
        };
        let cand_metas = metas.get(offset..offset + candidates.len()).unwrap_or(&[]);
        let unique_new = match cand_metas {
            [m] => m.new_item,
            _ => None,
        };
        let skip = bad
            || cand_metas.iter().any(|m| m.broken)
            || args.iter().any(|a| matches!(a.ty, Ty::Unknown | Ty::Tuple(_)));
        if skip {
            self.edge(unique_new, name.span);
            return Ty::Unknown;
        }
        if let [only] = candidates {
            if !self.check_binding(only, display, args, close) {
                self.edge(unique_new, name.span);
                return Ty::Unknown;
            }
        }
        let positional: Vec<ArgKind> =
            args.iter().filter(|a| a.keyword.is_none()).map(|a| arg_kind(&a.ty, a.expr)).collect();
        let keywords: Vec<(&str, ArgKind)> = args
            .iter()
            .filter_map(|a| a.keyword.map(|k| (k.name.as_str(), arg_kind(&a.ty, a.expr))))
            .collect();
        match dispatch(candidates, &positional, &keywords) {
            Ok(resolved) => {
                let callee = cand_metas.get(resolved.overload).and_then(|m| m.new_item);
                self.edge(callee, name.span);
                let f = &candidates[resolved.overload];
                let literals = bound_literals(&resolved, args);
                self.diags.extend(misfit_literals(f, &resolved, &literals, display));
                result_type(f, &resolved, args)
            }
            Err(rejections) => {
                self.report_rejections(name, display, candidates, &rejections, args);
                Ty::Unknown
            }
        }
    }

    fn edge(&mut self, callee: Option<usize>, span: Span) {
        if let (Some(caller), Some(callee)) = (self.caller, callee) {
            self.edges.push(CallEdge { caller, callee, span });
        }
    }

    /// Arity and keyword rules against one signature; `false` if any was broken.
    fn check_binding(
        &mut self,
        f: &FunctionDef,
        display: &str,
        args: &[TypedArg],
        close: Span,
    ) -> bool {
        let before = self.diags.len();
        let mut filled = vec![false; f.params.len()];
        let positional: Vec<&TypedArg> = args.iter().filter(|a| a.keyword.is_none()).collect();
        let max_positional = f.params.iter().take_while(|p| !p.keyword_only).count();
        // A positional value past the positional parameters is meant for a keyword-only one
        // the call does not name: the first such for the first extra value, and so on.
        let named = |name: &str| args.iter().any(|a| a.keyword.is_some_and(|k| k.name == name));
        let unnamed_keyword_only: Vec<_> =
            f.params.iter().filter(|p| p.keyword_only && !named(&p.name)).collect();
        for (i, a) in positional.iter().enumerate() {
            let param = if i < max_positional {
                f.params.get(i)
            } else {
                unnamed_keyword_only.get(i - max_positional).copied()
            };
            match param {
                Some(p) if p.keyword_only => {
                    self.diags.push(
                        Diagnostic::error(
                            "E0209",
                            format!("argument `{}` of {display} is keyword-only", p.name),
                        )
                        .at(a.span(), "passed positionally")
                        .with_help(format!(
                            "write `{}={}`",
                            p.name,
                            snippet_hint(a.expr)
                        )),
                    );
                }
                Some(_) => filled[i] = true,
                None => {
                    self.diags.push(
                        Diagnostic::error(
                            "E0204",
                            format!(
                                "too many arguments to {display}: expected at most {}, found {}",
                                max_positional,
                                positional.len()
                            ),
                        )
                        .at(a.span(), "unexpected argument")
                        .with_note(format!("`{}`", signature_text(f))),
                    );
                    break;
                }
            }
        }
        for a in args {
            let Some(k) = a.keyword else { continue };
            match f.param(&k.name) {
                None => {
                    let mut d = Diagnostic::error(
                        "E0206",
                        format!("{display} has no parameter named `{}`", k.name),
                    )
                    .at(k.span, "unknown keyword");
                    if let Some(s) =
                        suggest::closest(&k.name, f.params.iter().map(|p| p.name.as_str()))
                    {
                        d = d.with_help(format!("a parameter with a similar name exists: `{s}`"));
                    } else {
                        d = d.with_note(format!("`{}`", signature_text(f)));
                    }
                    self.diags.push(d);
                }
                Some((i, _)) if filled.get(i).copied().unwrap_or(false) => {
                    self.diags.push(
                        Diagnostic::error("E0208", format!("argument `{}` is given twice", k.name))
                            .at(k.span, "given again"),
                    );
                }
                Some((i, _)) => {
                    if let Some(slot) = filled.get_mut(i) {
                        *slot = true;
                    }
                }
            }
        }
        if self.diags.len() == before {
            for (p, filled) in f.params.iter().zip(&filled) {
                if !filled && p.default.is_none() {
                    let how = if p.keyword_only {
                        format!("`{}=...`", p.name)
                    } else {
                        format!("`{}`", p.name)
                    };
                    self.diags.push(
                        Diagnostic::error(
                            "E0205",
                            format!("missing argument `{}` in call to {display}", p.name),
                        )
                        .at(close, format!("expected {how}"))
                        .with_note(format!("`{}`", signature_text(f))),
                    );
                }
            }
        }
        self.diags.len() == before
    }

    fn report_rejections(
        &mut self,
        name: &FnName,
        display: &str,
        candidates: &[FunctionDef],
        rejections: &[Rejection],
        args: &[TypedArg],
    ) {
        let culprit_span = |r: &Rejection| -> Option<Span> {
            let index = match r.culprit? {
                ArgRef::Positional(i) => args.iter().filter(|a| a.keyword.is_none()).nth(i)?,
                ArgRef::Keyword(i) => args.iter().filter(|a| a.keyword.is_some()).nth(i)?,
            };
            Some(index.span())
        };
        if let ([only], [r]) = (candidates, rejections) {
            let (code, what) = classify(r.kind);
            let span = culprit_span(r).unwrap_or(name.span);
            self.diags.push(
                Diagnostic::error(code, format!("{what} in call to {display}"))
                    .at(span, r.reason.clone())
                    .with_note(format!("`{}`", signature_text(only))),
            );
            return;
        }
        let mut d =
            Diagnostic::error("E0210", format!("no overload of {display} matches these arguments"))
                .at(name.span, "no match");
        for r in rejections {
            if let Some(f) = candidates.get(r.overload) {
                d = d.with_note(format!("`{}`: {}", signature_text(f), r.reason));
            }
        }
        self.diags.push(d);
    }
}

/// A stable code and headline for a dispatcher rejection of a single candidate.
fn classify(kind: RejectionKind) -> (&'static str, &'static str) {
    match kind {
        RejectionKind::DTypeConstraint => ("E0212", "dtype constraint not satisfied"),
        RejectionKind::UninferableLiteral => ("E0217", "cannot infer the dtype of a literal"),
        RejectionKind::DTypeMismatch => ("E0213", "mismatched dtypes"),
        RejectionKind::FixedDType | RejectionKind::ArgumentKind | RejectionKind::Arity => {
            ("E0211", "mismatched argument")
        }
    }
}

/// A short rendering of an argument for `help:` lines.
fn snippet_hint(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Name(n) => n.clone(),
        ExprKind::Int(i) => i.to_string(),
        ExprKind::Float(f) => tfn_ir::attr::fmt_float(*f),
        ExprKind::Bool(b) => b.to_string(),
        _ => "...".to_string(),
    }
}

/// What the dispatcher is told about an argument.
fn arg_kind(ty: &Ty, e: &Expr) -> ArgKind {
    let dtype = |d: &Dt| match d {
        Dt::Fixed(d) => Some(*d),
        _ => None,
    };
    let literal = match &e.kind {
        ExprKind::Int(i) => Some(Attr::Int(*i)),
        ExprKind::Float(f) => Some(Attr::Float(*f)),
        ExprKind::Bool(b) => Some(Attr::Bool(*b)),
        _ => None,
    };
    let attr = |ty: AttrType, value: Option<Attr>| ArgKind::Attr { ty, value };
    match ty {
        Ty::Tensor(d) => ArgKind::Tensor { dtype: dtype(d), rank: None },
        Ty::TensorList(d) => ArgKind::TensorList { dtype: dtype(d), len: None },
        Ty::Scalar => attr(AttrType::Scalar, None),
        Ty::Int => attr(AttrType::Int, literal),
        Ty::Size => attr(AttrType::Int, None),
        Ty::Float => attr(AttrType::Float, literal),
        Ty::Bool => attr(AttrType::Bool, literal),
        Ty::DType(d) => attr(AttrType::DType, dtype(d).map(Attr::DType)),
        Ty::IntList | Ty::SizeList => attr(AttrType::IntList, None),
        Ty::FloatList => attr(AttrType::FloatList, None),
        Ty::EmptyList => attr(AttrType::IntList, Some(Attr::IntList(Vec::new()))),
        Ty::Tuple(_) | Ty::Unknown => ArgKind::Tensor { dtype: None, rank: None },
    }
}

/// The literal arguments of a call, with the parameter each is bound to.
fn bound_literals(resolved: &Resolved, args: &[TypedArg]) -> Vec<BoundLiteral> {
    let positional: Vec<&TypedArg> = args.iter().filter(|a| a.keyword.is_none()).collect();
    let keywords: Vec<&TypedArg> = args.iter().filter(|a| a.keyword.is_some()).collect();
    let mut literals = Vec::new();
    for (param, b) in resolved.bindings.iter().enumerate() {
        let arg = match *b {
            BoundArg::Positional(i) => positional.get(i),
            BoundArg::Keyword(i) => keywords.get(i),
            BoundArg::Default => None,
        };
        let Some(arg) = arg else { continue };
        let value = match &arg.expr.kind {
            ExprKind::Int(i) => Attr::Int(*i),
            ExprKind::Float(f) => Attr::Float(*f),
            ExprKind::Bool(b) => Attr::Bool(*b),
            _ => continue,
        };
        literals.push(BoundLiteral { param, value, span: arg.expr.span });
    }
    literals
}

/// The static type of the chosen overload's results.
fn result_type(f: &FunctionDef, resolved: &Resolved, args: &[TypedArg]) -> Ty {
    let positional: Vec<&TypedArg> = args.iter().filter(|a| a.keyword.is_none()).collect();
    let keywords: Vec<&TypedArg> = args.iter().filter(|a| a.keyword.is_some()).collect();
    let arg_of = |b: BoundArg| match b {
        BoundArg::Positional(i) => positional.get(i).copied(),
        BoundArg::Keyword(i) => keywords.get(i).copied(),
        BoundArg::Default => None,
    };
    // A dtype variable not fixed by the call keeps the caller's own variable when every
    // argument bound to it has that variable (`add(x, y)` of two `Tensor<T>` is `Tensor<T>`).
    let caller_var = |v: &str| -> Option<String> {
        let mut found: Option<String> = None;
        for (p, b) in f.params.iter().zip(&resolved.bindings) {
            let bound = match &p.ty {
                ParamType::Tensor(DTypeRef::Var(w)) | ParamType::TensorList(DTypeRef::Var(w)) => {
                    w == v
                }
                ParamType::DType => p.name == v,
                _ => false,
            };
            if !bound {
                continue;
            }
            let Some(a) = arg_of(*b) else { continue };
            let var = match &a.ty {
                Ty::Tensor(Dt::Var(t)) | Ty::TensorList(Dt::Var(t)) | Ty::DType(Dt::Var(t)) => {
                    t.clone()
                }
                _ => return None,
            };
            if found.as_ref().is_some_and(|f| *f != var) {
                return None;
            }
            found = Some(var);
        }
        found
    };
    let one = |ty: &ParamType| -> Ty {
        let dt = |d: &DTypeRef| match resolved.dtype_of(d) {
            Some(d) => Dt::Fixed(d),
            None => match d {
                DTypeRef::Var(v) => caller_var(v).map_or(Dt::Any, Dt::Var),
                _ => Dt::Any,
            },
        };
        match ty {
            ParamType::Tensor(d) => Ty::Tensor(dt(d)),
            ParamType::TensorList(d) => Ty::TensorList(dt(d)),
            other => Ty::of_param(other),
        }
    };
    match f.returns.as_slice() {
        [single] => one(single),
        many => Ty::Tuple(many.iter().map(one).collect()),
    }
}
