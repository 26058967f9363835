//! The IR text format: the printer's exact output for a known graph, parse errors with their
//! positions, and a property test that `parse_graph(print_graph(g)) == g` over random graphs
//! (every op, attribute, scalar bit pattern, name and origin the printer can meet).

use proptest::prelude::*;
use tfn_ir::op::{ALL_BINARY, ALL_REDUCE, ALL_UNARY};
use tfn_ir::text::print_graph_without_origins;
use tfn_ir::*;
use tfn_test_utils::{proptest_config, Rng};

const GELU: &str = "\
func gelu(x: f32[s0, s1]) -> (f32[s0]) {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1)
  %0 = param 0 : f32[s0, s1]
  %1 = const 0.5 : f32[]
  %2 = mul %1, %0 : f32[s0, s1] loc(0:10..20 via \"gelu\", \"tanh\")
  %3 = sum %2 {axes=[1], keepdim=false} : f32[s0]
  return %3
}
";

#[test]
fn prints_the_documented_format_and_reads_it_back() {
    let g = parse_graph(GELU).expect("parses");
    assert_eq!(g.name, "gelu");
    assert_eq!(g.nodes.len(), 4);
    assert_eq!(g.nodes[2].origin.span, Some(Span { file: FileId(0), start: 10, end: 20 }));
    assert_eq!(g.nodes[2].origin.inlined_from, vec!["gelu".to_string(), "tanh".to_string()]);
    assert_eq!(print_graph(&g), GELU);
    let plain = print_graph_without_origins(&g);
    assert!(!plain.contains("loc("));
    assert_eq!(parse_graph(&plain).expect("parses").nodes[2].origin, Origin::default());
}

#[test]
fn every_op_prints_as_documented() {
    let text = "\
func \"all ops\"(a: f32[2, s0], \"b c\": i64[]) -> (f32[2, s0], bool[2, 3]) {
  sym s0 = input(param 0 axis 1, param 0 axis 1)
  sym s1 = ((s0 + 1) * slice_len(s0, -1, none, -2))
  sym s2 = ((s0 - 2) / 3)
  %0 = param 0 : f32[2, s0]
  %1 = param 1 : i64[]
  %2 = cast %1 {to=f32} : f32[]
  %3 = where %4, %0, %0 : f32[2, s0]
  return %0
}
";
    let err = parse_graph(text).expect_err("%4 is used before it is defined");
    assert_eq!((err.line, err.col), (8, 14), "{err}");
    assert!(err.message.contains("`%4` is used before it is defined"), "{err}");

    let text = "\
func f(a: f32[2, 3]) -> (f32[3, 2]) {
  %0 = param 0 : f32[2, 3]
  %1 = argmax %0 {axis=1, keepdim=true} : i64[2, 1]
  %2 = transpose %0 {perm=[1, 0]} : f32[3, 2]
  %3 = concat %0, %0 {axis=0} : f32[4, 3]
  %4 = slice %0 {axis=1, start=-1, end=none, step=-2} : f32[2, 2]
  %5 = full {value=-inf} : f32[2]
  %6 = full %0 {value=nan(0x7ff8000000000001)} : f32[2, 3]
  %7 = extern.clip %0 {attrs=[1.5, -2, true, f64, [1, -2], [0.5, -0.0], float[], []]} : f32[2, 3]
  %8 = extern.\"odd name\" {attrs=[]} : f32[]
  %9 = broadcast_to %2 : f32[3, 2]
  %10 = reshape %9 : f32[6]
  %11 = matmul %0, %2 : f32[2, 2]
  return %2
}
";
    let g = parse_graph(text).expect("parses");
    assert_eq!(print_graph(&g), text);
    match &g.nodes[7].op {
        Op::Extern { name, attrs } => {
            assert_eq!(name, "clip");
            assert_eq!(attrs[6], Attr::FloatList(vec![]));
            assert_eq!(attrs[7], Attr::IntList(vec![]));
        }
        other => panic!("expected an extern op, got {other:?}"),
    }
}

#[test]
fn parse_errors_carry_line_and_column() {
    let cases: &[(&str, (usize, usize), &str)] = &[
        ("func f() -> () {\n  return\n", (3, 1), "expected `}`"),
        ("func f() -> () {\n  %1 = const 1 : i64[]\n  return %1\n}", (2, 3), "expected `%0`"),
        ("func f() -> () {\n  %0 = frob : i64[]\n  return\n}", (2, 8), "unknown op `frob`"),
        ("func f() -> () {\n  %0 = const 1 : i65[]\n  return\n}", (2, 18), "expected a dtype"),
        ("func f() -> () {\n  %0 = const 1 : i64[s3]\n  return\n}", (2, 22), "`s3` is not defined"),
        (
            "func f() -> () {\n  %0 = full {value=1, x=2} : i64[]\n  return\n}",
            (2, 23),
            "unknown attribute `x`",
        ),
        (
            "func f() -> () {\n  %0 = argmax {axis=1} : i64[]\n  return\n}",
            (2, 8),
            "missing attribute `keepdim`",
        ),
        (
            "func f() -> (f32[]) {\n  %0 = const 1 : i64[]\n  return %0\n}",
            (1, 14),
            "result types do not match",
        ),
        ("func f() -> () {\n  %0 = const 99999999999999999999 : i64[]\n}", (2, 14), "too large"),
        ("func f() -> () {\n  %0 = const 1 : i64[] # \n}", (2, 24), "unexpected character"),
        ("func \"f() -> ()", (1, 6), "unterminated string"),
        ("func f() -> () {\n  sym s1 = input()\n}", (2, 7), "expected `s0`"),
        ("func f() -> () {\n  return\n}\nfunc", (4, 1), "end of input"),
    ];
    for (text, (line, col), message) in cases {
        let err = parse_graph(text).expect_err(text);
        assert!(
            err.message.contains(message) && (err.line, err.col) == (*line, *col),
            "for {text:?}: got `{err}`, expected {line}:{col}: {message}"
        );
    }
}

// Every choice comes from the project's one generator, so one `u64` seed describes a whole
// graph.

/// An integer attribute: an edge case or a random one.
fn int(rng: &mut Rng) -> i64 {
    let random = rng.next_u64() as i64;
    rng.pick(&[0, 1, -1, 7, -300, i64::MAX, i64::MIN, random])
}

/// A float attribute: an edge case (signed zero, infinities, NaN, subnormal) or random bits.
fn float(rng: &mut Rng) -> f64 {
    let bits = rng.next_u64();
    rng.pick(&[
        0.5,
        -0.0,
        1e-300,
        6.0,
        f64::INFINITY,
        -f64::INFINITY,
        f64::NAN,
        f64::from_bits(bits),
        f64::MIN_POSITIVE / 3.0,
    ])
}

/// A name that needs quoting or escaping as often as not.
fn name(rng: &mut Rng) -> String {
    rng.pick(&[
        "x",
        "add.scalar",
        "_a1",
        "",
        "with space",
        "quote\"back\\slash",
        "nl\nt\té",
        "3d",
        "%0",
        "s0",
    ])
    .to_string()
}

fn random_dim(rng: &mut Rng, syms: usize) -> Dim {
    if syms > 0 && rng.index(2) == 0 {
        Dim::Sym(Sym(rng.index(syms) as u32))
    } else {
        Dim::Const(rng.pick(&[0, 1, 3, u64::MAX]))
    }
}

fn random_type(rng: &mut Rng, syms: usize) -> TensorType {
    let rank = rng.index(4);
    TensorType {
        dtype: rng.pick(&DType::ALL),
        shape: Shape((0..rank).map(|_| random_dim(rng, syms)).collect()),
    }
}

fn random_expr(rng: &mut Rng, syms: usize, depth: usize) -> DimExpr {
    let leaf = depth > 2 || rng.index(3) == 0;
    if leaf {
        return DimExpr::Dim(random_dim(rng, syms));
    }
    let mut sub = || Box::new(random_expr(rng, syms, depth + 1));
    let (a, b) = (sub(), sub());
    match rng.index(6) {
        0 => DimExpr::Add(a, b),
        1 => DimExpr::Sub(a, b),
        2 => DimExpr::Mul(a, b),
        3 => DimExpr::Div(a, b),
        4 => DimExpr::CeilDiv(a, b),
        _ => {
            let end = if rng.index(2) == 0 { None } else { Some(int(rng)) };
            DimExpr::SliceLen { size: a, start: int(rng), end, step: int(rng) }
        }
    }
}

fn random_scalar(rng: &mut Rng) -> Scalar {
    match rng.index(3) {
        0 => Scalar::Bool(rng.index(2) == 0),
        1 => Scalar::Int(int(rng)),
        _ => Scalar::Float(float(rng)),
    }
}

fn random_attr(rng: &mut Rng) -> Attr {
    match rng.index(6) {
        0 => Attr::Bool(rng.index(2) == 0),
        1 => Attr::Int(int(rng)),
        2 => Attr::Float(float(rng)),
        3 => Attr::DType(rng.pick(&DType::ALL)),
        4 => Attr::IntList((0..rng.index(3)).map(|_| int(rng)).collect()),
        _ => Attr::FloatList((0..rng.index(3)).map(|_| float(rng)).collect()),
    }
}

fn random_axes(rng: &mut Rng) -> Vec<u32> {
    (0..rng.index(4)).map(|_| rng.index(5) as u32).collect()
}

fn random_op(rng: &mut Rng) -> Op {
    match rng.index(17) {
        0 => Op::Param(rng.index(3) as u32),
        1 => Op::Const(random_scalar(rng)),
        2 => Op::Unary(rng.pick(ALL_UNARY)),
        3 => Op::Binary(rng.pick(ALL_BINARY)),
        4 => Op::Where,
        5 => Op::Cast(rng.pick(&DType::ALL)),
        6 => Op::Reduce {
            op: rng.pick(ALL_REDUCE),
            axes: random_axes(rng),
            keepdim: rng.index(2) == 0,
        },
        7 => Op::ArgMax { axis: rng.index(4) as u32, keepdim: rng.index(2) == 0 },
        8 => Op::MatMul,
        9 => Op::Reshape,
        10 => Op::Transpose { perm: random_axes(rng) },
        11 => Op::BroadcastTo,
        12 => Op::Concat { axis: rng.next_u64() as u32 },
        13 => {
            let end = if rng.index(2) == 0 { None } else { Some(int(rng)) };
            Op::Slice { axis: rng.index(3) as u32, start: int(rng), end, step: int(rng) }
        }
        14 => Op::Full { value: random_scalar(rng) },
        15 => Op::Random { dist: rng.pick(&tfn_ir::op::ALL_RANDOM) },
        _ => Op::Extern {
            name: name(rng),
            attrs: (0..rng.index(4)).map(|_| random_attr(rng)).collect(),
        },
    }
}

fn random_origin(rng: &mut Rng) -> Origin {
    let span = match rng.index(3) {
        0 => None,
        _ => Some(Span {
            file: FileId(rng.index(3) as u32),
            start: rng.next_u64() as u32,
            end: rng.next_u64() as u32,
        }),
    };
    Origin { span, inlined_from: (0..rng.index(3)).map(|_| name(rng)).collect() }
}

fn random_graph(seed: u64) -> Graph {
    let mut rng = Rng::new(seed | 1);
    let syms = rng.index(4);
    let mut g = Graph { name: name(&mut rng), ..Graph::default() };
    for _ in 0..rng.index(3) {
        let ty = random_type(&mut rng, syms);
        g.params.push(GraphParam { name: name(&mut rng), ty });
    }
    for _ in 0..syms {
        g.syms.push(if rng.index(2) == 0 {
            SymDef::Input {
                sources: (0..rng.index(3))
                    .map(|_| (rng.index(3) as u32, rng.index(3) as u32))
                    .collect(),
            }
        } else {
            SymDef::Derived(random_expr(&mut rng, syms, 0))
        });
    }
    for i in 0..rng.index(12) {
        let op = random_op(&mut rng);
        let inputs = if i == 0 {
            vec![]
        } else {
            (0..rng.index(4)).map(|_| ValueId(rng.index(i) as u32)).collect()
        };
        let ty = random_type(&mut rng, syms);
        let origin = if rng.index(2) == 0 { Origin::default() } else { random_origin(&mut rng) };
        g.push(op, inputs, ty, origin);
    }
    if !g.nodes.is_empty() {
        g.outputs = (0..rng.index(3)).map(|_| ValueId(rng.index(g.nodes.len()) as u32)).collect();
    }
    g
}

proptest! {
    #![proptest_config(proptest_config(2000, 0x7e47))]
    #[test]
    fn print_then_parse_is_the_identity(seed in any::<u64>()) {
        let g = random_graph(seed);
        let text = print_graph(&g);
        let parsed = parse_graph(&text);
        prop_assert!(parsed.is_ok(), "{:?}\n{}", parsed.err(), text);
        prop_assert_eq!(parsed.ok(), Some(g), "{}", text);
    }

    #[test]
    fn parsing_never_panics(text in "[ -~\n%{}()\\[\\]]{0,200}") {
        let _ = parse_graph(&text);
    }

    #[test]
    fn parsing_a_damaged_graph_never_panics(seed in any::<u64>(), cut in 0usize..400, junk in "[ -~]{0,3}") {
        let text = print_graph(&random_graph(seed));
        let mut cut = cut.min(text.len());
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let damaged = format!("{}{}{}", &text[..cut], junk, &text[cut..]);
        let _ = parse_graph(&damaged);
    }
}

/// A plan with a stage, a nested `for` (a stacked input, a symbolic bound) and a `while`.
fn loop_plan() -> tfn_ir::program::run::Plan<String> {
    use tfn_ir::program::run::{LoopHead, Plan, PlanStep};
    use tfn_ir::program::LoopKind;
    let signature = parse_graph(
        "func f(x: f32[s0, s1], w: f32[s2, s1]) -> () {\n  sym s0 = input(param 0 axis 0)\n  sym s1 = input(param 0 axis 1, param 1 axis 1)\n  sym s2 = input(param 1 axis 0)\n  return\n}\n",
    )
    .unwrap();
    let v = ValueId;
    let head = |label: &str, kind| LoopHead {
        label: label.into(),
        at: Some(format!("{label}.tfn:3:5")),
        kind,
        carried_names: vec!["h".into()],
        carried: vec![v(2)],
        invariants: vec![v(0)],
        sliced: vec![v(1)],
        sliced_names: vec!["w_row\nwith a newline".into()],
        results: vec![v(3)],
    };
    let inner = Plan {
        signature: signature.clone(),
        param_values: vec![v(0), v(1)],
        steps: vec![PlanStep::Stage { stage: "inner\n".into(), reads: vec![], writes: vec![v(2)] }],
        outputs: vec![v(2)],
        values: 3,
    };
    let body = Plan {
        signature: signature.clone(),
        param_values: vec![v(0), v(1)],
        steps: vec![PlanStep::Loop {
            head: head(
                "for j in 0..4",
                LoopKind::For { start: Dim::Const(0), end: Dim::Const(4), checkpoint: false },
            ),
            body: Box::new(inner),
            number: 1,
        }],
        outputs: vec![v(3)],
        values: 4,
    };
    let kind = LoopKind::For { start: Dim::Const(1), end: Dim::Sym(Sym(2)), checkpoint: true };
    let wkind = LoopKind::While { cond: v(4), max_trips: 7 };
    Plan {
        signature,
        param_values: vec![v(0), v(1)],
        steps: vec![
            PlanStep::Stage { stage: "a graph".into(), reads: vec![], writes: vec![v(2), v(4)] },
            PlanStep::Loop {
                head: head("for l in 1..size(w, 0)", kind),
                body: Box::new(body.clone()),
                number: 0,
            },
            PlanStep::Loop {
                head: head("while go, at most 7", wkind),
                body: Box::new(body),
                number: 2,
            },
        ],
        outputs: vec![v(3)],
        values: 5,
    }
}

#[test]
fn loop_plans_read_back_as_printed() {
    use tfn_ir::program::text::{parse_plan, print_plan};
    let plan = loop_plan();
    let results = vec![TensorType { dtype: DType::F32, shape: Shape(vec![Dim::Sym(Sym(0))]) }];
    let text = print_plan(&plan, &results, &mut |s: &String| s.clone());
    let (back, types) = parse_plan(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(back, plan, "{text}");
    assert_eq!(types, results);
    // Damaged texts are errors, never panics: every truncation, and a few edits.
    for cut in 0..text.len() {
        if text.is_char_boundary(cut) {
            assert!(parse_plan(&text[..cut]).is_err(), "truncated at {cut}");
        }
    }
    for (from, to) in [
        ("values=5", "values=3"),
        ("while 4 7", "while"),
        ("for 1 s2 1", "for 1 s9x 1"),
        ("payload 7", "payload 99999"),
    ] {
        assert!(parse_plan(&text.replacen(from, to, 1)).is_err(), "{from} -> {to}");
    }
}
