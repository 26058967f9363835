//! The IR verifier: checks the invariants every pass relies on, like Cranelift's verifier.
//!
//! A graph is valid when its nodes are in topological order, every op has the right number of
//! inputs and a type that re-running inference reproduces, `param` nodes match the parameter
//! list, every symbolic size is defined (input symbols by the parameter axes that carry them,
//! derived ones from earlier-defined sizes) and the outputs exist. A failure always means a bug
//! in the pass that produced the graph, never a user error.
//!
//! Types are compared modulo the graph's checked equalities ([`Graph::checks`]): when lowering
//! unified a derived size with another, nodes are typed with one of them while re-inference
//! derives the other.

use crate::graph::{Graph, TensorType};
use crate::lower::{check_declared, infer};
use crate::op::Op;
use crate::shape::{Dim, DimExpr, Shape, Sym, SymDef};
use std::fmt;

/// Every problem found, one line each (`%3: ...` for a node).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct VerifyError {
    pub problems: Vec<String>,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.problems.join("; "))
    }
}

/// Checks `graph`; `Err` lists every problem found.
pub fn verify(graph: &Graph) -> Result<(), VerifyError> {
    let mut problems = Vec::new();
    check_syms(graph, &mut problems);
    for (i, (a, b)) in graph.checks.iter().enumerate() {
        check_shape_syms(graph, &Shape(vec![*a, *b]), &format!("check {i}"), &mut problems);
    }
    let equal = CheckedEqual::new(graph);
    for (i, p) in graph.params.iter().enumerate() {
        check_shape_syms(graph, &p.ty.shape, &format!("param {i} `{}`", p.name), &mut problems);
    }
    for (i, node) in graph.nodes.iter().enumerate() {
        let here = format!("%{i} ({})", node.op.name());
        let mut fail = |m: String| problems.push(format!("{here}: {m}"));
        if let Some(bad) = node.inputs.iter().find(|v| v.index() >= i) {
            fail(format!("input {bad} does not precede its user"));
            continue;
        }
        check_shape_syms(graph, &node.ty.shape, &here, &mut problems);
        let mut fail = |m: String| problems.push(format!("{here}: {m}"));
        let inputs: Vec<&TensorType> = node.inputs.iter().map(|v| graph.ty(*v)).collect();
        if let Op::Param(p) = node.op {
            match graph.params.get(p as usize) {
                Some(param) if param.ty == node.ty => {}
                Some(param) => fail(format!("typed {} but parameter {p} is {}", node.ty, param.ty)),
                None => fail(format!("parameter {p} does not exist")),
            }
        }
        let mut derive = |e: DimExpr| lookup_derived(graph, e);
        match infer(&node.op, &inputs, &mut derive) {
            Err(m) => fail(m),
            Ok(Some(ty)) if !equal.types(&ty, &node.ty) => {
                fail(format!("typed {} but inference gives {ty}", node.ty))
            }
            Ok(Some(_)) => {}
            Ok(None) => {
                if let Err(m) = check_declared(&node.op, &inputs, &node.ty) {
                    fail(m)
                }
            }
        }
    }
    if graph.outputs.is_empty() {
        problems.push("the graph has no outputs".into());
    }
    for o in &graph.outputs {
        if o.index() >= graph.nodes.len() {
            problems.push(format!("output {o} does not exist"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(VerifyError { problems })
    }
}

/// Whether `graph`'s checks make the sizes `a` and `b` equal (or they are the same size).
pub fn checked_equal(graph: &Graph, a: Dim, b: Dim) -> bool {
    let eq = CheckedEqual::new(graph);
    eq.find(a) == eq.find(b)
}

/// Sizes made equal by the graph's checks: each size maps to one representative.
struct CheckedEqual {
    parent: Vec<(Dim, Dim)>,
}

impl CheckedEqual {
    fn new(graph: &Graph) -> CheckedEqual {
        let mut eq = CheckedEqual { parent: Vec::new() };
        for &(a, b) in &graph.checks {
            let (ra, rb) = (eq.find(a), eq.find(b));
            if ra != rb {
                // Constants stay representatives (`Const` sorts before `Sym`).
                let (keep, link) = if ra < rb { (ra, rb) } else { (rb, ra) };
                eq.parent.push((link, keep));
            }
        }
        eq
    }

    fn find(&self, mut d: Dim) -> Dim {
        // Each link points at a representative that had no link when it was added.
        for _ in 0..=self.parent.len() {
            match self.parent.iter().find(|(from, _)| *from == d) {
                Some(&(_, to)) => d = to,
                None => break,
            }
        }
        d
    }

    fn types(&self, a: &TensorType, b: &TensorType) -> bool {
        a.dtype == b.dtype
            && a.shape.rank() == b.shape.rank()
            && a.shape.0.iter().zip(&b.shape.0).all(|(x, y)| self.find(*x) == self.find(*y))
    }
}

/// The symbol a derived size is defined as, folded the way lowering folds it.
fn lookup_derived(graph: &Graph, e: DimExpr) -> Dim {
    match crate::lower::fold_dims(&e) {
        DimExpr::Dim(d) => d,
        e => {
            let found = graph.syms.iter().position(|d| *d == SymDef::Derived(e.clone()));
            // An undefined sym makes the type comparison fail and report the node.
            Dim::Sym(Sym(found.map_or(u32::MAX, |i| i as u32)))
        }
    }
}

fn check_shape_syms(graph: &Graph, shape: &Shape, here: &str, problems: &mut Vec<String>) {
    for d in &shape.0 {
        if let Dim::Sym(s) = d {
            if s.0 as usize >= graph.syms.len() {
                problems.push(format!("{here}: size {d} is not defined"));
            }
        }
    }
}

fn check_syms(graph: &Graph, problems: &mut Vec<String>) {
    for (i, def) in graph.syms.iter().enumerate() {
        match def {
            SymDef::Input { sources } => {
                if sources.is_empty() {
                    problems.push(format!("s{i}: an input size without sources"));
                }
                for &(p, axis) in sources {
                    let dim =
                        graph.params.get(p as usize).and_then(|p| p.ty.shape.0.get(axis as usize));
                    if dim != Some(&Dim::Sym(Sym(i as u32))) {
                        problems.push(format!(
                            "s{i}: source axis {axis} of parameter {p} does not carry s{i}"
                        ));
                    }
                }
            }
            SymDef::Derived(e) => {
                let mut dims = Vec::new();
                crate::lower::collect_dims(e, &mut dims);
                for d in dims {
                    if let Dim::Sym(s) = d {
                        let defined = graph.syms.get(s.0 as usize).is_some();
                        if !defined || s.0 as usize == i {
                            problems.push(format!("s{i}: derived from undefined or itself {d}"));
                        }
                    }
                }
            }
        }
    }
}
