//! Lowering tests: each case is `.tfn` source (read with the prelude by [`super::test_lib`]),
//! a call signature and either the expected graph dump or the expected error text. Every
//! successful lowering has already passed the verifier inside `instantiate`.

use super::test_lib::library;
use super::{instantiate, ArgSpec, DimSpec, Instance, ParamSource};
use crate::attr::Attr;
use crate::dtype::DType;
use crate::graph::Graph;
use crate::op::Op;
use crate::shape::SymDef;
use proptest::prelude::*;

/// `f32[?, 1]` (a tensor: `?` is a runtime size, `1` a broadcast axis), `[f32[?], f32[1]]`
/// (a tensor list), or an attribute literal: `2`, `0.5`, `true`, `[0, 1]`, `f64`.
fn spec(s: &str) -> ArgSpec {
    let s = s.trim();
    if let Some((d, rest)) = s.split_once('[').filter(|(d, _)| d.parse::<DType>().is_ok()) {
        let dims = rest.trim_end_matches(']').split(',').filter(|t| !t.trim().is_empty());
        let dims = dims.map(|t| if t.trim() == "1" { DimSpec::One } else { DimSpec::Dyn });
        return ArgSpec::Tensor { dtype: d.parse().unwrap(), dims: dims.collect() };
    }
    if let Some(inner) = s.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        if inner.contains('[') {
            let items = split_args(inner).into_iter().map(|i| match spec(&i) {
                ArgSpec::Tensor { dtype, dims } => (dtype, dims),
                other => panic!("{other:?}"),
            });
            return ArgSpec::TensorList(items.collect());
        }
        let items: Vec<&str> = inner.split(',').map(str::trim).filter(|t| !t.is_empty()).collect();
        return ArgSpec::Attr(match items.iter().map(|t| t.parse::<i64>()).collect() {
            Ok(ints) => Attr::IntList(ints),
            Err(_) => Attr::FloatList(items.iter().map(|t| t.parse().unwrap()).collect()),
        });
    }
    ArgSpec::Attr(match s {
        "true" | "false" => Attr::Bool(s == "true"),
        _ => match (s.parse::<i64>(), s.parse::<f64>(), s.parse::<DType>()) {
            (Ok(i), ..) => Attr::Int(i),
            (_, Ok(f), _) => Attr::Float(f),
            (.., Ok(d)) => Attr::DType(d),
            _ => panic!("bad arg spec `{s}`"),
        },
    })
}

fn split_args(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0);
    for c in s.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out
}

pub(super) fn lower(src: &str, name: &str, args: &str) -> Result<Instance, super::LowerError> {
    let lib = library(src);
    let mut positional = Vec::new();
    let mut keywords = Vec::new();
    for a in split_args(args) {
        match a.split_once('=') {
            Some((k, v)) => keywords.push((k.trim().to_string(), spec(v))),
            None => positional.push(spec(&a)),
        }
    }
    instantiate(&lib, name, &positional, &keywords)
}

/// One line per node, then one per symbol.
fn dump(g: &Graph) -> String {
    let mut out = Vec::new();
    for (i, n) in g.nodes.iter().enumerate() {
        let op = match &n.op {
            Op::Unary(_)
            | Op::Binary(_)
            | Op::Where
            | Op::MatMul
            | Op::Reshape
            | Op::BroadcastTo => n.op.name(),
            Op::Param(p) => format!("param{p}"),
            Op::Const(c) => format!("const {c}"),
            other => format!("{other:?}"),
        };
        let ins: Vec<String> = n.inputs.iter().map(|v| v.to_string()).collect();
        let sep = if ins.is_empty() { "" } else { " " };
        out.push(format!("%{i} = {op}{sep}{} : {}", ins.join(" "), n.ty));
    }
    for (i, s) in g.syms.iter().enumerate() {
        match s {
            SymDef::Input { sources } => out.push(format!("s{i} = input {sources:?}")),
            SymDef::Derived(e) => out.push(format!("s{i} = {e:?}")),
        }
    }
    let outs: Vec<String> = g.outputs.iter().map(|v| v.to_string()).collect();
    out.push(format!("return {}", outs.join(" ")));
    out.join("\n")
}

const NN: &str = r#"
fn relu(Tensor x) -> Tensor {
    return maximum(x, 0.0)
}
fn gelu(Tensor x) -> Tensor {
    let inner = 0.7978845608 * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1.0 + tanh(inner))
}
fn linear(Tensor x, Tensor w, Tensor b, *, Bool activate = false) -> Tensor {
    let y = matmul(x, w) + b
    if activate {
        return relu(y)
    }
    return y
}
fn softmax(Tensor x, *, Int dim = -1) -> Tensor {
    let e = exp(x - max(x, dims=[dim], keepdim=true))
    return e / sum(e, dims=[dim], keepdim=true)
}
fn moments(Tensor x, *, Int[] dims) -> (Tensor, Tensor) {
    let mu = mean(x, dims=dims, keepdim=true)
    let d = x - mu
    return (mu, mean(d * d, dims=dims, keepdim=true))
}
fn axpy<T: {f16, bf16, f32, f64}>(Tensor<T> x, Tensor<T> y, *, Scalar a = 1) -> Tensor<T> {
    return a * x + y
}
fn mlp(Tensor x, Tensor w1, Tensor b1, Tensor w2, Tensor b2) -> Tensor {
    let h = gelu(linear(x, w1, b1))
    let (m, v) = moments(h, dims=[-1])
    return linear((h - m) * rsqrt(v + 1e-5), w2, b2)
}
fn twice(Tensor x, *, Int n = 2) -> Tensor {
    if n * 2 > 3 {
        return x + n
    } else {
        return x
    }
}
fn rec(Tensor x) -> Tensor {
    return rec(x)
}
fn bad_lit(Tensor x) -> Tensor {
    return x * 0.5
}
fn bad_shape() -> Tensor {
    return full([3, 4], 1.0) + full([5], 2.0)
}
fn bad_cond(Tensor x) -> Tensor {
    if x > 0.0 {
        return x
    }
    return x
}
fn flat_add(Tensor x, Tensor y) -> Tensor {
    return reshape(x, [-1]) + add.scalar(y, 1)
}
fn any_tensor(Tensor x) -> Tensor {
    return x
}
fn tup(Tensor x) -> (Tensor, Tensor) {
    return (x, -x)
}
extern op clip_norm(Tensor x, Float max_norm) -> Tensor
    shape: x
    dtype: x
extern op pairs(Tensor x, Int k) -> Tensor
    shape: [x.size(0), k * 2]
    dtype: i64
"#;

/// `(function, args, expected dump or "error: <substring>")`.
const CASES: &[(&str, &str, &str)] = &[
    (
        "add",
        "f32[?, ?], f32[?]",
        "%0 = param0 : f32[s0, s1]\n%1 = param1 : f32[s1]\n%2 = add %0 %1 : f32[s0, s1]\n\
         s0 = input [(0, 0)]\ns1 = input [(0, 1), (1, 0)]\nreturn %2",
    ),
    (
        "add",
        "f32[?, 1], f32[?]",
        "%0 = param0 : f32[s0, 1]\n%1 = param1 : f32[s1]\n%2 = add %0 %1 : f32[s0, s1]\n\
         s0 = input [(0, 0)]\ns1 = input [(1, 0)]\nreturn %2",
    ),
    (
        "add",
        "i32[?], 2",
        "%0 = param0 : i32[s0]\n%1 = const 2 : i32[]\n%2 = add %0 %1 : i32[s0]\n\
         s0 = input [(0, 0)]\nreturn %2",
    ),
    (
        "relu",
        "i64[?]",
        "%0 = param0 : i64[s0]\n%1 = const 0 : i64[]\n%2 = maximum %0 %1 : i64[s0]\n\
         s0 = input [(0, 0)]\nreturn %2",
    ),
    ("bad_lit", "i32[?]", "error: literal `0.5` has a fractional part and cannot be i32"),
    ("bad_shape", "", "error: cannot broadcast `full([3, 4], 1.0)` of shape [3, 4] with `full([5], 2.0)` of shape [5]"),
    ("bad_cond", "f32[?]", "error: `if` condition must be a compile-time Bool, found a bool tensor"),
    ("rec", "f32[?]", "error: recursive call of `rec`"),
    ("nope", "f32[?]", "error: unknown function `nope`"),
    ("axpy", "i32[?], i32[?]", "error: mismatched arguments for `axpy`: argument `x` is i32 but `T` must be one of f16, bf16, f32, f64"),
    ("axpy", "f32[?], f64[?]", "error: argument `y` is f64 but `T` is f32 from `x`"),
    ("axpy", "f32[?], f32[?], b=2", "error: unknown keyword argument `b`"),
    ("axpy", "f32[?], f32[?], 2", "error: `axpy` takes 2 positional arguments but 3 were given"),
    (
        "add",
        "f32[?], f64[?]",
        "error: no overload of `add` matches the arguments\n  \
         note: `add<T: {i8, u8, i32, i64, f16, bf16, f32, f64}>(Tensor<T> x, Tensor<T> y)` is not a match: argument `y` is f64 but `T` is f32 from `x`\n  \
         note: `add.scalar<T: {i8, u8, i32, i64, f16, bf16, f32, f64}>(Tensor<T> x, Scalar y)` is not a match: argument `y` must be Scalar, got a f64 tensor",
    ),
    (
        "axpy",
        "f64[?], f64[1], a=0.5",
        "%0 = param0 : f64[s0]\n%1 = param1 : f64[1]\n%2 = const 0.5 : f64[]\n\
         %3 = mul %2 %0 : f64[s0]\n%4 = add %3 %1 : f64[s0]\ns0 = input [(0, 0)]\nreturn %4",
    ),
    (
        "twice",
        "f32[?]",
        "%0 = param0 : f32[s0]\n%1 = const 2.0 : f32[]\n%2 = add %0 %1 : f32[s0]\n\
         s0 = input [(0, 0)]\nreturn %2",
    ),
    ("twice", "f32[?], n=1", "%0 = param0 : f32[s0]\ns0 = input [(0, 0)]\nreturn %0"),
    (
        "softmax",
        "f32[?, ?]",
        "%0 = param0 : f32[s0, s1]\n\
         %1 = Reduce { op: Max, axes: [1], keepdim: true } %0 : f32[s0, 1]\n\
         %2 = sub %0 %1 : f32[s0, s1]\n%3 = exp %2 : f32[s0, s1]\n\
         %4 = Reduce { op: Sum, axes: [1], keepdim: true } %3 : f32[s0, 1]\n\
         %5 = div %3 %4 : f32[s0, s1]\ns0 = input [(0, 0)]\ns1 = input [(0, 1)]\nreturn %5",
    ),
    (
        "linear",
        "f32[?, ?], f32[?, ?], f32[?], activate=true",
        "%0 = param0 : f32[s0, s1]\n%1 = param1 : f32[s1, s2]\n%2 = param2 : f32[s2]\n\
         %3 = matmul %0 %1 : f32[s0, s2]\n%4 = add %3 %2 : f32[s0, s2]\n\
         %5 = const 0.0 : f32[]\n%6 = maximum %4 %5 : f32[s0, s2]\n\
         s0 = input [(0, 0)]\ns1 = input [(0, 1), (1, 0)]\ns2 = input [(1, 1), (2, 0)]\nreturn %6",
    ),
    (
        "flat_add",
        "f32[?, ?], f32[?]",
        "%0 = param0 : f32[s0, s1]\n%1 = param1 : f32[s2]\n%2 = reshape %0 : f32[s2]\n\
         %3 = const 1.0 : f32[]\n%4 = add %1 %3 : f32[s2]\n%5 = add %2 %4 : f32[s2]\n\
         s0 = input [(0, 0)]\ns1 = input [(0, 1)]\n\
         s2 = Mul(Dim(Sym(Sym(0))), Dim(Sym(Sym(1))))\nreturn %5",
    ),
    ("any_tensor", "2.0", "error: argument `x` is a number where a tensor is expected, and no other argument gives its dtype: pass a tensor (for one value, a 0-d array)"),
    ("where", "bool[?], f32[?], i32[?]", "error: argument `y` is i32 but `T` is f32 from `x`"),
    ("zeros_like", "bool[1]", "%0 = param0 : bool[1]\n%1 = Full { value: Bool(false) } %0 : bool[1]\nreturn %1"),
    ("full_like", "i32[1], 2.5", "error: literal `2.5` has a fractional part and cannot be i32"),
    (
        "tup",
        "f32[?]",
        "%0 = param0 : f32[s0]\n%1 = neg %0 : f32[s0]\ns0 = input [(0, 0)]\nreturn %0 %1",
    ),
    (
        "matmul",
        "f32[?], f32[?, ?, ?]",
        "%0 = param0 : f32[s0]\n%1 = param1 : f32[s1, s0, s2]\n%2 = reshape %0 : f32[1, s0]\n\
         %3 = matmul %2 %1 : f32[s1, 1, s2]\n%4 = reshape %3 : f32[s1, s2]\n\
         s0 = input [(0, 0), (1, 1)]\ns1 = input [(1, 0)]\ns2 = input [(1, 2)]\nreturn %4",
    ),
    (
        "matmul",
        "f32[?], f32[?]",
        "%0 = param0 : f32[s0]\n%1 = param1 : f32[s0]\n%2 = reshape %0 : f32[1, s0]\n\
         %3 = reshape %1 : f32[s0, 1]\n%4 = matmul %2 %3 : f32[1, 1]\n%5 = reshape %4 : f32[]\n\
         s0 = input [(0, 0), (1, 0)]\nreturn %5",
    ),
    (
        "matmul",
        "f32[1, ?, ?], f32[?, ?, ?]",
        "%0 = param0 : f32[1, s0, s1]\n%1 = param1 : f32[s2, s1, s3]\n\
         %2 = matmul %0 %1 : f32[s2, s0, s3]\ns0 = input [(0, 1)]\ns1 = input [(0, 2), (1, 1)]\n\
         s2 = input [(1, 0)]\ns3 = input [(1, 2)]\nreturn %2",
    ),
    ("matmul", "f32[?, ?], f32[?, ?, ?], f32[?]", "error: `matmul` takes 2 positional arguments"),
    ("matmul", "f32[], f32[?]", "error: cannot multiply `a` of shape [] by `b` of shape [s0]"),
    (
        "reshape",
        "f32[?, ?, 1], [-1, 2]",
        "%0 = param0 : f32[s0, s1, 1]\n%1 = reshape %0 : f32[s2, 2]\ns0 = input [(0, 0)]\n\
         s1 = input [(0, 1)]\ns2 = Div(Mul(Dim(Sym(Sym(0))), Dim(Sym(Sym(1)))), Dim(Const(2)))\nreturn %1",
    ),
    ("reshape", "f32[?, 1], [4]", "%0 = param0 : f32[4, 1]\n%1 = reshape %0 : f32[4]\nreturn %1"),
    ("reshape", "f32[?], [-1, -1]", "error: cannot reshape `x` of shape [s0] to [-1, -1]: only one size can be -1"),
    (
        "sum",
        "i32[?, ?, 1]",
        "%0 = param0 : i32[s0, s1, 1]\n%1 = Reduce { op: Sum, axes: [0, 1, 2], keepdim: false } %0 : i32[]\n\
         s0 = input [(0, 0)]\ns1 = input [(0, 1)]\nreturn %1",
    ),
    ("sum", "f32[]", "%0 = param0 : f32[]\nreturn %0"),
    (
        "mean",
        "f32[?, ?], dims=[-1, 0], keepdim=true",
        "%0 = param0 : f32[s0, s1]\n%1 = Reduce { op: Mean, axes: [0, 1], keepdim: true } %0 : f32[1, 1]\n\
         s0 = input [(0, 0)]\ns1 = input [(0, 1)]\nreturn %1",
    ),
    ("sum", "f32[?, ?], dims=[2]", "error: dim 2 is out of range for `x` of rank 2"),
    ("sum", "f32[?, ?], dims=[1, -1]", "error: dim -1 is repeated in `dims`"),
    ("mean", "i32[?]", "error: argument `x` is i32 but `T` must be one of f16, bf16, f32, f64"),
    ("sum", "f32[?], [0]", "error: `sum` takes 1 positional argument but 2 were given"),
    (
        "argmax",
        "f32[?, ?]",
        "%0 = param0 : f32[s0, s1]\n%1 = ArgMax { axis: 1, keepdim: false } %0 : i64[s0]\n\
         s0 = input [(0, 0)]\ns1 = input [(0, 1)]\nreturn %1",
    ),
    (
        "transpose",
        "f32[?, 1, ?]",
        "%0 = param0 : f32[s0, 1, s1]\n%1 = Transpose { perm: [2, 1, 0] } %0 : f32[s1, 1, s0]\n\
         s0 = input [(0, 0)]\ns1 = input [(0, 2)]\nreturn %1",
    ),
    (
        "transpose.swap",
        "f32[?, 1, ?], -1, 0",
        "%0 = param0 : f32[s0, 1, s1]\n%1 = Transpose { perm: [2, 1, 0] } %0 : f32[s1, 1, s0]\n\
         s0 = input [(0, 0)]\ns1 = input [(0, 2)]\nreturn %1",
    ),
    ("transpose", "f32[?, ?], [0, 0]", "error: `[0, 0]` is not a permutation of the axes of `x` (rank 2)"),
    (
        "squeeze",
        "f32[1, ?, 1]",
        "%0 = param0 : f32[1, s0, 1]\n%1 = reshape %0 : f32[s0]\ns0 = input [(0, 1)]\nreturn %1",
    ),
    ("squeeze", "f32[1, ?], dims=[1]", "error: cannot squeeze axis 1 of `x` of shape [1, s0]: its size is not 1"),
    ("squeeze", "f32[1, ?], dims=[0, -2]", "error: dim -2 is repeated in `dims`"),
    (
        "unsqueeze",
        "f32[?], -1",
        "%0 = param0 : f32[s0]\n%1 = reshape %0 : f32[s0, 1]\ns0 = input [(0, 0)]\nreturn %1",
    ),
    (
        "broadcast_to",
        "f32[?, 1], [3, 4]",
        "%0 = param0 : f32[3, 1]\n%1 = broadcast_to %0 : f32[3, 4]\nreturn %1",
    ),
    (
        "concat",
        "[f32[?, ?], f32[?, ?]], dim=-1",
        "%0 = param0 : f32[s0, s1]\n%1 = param1 : f32[s0, s2]\n%2 = Concat { axis: 1 } %0 %1 : f32[s0, s3]\n\
         s0 = input [(0, 0), (1, 0)]\ns1 = input [(0, 1)]\ns2 = input [(1, 1)]\n\
         s3 = Add(Dim(Sym(Sym(1))), Dim(Sym(Sym(2))))\nreturn %2",
    ),
    ("concat", "[f32[?], f64[?]]", "error: tensors in the list have different dtypes: f32 and f64"),
    (
        "slice",
        "f32[?, ?], dim=1, start=1",
        "%0 = param0 : f32[s0, s1]\n%1 = Slice { axis: 1, start: 1, end: None, step: 1 } %0 : f32[s0, s2]\n\
         s0 = input [(0, 0)]\ns1 = input [(0, 1)]\n\
         s2 = SliceLen { size: Dim(Sym(Sym(1))), start: 1, end: None, step: 1 }\nreturn %1",
    ),
    ("slice", "f32[?], dim=0, step=0", "error: slice `step` cannot be zero"),
    ("slice", "f32[?]", "error: mismatched arguments for `slice`: missing required argument `dim`"),
    (
        "cast",
        "i32[?], f64",
        "%0 = param0 : i32[s0]\n%1 = Cast(F64) %0 : f64[s0]\ns0 = input [(0, 0)]\nreturn %1",
    ),
    (
        "lt",
        "i32[?], 3",
        "%0 = param0 : i32[s0]\n%1 = const 3 : i32[]\n%2 = lt %0 %1 : bool[s0]\n\
         s0 = input [(0, 0)]\nreturn %2",
    ),
    (
        "where",
        "bool[?, 1], f32[?], 0.0",
        "%0 = param0 : bool[s0, 1]\n%1 = param1 : f32[s1]\n%2 = const 0.0 : f32[]\n\
         %3 = where %0 %1 %2 : f32[s0, s1]\ns0 = input [(0, 0)]\ns1 = input [(1, 0)]\nreturn %3",
    ),
    ("full", "[2, 3], 1, dtype=i32", "%0 = Full { value: Int(1) } : i32[2, 3]\nreturn %0"),
    (
        "ones_like",
        "f64[?]",
        "%0 = param0 : f64[s0]\n%1 = Full { value: Float(1.0) } %0 : f64[s0]\ns0 = input [(0, 0)]\nreturn %1",
    ),
    (
        "clip_norm",
        "f32[?, 1], 2",
        "%0 = param0 : f32[s0, 1]\n%1 = Extern { name: \"clip_norm\", attrs: [Float(2.0)] } %0 : f32[s0, 1]\n\
         s0 = input [(0, 0)]\nreturn %1",
    ),
    (
        "pairs",
        "f32[?, ?], 3",
        "%0 = param0 : f32[s0, s1]\n%1 = Extern { name: \"pairs\", attrs: [Int(3)] } %0 : i64[s0, 6]\n\
         s0 = input [(0, 0)]\ns1 = input [(0, 1)]\nreturn %1",
    ),
];

#[test]
fn lowering_cases() {
    let mut failures = Vec::new();
    for (name, args, want) in CASES {
        let got = match lower(NN, name, args) {
            Ok(inst) => dump(&inst.graph),
            Err(e) => format!("error: {e}"),
        };
        let ok = match want.strip_prefix("error: ") {
            Some(msg) => got.starts_with("error: ") && got.contains(msg),
            None => got == *want,
        };
        if !ok {
            failures.push(format!("{name}({args}):\n--- want\n{want}\n--- got\n{got}\n"));
        }
    }
    assert!(failures.is_empty(), "{} failing cases:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn inlining_records_origins_and_param_sources() {
    let inst = lower(NN, "mlp", "f32[?, ?], f32[?, ?], f32[?], f32[?, ?], f32[1]").unwrap();
    let g = &inst.graph;
    assert_eq!(inst.function, "mlp");
    assert_eq!(inst.params, (0..5).map(ParamSource::Positional).collect::<Vec<_>>());
    let tanh = g.nodes.iter().find(|n| n.op.name() == "tanh").unwrap();
    assert_eq!(tanh.origin.inlined_from, vec!["gelu".to_string()]);
    let relu_free = g.nodes.iter().all(|n| n.op.name() != "maximum");
    assert!(relu_free, "linear's static `if` must not take the relu branch");
    let matmul = g.nodes.iter().filter(|n| n.op == Op::MatMul).count();
    assert_eq!(matmul, 2);
    let lib = library(NN);
    let span = tanh.origin.span.unwrap();
    assert_eq!(&lib.sources.get(span.file).unwrap().text[span.range()], "tanh(inner)");
    assert_eq!(g.ty(g.outputs[0]).to_string(), "f32[s0, s3]");
}

#[test]
fn keyword_and_list_params_are_traced_to_their_arguments() {
    let lib = library("");
    let list = ArgSpec::TensorList(vec![(DType::F32, vec![DimSpec::Dyn]); 2]);
    let inst = instantiate(&lib, "concat", &[], &[("xs".into(), list)]).unwrap();
    let item =
        |index| ParamSource::ListItem { arg: Box::new(ParamSource::Keyword("xs".into())), index };
    assert_eq!(inst.params, vec![item(0), item(1)]);
}

#[test]
fn errors_point_at_the_argument() {
    let lib = library(NN);
    let err = lower(NN, "bad_lit", "i64[?]").unwrap_err();
    let span = err.diagnostics[0].primary.as_ref().unwrap().span;
    assert_eq!(&lib.sources.get(span.file).unwrap().text[span.range()], "0.5");
    assert_eq!(err.diagnostics[0].code, "E0504");
    let top = lower(NN, "axpy", "i32[?], i32[?]").unwrap_err();
    assert!(top.diagnostics[0].primary.is_none());
}

#[test]
fn every_prelude_op_has_a_kernel() {
    let lib = library("");
    for f in lib.functions.values().flatten() {
        assert!(super::is_primitive(&f.name, f.overload.as_deref()), "{}", f.full_name());
    }
    assert!(lib.functions.len() > 50);
}

#[test]
fn verifier_rejects_corrupted_graphs() {
    let good = lower(NN, "softmax", "f32[?, ?]").unwrap().graph;
    let mut wrong_type = good.clone();
    wrong_type.nodes[2].ty.dtype = DType::F64;
    let mut out_of_order = good.clone();
    out_of_order.nodes[1].inputs = vec![crate::ValueId(4)];
    let mut undefined_sym = good.clone();
    undefined_sym.syms.pop();
    let mut bad_axes = good.clone();
    bad_axes.nodes[1].op = Op::Reduce { op: crate::ReduceOp::Max, axes: vec![], keepdim: true };
    let mut no_outputs = good.clone();
    no_outputs.outputs.clear();
    for (what, g) in [
        ("type", wrong_type),
        ("order", out_of_order),
        ("sym", undefined_sym),
        ("axes", bad_axes),
        ("outputs", no_outputs),
    ] {
        assert!(crate::verify::verify(&g).is_err(), "{what} corruption not caught");
    }
    assert!(crate::verify::verify(&good).is_ok());
}

/// A random elementwise expression over three parameters, as `.tfn` source.
fn arb_expr() -> impl Strategy<Value = String> {
    let leaf =
        prop_oneof![Just("x".to_string()), Just("y".into()), Just("z".into()), Just("0.5".into())];
    leaf.prop_recursive(4, 24, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone(), prop_oneof![Just("+"), Just("*"), Just("-")])
                .prop_map(|(a, b, op)| format!("({a} {op} {b})")),
            (inner, prop_oneof![Just("exp"), Just("tanh"), Just("neg")])
                .prop_map(|(a, f)| format!("{f}({a} - y)")),
        ]
    })
}

fn arb_dims() -> impl Strategy<Value = String> {
    proptest::collection::vec(prop_oneof![Just("?"), Just("1")], 0..4).prop_map(|v| v.join(", "))
}

proptest! {
    #![proptest_config(tfn_test_utils::proptest_config(64, 0x10e5))]

    #[test]
    fn random_elementwise_functions_lower_and_verify(
        body in arb_expr(), dx in arb_dims(), dy in arb_dims(), dz in arb_dims()
    ) {
        let src = format!("fn f(Tensor x, Tensor y, Tensor z) -> Tensor {{\n    return {body} + x\n}}");
        let inst = lower(&src, "f", &format!("f32[{dx}], f32[{dy}], f32[{dz}]"));
        let inst = inst.map_err(|e| TestCaseError::fail(e.to_string()))?;
        let g = &inst.graph;
        let rank = g.ty(g.outputs[0]).shape.rank();
        let max_rank = g.params.iter().map(|p| p.ty.shape.rank()).max().unwrap_or(0);
        prop_assert!(rank <= max_rank && rank >= g.params[0].ty.shape.rank());
    }
}

/// NumPy's broadcasting rule on concrete sizes, written out directly.
fn numpy_broadcast(a: &[u64], b: &[u64]) -> Option<Vec<u64>> {
    let n = a.len().max(b.len());
    let at = |s: &[u64], i: usize| if i + s.len() < n { 1 } else { s[i + s.len() - n] };
    (0..n)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y || y == 1 => Some(x),
            (1, y) => Some(y),
            _ => None,
        })
        .collect()
}

proptest! {
    #[test]
    fn slice_len_matches_python_slicing(
        n in 0u64..12, start in -15i64..15, end in proptest::option::of(-15i64..15),
        step in prop_oneof![-4i64..0, 1i64..5]
    ) {
        // Python: len(range(n)[start:end:step]), by walking the clamped indices.
        let len = n as i64;
        let norm = |i: i64, lo: i64, hi: i64| (if i < 0 { i + len } else { i }).clamp(lo, hi);
        let (lo, hi) = if step > 0 { (0, len) } else { (-1, len - 1) };
        let s = norm(start, lo, hi);
        let e = end.map_or(if step > 0 { len } else { -1 }, |e| norm(e, lo, hi));
        let mut count = 0u64;
        let mut i = s;
        while (step > 0 && i < e) || (step < 0 && i > e) {
            count += 1;
            i += step;
        }
        prop_assert_eq!(super::slice_len(n, start, end, step), count);
    }

    #[test]
    fn broadcast_matches_numpy_on_constant_shapes(
        a in proptest::collection::vec(prop_oneof![Just(1u64), Just(2), Just(3)], 0..4),
        b in proptest::collection::vec(prop_oneof![Just(1u64), Just(2), Just(3)], 0..4),
    ) {
        let shape = |v: &[u64]| crate::Shape(v.iter().map(|&d| crate::Dim::Const(d)).collect());
        let got = super::broadcast_shapes(&shape(&a), &shape(&b)).map(|s| s.as_const().unwrap());
        prop_assert_eq!(got, numpy_broadcast(&a, &b));
    }
}

#[test]
fn diagnostics_render_against_the_source() {
    let render = |src: &str, f: &str, args: &str| {
        let e = lower(src, f, args).unwrap_err();
        crate::diagnostic::render_all(&e.diagnostics, &library(src).sources)
    };
    let src = "fn g(Tensor x) -> Tensor {\n    return full([3], 1.0) + add(x, true)\n}";
    let want = "\
error[E0502]: no overload of `add` matches the arguments
 --> test.tfn:2:36
  |
2 |     return full([3], 1.0) + add(x, true)
  |                                    ^^^^
  |
  = note: `add<T: {i8, u8, i32, i64, f16, bf16, f32, f64}>(Tensor<T> x, Tensor<T> y)` is not a match: argument `y` must be Tensor<T>, got Bool `true`
  = note: `add.scalar<T: {i8, u8, i32, i64, f16, bf16, f32, f64}>(Tensor<T> x, Scalar y)` is not a match: argument `y` must be Scalar, got Bool `true`

error: aborting due to 1 error
";
    assert_eq!(render(src, "g", "f32[?]"), want);
    let src = "fn g(Tensor x) -> Tensor {\n    return full([3], 1.0) + reshape(x, [-1, 4])\n}";
    let want = "\
error[E0503]: cannot broadcast `full([3], 1.0)` of shape [3] with `reshape(x, [-1, 4])` of shape [s1, 4]
 --> test.tfn:2:29
  |
2 |     return full([3], 1.0) + reshape(x, [-1, 4])
  |                             ^^^^^^^^^^^^^^^^^^^ shape [s1, 4]
  |
2 |     return full([3], 1.0) + reshape(x, [-1, 4])
  |            -------------- shape [3]

error: aborting due to 1 error
";
    assert_eq!(render(src, "g", "f32[?]"), want);
}

/// Lowered graphs run on the reference interpreter (end to end through dispatch, inlining,
/// symbolic shapes and size binding).
#[test]
fn lowered_graphs_run_on_the_interpreter() {
    use crate::tensor::Tensor;
    use ndarray::{array, ArrayD};
    let x: ArrayD<f64> = array![[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]].into_dyn();
    let inst = lower(NN, "softmax", "f64[?, ?]").unwrap();
    let out = crate::run(&inst.graph, &[Tensor::F64(x)]).unwrap();
    let Tensor::F64(y) = &out[0] else { panic!("{out:?}") };
    let e = [1f64.exp(), 2f64.exp(), 3f64.exp()];
    let want = [e[0] / (e[0] + e[1] + e[2]), 1.0 / 3.0];
    assert!((y[[0, 0]] - want[0]).abs() < 1e-12 && (y[[1, 2]] - want[1]).abs() < 1e-12);
    // matmul of a vector by a batch of matrices: [3] @ [2, 3, 1] -> [2, 1]
    let inst = lower(NN, "matmul", "i64[?], i64[?, ?, 1]").unwrap();
    let a: ArrayD<i64> = array![1, 2, 3].into_dyn();
    let b: ArrayD<i64> = ArrayD::from_shape_vec(vec![2, 3, 1], vec![1, 1, 1, 0, 1, 2]).unwrap();
    let out = crate::run(&inst.graph, &[Tensor::I64(a), Tensor::I64(b)]).unwrap();
    assert_eq!(out[0], Tensor::I64(ArrayD::from_shape_vec(vec![2, 1], vec![6, 8]).unwrap()));
}
