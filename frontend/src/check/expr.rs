//! Static types of expressions: names, literals, lists, tuples, pattern variables, operators.
//!
//! An operator whose operands are all attributes (`dim - 1`, `eps * 2.0`, `n > 0`) is attribute
//! arithmetic, evaluated at instantiation (so it may decide a static `if`): ints stay ints, an
//! int meeting a float gives a float, `/` gives a float, comparisons give a `Bool`. On sizes
//! (`size(x, 1)`, [`Ty::Size`]) `+ - *` and `/` give a size (`/` divides exactly), and a
//! float op (`sqrt`, `rsqrt`, `exp`, ...) gives a rank-0 tensor of the dtype where it is used
//! (the tensor it meets, the declared result, or `f32`). An operator
//! with a tensor operand is a call of its prelude op, checked like any call.

use super::scope::{Mode, Walker};
use super::types::{Dt, Ty};
use crate::ast::{self, Expr, ExprKind};
use tfn_ir::Diagnostic;

impl Walker<'_> {
    pub fn expr(&mut self, e: &Expr) -> Ty {
        match &e.kind {
            ExprKind::Name(n) => self.lookup(n, e.span),
            ExprKind::Int(_) => Ty::Int,
            ExprKind::Float(_) => Ty::Float,
            ExprKind::Bool(_) => Ty::Bool,
            ExprKind::DType(d) => Ty::DType(Dt::Fixed(*d)),
            ExprKind::List(items) => self.list(items),
            ExprKind::Tuple(items) => {
                for item in items {
                    self.value(item);
                }
                self.diags.push(
                    Diagnostic::error("E0306", "a tuple can only be returned")
                        .at(e.span, "tuple used as a value")
                        .with_help("return it with `return (a, b)`, or bind its parts separately"),
                );
                Ty::Unknown
            }
            ExprKind::PatVar(v) => self.pattern_var(v, e),
            ExprKind::Index { base, index } => self.index(base, index),
            ExprKind::Call(call) => self.call(call, None),
            ExprKind::Binary { op, op_span, lhs, rhs } => {
                let l = self.value(lhs);
                let r = self.value(rhs);
                if is_attr(&l) && is_attr(&r) {
                    let ty = self.static_op(op.op_name(), op.symbol(), &[l, r], *op_span);
                    return ty.unwrap_or(Ty::Unknown);
                }
                let name = ast::FnName {
                    base: ast::Ident { name: op.op_name().to_string(), span: *op_span },
                    overload: None,
                    span: *op_span,
                };
                let args = [(lhs.as_ref(), l), (rhs.as_ref(), r)];
                self.operator_call(&name, op.symbol(), &args, e.span)
            }
            ExprKind::Neg { op_span, operand } => {
                let t = self.value(operand);
                match t {
                    Ty::Unknown => t,
                    _ if is_attr(&t) => {
                        self.static_op("neg", "-", &[t], *op_span).unwrap_or(Ty::Unknown)
                    }
                    _ => {
                        let name = ast::FnName {
                            base: ast::Ident { name: "neg".to_string(), span: *op_span },
                            overload: None,
                            span: *op_span,
                        };
                        self.operator_call(&name, "-", &[(operand.as_ref(), t)], e.span)
                    }
                }
            }
        }
    }

    /// An expression used as one value: a tuple of results is an error here.
    pub fn value(&mut self, e: &Expr) -> Ty {
        match self.expr(e) {
            Ty::Tuple(items) => {
                self.diags.push(
                    Diagnostic::error(
                        "E0306",
                        format!("this call returns {} results, not one value", items.len()),
                    )
                    .at(e.span, "several results")
                    .with_help("destructure them first: `let (a, b) = ...`"),
                );
                Ty::Unknown
            }
            t => t,
        }
    }

    fn pattern_var(&mut self, v: &str, e: &Expr) -> Ty {
        match self.mode {
            Mode::RewriteLhs => {
                if !self.pattern_vars.iter().any(|(n, _)| n == v) {
                    self.pattern_vars.push((v.to_string(), e.span));
                }
            }
            Mode::RewriteRhs => {
                if !self.pattern_vars.iter().any(|(n, _)| n == v) {
                    self.diags.push(
                        Diagnostic::error(
                            "E0451",
                            format!("pattern variable `?{v}` is not bound by the left side"),
                        )
                        .at(e.span, "unbound")
                        .with_help("every `?name` on the right of `=>` must appear on the left"),
                    );
                }
            }
            Mode::Body | Mode::Grad => {
                self.diags.push(
                    Diagnostic::error(
                        "E0214",
                        format!("pattern variable `?{v}` outside a rewrite rule"),
                    )
                    .at(e.span, "only allowed in `rewrite` rules"),
                );
                return Ty::Unknown;
            }
        }
        // A pattern stands for a tensor in the rules' calls.
        Ty::Tensor(Dt::Any)
    }

    fn list(&mut self, items: &[Expr]) -> Ty {
        let mut ty = Ty::EmptyList;
        for item in items {
            let t = self.value(item);
            ty = match (ty, t) {
                (Ty::Unknown, _) | (_, Ty::Unknown) => Ty::Unknown,
                (Ty::EmptyList | Ty::IntList, Ty::Int | Ty::Size) => Ty::IntList,
                (Ty::EmptyList | Ty::IntList | Ty::FloatList, Ty::Int | Ty::Float) => Ty::FloatList,
                (Ty::EmptyList, Ty::Tensor(d)) => Ty::TensorList(d),
                (Ty::TensorList(a), Ty::Tensor(b)) => {
                    Ty::TensorList(if a == b { a } else { Dt::Any })
                }
                (prev, t) => {
                    let what = match prev {
                        Ty::TensorList(_) => "tensors".to_string(),
                        Ty::IntList | Ty::FloatList => "numbers".to_string(),
                        _ => format!("`{t}`"),
                    };
                    self.diags.push(
                        Diagnostic::error("E0215", format!("a list of {what} cannot hold a `{t}`"))
                            .at(item.span, "does not fit the list")
                            .with_note("lists hold only ints and floats (`Int[]`, `Float[]`) or only tensors (`Tensor[]`)"),
                    );
                    Ty::Unknown
                }
            };
        }
        ty
    }

    /// The type of a static op (`add`, `lt`, `logical_not`, ...) applied to attributes only,
    /// or `None` when the arguments do not fit one (then it is checked as a normal call).
    pub fn static_op(
        &mut self,
        name: &str,
        symbol: &str,
        args: &[Ty],
        span: tfn_ir::Span,
    ) -> Option<Ty> {
        use Ty::*;
        let numeric = |t: &Ty| matches!(t, Int | Float | Scalar | Unknown);
        if args.contains(&Size) && !args.contains(&Unknown) {
            return Some(self.size_op(name, symbol, args, span));
        }
        let ty = match (name, args) {
            (_, [_, _] | [_]) if args.contains(&Unknown) => {
                let comparison = matches!(name, "eq" | "ne" | "lt" | "le" | "gt" | "ge");
                if comparison || name.starts_with("logical_") {
                    Bool
                } else {
                    Unknown
                }
            }
            ("eq" | "ne", [Bool, Bool] | [DType(_), DType(_)]) => Bool,
            ("eq" | "ne" | "lt" | "le" | "gt" | "ge", [l, r]) if numeric(l) && numeric(r) => Bool,
            ("logical_and" | "logical_or", [Bool, Bool]) => Bool,
            ("logical_not", [Bool]) => Bool,
            ("neg" | "abs" | "sign", [t]) if numeric(t) => t.clone(),
            // `sqrt(4.0)`, `exp(0)`: literal-only math is a float literal.
            (n, [t]) if numeric(t) && tfn_ir::lower::static_float_math(n).is_some() => Float,
            ("atan2", [l, r]) if numeric(l) && numeric(r) => Float,
            (
                "add" | "sub" | "mul" | "div" | "pow" | "maximum" | "minimum" | "floor_div"
                | "remainder",
                [l, r],
            ) if numeric(l) && numeric(r) => match (l, r, name) {
                (Int, Int, "div") => Float,
                (Int, Int, _) => Int,
                (Float, _, _) | (_, Float, _) => Float,
                _ => Scalar,
            },
            (_, [_] | [_, _]) => {
                let types: Vec<String> = args.iter().map(|t| format!("`{t}`")).collect();
                self.diags.push(
                    Diagnostic::error("E0308", format!("cannot apply `{symbol}` to {}", types.join(" and ")))
                        .at(span, "unsupported operand types")
                        .with_note("attributes support arithmetic and comparisons of numbers, and `==`/`!=` of `Bool`s and dtypes"),
                );
                Unknown
            }
            _ => return None,
        };
        Some(ty)
    }
}

impl Walker<'_> {
    /// An operator on sizes: `+ - *` and exact `/` with ints and sizes give a size; anything
    /// else is an error (a size is known only at the call, so it cannot be compared or decide
    /// a static `if`).
    fn size_op(&mut self, name: &str, symbol: &str, args: &[Ty], span: tfn_ir::Span) -> Ty {
        let int = |t: &Ty| matches!(t, Ty::Int | Ty::Size);
        match (name, args) {
            ("add" | "sub" | "mul" | "div", [l, r]) if int(l) && int(r) => Ty::Size,
            // `rsqrt(size(q, -1))`: a rank-0 tensor of the float dtype where it is used.
            (_, [Ty::Size]) if tfn_ir::lower::static_float_math(name).is_some() => {
                Ty::Tensor(Dt::Any)
            }
            _ => {
                let why = match name {
                    "eq" | "ne" | "lt" | "le" | "gt" | "ge" => {
                        "a size cannot be compared: it is known only at the call"
                    }
                    _ if args.iter().all(int) => "sizes support only `+`, `-`, `*` and exact `/`",
                    _ => "a size is an `Int`: it cannot be mixed with a float",
                };
                self.diags.push(
                    Diagnostic::error("E0308", format!("cannot apply `{symbol}` to a size"))
                        .at(span, why)
                        .with_note(
                            "a size (`size(x, dim)`, `shape(x)`) is an `Int` known only at the \
                             call, never at compile time",
                        ),
                );
                Ty::Unknown
            }
        }
    }
}

/// A compile-time value (not a tensor, not unknown).
pub fn is_attr(t: &Ty) -> bool {
    !matches!(t, Ty::Tensor(_) | Ty::TensorList(_) | Ty::Tuple(_) | Ty::Unknown)
}
