//! The table of symbolic sizes built while lowering: fresh input symbols, unification of
//! sizes that broadcasting or `matmul` proves equal, derived sizes with constant folding, and
//! the final renumbering into a graph's `syms`.
//!
//! Unification never specialises a size on a value: two input symbols merge into one listing
//! both sources (the call checks them equal); a symbol unified with a constant becomes that
//! constant (the call checks the parameter's size against it). A *derived* size unified away
//! (with another size or a constant) leaves an equality no definition expresses: it is kept as
//! a check ([`Graph::checks`]) that binding evaluates, with the derived size's definition kept
//! as a symbol of its own so that the verifier can still re-infer the node that computed it.
//!
//! When the call's input shapes are known (a session compiling for a call), each input symbol
//! carries its size as a *hint*. Hints never specialise a graph on a size, with one exception:
//! a derived size that meets another size where NumPy's answer depends on whether it is 1
//! (broadcasting, `squeeze`, `broadcast_to`) is decided from its hint — 1 becomes the constant
//! 1 (checked), anything else stays symbolic — and the decision is recorded as a guard
//! ([`crate::guards::SizeGuards`]) that a later call must satisfy to reuse the graph.

use crate::graph::Graph;
use crate::guards::SizeGuards;
use crate::shape::{Dim, DimExpr, Shape, Sym, SymDef};

#[derive(Clone, Debug, Default)]
pub(crate) struct SymTable {
    defs: Vec<SymDef>,
    /// `Some(d)`: this symbol was unified into `d` (which may itself be substituted further).
    subst: Vec<Option<Dim>>,
    /// Sizes that must be equal at call time: a dropped derived size's definition and what it
    /// was unified with, or a `reshape`'s element counts.
    checks: Vec<(DimExpr, Dim)>,
    /// The call-time size of each input symbol, when known (`None` for derived symbols).
    hints: Vec<Option<u64>>,
    /// Derived sizes assumed to be 1 (`true`) or not 1 (`false`), by definition.
    guards: Vec<(DimExpr, bool)>,
    /// Sizes assumed equal ([`SymTable::decide_equal`]), by their definitions before the
    /// unification.
    equal: Vec<(GuardSize, GuardSize)>,
}

/// One side of an equality guard: a constant or a symbol's definition.
#[derive(Clone, Debug, PartialEq)]
enum GuardSize {
    Const(u64),
    Def(SymDef),
}

impl SymTable {
    /// A fresh symbol for axis `axis` of graph parameter `param`.
    /// `hint` is the axis's size in the call being compiled, when known.
    pub fn input(&mut self, param: u32, axis: u32, hint: Option<u64>) -> Dim {
        let d = self.push(SymDef::Input { sources: vec![(param, axis)] });
        if let Some(h) = self.hints.last_mut() {
            *h = hint;
        }
        d
    }

    fn push(&mut self, def: SymDef) -> Dim {
        self.defs.push(def);
        self.subst.push(None);
        self.hints.push(None);
        Dim::Sym(Sym(self.defs.len() as u32 - 1))
    }

    /// The size `d` has in the call being compiled, if the hints determine it.
    pub fn hint(&self, d: Dim) -> Option<u64> {
        self.hint_at(d, 0)
    }

    fn hint_at(&self, d: Dim, depth: usize) -> Option<u64> {
        match self.resolve(d) {
            Dim::Const(c) => Some(c),
            Dim::Sym(s) if depth <= self.defs.len() => match self.defs.get(s.0 as usize)? {
                SymDef::Input { .. } => self.hints.get(s.0 as usize).copied().flatten(),
                SymDef::Derived(e) => self.hint_expr(e, depth + 1),
            },
            Dim::Sym(_) => None,
        }
    }

    /// The value `e` has in the call being compiled, if the hints determine it.
    pub fn hint_of(&self, e: &DimExpr) -> Option<u64> {
        self.hint_expr(e, 0)
    }

    fn hint_expr(&self, e: &DimExpr, depth: usize) -> Option<u64> {
        let pair =
            |a: &DimExpr, b: &DimExpr| Some((self.hint_expr(a, depth)?, self.hint_expr(b, depth)?));
        match e {
            DimExpr::Dim(d) => self.hint_at(*d, depth),
            DimExpr::Add(a, b) => pair(a, b).and_then(|(a, b)| a.checked_add(b)),
            DimExpr::Sub(a, b) => pair(a, b).and_then(|(a, b)| a.checked_sub(b)),
            DimExpr::Mul(a, b) => pair(a, b).and_then(|(a, b)| a.checked_mul(b)),
            DimExpr::Div(a, b) => {
                pair(a, b).and_then(|(a, b)| (b != 0 && a % b == 0).then(|| a / b))
            }
            DimExpr::CeilDiv(a, b) => pair(a, b).and_then(|(a, b)| (b != 0).then(|| a.div_ceil(b))),
            DimExpr::SliceLen { size, start, end, step } => {
                let n = self.hint_expr(size, depth)?;
                (*step != 0).then(|| slice_len(n, *start, *end, *step))
            }
            DimExpr::Window { size, kernel, stride, padding, dilation, ceil } => {
                let (n, k) = pair(size, kernel)?;
                let (s, p, d) = (i64::from(*stride), i64::from(*padding), i64::from(*dilation));
                let len = crate::op_window::window_len(n as i64, k as i64, s, p, d, *ceil);
                len.ok().map(|l| l as u64)
            }
        }
    }

    /// A shape with every size the hints determine shown as a number (for messages).
    pub fn shown(&self, s: &Shape) -> Shape {
        Shape(s.0.iter().map(|d| self.hint(*d).map_or(self.resolve(*d), Dim::Const)).collect())
    }

    /// The definition of the derived size `d` stands for, if it is one.
    pub fn derived_def(&self, d: Dim) -> Option<&DimExpr> {
        match self.resolve(d) {
            Dim::Sym(s) => match self.defs.get(s.0 as usize) {
                Some(SymDef::Derived(e)) => Some(e),
                _ => None,
            },
            Dim::Const(_) => None,
        }
    }

    /// Whether `d` currently stands for a derived (not input, not constant) size.
    pub fn is_derived(&self, d: Dim) -> bool {
        match self.resolve(d) {
            Dim::Sym(s) => matches!(self.defs.get(s.0 as usize), Some(SymDef::Derived(_))),
            Dim::Const(_) => false,
        }
    }

    /// Decides whether the derived size `d`, which meets another size where a 1 would
    /// broadcast (or be squeezed), is 1: from its hint, or `one_unknown` without one. A 1
    /// becomes the constant 1 (with a check); either way the decision is a guard. Returns
    /// what `d` stands for now. A size that is not derived is returned as it is.
    pub fn decide_one(&mut self, d: Dim, one_unknown: bool) -> Dim {
        let d = self.resolve(d);
        let Dim::Sym(s) = d else { return d };
        let Some(SymDef::Derived(e)) = self.defs.get(s.0 as usize) else { return d };
        let one = self.hint(d).map_or(one_unknown, |h| h == 1);
        let guard = (e.clone(), one);
        if !self.guards.contains(&guard) {
            self.guards.push(guard);
        }
        if one {
            // Cannot fail: `d` is a symbol.
            self.unify(d, Dim::Const(1)).unwrap_or(Dim::Const(1))
        } else {
            d
        }
    }

    /// Records that the graph assumes the input size `d` is not 1 (a `squeeze` without
    /// `dims` keeps it) when the call's size is unknown: a signature's `?` axis may be 1 at
    /// call time, where the answer would have another rank (`tfnc build` refuses such a
    /// graph). With the size known (a session, whose signatures give size-1 axes as 1) or
    /// `d` not an input size, nothing is recorded.
    pub fn assume_not_one(&mut self, d: Dim) {
        let d = self.resolve(d);
        let Dim::Sym(s) = d else { return };
        if !matches!(self.defs.get(s.0 as usize), Some(SymDef::Input { .. }))
            || self.hint(d).is_some()
        {
            return;
        }
        let guard = (DimExpr::Dim(d), false);
        if !self.guards.contains(&guard) {
            self.guards.push(guard);
        }
    }

    /// Decides whether two sizes that an op allows to differ (a `gather` index against `x`
    /// on the other axes) are equal, from the call's sizes: equal sizes are unified, and the
    /// assumption is a guard. Without both sizes known, nothing is assumed.
    pub fn decide_equal(&mut self, a: Dim, b: Dim) {
        let (a, b) = (self.resolve(a), self.resolve(b));
        if a == b {
            return;
        }
        let (Some(ha), Some(hb)) = (self.hint(a), self.hint(b)) else { return };
        if ha != hb {
            return;
        }
        let side = |d: Dim| match d {
            Dim::Const(c) => Some(GuardSize::Const(c)),
            Dim::Sym(s) => self.defs.get(s.0 as usize).cloned().map(GuardSize::Def),
        };
        let (Some(ga), Some(gb)) = (side(a), side(b)) else { return };
        if self.unify(a, b).is_ok() {
            self.equal.push((ga, gb));
        }
    }

    /// Takes out the guards (`decide_one`'s decisions) whose sizes can be written in the
    /// symbols of the table a loop body was lowered from: `outer` pairs each of this table's
    /// symbols that stands for an outer size with that size. Returns them over the outer
    /// symbols, so that the function running the loop checks them at its call (a body is
    /// compiled once per instance of the function). Guards it cannot express stay.
    pub fn lift_guards(&mut self, outer: &[(Dim, Dim)]) -> Vec<(DimExpr, bool)> {
        let mut lifted = Vec::new();
        for (e, one) in std::mem::take(&mut self.guards) {
            match self.expand(&e, outer, 0) {
                Some(t) => lifted.push((t, one)),
                None => self.guards.push((e, one)),
            }
        }
        lifted
    }

    /// `e` with every derived size replaced by its definition and every input symbol by the
    /// outer size it stands for (`None` if one stands for none).
    fn expand(&self, e: &DimExpr, outer: &[(Dim, Dim)], depth: usize) -> Option<DimExpr> {
        if depth > self.defs.len() {
            return None;
        }
        let bx = |x: &DimExpr| self.expand(x, outer, depth).map(Box::new);
        Some(match e {
            DimExpr::Dim(d) => match self.resolve(*d) {
                c @ Dim::Const(_) => DimExpr::Dim(c),
                Dim::Sym(s) => match self.defs.get(s.0 as usize)? {
                    SymDef::Derived(inner) => self.expand(inner, outer, depth + 1)?,
                    SymDef::Input { .. } => {
                        let found =
                            outer.iter().find(|(mine, _)| self.resolve(*mine) == Dim::Sym(s));
                        DimExpr::Dim(found?.1)
                    }
                },
            },
            DimExpr::Add(a, b) => DimExpr::Add(bx(a)?, bx(b)?),
            DimExpr::Sub(a, b) => DimExpr::Sub(bx(a)?, bx(b)?),
            DimExpr::Mul(a, b) => DimExpr::Mul(bx(a)?, bx(b)?),
            DimExpr::Div(a, b) => DimExpr::Div(bx(a)?, bx(b)?),
            DimExpr::CeilDiv(a, b) => DimExpr::CeilDiv(bx(a)?, bx(b)?),
            DimExpr::SliceLen { size, start, end, step } => {
                DimExpr::SliceLen { size: bx(size)?, start: *start, end: *end, step: *step }
            }
            DimExpr::Window { size, kernel, stride, padding, dilation, ceil } => DimExpr::Window {
                size: bx(size)?,
                kernel: bx(kernel)?,
                stride: *stride,
                padding: *padding,
                dilation: *dilation,
                ceil: *ceil,
            },
        })
    }

    /// Records a guard decided elsewhere (a loop body's, [`SymTable::lift_guards`]).
    pub fn add_guard(&mut self, e: DimExpr, one: bool) {
        if !self.guards.contains(&(e.clone(), one)) {
            self.guards.push((e, one));
        }
    }

    /// The representative a dimension currently stands for.
    pub fn resolve(&self, mut d: Dim) -> Dim {
        // Substitution chains only ever point at symbols that were unsubstituted when linked,
        // so they are acyclic; the bound is a belt-and-braces guard.
        for _ in 0..=self.subst.len() {
            match d {
                Dim::Sym(s) => match self.subst.get(s.0 as usize).copied().flatten() {
                    Some(next) => d = next,
                    None => return d,
                },
                Dim::Const(_) => return d,
            }
        }
        d
    }

    pub fn resolve_shape(&self, s: &Shape) -> Shape {
        Shape(s.0.iter().map(|d| self.resolve(*d)).collect())
    }

    /// Records that two sizes are equal. `Err` when both are different constants.
    pub fn unify(&mut self, a: Dim, b: Dim) -> Result<Dim, ()> {
        let (a, b) = (self.resolve(a), self.resolve(b));
        match (a, b) {
            _ if a == b => Ok(a),
            (Dim::Const(_), Dim::Const(_)) => Err(()),
            (Dim::Sym(s), Dim::Const(_)) | (Dim::Const(_), Dim::Sym(s)) => {
                let c = if a == Dim::Sym(s) { b } else { a };
                self.check_dropped(s, c);
                self.subst[s.0 as usize] = Some(c);
                Ok(c)
            }
            (Dim::Sym(s), Dim::Sym(t)) => {
                let (keep, drop) = self.choose_representative(s, t);
                if let (SymDef::Input { sources: dropped }, SymDef::Input { .. }) =
                    (self.defs[drop.0 as usize].clone(), &self.defs[keep.0 as usize])
                {
                    if let SymDef::Input { sources } = &mut self.defs[keep.0 as usize] {
                        sources.extend(dropped);
                    }
                }
                self.check_dropped(drop, Dim::Sym(keep));
                self.subst[drop.0 as usize] = Some(Dim::Sym(keep));
                Ok(Dim::Sym(keep))
            }
        }
    }

    /// Before the derived symbol `s` is substituted by `by`: remembers that its definition must
    /// come out equal to `by` at call time. (An input symbol needs nothing: the parameter axes
    /// that carry it are typed with `by`, and binding checks parameter shapes.)
    fn check_dropped(&mut self, s: Sym, by: Dim) {
        if let Some(SymDef::Derived(e)) = self.defs.get(s.0 as usize) {
            self.checks.push((e.clone(), by));
        }
    }

    /// Records that the size `e` must equal `d` at call time (e.g. the element counts of a
    /// `reshape` to a static shape): a check of the graph unless it folds away.
    pub fn require_equal(&mut self, e: DimExpr, d: Dim) {
        self.checks.push((e, d));
    }

    /// Two input symbols: the older. An input and a derived size: the derived one (the call
    /// then checks the input's size against it), unless it is computed from that input.
    fn choose_representative(&self, s: Sym, t: Sym) -> (Sym, Sym) {
        let (lo, hi) = if s < t { (s, t) } else { (t, s) };
        let is_derived = |x: Sym| matches!(self.defs[x.0 as usize], SymDef::Derived(_));
        match (is_derived(lo), is_derived(hi)) {
            (false, true) if !self.depends_on(hi, lo) => (hi, lo),
            (true, false) if self.depends_on(lo, hi) => (hi, lo),
            _ => (lo, hi),
        }
    }

    fn depends_on(&self, derived: Sym, target: Sym) -> bool {
        let mut stack = vec![derived];
        let mut seen = Vec::new();
        while let Some(s) = stack.pop() {
            if seen.contains(&s) {
                continue;
            }
            seen.push(s);
            if let Some(SymDef::Derived(e)) = self.defs.get(s.0 as usize) {
                let mut dims = Vec::new();
                collect_dims(e, &mut dims);
                for d in dims {
                    if let Dim::Sym(x) = self.resolve(d) {
                        if x == target {
                            return true;
                        }
                        stack.push(x);
                    }
                }
            }
        }
        false
    }

    /// A size computed from others, folded to a constant or an existing symbol when possible.
    pub fn derive(&mut self, e: DimExpr) -> Dim {
        match fold(&e, &|d| self.resolve(d)) {
            DimExpr::Dim(d) => d,
            e => {
                // A symbol with this definition that was unified away stands for what it was
                // unified with (the equality is one of the checks).
                let def = SymDef::Derived(e);
                match self.defs.iter().position(|d| *d == def) {
                    Some(i) => self.resolve(Dim::Sym(Sym(i as u32))),
                    None => self.push(def),
                }
            }
        }
    }

    /// Writes the final symbol table into `graph`, renumbering every type to representatives,
    /// and the checks into `graph.checks`.
    /// Returns the guards, over the graph's symbols plus any definitions only they need.
    /// Ends lowering: folds and renumbers the symbols of `graph` (and the sizes kept outside it,
    /// `extra`: a loop's bounds) and returns the guards.
    pub fn finish_with(mut self, graph: &mut Graph, extra: &mut [&mut Dim]) -> SizeGuards {
        let guard_list = std::mem::take(&mut self.guards);
        let equal_list = std::mem::take(&mut self.equal);
        // Each check's expression becomes a symbol of its own (it folds or merges with a twin
        // below like any derived size).
        let checks: Vec<(Dim, Dim)> = std::mem::take(&mut self.checks)
            .into_iter()
            .map(|(e, d)| (self.push(SymDef::Derived(e)), d))
            .collect();
        // Fold derived sizes whose inputs became constants, and merge duplicates, to a fixpoint.
        for _ in 0..=self.defs.len() {
            let mut changed = false;
            for i in 0..self.defs.len() {
                if self.subst[i].is_some() {
                    continue;
                }
                if let SymDef::Derived(e) = &self.defs[i] {
                    let folded = fold(e, &|d| self.resolve(d));
                    match folded {
                        DimExpr::Dim(d) if d != Dim::Sym(Sym(i as u32)) => {
                            self.subst[i] = Some(d);
                            changed = true;
                        }
                        e => {
                            if self.defs[i] != SymDef::Derived(e.clone()) {
                                self.defs[i] = SymDef::Derived(e);
                                changed = true;
                            }
                        }
                    }
                }
            }
            for j in 0..self.defs.len() {
                if self.subst[j].is_some() || !matches!(self.defs[j], SymDef::Derived(_)) {
                    continue;
                }
                let twin =
                    (0..j).find(|&i| self.subst[i].is_none() && self.defs[i] == self.defs[j]);
                if let Some(i) = twin {
                    self.subst[j] = Some(Dim::Sym(Sym(i as u32)));
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let mut renumber = vec![None; self.defs.len()];
        let mut next = 0u32;
        for (i, slot) in renumber.iter_mut().enumerate() {
            if self.subst[i].is_none() {
                *slot = Some(next);
                next += 1;
            }
        }
        let map = |d: Dim| match self.resolve(d) {
            Dim::Sym(s) => Dim::Sym(Sym(renumber[s.0 as usize].unwrap_or(s.0))),
            c => c,
        };
        let map_shape = |s: &mut Shape| s.0.iter_mut().for_each(|d| *d = map(*d));
        for p in &mut graph.params {
            map_shape(&mut p.ty.shape);
        }
        for d in extra.iter_mut() {
            **d = map(**d);
        }
        for n in &mut graph.nodes {
            map_shape(&mut n.ty.shape);
        }
        graph.checks = Vec::new();
        for (a, b) in checks {
            let (a, b) = (map(a), map(b));
            let pair = if a <= b { (a, b) } else { (b, a) };
            if a != b && !graph.checks.contains(&pair) {
                graph.checks.push(pair);
            }
        }
        graph.syms = (0..self.defs.len())
            .filter(|&i| self.subst[i].is_none())
            .map(|i| match &self.defs[i] {
                SymDef::Derived(e) => SymDef::Derived(map_expr(e, &map)),
                input => input.clone(),
            })
            .collect();
        let mut guards = SizeGuards {
            params: graph.params.clone(),
            syms: graph.syms.clone(),
            conds: Vec::new(),
            equal: Vec::new(),
        };
        // Each side of an equality is evaluated on its own: its definition (input axes or a
        // derived size) becomes a guard symbol, whatever the graph unified it with.
        for (a, b) in equal_list {
            let mut side = |g: GuardSize| match g {
                GuardSize::Const(c) => Dim::Const(c),
                GuardSize::Def(def) => {
                    let def = match def {
                        SymDef::Derived(e) => SymDef::Derived(map_expr(&e, &map)),
                        input => input,
                    };
                    let i = guards.syms.iter().position(|d| *d == def).unwrap_or_else(|| {
                        guards.syms.push(def);
                        guards.syms.len() - 1
                    });
                    Dim::Sym(Sym(i as u32))
                }
            };
            let pair = (side(a), side(b));
            if pair.0 != pair.1 && !guards.equal.contains(&pair) {
                guards.equal.push(pair);
            }
        }
        for (e, one) in guard_list {
            let d = match map_expr(&fold(&e, &|d| self.resolve(d)), &map) {
                DimExpr::Dim(d) => d,
                e => {
                    let def = SymDef::Derived(fold(&e, &|d| d));
                    let i = guards.syms.iter().position(|d| *d == def).unwrap_or_else(|| {
                        guards.syms.push(def);
                        guards.syms.len() - 1
                    });
                    Dim::Sym(Sym(i as u32))
                }
            };
            let trivially_true = matches!(d, Dim::Const(c) if (c == 1) == one);
            if !trivially_true && !guards.conds.contains(&(d, one)) {
                guards.conds.push((d, one));
            }
        }
        guards
    }
}

pub fn collect_dims(e: &DimExpr, out: &mut Vec<Dim>) {
    match e {
        DimExpr::Dim(d) => out.push(*d),
        DimExpr::Add(a, b)
        | DimExpr::Sub(a, b)
        | DimExpr::Mul(a, b)
        | DimExpr::Div(a, b)
        | DimExpr::CeilDiv(a, b) => {
            collect_dims(a, out);
            collect_dims(b, out);
        }
        DimExpr::SliceLen { size, .. } => collect_dims(size, out),
        DimExpr::Window { size, kernel, .. } => {
            collect_dims(size, out);
            collect_dims(kernel, out);
        }
    }
}

pub(super) fn map_expr(e: &DimExpr, f: &dyn Fn(Dim) -> Dim) -> DimExpr {
    let bx = |x: &DimExpr| Box::new(map_expr(x, f));
    match e {
        DimExpr::Dim(d) => DimExpr::Dim(f(*d)),
        DimExpr::Add(a, b) => DimExpr::Add(bx(a), bx(b)),
        DimExpr::Sub(a, b) => DimExpr::Sub(bx(a), bx(b)),
        DimExpr::Mul(a, b) => DimExpr::Mul(bx(a), bx(b)),
        DimExpr::Div(a, b) => DimExpr::Div(bx(a), bx(b)),
        DimExpr::CeilDiv(a, b) => DimExpr::CeilDiv(bx(a), bx(b)),
        DimExpr::SliceLen { size, start, end, step } => {
            DimExpr::SliceLen { size: bx(size), start: *start, end: *end, step: *step }
        }
        DimExpr::Window { size, kernel, stride, padding, dilation, ceil } => DimExpr::Window {
            size: bx(size),
            kernel: bx(kernel),
            stride: *stride,
            padding: *padding,
            dilation: *dilation,
            ceil: *ceil,
        },
    }
}

/// Constant-folds a size expression after mapping its dimensions through `resolve`.
pub(crate) fn fold(e: &DimExpr, resolve: &dyn Fn(Dim) -> Dim) -> DimExpr {
    use DimExpr as E;
    let c = |x: &E| match x {
        E::Dim(Dim::Const(v)) => Some(*v),
        _ => None,
    };
    let konst = |v: u64| E::Dim(Dim::Const(v));
    match e {
        E::Dim(d) => E::Dim(resolve(*d)),
        E::Add(a, b) | E::Sub(a, b) | E::Mul(a, b) | E::Div(a, b) | E::CeilDiv(a, b) => {
            let (a, b) = (fold(a, resolve), fold(b, resolve));
            let folded = match (e, c(&a), c(&b)) {
                (E::Add(..), Some(x), Some(y)) => x.checked_add(y).map(konst),
                (E::Add(..), Some(0), _) => Some(b.clone()),
                (E::Add(..), _, Some(0)) => Some(a.clone()),
                (E::Sub(..), Some(x), Some(y)) => x.checked_sub(y).map(konst),
                (E::Sub(..), _, Some(0)) => Some(a.clone()),
                (E::Mul(..), Some(x), Some(y)) => x.checked_mul(y).map(konst),
                (E::Mul(..), Some(1), _) => Some(b.clone()),
                (E::Mul(..), _, Some(1)) => Some(a.clone()),
                (E::Div(..), Some(x), Some(y)) if y != 0 && x % y == 0 => Some(konst(x / y)),
                (E::Div(..), _, Some(1)) => Some(a.clone()),
                (E::CeilDiv(..), Some(x), Some(y)) if y != 0 => Some(konst(x.div_ceil(y))),
                (E::CeilDiv(..), _, Some(1)) => Some(a.clone()),
                _ => None,
            };
            folded.unwrap_or_else(|| match e {
                E::Add(..) => E::Add(Box::new(a), Box::new(b)),
                E::Sub(..) => E::Sub(Box::new(a), Box::new(b)),
                E::Mul(..) => E::Mul(Box::new(a), Box::new(b)),
                E::CeilDiv(..) => E::CeilDiv(Box::new(a), Box::new(b)),
                _ => E::Div(Box::new(a), Box::new(b)),
            })
        }
        E::SliceLen { size, start, end, step } => {
            let size = fold(size, resolve);
            match c(&size) {
                Some(n) => konst(slice_len(n, *start, *end, *step)),
                None => E::SliceLen { size: Box::new(size), start: *start, end: *end, step: *step },
            }
        }
        E::Window { size, kernel, stride, padding, dilation, ceil } => {
            let (size, kernel) = (fold(size, resolve), fold(kernel, resolve));
            let (s, p, d) = (i64::from(*stride), i64::from(*padding), i64::from(*dilation));
            let len = match (c(&size), c(&kernel)) {
                (Some(n), Some(k)) => {
                    crate::op_window::window_len(n as i64, k as i64, s, p, d, *ceil).ok()
                }
                _ => None,
            };
            match len {
                Some(l) => konst(l as u64),
                None => E::Window {
                    size: Box::new(size),
                    kernel: Box::new(kernel),
                    stride: *stride,
                    padding: *padding,
                    dilation: *dilation,
                    ceil: *ceil,
                },
            }
        }
    }
}

/// `len(range(n)[start:end:step])`, Python semantics (`step != 0`; 0 is returned for it).
pub fn slice_len(n: u64, start: i64, end: Option<i64>, step: i64) -> u64 {
    let n = n.min(i64::MAX as u64) as i64;
    if step == 0 {
        return 0;
    }
    let clamp = |i: i64, lo: i64, hi: i64| {
        let i = if i < 0 { i.saturating_add(n) } else { i };
        i.clamp(lo, hi)
    };
    let (lo, hi) = if step > 0 { (0, n) } else { (-1, n - 1) };
    let s = clamp(start, lo, hi);
    let e = match end {
        Some(e) => clamp(e, lo, hi),
        None if step > 0 => n,
        None => -1,
    };
    let len = if step > 0 {
        if e > s {
            (e - s - 1) / step + 1
        } else {
            0
        }
    } else if s > e {
        (s - e - 1) / (-step) + 1
    } else {
        0
    };
    len as u64
}
