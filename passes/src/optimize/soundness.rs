//! Checking a rewrite rule by evaluating both sides with the reference interpreter.
//!
//! A rule is checked on *probes*: s-expressions with pattern variables (`?x`, the inputs) and
//! `T` standing for the dtype under test. For each probe, each dtype of the config and each
//! assignment of shapes to the variables (equal shapes `[]`, `[3]`, `[2,3]`, `[2,3,4]`, and
//! broadcasting pairs such as `[2,3]`/`[3]`, `[2,1]`/`[1,3]`), the checker
//!
//! 1. builds the probe as an expression, skipping the case if it does not type-check;
//! 2. adds it to a fresh e-graph and runs that one rule for one iteration;
//! 3. extracts the root with the rule's new node preferred, giving the rewritten expression;
//! 4. runs both as graphs with the interpreter on random inputs (seeded, so reproducible)
//!    and compares: same dtype and shape, integers and bools exactly, floats NaN-aware
//!    (NaN only matches NaN) within `rtol * max(1, |a|, |b|)` (`rtol` 1e-5 for f32, 1e-12
//!    for f64: rules may reassociate a few roundings, see [`super::rules`]).
//!
//! 5. with a [`Library`] holding the prelude's `grad` blocks ([`check_rule_soundness_with`]),
//!    once the values agree, compares the two sides' gradients too: same inputs, same random
//!    cotangent, same tolerance ([`gradient`] says when a probe skips this).
//!
//! A probe on which the rule never fires is an error too: a check that exercises nothing
//! proves nothing.

mod gradient;

pub use gradient::{compare_gradients, GradientMismatch};

use super::analysis::TfnEGraph;
use super::convert::{expr_data, expr_to_graph, ExternTable};
use super::extract::{best_nodes, extract};
use super::language::TfnNode;
use super::rules::TfnRewrite;
use egg::{ENodeOrVar, Id, Language, Pattern, RecExpr, Runner, Var};
use ndarray::ArrayD;
use std::collections::BTreeSet;
use std::fmt;
use tfn_ir::half;
use tfn_ir::storage::bits;
use tfn_ir::{DType, Graph, GraphParam, Library, Shape, Tensor, TensorType};

/// What to try.
#[derive(Clone, Debug)]
pub struct SoundnessConfig {
    pub dtypes: Vec<DType>,
    /// Random inputs per (probe, dtype, shapes) case.
    pub trials: usize,
    pub seed: u64,
    /// Also one trial per special value ([`special_tensor`]: infinities, NaN, `-0`, huge and
    /// tiny numbers, integers past `f32`'s precision), every element of every input that
    /// value.
    /// User rules must hold there too; the built-in rules' documented caveats are exactly
    /// such values (`super::rules`), so their test leaves this off.
    pub specials: bool,
}

impl Default for SoundnessConfig {
    fn default() -> SoundnessConfig {
        SoundnessConfig {
            dtypes: DType::ALL.to_vec(),
            trials: 2,
            seed: 0x7f4a_7c15_9e37_79b9,
            specials: false,
        }
    }
}

/// Inputs on which the two sides of a rule disagree.
#[derive(Clone, Debug, PartialEq)]
pub struct Counterexample {
    pub rule: String,
    /// The instance, as an s-expression, and what the rule rewrote it to.
    pub before: String,
    pub after: String,
    /// `(variable, value)` for each input.
    pub inputs: Vec<(String, Tensor)>,
    pub expected: Option<Tensor>,
    pub got: Option<Tensor>,
    /// For a gradient mismatch: the cotangent of each output, and the variable whose
    /// gradients `expected` and `got` are.
    pub cotangents: Vec<Tensor>,
    pub gradient_of: Option<String>,
    pub reason: String,
}

impl fmt::Display for Counterexample {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "rule `{}` rewrites `{}` to `{}`", self.rule, self.before, self.after)?;
        for (name, value) in &self.inputs {
            writeln!(f, "  with {name} = {}", show(value))?;
        }
        for value in &self.cotangents {
            writeln!(f, "  and cotangent {}", show(value))?;
        }
        let what = match &self.gradient_of {
            Some(var) => format!("'s gradient for {var} is"),
            None => " gives".into(),
        };
        if let Some(e) = &self.expected {
            writeln!(f, "  the left-hand side{what}  {}", show(e))?;
        }
        if let Some(g) = &self.got {
            writeln!(f, "  the right-hand side{what} {}", show(g))?;
        }
        write!(f, "  ({})", self.reason)
    }
}

/// A compact rendering of a small tensor: its dtype, shape and elements.
pub fn show(t: &Tensor) -> String {
    let elems: Vec<String> = match t {
        Tensor::Bool(a) => a.iter().map(|v| v.to_string()).collect(),
        Tensor::I8(a) => a.iter().map(|v| v.to_string()).collect(),
        Tensor::U8(a) => a.iter().map(|v| v.to_string()).collect(),
        Tensor::I32(a) => a.iter().map(|v| v.to_string()).collect(),
        Tensor::I64(a) => a.iter().map(|v| v.to_string()).collect(),
        Tensor::F16(a) => a.iter().map(|v| format!("{:?}", v.to_f32())).collect(),
        Tensor::BF16(a) => a.iter().map(|v| format!("{:?}", v.to_f32())).collect(),
        Tensor::F32(a) => a.iter().map(|v| format!("{v:?}")).collect(),
        Tensor::F64(a) => a.iter().map(|v| format!("{v:?}")).collect(),
    };
    format!("{}{:?} [{}]", t.dtype(), t.shape(), elems.join(", "))
}

/// Why a rule failed its check.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SoundnessError {
    #[error("{0}")]
    Unsound(Box<Counterexample>),
    /// No case of this probe type-checked and made the rule fire.
    #[error("rule `{rule}` never fires on its probe `{probe}`")]
    NotExercised { rule: String, probe: String },
    #[error("rule `{rule}`: bad probe `{probe}`: {message}")]
    BadProbe { rule: String, probe: String, message: String },
}

/// How much checking happened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SoundnessStats {
    /// (probe, dtype, shapes) cases on which the rule fired and both sides were compared.
    pub cases: usize,
    pub comparisons: usize,
    /// Comparisons whose gradients were compared too.
    pub gradient_comparisons: usize,
}

/// Checks `rewrite` (named `name`) on every probe, values only; see the module docs.
pub fn check_rule_soundness(
    name: &str,
    rewrite: &TfnRewrite,
    probes: &[String],
    config: &SoundnessConfig,
) -> Result<SoundnessStats, SoundnessError> {
    check_rule_soundness_with(name, rewrite, probes, config, None)
}

/// Checks `rewrite` (named `name`) on every probe: values, and with `grads` (a library
/// holding the prelude's `grad` blocks) gradients too; see the module docs.
pub fn check_rule_soundness_with(
    name: &str,
    rewrite: &TfnRewrite,
    probes: &[String],
    config: &SoundnessConfig,
    grads: Option<&Library>,
) -> Result<SoundnessStats, SoundnessError> {
    // One-iteration runs without a time limit: egg's clock need not follow real time.
    super::clock::EggClock::new().run(|| check_probes(name, rewrite, probes, config, grads))
}

/// [`check_rule_soundness_with`] under egg's clock.
fn check_probes(
    name: &str,
    rewrite: &TfnRewrite,
    probes: &[String],
    config: &SoundnessConfig,
    grads: Option<&Library>,
) -> Result<SoundnessStats, SoundnessError> {
    let mut stats = SoundnessStats::default();
    let mut rng = SplitMix(config.seed);
    for probe in probes {
        let before = stats.cases;
        for &dtype in &config.dtypes {
            let text = substitute_dtype(probe, dtype);
            let pattern: Pattern<TfnNode> = text.parse().map_err(|e| SoundnessError::BadProbe {
                rule: name.into(),
                probe: probe.clone(),
                message: format!("{e}"),
            })?;
            let mut vars = pattern.vars();
            vars.sort_by_key(|v| v.to_string());
            for shapes in shape_cases(vars.len()) {
                let specials = config.specials;
                let case =
                    Case { name, rewrite, vars: &vars, dtype, shapes: &shapes, grads, specials };
                if let Some((compared, gradients)) =
                    case.check(&pattern, config.trials, &mut rng)?
                {
                    stats.cases += 1;
                    stats.comparisons += compared;
                    stats.gradient_comparisons += gradients;
                }
            }
        }
        if stats.cases == before {
            return Err(SoundnessError::NotExercised { rule: name.into(), probe: probe.clone() });
        }
    }
    Ok(stats)
}

/// Replaces each `T` token of a probe by a dtype name.
pub fn substitute_dtype(probe: &str, dtype: DType) -> String {
    let mut out = String::with_capacity(probe.len());
    let chars: Vec<char> = probe.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let boundary = |j: Option<usize>| {
            j.and_then(|j| chars.get(j))
                .is_none_or(|ch| ch.is_whitespace() || *ch == '(' || *ch == ')')
        };
        if c == 'T' && boundary(i.checked_sub(1)) && boundary(Some(i + 1)) {
            out.push_str(dtype.name());
        } else {
            out.push(c);
        }
    }
    out
}

const SAME: &[&[u64]] = &[&[], &[3], &[2, 3], &[2, 3, 4]];
const PAIRS: &[(&[u64], &[u64])] =
    &[(&[2, 3], &[3]), (&[2, 3], &[]), (&[2, 1], &[1, 3]), (&[4, 2, 3], &[2, 3])];

/// Shape assignments for `n` variables: all equal, and each broadcasting pair with one
/// variable taking the second shape.
fn shape_cases(n: usize) -> Vec<Vec<Vec<u64>>> {
    let mut cases: Vec<Vec<Vec<u64>>> = SAME.iter().map(|s| vec![s.to_vec(); n]).collect();
    if n >= 2 {
        for (a, b) in PAIRS {
            for j in 0..n {
                let mut case = vec![a.to_vec(); n];
                case[j] = b.to_vec();
                cases.push(case);
            }
        }
    }
    if n == 0 {
        cases.truncate(1);
    }
    cases
}

struct Case<'a> {
    name: &'a str,
    rewrite: &'a TfnRewrite,
    vars: &'a [Var],
    dtype: DType,
    shapes: &'a [Vec<u64>],
    grads: Option<&'a Library>,
    specials: bool,
}

/// The probe before and after one application of the rule, as graphs.
struct Rewritten {
    before: Graph,
    after: Graph,
    before_text: String,
    after_text: String,
}

impl Case<'_> {
    fn param_type(&self, i: usize) -> TensorType {
        let dims = self.shapes[i].iter().map(|&d| tfn_ir::Dim::Const(d)).collect();
        TensorType { dtype: self.dtype, shape: Shape(dims) }
    }

    /// The probe with variable `i` replaced by `(param i dtype shape)`.
    fn instantiate(&self, pattern: &Pattern<TfnNode>) -> RecExpr<TfnNode> {
        let mut expr = RecExpr::default();
        let mut map: Vec<Id> = Vec::new();
        for node in pattern.ast.as_ref() {
            let id = match node {
                ENodeOrVar::ENode(n) => expr.add(n.clone().map_children(|c| map[usize::from(c)])),
                ENodeOrVar::Var(v) => {
                    let i = self.vars.iter().position(|x| x == v).unwrap_or(0);
                    let ty = self.param_type(i);
                    let index = expr.add(TfnNode::Int(i as i64));
                    let dtype = expr.add(TfnNode::DType(ty.dtype));
                    let dims = ty
                        .shape
                        .0
                        .iter()
                        .map(|d| expr.add(TfnNode::Int(d.as_const().unwrap_or(1) as i64)))
                        .collect();
                    let shape = expr.add(TfnNode::Shape(dims));
                    expr.add(TfnNode::Param([index, dtype, shape]))
                }
            };
            map.push(id);
        }
        expr
    }

    fn template(&self) -> Graph {
        let params = (0..self.vars.len())
            .map(|i| GraphParam { name: self.vars[i].to_string(), ty: self.param_type(i) })
            .collect();
        Graph { name: format!("probe.{}", self.name), params, ..Graph::default() }
    }

    /// `None` when the probe does not type-check here or the rule changes nothing.
    fn rewrite_once(&self, pattern: &Pattern<TfnNode>) -> Option<Rewritten> {
        let expr = self.instantiate(pattern);
        let root = Id::from(expr.as_ref().len().checked_sub(1)?);
        expr_data(&expr).last()?.ty.as_ref()?;
        let externs = ExternTable::default();
        let template = self.template();
        let before = expr_to_graph(&expr, &[root], &template, &[], &externs).ok()?;

        let mut egraph = TfnEGraph::default();
        let eroot = egraph.add_expr(&expr);
        egraph.rebuild();
        let original: BTreeSet<TfnNode> = egraph[eroot].nodes.iter().cloned().collect();
        let runner = Runner::default()
            .with_egraph(egraph)
            .with_iter_limit(1)
            .with_node_limit(10_000)
            .run([self.rewrite]);
        let fired = runner.iterations.iter().any(|it| it.applied.values().any(|&n| n > 0));
        if !fired || runner.egraph.analysis.type_conflicts > 0 {
            return None;
        }
        let eroot = runner.egraph.find(eroot);
        let is_new = |n: &TfnNode| !original.contains(n);
        let has_new = runner.egraph[eroot].nodes.iter().any(is_new);
        let choice = best_nodes(
            &runner.egraph,
            has_new.then_some((eroot, &is_new as super::extract::NodeFilter)),
        );
        let extraction = extract(&runner.egraph, &[eroot], &choice)?;
        let after =
            expr_to_graph(&extraction.expr, &extraction.roots, &template, &[], &externs).ok()?;
        if after.nodes == before.nodes {
            return None;
        }
        Some(Rewritten {
            before,
            after,
            before_text: expr.to_string(),
            after_text: extraction.expr.to_string(),
        })
    }

    /// Runs both sides `trials` times; returns the number of comparisons made and how many
    /// of them compared gradients, or `None` when the rule does not apply to this case.
    fn check(
        &self,
        pattern: &Pattern<TfnNode>,
        trials: usize,
        rng: &mut SplitMix,
    ) -> Result<Option<(usize, usize)>, SoundnessError> {
        let Some(rw) = self.rewrite_once(pattern) else { return Ok(None) };
        let (mut compared, mut gradients) = (0, 0);
        let specials = if self.specials { SPECIALS.len() } else { 0 };
        for t in 0..trials + specials {
            let inputs: Vec<Tensor> = (0..self.vars.len())
                .map(|i| match t.checked_sub(trials) {
                    Some(k) => special_tensor(&self.param_type(i), k),
                    None => random_tensor(&self.param_type(i), rng),
                })
                .collect();
            let Ok(expected) = tfn_ir::interp::run(&rw.before, &inputs) else { continue };
            // From finite inputs, a left side that overflowed may become the exact value
            // (`log(exp(1e30)) => 1e30`, the rules' documented caveat); from infinite or NaN
            // inputs the two sides must agree (`x - x` is NaN at `inf`, not 0).
            let special = t.checked_sub(trials).map(|k| SPECIALS[k]);
            if special.is_some_and(f64::is_finite) && expected.iter().any(non_finite) {
                continue;
            }
            let counterexample = |got: Option<Tensor>, reason: String| {
                Box::new(Counterexample {
                    rule: self.name.into(),
                    before: rw.before_text.clone(),
                    after: rw.after_text.clone(),
                    inputs: self
                        .vars
                        .iter()
                        .map(|v| v.to_string())
                        .zip(inputs.iter().cloned())
                        .collect(),
                    expected: expected.first().cloned(),
                    got,
                    cotangents: Vec::new(),
                    gradient_of: None,
                    reason,
                })
            };
            let got = match tfn_ir::interp::run(&rw.after, &inputs) {
                Ok(got) => got,
                Err(e) => {
                    let reason = format!("the right-hand side fails: {e}");
                    return Err(SoundnessError::Unsound(counterexample(None, reason)));
                }
            };
            if let (Some(e), Some(g)) = (expected.first(), got.first()) {
                if let Err(reason) = compare(e, g) {
                    return Err(SoundnessError::Unsound(counterexample(Some(g.clone()), reason)));
                }
            }
            compared += 1;
            let Some(lib) = self.grads.filter(|_| t < trials) else { continue };
            // Generic inputs for the gradients: no edge values (see `gradient`).
            let inputs: Vec<Tensor> = (0..self.vars.len())
                .map(|i| random_tensor_with(&self.param_type(i), rng, false))
                .collect();
            match compare_gradients(lib, &rw.before, &rw.after, &inputs, rng) {
                Ok(true) => gradients += 1,
                Ok(false) => {}
                Err(m) => {
                    let m = *m;
                    let cx = Box::new(Counterexample {
                        rule: self.name.into(),
                        before: rw.before_text.clone(),
                        after: rw.after_text.clone(),
                        inputs: self.vars.iter().map(|v| v.to_string()).zip(inputs).collect(),
                        expected: Some(m.expected),
                        got: m.got,
                        cotangents: m.cotangents,
                        gradient_of: self.vars.get(m.param).map(|v| v.to_string()),
                        reason: m.reason,
                    });
                    return Err(SoundnessError::Unsound(cx));
                }
            }
        }
        Ok(Some((compared, gradients)))
    }
}

/// Compares a rewritten result with the original; see the module docs for the tolerance.
pub fn compare(expected: &Tensor, got: &Tensor) -> Result<(), String> {
    if expected.dtype() != got.dtype() || expected.shape() != got.shape() {
        return Err(format!(
            "the type changes from {}{:?} to {}{:?}",
            expected.dtype(),
            expected.shape(),
            got.dtype(),
            got.shape()
        ));
    }
    let close = |a: f64, b: f64, rtol: f64| {
        (a.is_nan() && b.is_nan())
            || a == b
            || (a - b).abs() <= rtol * a.abs().max(b.abs()).max(1.0)
    };
    let mismatch = match (expected, got) {
        (Tensor::F32(a), Tensor::F32(b)) => {
            a.iter().zip(b).position(|(x, y)| !close(f64::from(*x), f64::from(*y), 1e-5))
        }
        (Tensor::F64(a), Tensor::F64(b)) => {
            a.iter().zip(b).position(|(x, y)| !close(*x, *y, 1e-12))
        }
        (Tensor::I32(a), Tensor::I32(b)) => a.iter().zip(b).position(|(x, y)| x != y),
        (Tensor::I64(a), Tensor::I64(b)) => a.iter().zip(b).position(|(x, y)| x != y),
        (Tensor::Bool(a), Tensor::Bool(b)) => a.iter().zip(b).position(|(x, y)| x != y),
        (Tensor::I8(a), Tensor::I8(b)) => a.iter().zip(b).position(|(x, y)| x != y),
        (Tensor::U8(a), Tensor::U8(b)) => a.iter().zip(b).position(|(x, y)| x != y),
        // A rewrite of the f32 computation may move a value across a rounding boundary: one
        // unit in the last place.
        (Tensor::F16(a), Tensor::F16(b)) => {
            a.iter().zip(b).position(|(x, y)| !close(x.to_f64(), y.to_f64(), 1.0 / 1024.0))
        }
        (Tensor::BF16(a), Tensor::BF16(b)) => {
            a.iter().zip(b).position(|(x, y)| !close(x.to_f64(), y.to_f64(), 1.0 / 128.0))
        }
        // The dtypes are equal (checked above).
        _ => Some(0),
    };
    match mismatch {
        Some(i) => Err(format!("results differ at element {i}")),
        None => Ok(()),
    }
}

pub use tfn_ir::rng::SplitMix;

/// A value in `[-3, 3]`, with `edges` one in eight times an edge value (0, ±1, 2, 0.5).
fn random_float(rng: &mut SplitMix, edges: bool) -> f64 {
    const EDGES: [f64; 6] = [0.0, 1.0, -1.0, 2.0, 0.5, -0.0];
    if edges && rng.below(8) == 0 {
        EDGES[rng.below(EDGES.len() as u64) as usize]
    } else {
        rng.unit() * 6.0 - 3.0
    }
}

/// The special values of [`SoundnessConfig::specials`], as `f64` (an integer dtype takes
/// each one converted with saturation: `i32::MAX`, `16777217`, `-1`, ...).
const SPECIALS: [f64; 10] = [
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    -0.0,
    1e30,
    -3e38,
    1e-40,
    16_777_217.0,
    2_147_483_647.0,
    -2_147_483_648.0,
];

/// Whether a float tensor has an infinite or NaN element.
fn non_finite(t: &Tensor) -> bool {
    match t {
        Tensor::F32(a) => a.iter().any(|v| !v.is_finite()),
        Tensor::F64(a) => a.iter().any(|v| !v.is_finite()),
        Tensor::F16(a) => a.iter().any(|v| !v.is_finite()),
        Tensor::BF16(a) => a.iter().any(|v| !v.is_finite()),
        _ => false,
    }
}

/// An input of a fully constant type (symbolic dimensions get size 1) whose every element is
/// `SPECIALS[k]`.
fn special_tensor(ty: &TensorType, k: usize) -> Tensor {
    let shape: Vec<usize> = ty.shape.0.iter().map(|d| d.as_const().unwrap_or(1) as usize).collect();
    let ix = ndarray::IxDyn(&shape);
    let v = SPECIALS[k];
    match ty.dtype {
        DType::F32 => Tensor::F32(ArrayD::from_elem(ix, v as f32)),
        DType::F64 => Tensor::F64(ArrayD::from_elem(ix, v)),
        DType::I32 => Tensor::I32(ArrayD::from_elem(ix, v as i32)),
        DType::I64 => Tensor::I64(ArrayD::from_elem(ix, v as i64)),
        DType::Bool => Tensor::Bool(ArrayD::from_elem(ix, v > 0.0)),
        DType::I8 => Tensor::I8(ArrayD::from_elem(ix, v as i8)),
        DType::U8 => Tensor::U8(ArrayD::from_elem(ix, v as u8)),
        DType::F16 => Tensor::F16(ArrayD::from_elem(ix, half::f16::from_bits(bits::f64_to_f16(v)))),
        DType::BF16 => {
            Tensor::BF16(ArrayD::from_elem(ix, half::bf16::from_bits(bits::f64_to_bf16(v))))
        }
    }
}

/// Random input of a fully constant type (symbolic dimensions get size 1); floats are now and
/// then an edge value (see [`random_float`]).
pub fn random_tensor(ty: &TensorType, rng: &mut SplitMix) -> Tensor {
    random_tensor_with(ty, rng, true)
}

/// [`random_tensor`], with edge values only if `edges`.
pub fn random_tensor_with(ty: &TensorType, rng: &mut SplitMix, edges: bool) -> Tensor {
    let shape: Vec<usize> = ty.shape.0.iter().map(|d| d.as_const().unwrap_or(1) as usize).collect();
    let ix = ndarray::IxDyn(&shape);
    let mut float = || random_float(rng, edges);
    match ty.dtype {
        DType::F32 => Tensor::F32(ArrayD::from_shape_fn(ix, |_| float() as f32)),
        DType::F64 => Tensor::F64(ArrayD::from_shape_fn(ix, |_| float())),
        DType::I32 => Tensor::I32(ArrayD::from_shape_fn(ix, |_| (float() * 2.0).round() as i32)),
        DType::I64 => Tensor::I64(ArrayD::from_shape_fn(ix, |_| (float() * 2.0).round() as i64)),
        DType::Bool => Tensor::Bool(ArrayD::from_shape_fn(ix, |_| float() > 0.0)),
        DType::I8 => Tensor::I8(ArrayD::from_shape_fn(ix, |_| (float() * 2.0).round() as i8)),
        DType::U8 => Tensor::U8(ArrayD::from_shape_fn(ix, |_| (float() * 2.0).round() as u8)),
        DType::F16 => Tensor::F16(ArrayD::from_shape_fn(ix, |_| {
            half::f16::from_bits(bits::f64_to_f16(float()))
        })),
        DType::BF16 => Tensor::BF16(ArrayD::from_shape_fn(ix, |_| {
            half::bf16::from_bits(bits::f64_to_bf16(float()))
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_substitution_replaces_whole_tokens_only() {
        assert_eq!(substitute_dtype("(const T 1)", DType::F32), "(const f32 1)");
        assert_eq!(
            substitute_dtype("(cast T (cast f64 ?T2))", DType::I32),
            "(cast i32 (cast f64 ?T2))"
        );
    }

    #[test]
    fn shape_cases_cover_broadcasting_pairs() {
        assert_eq!(shape_cases(0).len(), 1);
        assert_eq!(shape_cases(1).len(), SAME.len());
        assert_eq!(shape_cases(2).len(), SAME.len() + 2 * PAIRS.len());
    }
}
