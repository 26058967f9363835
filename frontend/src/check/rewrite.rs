//! `rewrite name: lhs => rhs` rules, checked before the optimiser's soundness test.
//!
//! The left side must be a call (an operator counts) so the rule has something to match
//! (`E0452`); every pattern variable on the right must be bound on the left (`E0451`); plain
//! names are not allowed (`E0202`, with a hint to write `?name`); calls on both sides are
//! checked like any call (unknown functions, arity, keywords). Rule names are unique per
//! session (`E0453`).

use super::scope::{Mode, Walker};
use crate::ast::{ExprKind, RewriteItem};
use tfn_ir::{Diagnostic, Span};

impl Walker<'_> {
    /// Checks one rule; `previous` holds the rule names seen so far with their spans.
    pub fn rewrite_rule(&mut self, r: &RewriteItem, previous: &[(String, Span)]) {
        if let Some((_, first)) = previous.iter().find(|(n, _)| *n == r.name.name) {
            self.diags.push(
                Diagnostic::error(
                    "E0453",
                    format!("rewrite rule `{}` is defined twice", r.name.name),
                )
                .at(r.name.span, "defined again")
                .with_secondary(*first, "first defined here"),
            );
        }
        if !matches!(r.lhs.kind, ExprKind::Call(_) | ExprKind::Binary { .. } | ExprKind::Neg { .. })
        {
            self.diags.push(
                Diagnostic::error("E0452", "the left side of a rewrite rule must be a call")
                    .at(r.lhs.span, "matches nothing specific")
                    .with_help("write the pattern to match, e.g. `log(exp(?x))`"),
            );
        }
        self.mode = Mode::RewriteLhs;
        self.pattern_vars.clear();
        self.value(&r.lhs);
        self.mode = Mode::RewriteRhs;
        self.value(&r.rhs);
    }
}
