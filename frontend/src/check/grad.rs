//! `grad` blocks: the function and inputs they name, one formula per input, formula types.
//!
//! `grad f(x, y) { x: ..., y: ... }` must name an existing function (`E0401`) with one result
//! (`E0406`), list some of its tensor parameters in parameter order, each once (`E0402` not a
//! parameter, `E0403` not differentiable, `E0407` order/duplicates), and give exactly one
//! formula per listed input (`E0404`). A second `grad` block for the same function is `E0405`.
//! Formulas may read every parameter of the function, `result` and `grad`, and must give a
//! tensor of the input's type.

use super::scope::{LocalKind, Mode, Walker};
use super::types::Ty;
use crate::ast::GradItem;
use crate::suggest;
use tfn_ir::library::{DTypeRef, FunctionDef, ParamType};
use tfn_ir::{Diagnostic, Span};

impl Walker<'_> {
    /// Checks one `grad` block; `previous` holds the blocks seen so far (library and batch) as
    /// (function, overload, span).
    pub fn grad_block(&mut self, g: &GradItem, previous: &[(String, Option<String>, Span)]) {
        self.mode = Mode::Grad;
        let base = &g.name.base.name;
        let overload = g.name.overload.as_ref().map(|o| o.name.clone());
        let env = self.env;
        let overloads = env.overloads(base);
        let Some(def) = overloads.iter().find(|f| f.overload == overload) else {
            let mut d = Diagnostic::error(
                "E0401",
                format!("gradient for unknown function `{}`", g.name.full()),
            )
            .at(g.name.span, "no such function");
            if overloads.is_empty() {
                if let Some(s) = self.suggest(base, env.names()) {
                    d = d.with_help(format!("a function with a similar name exists: `{s}`"));
                }
            } else {
                let names: Vec<String> =
                    overloads.iter().map(|f| format!("`{}`", f.full_name())).collect();
                d = d.with_note(format!("overloads: {}", names.join(", ")));
            }
            self.diags.push(d);
            return;
        };
        if let Some((_, _, first)) = previous.iter().find(|(f, o, _)| f == base && *o == overload) {
            self.diags.push(
                Diagnostic::error(
                    "E0405",
                    format!("`{}` already has a `grad` block", g.name.full()),
                )
                .at(g.name.span, "second gradient")
                .with_secondary(*first, "first defined here"),
            );
        }
        if def.returns.len() != 1 {
            self.diags.push(
                Diagnostic::error(
                    "E0406",
                    format!("`{}` has several results; `grad` blocks need one", g.name.full()),
                )
                .at(g.name.span, "several results"),
            );
            return;
        }
        self.grad_inputs(g, def);
        self.enter_function(def, &[], &[], LocalKind::Implicit);
        let result = Ty::of_param(&def.returns[0]);
        self.bind("result", result.clone(), g.name.span, LocalKind::Implicit);
        self.bind("grad", result, g.name.span, LocalKind::Implicit);
        let mut seen: Vec<&str> = Vec::new();
        for (input, formula) in &g.formulas {
            let t = self.value(formula);
            if seen.contains(&input.name.as_str()) {
                self.diags.push(
                    Diagnostic::error("E0404", format!("two formulas for input `{}`", input.name))
                        .at(input.span, "second formula"),
                );
                continue;
            }
            seen.push(&input.name);
            match g.inputs.iter().any(|i| i.name == input.name) {
                false => self.diags.push(
                    Diagnostic::error(
                        "E0404",
                        format!("formula for `{}`, which the header does not list", input.name),
                    )
                    .at(input.span, "not listed")
                    .with_help(format!(
                        "add `{}` to `grad {}(...)`",
                        input.name,
                        g.name.full()
                    )),
                ),
                true => {
                    if let Some((_, p)) = def.param(&input.name) {
                        self.check_result(&t, &p.ty, formula.span, formula.span);
                    }
                }
            }
        }
        for input in &g.inputs {
            if !seen.contains(&input.name.as_str()) {
                self.diags.push(
                    Diagnostic::error("E0404", format!("no formula for input `{}`", input.name))
                        .at(input.span, "listed without a formula")
                        .with_help(format!(
                            "add a line `{}: <vector-Jacobian product>`",
                            input.name
                        )),
                );
            }
        }
        self.pop_scope();
    }

    fn grad_inputs(&mut self, g: &GradItem, def: &FunctionDef) {
        let mut last: Option<usize> = None;
        let mut listed: Vec<&str> = Vec::new();
        for input in &g.inputs {
            let Some((index, p)) = def.param(&input.name) else {
                let mut d = Diagnostic::error(
                    "E0402",
                    format!("`{}` is not a parameter of `{}`", input.name, def.full_name()),
                )
                .at(input.span, "unknown input");
                if let Some(s) =
                    suggest::closest(&input.name, def.params.iter().map(|p| p.name.as_str()))
                {
                    d = d.with_help(format!("a parameter with a similar name exists: `{s}`"));
                }
                self.diags.push(d);
                continue;
            };
            if listed.contains(&input.name.as_str()) {
                self.diags.push(
                    Diagnostic::error("E0407", format!("input `{}` is listed twice", input.name))
                        .at(input.span, "listed again"),
                );
                continue;
            }
            listed.push(&input.name);
            let differentiable = match &p.ty {
                ParamType::Tensor(DTypeRef::Fixed(d))
                | ParamType::TensorList(DTypeRef::Fixed(d)) => d.is_float(),
                ParamType::Tensor(DTypeRef::Var(v)) | ParamType::TensorList(DTypeRef::Var(v)) => {
                    let allowed = def
                        .type_params
                        .iter()
                        .find(|t| t.name == *v)
                        .and_then(|t| t.allowed.clone());
                    allowed.is_none_or(|a| a.iter().any(|d| d.is_float()))
                }
                ParamType::Tensor(DTypeRef::Any) | ParamType::TensorList(DTypeRef::Any) => true,
                _ => false,
            };
            if !differentiable {
                self.diags.push(
                    Diagnostic::error(
                        "E0403",
                        format!("input `{}` is not differentiable", input.name),
                    )
                    .at(input.span, format!("of type `{}`", crate::print::param_type(&p.ty)))
                    .with_note("only floating-point tensor inputs get gradients"),
                );
            }
            if last.is_some_and(|l| index < l) {
                self.diags.push(
                    Diagnostic::error("E0407", "gradient inputs must be listed in parameter order")
                        .at(input.span, "out of order")
                        .with_note(format!("`{}`", crate::print::signature_text(def))),
                );
            }
            last = Some(index);
        }
    }
}
