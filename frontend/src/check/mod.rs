//! The checker: every load-time rule of the language over one batch of parsed files.
//!
//! A batch is a file and the files it `use`s, checked together against the library loaded so
//! far. Order of work: signatures and the overload environment (duplicates, masking), then
//! bodies, `grad` blocks and rewrite rules, then recursion. Every error of the batch is
//! reported, sorted by position; types of expressions already in error are unknown and match
//! anything, so errors do not cascade. Only an error-free batch is converted to templates.

mod body;
mod call;
mod env;
mod expr;
mod grad;
mod literal;
mod loops;
mod recursion;
mod restate;
mod rewrite;
mod scope;
mod signature;
pub mod types;

use crate::ast::{self, Item};
use crate::convert;
use env::{Env, Meta};
use scope::{Mode, Walker};
use tfn_ir::library::{Body, FunctionDef, GradDef, RewriteDef};
use tfn_ir::{Diagnostic, Library, Span};

/// The templates of a checked batch, in load order.
#[derive(Debug, Default)]
pub struct Checked {
    pub functions: Vec<FunctionDef>,
    pub grads: Vec<GradDef>,
    pub rewrites: Vec<RewriteDef>,
}

/// A new `op`/`fn` of the batch with its checked signature.
struct NewFn<'a> {
    item: &'a Item,
    def: FunctionDef,
    name_spans: Vec<Span>,
    broken_params: Vec<bool>,
    added: bool,
    /// Repeats the prelude's declaration (`W0102`): checked, never added.
    restates: bool,
}

/// A second definition that comes from a file of the same name as the first one's: the file
/// was loaded before and has changed since (an unchanged file loads once, `load.rs`).
fn reloaded_note(lib: &Library, env: &Env, def: &FunctionDef, diags: &mut [Diagnostic]) {
    let Some(d) = diags.last_mut().filter(|d| d.code == "E0115") else { return };
    let Some(first) = env.overloads(&def.name).iter().find(|f| f.overload == def.overload) else {
        return;
    };
    let name = |span: tfn_ir::Span| lib.sources.get(span.file).map(|f| f.name.as_str());
    match (name(first.span), name(def.span)) {
        (Some(a), Some(b)) if a == b && first.span.file != def.span.file => {
            d.notes.push(format!(
                "`{a}` was loaded into this session before and has changed since; a session \
                 defines each name once: load the new version into a new session"
            ));
        }
        _ => {}
    }
}

/// Checks `files` (in load order) against `lib`. Returns the templates when there is no error,
/// and every diagnostic (warnings included) sorted by position.
pub fn check_batch(lib: &Library, files: &[ast::File]) -> (Option<Checked>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let mut env = Env::from_library(lib);
    let mut new_fns: Vec<NewFn> = Vec::new();
    let items = || files.iter().flat_map(|f| f.items.iter());

    for item in items() {
        let (sig, body) = match item {
            Item::Op(op) => (&op.sig, Body::Primitive),
            Item::Fn(f) => (&f.sig, Body::Composed(Default::default())),
            _ => continue,
        };
        let checked = signature::check_signature(sig, body, &mut diags);
        if let Item::Op(op) = item {
            signature::check_op_item(op, &checked.def, &mut diags);
        }
        // Only a primitive `op` can restate the prelude; a `fn` or `extern op` of a
        // primitive's name is a second definition.
        let is_op = matches!(item, Item::Op(op) if op.extern_kw.is_none());
        let prelude = restate::prelude_primitive(lib, &checked.def).filter(|_| is_op);
        let restated = prelude
            .filter(|_| !checked.broken)
            .and_then(|_| restate::restated_primitive(lib, &checked.def));
        if let Some(prelude) = restated {
            diags.push(restate::primitive_warning(prelude, &checked.def));
        }
        builtin_warning(&checked.def, &mut diags);
        let meta = Meta { new_item: Some(new_fns.len()), broken: checked.broken };
        // A broken signature of a prelude primitive's name was meant as a restatement: its own
        // errors say what is wrong, a second "defined twice" would not.
        let added = restated.is_none()
            && !(checked.broken && prelude.is_some())
            && env.add(checked.def.clone(), meta, &mut diags);
        if let (false, None, Some(prelude)) = (added, restated, prelude) {
            if let Some(d) = diags.last_mut().filter(|d| d.code == "E0115") {
                d.notes.push(restate::primitive_note(prelude));
            }
        }
        if !added {
            reloaded_note(lib, &env, &checked.def, &mut diags);
        }
        let name_spans = sig.params.iter().map(|p| p.name.span).collect();
        new_fns.push(NewFn {
            item,
            def: checked.def,
            name_spans,
            broken_params: checked.broken_params,
            added,
            restates: restated.is_some(),
        });
    }

    let mut edges = Vec::new();
    for (index, f) in new_fns.iter().enumerate() {
        if let Item::Fn(item) = f.item {
            let mut w = Walker::new(&env, &mut diags, &mut edges, Mode::Body);
            // A duplicate is checked too, but calls never resolve to it.
            w.caller = f.added.then_some(index);
            w.function_body(&f.def, &f.name_spans, &f.broken_params, &item.body);
        }
    }

    let mut grads_seen: Vec<(String, Option<String>, Span)> =
        lib.grads.iter().map(|g| (g.function.clone(), g.overload.clone(), g.span)).collect();
    let mut rules_seen: Vec<(String, Span)> =
        lib.rewrites.iter().map(|r| (r.name.clone(), r.span)).collect();
    let mut restated_grads = Vec::new();
    for item in items() {
        match item {
            Item::Grad(g) => {
                let converted = convert::grad(g);
                if let Some(prelude) = restate::restated_grad(lib, &converted) {
                    diags.push(restate::grad_warning(prelude, &converted, g.name.span));
                    restated_grads.push(g.name.span);
                    continue;
                }
                if let Some(d) = restate::grad_of_primitive(lib, g) {
                    diags.push(d);
                    continue;
                }
                let first = diags.len();
                let mut w = Walker::new(&env, &mut diags, &mut edges, Mode::Grad);
                w.grad_block(g, &grads_seen);
                if let Some(prelude) = restate::prelude_grad(lib, &converted) {
                    if let Some(d) = diags[first..].iter_mut().find(|d| d.code == "E0405") {
                        d.notes.push(restate::grad_note(prelude));
                    }
                }
                let overload = g.name.overload.as_ref().map(|o| o.name.clone());
                grads_seen.push((g.name.base.name.clone(), overload, g.name.span));
            }
            Item::Rewrite(r) => {
                let mut w = Walker::new(&env, &mut diags, &mut edges, Mode::RewriteLhs);
                w.rewrite_rule(r, &rules_seen);
                rules_seen.push((r.name.name.clone(), r.name.span));
            }
            _ => {}
        }
    }

    let names: Vec<String> = new_fns.iter().map(|f| f.def.full_name()).collect();
    recursion::check_recursion(&names, &edges, &mut diags);

    diags.sort_by_key(|d| d.primary.as_ref().map(|l| (l.span.file, l.span.start, l.span.end)));
    if diags.iter().any(|d| d.is_error()) {
        return (None, diags);
    }
    let mut checked = Checked::default();
    for f in new_fns.into_iter().filter(|f| !f.restates) {
        let mut def = f.def;
        def.body = match f.item {
            Item::Op(op) => convert::op_body(op, &def),
            Item::Fn(item) => Body::Composed(convert::block(&item.body)),
            _ => continue,
        };
        checked.functions.push(def);
    }
    for item in items() {
        match item {
            Item::Grad(g) if !restated_grads.contains(&g.name.span) => {
                checked.grads.push(convert::grad(g))
            }
            Item::Rewrite(r) => checked.rewrites.push(convert::rewrite(r)),
            _ => {}
        }
    }
    (Some(checked), diags)
}

/// `W0103` for a definition that hides the built-in `size` or `shape` (allowed, like shadowing
/// a Python builtin, but every later `size(x, 0)` of the session then calls it).
fn builtin_warning(def: &FunctionDef, diags: &mut Vec<Diagnostic>) {
    let builtin = match def.name.as_str() {
        "size" => "size(x, dim)",
        "shape" => "shape(x)",
        _ => return,
    };
    diags.push(
        Diagnostic::warning(
            "W0103",
            format!("`{}` hides the built-in `{builtin}`", def.full_name()),
        )
        .at(def.name_span, "hides the built-in")
        .with_note(format!(
            "from here on, every `{}(...)` in the session calls this definition",
            def.name
        ))
        .with_help("rename it unless replacing the built-in is the point"),
    );
}
