//! A [`Plan`] as text, and back: how an AOT object embeds a function with loops (its stages,
//! each as an opaque payload the caller chooses — for `tfnc build`, the planned stage graph's
//! IR text and its kernel count —, and its loops: kind, bounds as sizes of the signature,
//! carried, invariant, stacked and result values).
//!
//! Line-based; every free text (a graph, a payload, a label, a name) is written as
//! `KEY LEN`, a newline, exactly `LEN` bytes and a newline, so nothing needs quoting:
//!
//! ```text
//! program inputs=N values=M
//! params 0 1
//! outputs 7
//! signature LEN            the signature graph (real parameters, then one per result)
//! stage reads 3 writes 4 5
//! payload LEN
//! loop 0 for 0 s2 0        number, `for`, start, end (sizes: `5` or `s2`), checkpoint
//! loop 1 while 6 100       number, `while`, condition value, at most
//! label LEN
//! carried 4 5 / names, invariants, sliced, sliced_names, results
//! program ...              the body, then `end`
//! end
//! ```
//!
//! The top level's signature also carries the function's result types (as parameters after
//! the real ones), which the runtime needs to size the outputs; [`parse_plan`] splits them
//! off again.

use super::run::{LoopHead, Plan, PlanStep};
use super::LoopKind;
use crate::graph::{Graph, GraphParam, TensorType, ValueId};
use crate::shape::{Dim, Sym};
use std::fmt::Write;

/// Why a plan's text does not read back.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the program text does not parse: {0}")]
pub struct PlanTextError(pub String);

/// The plan as text, with `results` (the function's result types) and each stage as
/// `stage(s)`.
pub fn print_plan<S>(
    plan: &Plan<S>,
    results: &[TensorType],
    stage: &mut impl FnMut(&S) -> String,
) -> String {
    let mut out = String::new();
    let mut signature = plan.signature.clone();
    for (k, ty) in results.iter().enumerate() {
        signature.params.push(GraphParam { name: format!("result{k}"), ty: ty.clone() });
    }
    print_program(&mut out, plan, &signature, stage);
    out
}

fn ids(v: &[ValueId]) -> String {
    v.iter().map(|v| format!(" {}", v.0)).collect()
}

fn dim(d: Dim) -> String {
    match d {
        Dim::Const(c) => c.to_string(),
        Dim::Sym(s) => format!("s{}", s.0),
    }
}

fn blob(out: &mut String, key: &str, text: &str) {
    let _ = writeln!(out, "{key} {}", text.len());
    out.push_str(text);
    out.push('\n');
}

fn print_program<S>(
    out: &mut String,
    plan: &Plan<S>,
    signature: &Graph,
    stage: &mut impl FnMut(&S) -> String,
) {
    let _ = writeln!(out, "program inputs={} values={}", plan.param_values.len(), plan.values);
    let _ = writeln!(out, "params{}", ids(&plan.param_values));
    let _ = writeln!(out, "outputs{}", ids(&plan.outputs));
    blob(out, "signature", &crate::text::print_graph(signature));
    for step in &plan.steps {
        match step {
            PlanStep::Stage { stage: s, reads, writes } => {
                let _ = writeln!(out, "stage reads{} writes{}", ids(reads), ids(writes));
                blob(out, "payload", &stage(s));
            }
            PlanStep::Loop { head, body, number } => {
                match head.kind {
                    LoopKind::For { start, end, checkpoint } => {
                        let c = u8::from(checkpoint);
                        let _ = writeln!(out, "loop {number} for {} {} {c}", dim(start), dim(end));
                    }
                    LoopKind::While { cond, max_trips } => {
                        let _ = writeln!(out, "loop {number} while {} {max_trips}", cond.0);
                    }
                }
                blob(out, "label", &head.label);
                if let Some(at) = &head.at {
                    blob(out, "at", at);
                }
                let _ = writeln!(out, "carried{}", ids(&head.carried));
                let _ = writeln!(out, "names {}", head.carried_names.len());
                for n in &head.carried_names {
                    blob(out, "name", n);
                }
                let _ = writeln!(out, "invariants{}", ids(&head.invariants));
                let _ = writeln!(out, "sliced{}", ids(&head.sliced));
                let _ = writeln!(out, "names {}", head.sliced_names.len());
                for n in &head.sliced_names {
                    blob(out, "name", n);
                }
                let _ = writeln!(out, "results{}", ids(&head.results));
                print_program(out, body, &body.signature, stage);
            }
        }
    }
    out.push_str("end\n");
}

/// Reads back what [`print_plan`] wrote: the plan with each stage's payload, and the result
/// types.
pub fn parse_plan(text: &str) -> Result<(Plan<String>, Vec<TensorType>), PlanTextError> {
    let mut r = Reader { rest: text, line: 0 };
    let mut plan = r.program(0)?;
    if !r.rest.is_empty() {
        return Err(r.err("text after the program"));
    }
    let inputs = plan.param_values.len();
    if plan.signature.params.len() < inputs {
        return Err(r.err("the signature has fewer parameters than the program's inputs"));
    }
    let results = plan.signature.params.split_off(inputs).into_iter().map(|p| p.ty).collect();
    Ok((plan, results))
}

struct Reader<'t> {
    rest: &'t str,
    line: usize,
}

impl<'t> Reader<'t> {
    fn err(&self, what: &str) -> PlanTextError {
        PlanTextError(format!("line {}: {what}", self.line + 1))
    }

    /// The next line, without its newline.
    fn next_line(&mut self) -> Result<&'t str, PlanTextError> {
        let (line, rest) =
            self.rest.split_once('\n').ok_or_else(|| self.err("unexpected end of the text"))?;
        self.rest = rest;
        self.line += 1;
        Ok(line)
    }

    /// The next line's words after `key`.
    fn keyed(&mut self, key: &str) -> Result<Vec<&'t str>, PlanTextError> {
        let line = self.next_line()?;
        let mut words = line.split(' ');
        if words.next() != Some(key) {
            return Err(self.err(&format!("expected `{key}`, got `{line}`")));
        }
        Ok(words.filter(|w| !w.is_empty()).collect())
    }

    fn ids(&self, words: &[&str], values: usize) -> Result<Vec<ValueId>, PlanTextError> {
        words
            .iter()
            .map(|w| match w.parse::<u32>() {
                Ok(v) if (v as usize) < values => Ok(ValueId(v)),
                _ => Err(self.err(&format!("`{w}` is not a value of the table"))),
            })
            .collect()
    }

    fn keyed_ids(&mut self, key: &str, values: usize) -> Result<Vec<ValueId>, PlanTextError> {
        let words = self.keyed(key)?;
        self.ids(&words, values)
    }

    fn number<T: std::str::FromStr>(&self, w: Option<&&str>) -> Result<T, PlanTextError> {
        w.and_then(|w| w.parse().ok()).ok_or_else(|| self.err("expected a number"))
    }

    /// `KEY LEN`, then `LEN` bytes and a newline.
    fn blob(&mut self, key: &str) -> Result<&'t str, PlanTextError> {
        let words = self.keyed(key)?;
        let len: usize = self.number(words.first())?;
        let text = self.rest.get(..len).ok_or_else(|| self.err("a text runs past the end"))?;
        let rest = self.rest[len..]
            .strip_prefix('\n')
            .ok_or_else(|| self.err("a text is not followed by a newline"))?;
        self.line += text.matches('\n').count() + 1;
        self.rest = rest;
        Ok(text)
    }

    fn names(&mut self) -> Result<Vec<String>, PlanTextError> {
        let words = self.keyed("names")?;
        let n: usize = self.number(words.first())?;
        (0..n).map(|_| self.blob("name").map(str::to_string)).collect()
    }

    fn dim(&self, w: Option<&&str>) -> Result<Dim, PlanTextError> {
        let w = w.ok_or_else(|| self.err("expected a size"))?;
        match w.strip_prefix('s') {
            Some(s) => Ok(Dim::Sym(Sym(self.number(Some(&s))?))),
            None => Ok(Dim::Const(self.number(Some(w))?)),
        }
    }

    /// A program and its `end` (`depth`: how deep in loops; bounded against hostile text).
    fn program(&mut self, depth: usize) -> Result<Plan<String>, PlanTextError> {
        if depth > 64 {
            return Err(self.err("loops nested more than 64 deep"));
        }
        let head = self.keyed("program")?;
        let field = |key: &str| {
            head.iter()
                .find_map(|w| w.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
                .and_then(|v| v.parse::<usize>().ok())
                .ok_or_else(|| self.err(&format!("expected `{key}=N`")))
        };
        let (inputs, values) = (field("inputs")?, field("values")?);
        let param_values = self.keyed_ids("params", values)?;
        if param_values.len() != inputs {
            return Err(self.err("the parameter count differs from `inputs`"));
        }
        let outputs = self.keyed_ids("outputs", values)?;
        let text = self.blob("signature")?;
        let signature = crate::text::parse_graph(text)
            .map_err(|e| self.err(&format!("the signature graph: {e}")))?;
        let mut steps = Vec::new();
        loop {
            let line = self.next_line()?;
            let words: Vec<&str> = line.split(' ').filter(|w| !w.is_empty()).collect();
            match words.first().copied() {
                Some("end") => break,
                Some("stage") => {
                    let at = words.iter().position(|w| *w == "writes");
                    let Some(at) = at.filter(|_| words.get(1) == Some(&"reads")) else {
                        return Err(self.err("expected `stage reads ... writes ...`"));
                    };
                    let reads = self.ids(&words[2..at], values)?;
                    let writes = self.ids(&words[at + 1..], values)?;
                    let stage = self.blob("payload")?.to_string();
                    steps.push(PlanStep::Stage { stage, reads, writes });
                }
                Some("loop") => {
                    let number: usize = self.number(words.get(1))?;
                    let kind = match words.get(2).copied() {
                        Some("for") => LoopKind::For {
                            start: self.dim(words.get(3))?,
                            end: self.dim(words.get(4))?,
                            checkpoint: self.number::<u8>(words.get(5))? != 0,
                        },
                        Some("while") => LoopKind::While {
                            cond: self
                                .ids(words.get(3..4).unwrap_or(&[]), values)?
                                .first()
                                .copied()
                                .ok_or_else(|| self.err("expected the condition's value"))?,
                            max_trips: self.number(words.get(4))?,
                        },
                        _ => return Err(self.err("expected `for` or `while`")),
                    };
                    let label = self.blob("label")?.to_string();
                    // Optional: where the loop is written (absent from older texts).
                    let at = match self.rest.starts_with("at ") {
                        true => Some(self.blob("at")?.to_string()),
                        false => None,
                    };
                    let carried = self.keyed_ids("carried", values)?;
                    let carried_names = self.names()?;
                    let invariants = self.keyed_ids("invariants", values)?;
                    let sliced = self.keyed_ids("sliced", values)?;
                    let sliced_names = self.names()?;
                    let results = self.keyed_ids("results", values)?;
                    if carried_names.len() != carried.len() || results.len() != carried.len() {
                        return Err(self.err("the carried values, names and results differ"));
                    }
                    let head = LoopHead {
                        label,
                        at,
                        kind,
                        carried_names,
                        carried,
                        invariants,
                        sliced,
                        sliced_names,
                        results,
                    };
                    let body = self.program(depth + 1)?;
                    steps.push(PlanStep::Loop { head, body: Box::new(body), number });
                }
                _ => return Err(self.err(&format!("unexpected line `{line}`"))),
            }
        }
        Ok(Plan { signature, param_values, steps, outputs, values })
    }
}
