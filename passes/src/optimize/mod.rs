//! The e-graph optimiser: `Graph` → e-graph → equality saturation → extraction → `Graph`.
//!
//! ```text
//! Graph ──add_graph──▶ EGraph (analysis: types, splat constants, sign facts)
//!       ──Runner (RuleSet, Limits)──▶ saturated or stopped e-graph
//!       ──extract (cost: kernel boundaries + memory traffic)──▶ RecExpr ──▶ Graph
//! ```
//!
//! - [`language`]: the e-node type; [`analysis`], [`infer`], [`fold`]: the e-class analysis;
//! - [`rules`]: built-in rule tables; [`user_rules`]: `rewrite` rules from `.tfn` sources;
//! - [`cost`], [`extract`]: deterministic extraction; [`convert`]: graph ⇄ e-graph;
//! - [`soundness`]: checking a rule by evaluating both sides with the interpreter.
//!
//! Every run has explicit iteration, e-node and time limits ([`Limits`]) and reports how it
//! ended ([`Report::stop_reason`]). The result is deterministic for a given input as long as
//! the time limit is not what stopped the run (the default time limit is generous, so the
//! iteration and node limits decide in practice).

pub mod analysis;
mod clock;
pub mod convert;
pub mod cost;
pub mod error;
pub mod extract;
pub mod fold;
pub mod infer;
pub mod language;
pub mod rules;
pub mod soundness;
pub mod user_rules;
pub mod window;

pub use analysis::{ClassData, TfnAnalysis, TfnEGraph};
pub use error::OptimizeError;
pub use language::TfnNode;
pub use rules::TfnRewrite;
pub use soundness::{check_rule_soundness, Counterexample, SoundnessConfig, SoundnessError};
pub use user_rules::compile_user_rules;

use egg::{Id, Runner};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tfn_ir::{Diagnostic, Graph, Library, Origin};

/// Limits of one equality-saturation run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    pub iterations: usize,
    pub nodes: usize,
    pub time: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { iterations: 16, nodes: 20_000, time: Duration::from_secs(2) }
    }
}

/// What a run did.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub iterations: usize,
    pub egraph_nodes: usize,
    pub egraph_classes: usize,
    /// How the equality saturation ended.
    pub stop_reason: StopReason,
    /// Whole optimisation: conversion, saturation, extraction, rebuilding.
    pub time: Duration,
    /// Rules that changed the e-graph, in rule order, with how many unions each made.
    pub rules_fired: Vec<(String, usize)>,
}

/// How an equality-saturation run ended: data, not an error (egg's `StopReason`, comparable
/// and printable). Hitting a limit is normal for large graphs; the result is still sound.
#[derive(Clone, Debug, PartialEq)]
pub enum StopReason {
    /// No rule could change the e-graph any more.
    Saturated,
    IterationLimit(usize),
    NodeLimit(usize),
    /// Seconds.
    TimeLimit(f64),
    Other(String),
}

impl From<&egg::StopReason> for StopReason {
    fn from(r: &egg::StopReason) -> StopReason {
        match r {
            egg::StopReason::Saturated => StopReason::Saturated,
            egg::StopReason::IterationLimit(n) => StopReason::IterationLimit(*n),
            egg::StopReason::NodeLimit(n) => StopReason::NodeLimit(*n),
            egg::StopReason::TimeLimit(s) => StopReason::TimeLimit(*s),
            egg::StopReason::Other(s) => StopReason::Other(s.clone()),
        }
    }
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopReason::Saturated => f.write_str("saturated"),
            StopReason::IterationLimit(n) => write!(f, "iteration limit ({n})"),
            StopReason::NodeLimit(n) => write!(f, "node limit ({n})"),
            StopReason::TimeLimit(s) => write!(f, "time limit ({s} s)"),
            StopReason::Other(s) => write!(f, "{s}"),
        }
    }
}

/// An optimised graph and the report of its run.
#[derive(Clone, Debug)]
pub struct Optimized {
    pub graph: Graph,
    pub report: Report,
}

/// One rule of a [`RuleSet`].
pub struct NamedRule {
    pub name: String,
    pub rewrite: TfnRewrite,
}

/// The rules one optimisation uses: the built-in tables, plus checked user rules.
pub struct RuleSet {
    pub rules: Vec<NamedRule>,
}

impl RuleSet {
    /// The built-in rules, in table order.
    pub fn builtin() -> RuleSet {
        let rules = rules::builtin_defs()
            .into_iter()
            .filter_map(|def| {
                // Every row compiles (unit-tested); a row that did not would be left out.
                let rewrite = rules::compile(def).ok()?;
                Some(NamedRule { name: def.name.to_string(), rewrite })
            })
            .collect();
        RuleSet { rules }
    }

    /// The built-in rules plus the library's `rewrite` rules, each checked for soundness.
    /// Returns every problem found (unsupported constructs, unsound rules) as diagnostics.
    pub fn with_user(lib: &Library) -> Result<RuleSet, Vec<Diagnostic>> {
        let mut set = RuleSet::builtin();
        set.rules.extend(compile_user_rules(lib)?);
        Ok(set)
    }

    /// Only the named rules (for tests and experiments).
    pub fn only(mut self, names: &[&str]) -> RuleSet {
        self.rules.retain(|r| names.contains(&r.name.as_str()));
        self
    }

    pub fn names(&self) -> Vec<&str> {
        self.rules.iter().map(|r| r.name.as_str()).collect()
    }
}

/// Optimises `graph` with `rules` within `limits`. Keeps the graph's name, parameters,
/// outputs (in order), symbols, and every output's dtype and shape; nodes that survive keep
/// their origin, new nodes inherit the origin of the nearest surviving user.
pub fn optimize(
    graph: &Graph,
    rules: &RuleSet,
    limits: &Limits,
) -> Result<Optimized, OptimizeError> {
    let clock = clock::EggClock::new();
    clock.run(|| optimize_on(graph, rules, limits, &clock))
}

/// [`optimize`] with egg on `clock`.
fn optimize_on(
    graph: &Graph,
    rules: &RuleSet,
    limits: &Limits,
    clock: &clock::EggClock,
) -> Result<Optimized, OptimizeError> {
    let start = Instant::now();
    let mut egraph = TfnEGraph::default();
    let mut externs = convert::ExternTable::default();
    let ids = convert::add_graph(&mut egraph, graph, &mut externs)?;
    egraph.rebuild();
    let roots = graph
        .outputs
        .iter()
        .map(|v| ids.get(v.index()).copied())
        .collect::<Option<Vec<Id>>>()
        .ok_or_else(|| OptimizeError::Malformed {
            node: graph.nodes.len(),
            message: "an output is not a node".into(),
        })?;

    let rewrites: Vec<&TfnRewrite> = rules.rules.iter().map(|r| &r.rewrite).collect();
    let runner = Runner::default()
        .with_egraph(egraph)
        .with_iter_limit(limits.iterations)
        .with_node_limit(limits.nodes)
        .with_time_limit(limits.time)
        .with_hook({
            let clock = clock.clone();
            move |_| {
                clock.sync();
                Ok(())
            }
        })
        .run(rewrites);

    let conflicts = runner.egraph.analysis.type_conflicts;
    if conflicts > 0 {
        return Err(OptimizeError::TypeConflict { count: conflicts });
    }
    let egraph = &runner.egraph;
    let choice = extract::best_nodes(egraph, None);
    let extraction = extract::extract(egraph, &roots, &choice)
        .ok_or_else(|| OptimizeError::Rebuild("an output has no finite-cost term".into()))?;

    // Origins: the first original node in each class, then inherited from users.
    let mut class_origin: BTreeMap<Id, Origin> = BTreeMap::new();
    for (node, id) in graph.nodes.iter().zip(&ids) {
        class_origin.entry(egraph.find(*id)).or_insert_with(|| node.origin.clone());
    }
    let origins = inherit_origins(&extraction, &class_origin);
    let optimized =
        convert::expr_to_graph(&extraction.expr, &extraction.roots, graph, &origins, &externs)?;

    let mut fired: BTreeMap<&str, usize> = BTreeMap::new();
    for iteration in &runner.iterations {
        for (name, count) in &iteration.applied {
            *fired.entry(name.as_str()).or_default() += count;
        }
    }
    let rules_fired = rules
        .rules
        .iter()
        .filter_map(|r| fired.get(r.name.as_str()).map(|&n| (r.name.clone(), n)))
        .filter(|(_, n)| *n > 0)
        .collect();
    let report = Report {
        iterations: runner.iterations.len(),
        egraph_nodes: egraph.total_size(),
        egraph_classes: egraph.number_of_classes(),
        stop_reason: runner
            .stop_reason
            .as_ref()
            .map_or(StopReason::Other("not run".into()), StopReason::from),
        time: start.elapsed(),
        rules_fired,
    };
    Ok(Optimized { graph: optimized, report })
}

/// Origin of each extracted node: its class's original node, else its first user's origin.
fn inherit_origins(
    extraction: &extract::Extraction,
    class_origin: &BTreeMap<Id, Origin>,
) -> Vec<Origin> {
    let nodes = extraction.expr.as_ref();
    let mut origins: Vec<Option<Origin>> =
        extraction.classes.iter().map(|c| class_origin.get(c).cloned()).collect();
    // Users come after their operands, so walk backwards pushing origins down.
    for i in (0..nodes.len()).rev() {
        if let Some(origin) = origins[i].clone() {
            for c in egg::Language::children(&nodes[i]) {
                let slot = &mut origins[usize::from(*c)];
                if slot.is_none() {
                    *slot = Some(origin.clone());
                }
            }
        }
    }
    origins.into_iter().map(Option::unwrap_or_default).collect()
}
