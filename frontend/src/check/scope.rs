//! The walker state shared by body, gradient and rewrite checks: local names in nested scopes.
//!
//! Rules: `let` bindings are immutable and a name may not be rebound while it is visible — not
//! by a later `let`, and not over a parameter (shadowing a parameter is rebinding it). Names
//! bound inside an `if` branch are visible only there, so both branches may bind the same name.
//! A `var` may be assigned (by the loops after it, [`super::loops`]); a `for`'s variable is
//! bound, immutable, in its body only. A binding, parameter, `var` or loop variable never read
//! is a warning unless its name starts with `_`.

use super::env::Env;
use super::types::{DtypeVars, Ty};
use crate::suggest;
use std::collections::HashMap;
use tfn_ir::{Diagnostic, Span};

/// What a walk is checking: decides what `?x`, `result` and `grad` mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Body,
    Grad,
    RewriteLhs,
    RewriteRhs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalKind {
    Param,
    Let,
    /// `var x = e`: may be assigned inside the loops after it.
    Var,
    /// `for i in ...`: an immutable `Int`, its value known only at run time.
    LoopVar,
    /// `result`/`grad` in gradient formulas: never reported unused.
    Implicit,
}

impl LocalKind {
    /// "a parameter", "a `let` binding", ... (in "first bound here as ...").
    pub fn describe(self) -> &'static str {
        match self {
            LocalKind::Param => "a parameter",
            LocalKind::Let | LocalKind::Implicit => "a binding",
            LocalKind::Var => "a `var`",
            LocalKind::LoopVar => "a loop variable",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Local {
    pub name: String,
    pub ty: Ty,
    pub span: Span,
    pub used: bool,
    pub kind: LocalKind,
    /// How many loops enclosed the binding (a `var` may be assigned only deeper).
    pub loop_depth: usize,
    /// A `var` assigned at least once (so far in the walk).
    pub assigned: bool,
}

/// A call from a new function to a new function (for the recursion check).
#[derive(Clone, Debug)]
pub struct CallEdge {
    pub caller: usize,
    pub callee: usize,
    pub span: Span,
}

pub struct Walker<'a> {
    pub env: &'a Env,
    pub diags: &'a mut Vec<Diagnostic>,
    pub mode: Mode,
    /// Dtype variables of the function being checked.
    pub vars: DtypeVars,
    /// Every visible local, innermost last. Private: [`Walker::bind`] keeps `index` in step.
    locals: Vec<Local>,
    /// Per name, its positions in `locals` (the last is the visible one): lookups are not
    /// linear in the number of locals.
    index: HashMap<String, Vec<usize>>,
    /// Per open scope: where its locals start, and how many errors existed when it opened.
    scopes: Vec<(usize, usize)>,
    /// The new function being checked, for call edges.
    pub caller: Option<usize>,
    pub edges: &'a mut Vec<CallEdge>,
    /// Pattern variables bound by a rewrite's left side.
    pub pattern_vars: Vec<(String, Span)>,
    /// How many loop bodies enclose the statement being checked.
    pub loop_depth: usize,
    /// A `return` inside a loop was reported in the function being checked.
    pub returned_in_loop: bool,
    /// How many of `diags` were counted, and how many errors among those added since this
    /// walker began: every scope asks (`error_count`), so counting all the diagnostics each
    /// time was quadratic in them.
    error_tally: std::cell::Cell<(usize, usize)>,
}

impl<'a> Walker<'a> {
    pub fn new(
        env: &'a Env,
        diags: &'a mut Vec<Diagnostic>,
        edges: &'a mut Vec<CallEdge>,
        mode: Mode,
    ) -> Self {
        let before = diags.len();
        Walker {
            env,
            diags,
            mode,
            vars: DtypeVars::default(),
            locals: Vec::new(),
            index: HashMap::new(),
            scopes: Vec::new(),
            caller: None,
            edges,
            pattern_vars: Vec::new(),
            loop_depth: 0,
            returned_in_loop: false,
            error_tally: std::cell::Cell::new((before, 0)),
        }
    }

    pub fn push_scope(&mut self) {
        let errors = self.error_count();
        self.scopes.push((self.locals.len(), errors));
    }

    /// Errors reported since this walker began (scopes compare it when they open and close).
    fn error_count(&self) -> usize {
        let (mut seen, mut errors) = self.error_tally.get();
        if seen > self.diags.len() {
            (seen, errors) = (0, 0); // diagnostics were taken away: count them all
        }
        errors += self.diags[seen..].iter().filter(|d| d.is_error()).count();
        self.error_tally.set((self.diags.len(), errors));
        errors
    }

    /// Leaves a scope, warning about its unused bindings (unless the scope had errors: a name
    /// that looks unused next to an error is usually the error's fault).
    pub fn pop_scope(&mut self) {
        let (start, errors) = self.scopes.pop().unwrap_or((0, 0));
        let gone: Vec<Local> = self.locals.drain(start.min(self.locals.len())..).collect();
        for local in gone.iter().rev() {
            if let Some(positions) = self.index.get_mut(&local.name) {
                positions.pop();
                if positions.is_empty() {
                    self.index.remove(&local.name);
                }
            }
        }
        if self.error_count() > errors {
            return;
        }
        for local in gone {
            if local.used || local.name.starts_with('_') {
                continue;
            }
            let (code, message) = match local.kind {
                LocalKind::Param => ("W0302", format!("unused parameter `{}`", local.name)),
                LocalKind::Let => ("W0301", format!("unused binding `{}`", local.name)),
                LocalKind::Var if local.assigned => {
                    ("W0301", format!("`{}` is assigned but never read", local.name))
                }
                LocalKind::Var => ("W0301", format!("unused variable `{}`", local.name)),
                LocalKind::LoopVar => ("W0301", format!("unused loop variable `{}`", local.name)),
                LocalKind::Implicit => continue,
            };
            self.diags.push(
                Diagnostic::warning(code, message).at(local.span, "never read").with_help(format!(
                    "if this is intentional, prefix it with an underscore: `_{}`",
                    local.name
                )),
            );
        }
    }

    /// The visible local called `name`.
    fn find(&self, name: &str) -> Option<usize> {
        self.index.get(name).and_then(|positions| positions.last().copied())
    }

    /// [`crate::suggest::closest`] among the names of the whole library while few errors
    /// were reported: each search measures every name, so a file of thousands of calls of
    /// unknown functions would take time quadratic in its size (20,000 took 11 s) for
    /// suggestions nobody reads past the first screens.
    pub fn suggest<'n>(
        &self,
        name: &str,
        candidates: impl IntoIterator<Item = &'n str>,
    ) -> Option<&'n str> {
        const SUGGEST_WHILE_FEWER_ERRORS: usize = 100;
        if self.diags.len() >= SUGGEST_WHILE_FEWER_ERRORS {
            return None;
        }
        crate::suggest::closest(name, candidates)
    }

    /// Whether a local called `name` is visible.
    pub fn is_local(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    /// The names of the visible locals (for suggestions).
    pub fn local_names(&self) -> impl Iterator<Item = &str> {
        self.locals.iter().map(|l| l.name.as_str()).filter(|n| !n.is_empty())
    }

    /// The visible local called `name`, without marking it used.
    pub fn local(&self, name: &str) -> Option<&Local> {
        self.find(name).map(|i| &self.locals[i])
    }

    /// Records an assignment of the visible local `name`.
    pub fn mark_assigned(&mut self, name: &str) {
        if let Some(i) = self.find(name) {
            self.locals[i].assigned = true;
        }
    }

    fn push_local(&mut self, local: Local) {
        self.index.entry(local.name.clone()).or_default().push(self.locals.len());
        self.locals.push(local);
    }

    /// Binds a name, reporting a rebinding of a visible name.
    pub fn bind(&mut self, name: &str, ty: Ty, span: Span, kind: LocalKind) {
        if let Some(prev) = self.find(name).map(|i| &self.locals[i]) {
            if prev.kind == LocalKind::Param && kind == LocalKind::Param {
                // A duplicate parameter, already reported with the signature (E0103).
                self.push_local(self.new_local(String::new(), ty, span, true, kind));
                return;
            }
            let help = if prev.kind == LocalKind::Var {
                format!("to change a `var`, assign it inside a loop: `{name} = ...`")
            } else if kind == LocalKind::LoopVar {
                "choose another name for the loop variable".to_string()
            } else {
                "`let` bindings are immutable; choose a new name".to_string()
            };
            self.diags.push(
                Diagnostic::error("E0301", format!("a name may not be rebound: `{name}`"))
                    .at(span, "bound again")
                    .with_secondary(
                        prev.span,
                        format!("first bound here as {}", prev.kind.describe()),
                    )
                    .with_help(help),
            );
            // Keep the first binding (the later uses most likely mean it); the new one is
            // marked used so it is not also reported as unused.
            self.push_local(self.new_local(String::new(), ty, span, true, kind));
            return;
        }
        self.push_local(self.new_local(name.to_string(), ty, span, false, kind));
    }

    fn new_local(&self, name: String, ty: Ty, span: Span, used: bool, kind: LocalKind) -> Local {
        Local { name, ty, span, used, kind, loop_depth: self.loop_depth, assigned: false }
    }

    /// Looks a name up (marking it used), reporting an unknown variable.
    pub fn lookup(&mut self, name: &str, span: Span) -> Ty {
        if let Some(i) = self.find(name) {
            let local = &mut self.locals[i];
            local.used = true;
            return local.ty.clone();
        }
        let mut d =
            Diagnostic::error("E0202", format!("unknown variable `{name}`")).at(span, "not found");
        if matches!(self.mode, Mode::RewriteLhs | Mode::RewriteRhs) {
            d = d.with_help(format!("rewrite rules match patterns: write `?{name}`"));
        } else {
            if let Some(s) = suggest::closest(name, self.local_names()) {
                d = d.with_help(format!("a variable with a similar name exists: `{s}`"));
            } else if !self.env.overloads(name).is_empty() {
                d = d.with_help(format!("`{name}` is a function: call it with `{name}(...)`"));
            }
        }
        self.diags.push(d);
        Ty::Unknown
    }
}
