//! Property test: random functions with loops, each checked against its **unrolled** form (the
//! same program with every loop expanded: `w[i]` as `w[0]`, `w[1]`, ..., the loop variable as a
//! literal, each assignment a new `let`) on both backends, with `value_and_vjp` against the
//! unrolled vjp, stored and checkpointed (`SessionOptions::checkpoint_loops`).
//!
//! A case has 1–3 carried `var`s of shapes `[B, C]`, `[C]` and `[]` (the bodies mix them with
//! broadcasts and reductions), one or two loops in sequence — `for` over a literal, an
//! attribute, a size or a derived size (0 and 1 trips included, start 0 or 1), or a `while`
//! counting to a bound, sometimes past its `at most` — whose bodies read rows of stacked inputs
//! (`w[i]`, `v[i + 1]`, `s[i]` of an input with exactly one row per trip, possibly none), use
//! the loop index in arithmetic, call a function, bind a `let`, branch on a `Bool` attribute
//! and nest a loop; the loops may live in a called function. Proptest shrinks a failure to a
//! small program and prints both sources.

use proptest::prelude::*;
use tfn::{Attr, Backend, DType, Session, SessionOptions, Tensor, Value};
use tfn_test_utils::{compare, proptest_config, Rng, Tolerance};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Shape {
    /// `[B, C]`
    Full,
    /// `[C]`
    Row,
    /// `[]`
    Scalar,
}

/// One right-hand side of an assignment to a carried value `V`.
#[derive(Clone, Copy, Debug)]
enum Term {
    /// `tanh(V * 0.5 + other)`, the other var reduced or broadcast to `V`'s shape.
    Mix(usize),
    /// `V * 0.9 + v[i] * 0.1`
    Stacked,
    /// `tanh(matmul(V, w[i]))` (a reduction of `w[i]` for smaller shapes).
    Mat,
    /// `V * 0.5 + sin(V) * i * 0.1`
    Index,
    /// A call of a function: `step(V, u)`.
    Helper,
    /// `v[i + 1]`: a run-time index that is not the loop's own variable (a copy).
    Shifted,
    /// `s[i]` of an input with exactly one row per trip.
    Seq,
    /// `let t = V * V` then `V - t * 0.1`.
    Let,
    /// `V` reshaped through a flat shape and back with sizes (`nb = size(x, 0)` bound before
    /// the loops, `size(x, 1)` in the body).
    Reshape,
    /// `V * 0.9 + V * size(s, 0) * 0.01`: a size next to a tensor.
    SizeScale,
}

#[derive(Clone, Debug)]
struct Update {
    target: usize,
    term: Term,
    /// `if flag { V = term } else { V = alt }`.
    alt: Option<Term>,
}

#[derive(Clone, Copy, Debug)]
enum Bound {
    /// `0..3`
    Lit,
    /// `0..n`
    Attr,
    /// `0..size(s, 0)`
    Size,
    /// `0..size(w, 0) - 2`
    SizeMinus,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    /// `for i in start..E` with `E` said as `end`.
    For { start: i64, end: Bound, checkpoint: bool },
    /// `while cnt < trips - 0.5, at most at_most`, `cnt` counting trips.
    While { trips: usize, at_most: usize },
}

#[derive(Clone, Debug)]
struct Loop {
    kind: Kind,
    updates: Vec<Update>,
    /// A nested `for j in 0..trips { V = ... v[j] ... }` after update `at`, on var `target`.
    inner: Option<(usize, usize, usize)>,
}

#[derive(Clone, Debug)]
struct Case {
    f64: bool,
    b: usize,
    c: usize,
    /// The trip count `E` of the `for` loops (rows of `s`; `w` and `v` have `E + 2`).
    e: usize,
    /// Each var's shape and whether it starts as an input itself (`var a0 = x`).
    vars: Vec<(Shape, bool)>,
    loops: Vec<Loop>,
    /// The loops live in a called function.
    wrapped: bool,
    flag: bool,
    /// Which vars the function returns (at least one).
    returned: Vec<bool>,
    /// Pass the stacked inputs `w`, `v`, `s` as strided (column-major) views.
    strided: bool,
}

impl Case {
    fn has_while(&self) -> bool {
        self.loops.iter().any(|l| matches!(l.kind, Kind::While { .. }))
    }

    /// Whether the looped form must fail (a `while` past its `at most`).
    fn must_fail(&self) -> bool {
        self.loops
            .iter()
            .any(|l| matches!(l.kind, Kind::While { trips, at_most } if trips > at_most))
    }
}

fn rank(s: Shape) -> usize {
    match s {
        Shape::Full => 2,
        Shape::Row => 1,
        Shape::Scalar => 0,
    }
}

/// `x` (of shape `from`) as a value that broadcasts to shape `to`.
fn fit(x: &str, from: Shape, to: Shape) -> String {
    match (from, to) {
        _ if rank(from) <= rank(to) => x.to_string(),
        (Shape::Full, Shape::Row) => format!("sum({x}, dims=[0]) * 0.3"),
        _ => format!("sum({x}) * 0.2"),
    }
}

/// The renderer of one form (looped or unrolled) of a case.
struct Render<'c> {
    case: &'c Case,
    unrolled: bool,
    /// Each var's current name.
    cur: Vec<String>,
    /// Counter for fresh names.
    fresh: usize,
    out: String,
    /// Suffix of the case's function names.
    tag: String,
}

impl Render<'_> {
    fn line(&mut self, depth: usize, s: &str) {
        self.out += &"    ".repeat(depth);
        self.out += s;
        self.out.push('\n');
    }

    /// The expression assigned to var `t` by `term`; `idx` is the loop index as written
    /// (`i`, or a literal when unrolled; `None` in a `while`). May emit `let`s first.
    fn term(&mut self, depth: usize, t: usize, term: Term, idx: Option<&str>) -> String {
        let shape = self.case.vars[t].0;
        let v = self.cur[t].clone();
        let row = |w: &str, i: &str| format!("{w}[{i}]");
        let at = idx.unwrap_or("0");
        match term {
            Term::Mix(j) => {
                let j = j % self.case.vars.len();
                let other = fit(&self.cur[j], self.case.vars[j].0, shape);
                format!("tanh({v} * 0.5 + {other})")
            }
            Term::Stacked => format!("{v} * 0.9 + {} * 0.1", fit(&row("v", at), Shape::Row, shape)),
            Term::Mat => match shape {
                Shape::Full => format!("tanh(matmul({v}, {}))", row("w", at)),
                Shape::Row => format!("tanh(sum({}, dims=[0]) * 0.3 + {v})", row("w", at)),
                Shape::Scalar => format!("{v} + sum({}) * 0.05", row("w", at)),
            },
            Term::Index => match idx {
                Some(i) => format!("{v} * 0.5 + sin({v}) * {i} * 0.1"),
                None => format!("tanh({v} * 0.5)"),
            },
            Term::Helper => {
                let b = fit("u", Shape::Row, shape);
                format!("step_{}({v}, {b})", self.tag)
            }
            Term::Shifted => {
                let i1 = match idx {
                    Some(i) if self.unrolled => {
                        (i.parse::<i64>().expect("literal") + 1).to_string()
                    }
                    Some(i) => format!("{i} + 1"),
                    None => "1".to_string(),
                };
                format!("{v} * 0.9 + {} * 0.1", fit(&row("v", &i1), Shape::Row, shape))
            }
            Term::Seq => match idx {
                Some(i) => format!("{v} * 0.8 + {} * 0.2", fit(&row("s", i), Shape::Row, shape)),
                None => format!("{v} * 0.8"),
            },
            Term::Let => {
                let name = format!("t{}", self.fresh);
                self.fresh += 1;
                self.line(depth, &format!("let {name} = {v} * {v}"));
                format!("{v} - {name} * 0.1")
            }
            Term::Reshape => match shape {
                Shape::Full => format!("reshape(reshape({v}, [-1]), [nb, size(x, 1)]) * 0.9"),
                Shape::Row => format!("reshape(reshape({v}, [1, -1]), [size(u, 0)]) * 0.9"),
                Shape::Scalar => format!("reshape(reshape({v}, [1, 1]), shape({v})) * 0.9"),
            },
            Term::SizeScale => format!("{v} * 0.9 + {v} * size(s, 0) * 0.01"),
        }
    }

    /// `V = expr` (looped) or `let V_k = expr` (unrolled).
    fn assign(&mut self, depth: usize, t: usize, expr: String) {
        if self.unrolled {
            let name = format!("a{t}_{}", self.fresh);
            self.fresh += 1;
            self.line(depth, &format!("let {name} = {expr}"));
            self.cur[t] = name;
        } else {
            let name = self.cur[t].clone();
            self.line(depth, &format!("{name} = {expr}"));
        }
    }

    fn update(&mut self, depth: usize, u: &Update, idx: Option<&str>) {
        match u.alt {
            None => {
                let e = self.term(depth, u.target, u.term, idx);
                self.assign(depth, u.target, e);
            }
            Some(alt) if self.unrolled => {
                let e = self.term(depth, u.target, if self.case.flag { u.term } else { alt }, idx);
                self.assign(depth, u.target, e);
            }
            Some(alt) => {
                self.line(depth, "if flag {");
                let e = self.term(depth + 1, u.target, u.term, idx);
                self.assign(depth + 1, u.target, e);
                self.line(depth, "} else {");
                let e = self.term(depth + 1, u.target, alt, idx);
                self.assign(depth + 1, u.target, e);
                self.line(depth, "}");
            }
        }
    }

    /// The nested loop's update of var `t` with inner index `j`, outer index `idx`.
    fn inner_expr(&self, t: usize, j: &str, idx: Option<&str>) -> String {
        let v = &self.cur[t];
        let shape = self.case.vars[t].0;
        let outer = idx.map_or(String::new(), |i| format!(" + {v} * {i} * 0.01"));
        format!("tanh({v} * 0.5 + {}){outer}", fit(&format!("v[{j}]"), Shape::Row, shape))
    }

    fn body(&mut self, depth: usize, l: &Loop, idx: Option<&str>) {
        for (k, u) in l.updates.iter().enumerate() {
            self.update(depth, u, idx);
            if let Some((at, target, trips)) = l.inner {
                if at % l.updates.len() == k {
                    let t = target % self.case.vars.len();
                    if self.unrolled {
                        for j in 0..trips {
                            let e = self.inner_expr(t, &j.to_string(), idx);
                            self.assign(depth, t, e);
                        }
                    } else {
                        self.line(depth, &format!("for j in 0..{trips} {{"));
                        let e = self.inner_expr(t, "j", idx);
                        self.assign(depth + 1, t, e);
                        self.line(depth, "}");
                    }
                }
            }
        }
    }

    fn the_loop(&mut self, depth: usize, l: &Loop, cnt: Option<usize>) {
        let e = self.case.e;
        match l.kind {
            Kind::For { start, end, checkpoint } => {
                if self.unrolled {
                    for i in start..e as i64 {
                        self.body(depth, l, Some(&i.to_string()));
                    }
                } else {
                    let end = match end {
                        Bound::Lit => e.to_string(),
                        Bound::Attr => "n".to_string(),
                        Bound::Size => "size(s, 0)".to_string(),
                        Bound::SizeMinus => "size(w, 0) - 2".to_string(),
                    };
                    let ck = if checkpoint { ", checkpoint" } else { "" };
                    self.line(depth, &format!("for i in {start}..{end}{ck} {{"));
                    self.body(depth + 1, l, Some("i"));
                    self.line(depth, "}");
                }
            }
            Kind::While { trips, at_most } => {
                let c = cnt.expect("a while has its counter");
                if self.unrolled {
                    for _ in 0..trips {
                        self.body(depth, l, None);
                        let e = format!("{} + 1.0", self.cur[c]);
                        self.assign(depth, c, e);
                    }
                } else {
                    let cn = self.cur[c].clone();
                    self.line(
                        depth,
                        &format!("while {cn} < {trips}.0 - 0.5, at most {at_most} {{"),
                    );
                    self.body(depth + 1, l, None);
                    self.line(depth + 1, &format!("{cn} = {cn} + 1.0"));
                    self.line(depth, "}");
                }
            }
        }
    }
}

/// The source of one form: `f_<tag>(x, w, v, s, u, *, n, flag)`.
fn source(case: &Case, unrolled: bool, tag: &str) -> String {
    let mut r =
        Render { case, unrolled, cur: Vec::new(), fresh: 0, out: String::new(), tag: tag.into() };
    let dt = if case.f64 { "f64" } else { "f32" };
    r.line(0, &format!("fn step_{tag}(Tensor<{dt}> a, Tensor<{dt}> b) -> Tensor<{dt}> {{"));
    r.line(1, "return tanh(a * 0.5 + b)");
    r.line(0, "}");
    let params = format!(
        "Tensor<{dt}> x, Tensor<{dt}> w, Tensor<{dt}> v, Tensor<{dt}> s, Tensor<{dt}> u, *, Int n, Bool flag"
    );
    // The carried values, plus a counter per `while`.
    let nv = case.vars.len();
    let counters: Vec<Option<usize>> = {
        let mut k = nv;
        case.loops
            .iter()
            .map(|l| {
                matches!(l.kind, Kind::While { .. }).then(|| {
                    k += 1;
                    k - 1
                })
            })
            .collect()
    };
    let total = nv + counters.iter().flatten().count();
    let rets: Vec<usize> = (0..nv).filter(|&j| case.returned[j]).collect();
    let ret_ty = if rets.len() == 1 {
        format!("Tensor<{dt}>")
    } else {
        format!("({})", vec![format!("Tensor<{dt}>"); rets.len()].join(", "))
    };
    let core = if case.wrapped { format!("core_{tag}") } else { format!("f_{tag}") };
    r.line(0, &format!("fn {core}({params}) -> {ret_ty} {{"));
    r.line(1, "let nb = size(x, 0)");
    let kw = if unrolled { "let" } else { "var" };
    for j in 0..total {
        let (shape, alias) = case.vars.get(j).copied().unwrap_or((Shape::Scalar, false));
        let init = match (shape, alias) {
            _ if j >= nv => "sum(x) * 0.0".to_string(),
            (Shape::Full, true) => "x".to_string(),
            (Shape::Full, false) => "tanh(x)".to_string(),
            (Shape::Row, true) => "u".to_string(),
            (Shape::Row, false) => "sum(x, dims=[0]) * 0.2".to_string(),
            (Shape::Scalar, _) => "sum(x) * 0.1".to_string(),
        };
        let name = format!("a{j}");
        r.line(1, &format!("{kw} {name} = {init}"));
        r.cur.push(name);
    }
    for (l, c) in case.loops.iter().zip(&counters) {
        r.the_loop(1, l, *c);
    }
    let names: Vec<String> = rets.iter().map(|&j| r.cur[j].clone()).collect();
    let ret = if names.len() == 1 { names[0].clone() } else { format!("({})", names.join(", ")) };
    r.line(1, &format!("return {ret}"));
    r.line(0, "}");
    if case.wrapped {
        r.line(0, &format!("fn f_{tag}({params}) -> {ret_ty} {{"));
        r.line(1, "let x2 = x * 1.5");
        let call = format!("core_{tag}(x2, w, v, s, u, n=n, flag=flag)");
        if rets.len() == 1 {
            r.line(1, &format!("return {call} * 2.0"));
        } else {
            let ns: Vec<String> = (0..rets.len()).map(|k| format!("r{k}")).collect();
            r.line(1, &format!("let ({}) = {call}", ns.join(", ")));
            let doubled: Vec<String> = ns.iter().map(|n| format!("{n} * 2.0")).collect();
            r.line(1, &format!("return ({})", doubled.join(", ")));
        }
        r.line(0, "}");
    }
    r.out
}

fn shape_strategy() -> impl Strategy<Value = Shape> {
    prop_oneof![Just(Shape::Full), Just(Shape::Row), Just(Shape::Scalar)]
}

fn term_strategy() -> BoxedStrategy<Term> {
    prop_oneof![
        2 => (0..3usize).prop_map(Term::Mix),
        1 => Just(Term::Stacked),
        1 => Just(Term::Mat),
        1 => Just(Term::Index),
        1 => Just(Term::Helper),
        1 => Just(Term::Shifted),
        1 => Just(Term::Seq),
        1 => Just(Term::Let),
        1 => Just(Term::Reshape),
        1 => Just(Term::SizeScale),
    ]
    .boxed()
}

fn loop_strategy() -> impl Strategy<Value = Loop> {
    let bound =
        prop_oneof![Just(Bound::Lit), Just(Bound::Attr), Just(Bound::Size), Just(Bound::SizeMinus)];
    let kind = prop_oneof![
        3 => (0..=1i64, bound, prop::bool::weighted(0.2))
            .prop_map(|(start, end, checkpoint)| Kind::For { start, end, checkpoint }),
        1 => (0..=3usize, prop_oneof![1 => Just(-1i64), 3 => 0..=2i64]).prop_map(|(trips, slack)| {
            Kind::While { trips, at_most: (trips as i64 + slack).max(0) as usize }
        }),
    ];
    let update = (0..3usize, term_strategy(), prop::option::weighted(0.2, term_strategy()))
        .prop_map(|(target, term, alt)| Update { target, term, alt });
    let inner = prop::option::weighted(0.25, (0..3usize, 0..3usize, 0..=2usize));
    (kind, prop::collection::vec(update, 1..=3), inner).prop_map(|(kind, updates, inner)| Loop {
        kind,
        updates,
        inner,
    })
}

fn case_strategy() -> impl Strategy<Value = Case> {
    (
        prop::bool::weighted(0.25),
        1..=3usize,
        1..=4usize,
        0..=3usize,
        prop::collection::vec((shape_strategy(), any::<bool>()), 1..=3),
        prop::collection::vec(loop_strategy(), 1..=2),
        prop::bool::weighted(0.25),
        any::<bool>(),
        prop::collection::vec(any::<bool>(), 3),
        prop::bool::weighted(0.3),
    )
        .prop_map(|(f64, b, c, e, vars, mut loops, wrapped, flag, mut returned, strided)| {
            let n = vars.len();
            for l in &mut loops {
                for u in &mut l.updates {
                    u.target %= n;
                }
            }
            returned.truncate(n);
            if !returned.contains(&true) {
                returned[0] = true;
            }
            Case { f64, b, c, e, vars, loops, wrapped, flag, returned, strided }
        })
}

thread_local! {
    /// One session per backend and checkpointing for the whole run (the prelude is loaded
    /// once); each case loads its two forms under new names.
    static SESSIONS: Vec<(Backend, bool, Session)> = [
        (Backend::Jit, false),
        (Backend::Interp, false),
        (Backend::Jit, true),
        (Backend::Interp, true),
    ]
    .into_iter()
    .map(|(backend, checkpoint_loops)| {
        let o = SessionOptions { backend, checkpoint_loops, ..Default::default() };
        (backend, checkpoint_loops, Session::with_options(o))
    })
    .collect();
    static COUNTER: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn inputs(case: &Case, rng: &mut Rng) -> Vec<Value<'static>> {
    let dt = if case.f64 { DType::F64 } else { DType::F32 };
    let (b, c, e) = (case.b, case.c, case.e);
    let l = e + 2;
    let stacked = |t: Tensor| if case.strided { strided(&t) } else { Value::from(t) };
    vec![
        Value::from(rng.tensor(dt, &[b, c], (-1.0, 1.0))),
        stacked(rng.tensor(dt, &[l, c, c], (-0.5, 0.5))),
        stacked(rng.tensor(dt, &[l, c], (-1.0, 1.0))),
        stacked(rng.tensor(dt, &[e, c], (-1.0, 1.0))),
        Value::from(rng.tensor(dt, &[c], (-1.0, 1.0))),
    ]
}

fn tensors(vs: Vec<Value<'static>>) -> Vec<Tensor> {
    vs.into_iter().map(|v| v.into_tensor().expect("a tensor")).collect()
}

fn same_all(what: &str, got: &[Tensor], want: &[Tensor]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} values, want {}", got.len(), want.len()));
    }
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        compare(g, w, Tolerance::ACCUMULATED).map_err(|e| format!("{what} {k}: {e}"))?;
    }
    Ok(())
}

/// Runs one case on every session; `Err` describes the first disagreement.
fn check(case: &Case) -> Result<(), String> {
    let n = COUNTER.with(|c| {
        c.set(c.get() + 1);
        c.get()
    });
    let (tl, tu) = (format!("l{n}"), format!("u{n}"));
    let looped = source(case, false, &tl);
    let unrolled = source(case, true, &tu);
    let context = || format!("\n--- looped\n{looped}--- unrolled\n{unrolled}");
    let mut rng = Rng::new(n as u64);
    let args = inputs(case, &mut rng);
    let kw = [
        ("n", Value::Attr(Attr::Int(case.e as i64))),
        ("flag", Value::Attr(Attr::Bool(case.flag))),
    ];
    let (fl, fu) = (format!("f_{tl}"), format!("f_{tu}"));
    SESSIONS
        .with(|sessions| {
            for (backend, ckpt, s) in sessions {
                let what = format!("{backend:?} checkpoint_loops={ckpt}");
                s.load_str(&format!("{tl}.tfn"), &looped)
                    .map_err(|e| format!("load looped: {e}"))?;
                s.load_str(&format!("{tu}.tfn"), &unrolled)
                    .map_err(|e| format!("load unrolled: {e}"))?;
                let got = s.call_kw(&fl, &args, &kw);
                if case.must_fail() {
                    let e = got.err().ok_or(format!("{what}: a while past its bound ran"))?;
                    if !e.to_string().contains("at most") {
                        return Err(format!("{what}: {e}"));
                    }
                    continue;
                }
                let got = tensors(got.map_err(|e| format!("{what}: looped: {e}"))?);
                let want = tensors(
                    s.call_kw(&fu, &args, &kw).map_err(|e| format!("{what}: unrolled: {e}"))?,
                );
                same_all(&format!("{what} result"), &got, &want)?;
                let cots: Vec<Value> = want
                    .iter()
                    .map(|t| Value::from(rng.tensor(t.dtype(), t.shape(), (-1.0, 1.0))))
                    .collect();
                let vjp = s.value_and_vjp_kw(&fl, &args, &kw, &cots);
                if case.has_while() {
                    let e = vjp.err().ok_or(format!("{what}: a vjp through a while ran"))?;
                    if !e.to_string().contains("while") {
                        return Err(format!("{what}: vjp through a while: {e}"));
                    }
                    continue;
                }
                let (vals, grads) = vjp.map_err(|e| format!("{what}: looped vjp: {e}"))?;
                same_all(&format!("{what} value_and_vjp values"), &tensors(vals), &got)?;
                let want_g = tensors(
                    s.vjp_kw(&fu, &args, &kw, &cots)
                        .map_err(|e| format!("{what}: unrolled vjp: {e}"))?,
                );
                same_all(&format!("{what} gradient"), &tensors(grads), &want_g)?;
            }
            Ok(())
        })
        .map_err(|e: String| e + &context())
}

// A small count from a fixed seed keeps a debug `cargo test` in seconds; `PROPTEST_CASES` and
// `PROPTEST_RNG_SEED` explore further.
proptest! {
    #![proptest_config(proptest_config(24, 0x100f_f022))]

    #[test]
    fn loops_compute_their_unrolled_forms(case in case_strategy()) {
        if let Err(e) = check(&case) {
            return Err(TestCaseError::fail(e));
        }
    }
}

/// Cases the property test found, kept as deterministic regressions.
#[test]
fn found_cases_compute_their_unrolled_forms() {
    let one = |kind, term| Case {
        f64: false,
        b: 1,
        c: 1,
        e: 1,
        vars: vec![(Shape::Full, false)],
        loops: vec![Loop {
            kind,
            updates: vec![Update { target: 0, term, alt: None }],
            inner: None,
        }],
        wrapped: false,
        flag: false,
        returned: vec![true],
        strided: false,
    };
    let cases = [
        // `v[0]` (a literal row of a captured tensor) in a body: was E0511 "depends on whether
        // a derived size is 1" whenever the body's shapes let a size 1 broadcast.
        one(Kind::While { trips: 1, at_most: 1 }, Term::Stacked),
        // `for i in 1..n` reading `v[i]`: trip `t`'s gradient went to row `t`, not row `1 + t`.
        Case {
            e: 2,
            ..one(Kind::For { start: 1, end: Bound::Attr, checkpoint: false }, Term::Stacked)
        },
        Case { e: 3, ..one(Kind::For { start: 1, end: Bound::Size, checkpoint: true }, Term::Mat) },
    ];
    let failures: Vec<String> = cases.iter().filter_map(|c| check(c).err()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ---- Hostile and malformed loops: clear, located errors; never a panic or a wrong answer. ----

const BACKENDS: [Backend; 2] = [Backend::Jit, Backend::Interp];

fn ramp(shape: &[usize], scale: f32) -> Tensor {
    let n: usize = shape.iter().product();
    let a = ndarray::ArrayD::from_shape_vec(
        ndarray::IxDyn(shape),
        (0..n).map(|i| ((i * 7 % 11) as f32 - 5.0) * scale).collect(),
    );
    Tensor::F32(a.expect("shape"))
}

/// Loads `src` and calls `f` with `args` (keyword `n` when given); the error's text.
fn call_err(backend: Backend, src: &str, args: &[Value], n: Option<i64>) -> String {
    let s = Session::with_backend(backend);
    let loaded = s.load_str("hostile.tfn", src);
    let e = match loaded {
        Err(e) => e,
        Ok(_) => {
            let kw: Vec<(&str, Value)> =
                n.map(|n| ("n", Value::Attr(Attr::Int(n)))).into_iter().collect();
            match s.call_kw("f", args, &kw) {
                Err(e) => e,
                Ok(v) => panic!("{backend:?}: no error for\n{src}\ngot {v:?}"),
            }
        }
    };
    e.to_string()
}

#[test]
fn malformed_loops_are_located_errors() {
    // (source, the error's code or words, whether it points at a line of the file)
    let cases: &[(&str, &str, bool)] = &[
        // A `var` of a list, of an `Int`; a dtype change through a generic function.
        ("var hs = [x, x]\n    for i in 0..2 {\n        hs = [x, x * 2.0]\n    }\n    return x", "a loop may only update tensor `var`s", true),
        ("var k = 2\n    var h = x\n    for i in 0..3 {\n        k = k + 1\n        h = h + 1.0\n    }\n    return h", "a loop may only update tensor `var`s", true),
        ("var h = x\n    for i in 0..2 {\n        h = up(h)\n    }\n    return h", "E0313", true),
        // Bounds: negative, too large, a float, a tensor, another loop's variable.
        ("var h = x\n    for i in -3..2 {\n        h = h + 1.0\n    }\n    return h", "must not be negative", true),
        ("var h = x\n    for i in 0..99999999999999999999 {\n        h = h + 1.0\n    }\n    return h", "E0002", true),
        ("var h = x\n    for i in 0..2.5 {\n        h = h + 1.0\n    }\n    return h", "E0314", true),
        ("var h = x\n    for i in 0..sum(x) {\n        h = h + 1.0\n    }\n    return h", "E0314", true),
        ("var h = x\n    for i in 0..3 {\n        for j in 0..i {\n            h = h + 1.0\n        }\n    }\n    return h", "E0314", true),
        // `at most`: past its limit, negative.
        ("var h = x\n    while max(h) > 0.0, at most 1099511627777 {\n        h = h - 1.0\n    }\n    return h", "between 0 and 1099511627776", true),
        ("var h = x\n    while max(h) > 0.0, at most -1 {\n        h = h - 1.0\n    }\n    return h", "E0316", true),
        // A size out of range, an attribute from the index, `if` on it, `return` inside.
        ("var h = x\n    for i in 0..2 {\n        h = h + size(h, 3)\n    }\n    return h", "E0505", true),
        ("var h = x\n    for i in 0..3 {\n        h = sum(h, dims=[i], keepdim=true)\n    }\n    return h", "known only when the loop runs", true),
        ("var h = x\n    for i in 0..3 {\n        if i > 1 {\n            h = h + 1.0\n        }\n    }\n    return h", "E0319", true),
        ("var h = x\n    for i in 0..3 {\n        return h\n    }\n    return h", "E0318", true),
        ("var h = x\n    h = h + 1.0\n    return h", "E0312", true),
        // A while condition that is not one bool.
        ("var h = x\n    while h > 0.0, at most 3 {\n        h = h - 1.0\n    }\n    return h", "bool tensor of shape []", true),
    ];
    let x = Value::from(ramp(&[3], 0.5));
    for (body, want, located) in cases {
        let src = format!(
            "fn up<T>(Tensor<T> a) -> Tensor<f64> {{\n    return cast(a, f64)\n}}\nfn f(Tensor<f32> x) -> Tensor<f32> {{\n    {body}\n}}\n"
        );
        for backend in BACKENDS {
            let e = call_err(backend, &src, std::slice::from_ref(&x), None);
            assert!(e.contains(want), "{backend:?}: want `{want}` in\n{e}\nfor\n{src}");
            assert!(!*located || e.contains("hostile.tfn:"), "{backend:?}: not located:\n{e}");
        }
    }
    // Loops are statements: a `grad` formula or a rewrite rule holds expressions only.
    for src in [
        "fn g(Tensor x) -> Tensor {\n    return x * 2.0\n}\ngrad g(x) {\n    x: for i in 0..2 { x = x }\n}\n",
        "rewrite r: for i in 0..2 { x } => x\n",
    ] {
        let e = Session::new().load_str("hostile.tfn", src).expect_err("a loop in an expression");
        assert!(e.to_string().contains("E0001") && e.to_string().contains("`for`"), "{e}");
    }
}

const RUNTIME: &str = r#"
// Fails in its last trip: `y[i + 1]` past the end.
fn late(Tensor x) -> Tensor {
    var s = x[0] * 0.0
    for i in 0..size(x, 0) {
        let y = x * 2.0
        s = s + y[i + 1]
    }
    return s
}

// A stacked input far shorter than a huge bound: refused before the first trip.
fn huge(Tensor x, Tensor w) -> Tensor {
    var h = x
    for i in 0..1000000000000 {
        h = h + w[i]
    }
    return h
}

// A derived bound that comes out negative.
fn negative(Tensor x) -> Tensor {
    var h = x
    for i in 0..size(x, 0) - 5 {
        h = h + 1.0
    }
    return h
}

fn grows(Tensor x, Tensor y) -> Tensor {
    var h = x
    for i in 0..2 {
        h = h + y
    }
    return h
}
"#;

fn runtime(backend: Backend, checkpoint_loops: bool) -> Session {
    let o = SessionOptions { backend, checkpoint_loops, ..Default::default() };
    let s = Session::with_options(o);
    s.load_str("runtime.tfn", RUNTIME).unwrap_or_else(|e| panic!("{e}"));
    s
}

#[test]
fn a_body_failing_in_a_late_trip_names_the_trip_forward_and_backward() {
    for backend in BACKENDS {
        for ckpt in [false, true] {
            let s = runtime(backend, ckpt);
            let x = Value::from(ramp(&[3, 2], 0.5));
            let e = s.call("late", std::slice::from_ref(&x)).expect_err("row 3 of 3").to_string();
            assert!(
                e.contains("index 3 is out of range")
                    && e.contains("in trip 2 of `for i in 0..size(x, 0)`"),
                "{e}"
            );
            let cot = Value::from(ramp(&[2], 1.0));
            let e = s.vjp("late", std::slice::from_ref(&x), &[cot]).expect_err("row 3").to_string();
            assert!(e.contains("in trip 2 of"), "{backend:?} ckpt={ckpt}: {e}");
            let w = Value::from(ramp(&[2, 2], 1.0));
            let e = s.call("huge", &[x.clone(), w.clone()]).expect_err("2 rows").to_string();
            assert!(e.contains("`w[i]`") && e.contains("2 row(s)"), "{e}");
            let e = s
                .vjp("huge", &[x.clone(), w], std::slice::from_ref(&x))
                .expect_err("2 rows")
                .to_string();
            assert!(e.contains("`w[i]`") && e.contains("2 row(s)"), "{e}");
            let e = s.call("negative", std::slice::from_ref(&x)).expect_err("3 - 5").to_string();
            assert!(e.contains("negative"), "{e}");
            let y = Value::from(ramp(&[1, 2], 1.0));
            let e = s.call("grows", &[Value::from(ramp(&[1], 1.0)), y]).expect_err("[1] to [1, 2]");
            assert!(e.to_string().contains("E0511") || e.to_string().contains("`h`"), "{e}");
        }
    }
}

const GRADS: &str = r#"
// A loop whose result is unused; a loop where one of three carried values reaches the result.
fn unused(Tensor x, Tensor w) -> Tensor {
    var h = x
    for i in 0..size(w, 0) {
        h = h * w[i]
    }
    return x * 2.0
}

fn partial(Tensor x, Tensor w) -> (Tensor, Tensor) {
    var h = x
    var g = x
    var k = x
    for i in 0..size(w, 0) {
        h = h * w[i]
        g = g + h
        k = k * 2.0
    }
    return (g, x)
}

fn partial_unrolled(Tensor x, Tensor w) -> (Tensor, Tensor) {
    let h1 = x * w[0]
    let g1 = x + h1
    let h2 = h1 * w[1]
    return (g1 + h2, x)
}

// An integer carried value (no gradient) scaling a float one.
fn counted(Tensor x) -> Tensor {
    var c = cast(sum(x) * 0.0, i64)
    var h = x
    for i in 0..3 {
        c = c + 1
        h = h * cast(c, f32)
    }
    return h
}

// Storage dtypes carried through a loop and differentiated.
fn half<T: {f16, bf16}>(Tensor<T> x, Tensor<T> w) -> Tensor<T> {
    var h = x
    for i in 0..size(w, 0) {
        h = tanh(h * w[i]) + 1.0
    }
    return h
}

fn half_unrolled<T: {f16, bf16}>(Tensor<T> x, Tensor<T> w) -> Tensor<T> {
    let h1 = tanh(x * w[0]) + 1.0
    return tanh(h1 * w[1]) + 1.0
}

// A matmul over stacked weights, big enough for several threads.
fn wide(Tensor x, Tensor w) -> Tensor {
    var h = x
    for l in 0..size(w, 0) {
        h = tanh(matmul(h, w[l]))
    }
    return h
}
"#;

fn grads_session(backend: Backend, checkpoint_loops: bool, threads: usize) -> Session {
    let o = SessionOptions { backend, checkpoint_loops, threads, ..Default::default() };
    let s = Session::with_options(o);
    s.load_str("grads.tfn", GRADS).unwrap_or_else(|e| panic!("{e}"));
    s
}

fn close_all(what: &str, got: Vec<Value<'static>>, want: Vec<Value<'static>>) {
    let (got, want) = (tensors(got), tensors(want));
    if let Err(e) = same_all(what, &got, &want) {
        panic!("{e}");
    }
}

#[test]
fn gradients_of_unused_partial_integer_and_empty_loops() {
    let x = Value::from(ramp(&[3], 0.5));
    let w = Value::from(ramp(&[2, 3], 0.25));
    let w0 = Value::from(ramp(&[0, 3], 1.0));
    for backend in BACKENDS {
        for ckpt in [false, true] {
            let s = grads_session(backend, ckpt, 1);
            let what = format!("{backend:?} ckpt={ckpt}");
            let cot = Value::from(ramp(&[3], 1.0));
            // Unused: d(2x)/dx, and zeros for w.
            let g = tensors(
                s.vjp("unused", &[x.clone(), w.clone()], std::slice::from_ref(&cot)).expect("vjp"),
            );
            let want = s.call("unused", &[cot.clone(), w.clone()]).expect("2 * cot");
            same_all(&what, &g[..1], &tensors(want)).unwrap_or_else(|e| panic!("{e}"));
            same_all(&what, &g[1..], &[ramp(&[2, 3], 0.0)]).unwrap_or_else(|e| panic!("{e}"));
            // Partial: against the unrolled form.
            let cots = [cot.clone(), Value::from(ramp(&[3], -1.0))];
            let args = [x.clone(), w.clone()];
            let got = s.vjp("partial", &args, &cots).expect("vjp");
            let want = s.vjp("partial_unrolled", &args, &cots).expect("vjp");
            close_all(&format!("{what} partial"), got, want);
            // An empty stacked input: no trip, the gradient of `w` is empty.
            let g = tensors(s.vjp("partial", &[x.clone(), w0.clone()], &cots).expect("vjp"));
            assert_eq!(g[1].shape(), &[0, 3], "{what}");
            // Integer carried value: h = x * 1 * 2 * 3.
            let g = tensors(
                s.vjp("counted", std::slice::from_ref(&x), std::slice::from_ref(&cot))
                    .expect("vjp"),
            );
            let want: Vec<f32> = match &ramp(&[3], 1.0) {
                Tensor::F32(a) => a.iter().map(|v| v * 6.0).collect(),
                _ => unreachable!(),
            };
            match &g[0] {
                Tensor::F32(a) => assert_eq!(a.iter().copied().collect::<Vec<_>>(), want, "{what}"),
                other => panic!("{other:?}"),
            }
        }
    }
}

#[test]
fn storage_dtype_carried_values_differentiate_like_their_unrolled_form() {
    use tfn::half::{bf16, f16};
    let conv = |t: Tensor, dt: DType| -> Tensor {
        let Tensor::F32(a) = t else { unreachable!() };
        match dt {
            DType::F16 => Tensor::F16(a.mapv(f16::from_f32)),
            _ => Tensor::BF16(a.mapv(bf16::from_f32)),
        }
    };
    for dt in [DType::F16, DType::BF16] {
        let x = Value::from(conv(ramp(&[4], 0.25), dt));
        let w = Value::from(conv(ramp(&[2, 4], 0.125), dt));
        let cot = [Value::from(conv(ramp(&[4], 0.5), dt))];
        for backend in BACKENDS {
            for ckpt in [false, true] {
                let s = grads_session(backend, ckpt, 1);
                let what = format!("{dt} {backend:?} ckpt={ckpt}");
                let args = [x.clone(), w.clone()];
                let (vals, got) = s.value_and_vjp("half", &args, &cot).expect("vjp");
                let (want_vals, want) = s.value_and_vjp("half_unrolled", &args, &cot).expect("vjp");
                close_all(&format!("{what} values"), vals, want_vals);
                close_all(&format!("{what} gradients"), got, want);
            }
        }
    }
}

/// `t` as a view whose axes are reversed twice: the same values, column-major strides.
fn strided(t: &Tensor) -> Value<'static> {
    fn rev<T: Clone>(a: &ndarray::ArrayD<T>) -> ndarray::ArrayD<T> {
        a.view().reversed_axes().as_standard_layout().into_owned().reversed_axes()
    }
    match t {
        Tensor::F32(a) => Value::from(Tensor::F32(rev(a))),
        Tensor::F64(a) => Value::from(Tensor::F64(rev(a))),
        other => Value::from(other.clone()),
    }
}

#[test]
fn stacked_inputs_as_strided_views_and_every_thread_count_give_the_same_bits() {
    // Large enough for the JIT's matmuls (2^21 flops) to split across threads; the
    // interpreter runs a small one.
    for (backend, b, c) in [(Backend::Jit, 256, 128), (Backend::Interp, 6, 8)] {
        let x = ramp(&[b, c], 0.05);
        let w = ramp(&[2, c, c], 0.02);
        let cot = [Value::from(ramp(&[b, c], 0.1))];
        let mut reference: Option<Vec<Vec<u64>>> = None;
        for threads in 1..=4 {
            for ckpt in [false, true] {
                let s = grads_session(backend, ckpt, threads);
                for args in
                    [[Value::from(x.clone()), Value::from(w.clone())], [strided(&x), strided(&w)]]
                {
                    let mut all = tensors(s.call("wide", &args).expect("call"));
                    let (vals, grads) = s.value_and_vjp("wide", &args, &cot).expect("vjp");
                    all.extend(tensors(vals));
                    all.extend(tensors(grads));
                    let bits: Vec<Vec<u64>> = all.iter().map(tfn_test_utils::bits).collect();
                    match &reference {
                        None => reference = Some(bits),
                        Some(r) => assert!(
                            *r == bits,
                            "{backend:?} threads={threads} ckpt={ckpt}: other bits"
                        ),
                    }
                }
            }
        }
    }
}

const CLI: &str = r#"
fn late(Tensor x) -> Tensor {
    var s = x[0] * 0.0
    for i in 0..size(x, 0) {
        let y = x * 2.0
        s = s + y[i + 1]
    }
    return s
}

fn counter(Tensor x) -> Tensor {
    var h = x
    while max(h) > 0.0, at most 2 {
        h = h - 1.0
    }
    return h
}

fn hundred(Tensor x) -> Tensor {
    var h = x
    for i in 0..100 {
        h = h * 0.5 + 1.0
    }
    return h
}

fn wide(Tensor x, Tensor w) -> Tensor {
    var h = x
    for i in 0..100 {
        h = h + sum(tanh(w * h[0]))
    }
    return h
}
"#;

/// A loop may only carry tensors: refused when the file is checked, not at every call.
const LIST_VAR: &str = r#"fn list_var(Tensor x) -> Tensor {
    var hs = [x, x]
    for i in 0..2 {
        hs = [x, x * 2.0]
    }
    return x
}
"#;

#[test]
fn hostile_loops_through_tfnc_exit_1_with_located_errors() {
    let dir = std::env::temp_dir().join(format!("tfn-loopfuzz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    std::fs::write(dir.join("l.tfn"), CLI).expect("write");
    std::fs::write(dir.join("lv.tfn"), LIST_VAR).expect("write");
    tfn::npy::write(&dir.join("x.npy"), &ramp(&[2, 2], 1.0)).expect("npy");
    tfn::npy::write(&dir.join("c.npy"), &ramp(&[2, 2], 1.0)).expect("npy");
    tfn::npy::write(&dir.join("c2.npy"), &ramp(&[2], 1.0)).expect("npy");
    tfn::npy::write(&dir.join("w.npy"), &ramp(&[1000], 0.001)).expect("npy");
    let run = |args: &[&str]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_tfnc"))
            .args(args)
            .current_dir(&dir)
            .output()
            .expect("run tfnc");
        (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    // (arguments, words of the error)
    let cases: &[(&[&str], &str)] = &[
        (&["run", "l.tfn", "late", "--arg", "x=x.npy"], "in trip 1 of `for i in 0..size(x, 0)`"),
        (
            &["run", "l.tfn", "late", "--arg", "x=x.npy", "--vjp", "c2.npy", "--checkpoint-loops"],
            "in trip 1 of",
        ),
        (&["run", "l.tfn", "counter", "--arg", "x=x.npy", "--backend", "interp"], "at most 2"),
        (&["run", "l.tfn", "counter", "--arg", "x=x.npy", "--vjp", "c.npy"], "E0805"),
        (&["run", "lv.tfn", "list_var", "--arg", "x=x.npy"], "lv.tfn:4:9"),
        (&["check", "lv.tfn"], "error[E0511]: `hs` is `Tensor[]` outside the loop"),
    ];
    for (args, want) in cases {
        let (code, err) = run(args);
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert!(
            err.contains(want) && !err.contains("panicked"),
            "{args:?}: want `{want}` in\n{err}"
        );
    }
    // A vjp whose stored states would pass the tensor size limit is refused before the first
    // trip (`for i in 0..1000000000000` stored states until the process ran out of memory);
    // checkpointing keeps one state per trip too (it drops the residuals), so it is refused
    // as well.
    let limited = |args: &[&str], limit: &str| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_tfnc"))
            .args(args)
            .env("TFN_MAX_TENSOR_BYTES", limit)
            .current_dir(&dir)
            .output()
            .expect("run tfnc");
        (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let hundred = ["run", "l.tfn", "hundred", "--arg", "x=c2.npy", "--vjp", "c2.npy"];
    let (code, err) = limited(&hundred, "500");
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("would store 100 trips of its carried values")
            && err.contains("`for i in 0..100`"),
        "{err}"
    );
    let (code, err) = limited(&[&hundred[..], &["--checkpoint-loops"]].concat(), "500");
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("would store 100 trips"), "{err}");
    // The estimate counts each stored tensor's bookkeeping (a trip of an 8-byte state was
    // counted as 8 bytes and took about 200), and, once the first trip has run, the residuals
    // stored mode keeps: 100 trips of a 4 KB `tanh(w * h[0])` pass 100 KB, though their
    // carried values alone do not; checkpointing drops the residuals and fits.
    let (code, err) = limited(&hundred, "20000");
    assert_eq!(code, Some(1), "{err}");
    let wide = ["run", "l.tfn", "wide", "--arg", "x=c2.npy", "--arg", "w=w.npy", "--vjp", "c2.npy"];
    let (code, err) = limited(&wide, "100000");
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("100 trips of its carried values and residuals"), "{err}");
    let (code, err) = limited(&[&wide[..], &["--checkpoint-loops"]].concat(), "100000");
    assert_eq!(code, Some(0), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_for_loop_that_assigns_no_var_has_no_effect() {
    // Was E0509 "internal error: the body ... is an invalid graph: the graph has no outputs".
    let src = "fn f(Tensor x) -> Tensor {\n    var h = x\n    for i in 0..2 {\n    }\n    for j in 0..3 {\n        let t = x[j]\n    }\n    return h * 2.0\n}\n";
    let x = ramp(&[3], 0.5);
    let want = tensors(vec![Value::from(ramp(&[3], 1.0))]);
    for backend in BACKENDS {
        let s = Session::with_backend(backend);
        s.load_str("empty.tfn", src).unwrap_or_else(|e| panic!("{e}"));
        let got = tensors(s.call("f", &[Value::from(x.clone())]).unwrap_or_else(|e| panic!("{e}")));
        same_all(&format!("{backend:?}"), &got, &want).unwrap_or_else(|e| panic!("{e}"));
        let cot = Value::from(ramp(&[3], 0.5));
        let g = tensors(
            s.vjp("f", &[Value::from(x.clone())], &[cot]).unwrap_or_else(|e| panic!("{e}")),
        );
        same_all(&format!("{backend:?} vjp"), &g, &want).unwrap_or_else(|e| panic!("{e}"));
    }
}
