//! Property test: random programs of one indexed op — `gather` (an index no larger than `x`
//! on the other axes), `index_select` (an index of rank 0 to 2) or `scatter_add` (duplicates
//! likely) — along any axis of an `x` of rank 1 to 3, with indices sometimes out of range,
//! `x` and the index sometimes passed as non-contiguous views, read by an exact elementwise op
//! or a reduction, and the vjp of float programs. The JIT must agree with the interpreter
//! exactly (every op here is exact; `scatter_add` accumulates in one fixed order), or fail
//! with the same op and the same bad index. Proptest shrinks a failure to a small program.

use ndarray::{ArrayD, IxDyn};
use proptest::prelude::*;
use tfn::{Backend, Session, Tensor, Value};
use tfn_test_utils::proptest_config;

#[derive(Clone, Copy, Debug)]
enum Kind {
    Gather,
    Select,
    Scatter,
}

#[derive(Clone, Copy, Debug)]
enum Reader {
    Twice,
    PlusSelf,
    Neg,
    /// `sum` over the last axis.
    SumLast,
    /// `v - max(v, dims=[-1], keepdim=true)`.
    Centered,
}

#[derive(Clone, Debug)]
pub(crate) struct Case {
    kind: Kind,
    x_shape: Vec<usize>,
    dim: usize,
    index_shape: Vec<usize>,
    /// Raw index values (row-major), some possibly out of range.
    index: Vec<i64>,
    dtype: &'static str,
    x_strided: bool,
    index_strided: bool,
    reader: Reader,
}

pub(crate) fn case_strategy() -> impl Strategy<Value = Case> {
    let kind = prop_oneof![Just(Kind::Gather), Just(Kind::Select), Just(Kind::Scatter)];
    let dtype = prop_oneof![Just("f32"), Just("f64"), Just("i32")];
    let reader = prop_oneof![
        Just(Reader::Twice),
        Just(Reader::PlusSelf),
        Just(Reader::Neg),
        Just(Reader::SumLast),
        Just(Reader::Centered),
    ];
    (kind, prop::collection::vec(1usize..5, 1..4), dtype, reader, any::<(bool, bool)>())
        .prop_flat_map(|(kind, x_shape, dtype, reader, (xs, is))| {
            let rank = x_shape.len();
            let dim = 0..rank;
            (Just(kind), Just(x_shape), dim, Just(dtype), Just(reader), Just((xs, is)))
        })
        .prop_flat_map(|(kind, x_shape, dim, dtype, reader, strided)| {
            // gather/scatter_add: the index has x's rank, no larger on the other axes;
            // index_select: any rank up to 2.
            let shape: BoxedStrategy<Vec<usize>> = match kind {
                Kind::Gather | Kind::Scatter => x_shape
                    .iter()
                    .enumerate()
                    .map(|(k, &n)| if k == dim { (0usize..5).boxed() } else { (1..=n).boxed() })
                    .collect::<Vec<_>>()
                    .boxed(),
                Kind::Select => prop::collection::vec(0usize..4, 0..3).boxed(),
            };
            (Just(kind), Just(x_shape), Just(dim), shape, Just(dtype), Just(reader), Just(strided))
        })
        .prop_flat_map(|(kind, x_shape, dim, index_shape, dtype, reader, strided)| {
            let n = x_shape[dim] as i64;
            let count: usize = index_shape.iter().product();
            // Mostly in range (negatives included), now and then one past either end.
            let value = prop_oneof![20 => -n..n, 1 => Just(n), 1 => Just(-n - 1)];
            let index = prop::collection::vec(value, count);
            (
                Just(kind),
                Just(x_shape),
                Just(dim),
                Just(index_shape),
                index,
                Just(dtype),
                Just(reader),
                Just(strided),
            )
        })
        .prop_map(|(kind, x_shape, dim, index_shape, index, dtype, reader, (xs, is))| Case {
            kind,
            x_shape,
            dim,
            index_shape,
            index,
            dtype,
            x_strided: xs,
            index_strided: is,
            reader,
        })
}

pub(crate) fn source(case: &Case, name: &str) -> String {
    let d = case.dim;
    let (params, op) = match case.kind {
        Kind::Gather => ("Tensor x, Tensor i", format!("gather(x, i, dim={d})")),
        Kind::Select => ("Tensor x, Tensor i", format!("index_select(x, i, dim={d})")),
        Kind::Scatter => ("Tensor x, Tensor i, Tensor s", format!("scatter_add(x, i, s, dim={d})")),
    };
    let two = if case.dtype == "i32" { "2" } else { "2.0" };
    let ret = match case.reader {
        Reader::Twice => format!("v * {two}"),
        Reader::PlusSelf => "v + v".into(),
        Reader::Neg => "-v".into(),
        Reader::SumLast => "sum(v, dims=[-1])".into(),
        Reader::Centered => "v - max(v, dims=[-1], keepdim=true)".into(),
    };
    format!("fn {name}({params}) -> Tensor {{\n    let v = {op}\n    return {ret}\n}}\n")
}

/// The tensors `case`'s function takes, row-major: `x`, the index `i` and, for `scatter_add`,
/// the source `s` (the AOT differential test of `tests/cli/aot.rs` calls it with these).
pub(crate) fn inputs(case: &Case) -> Vec<(&'static str, Tensor)> {
    let x = values(&case.x_shape, case.dtype, 0);
    let index = Tensor::I64(
        ArrayD::from_shape_vec(IxDyn(&case.index_shape), case.index.clone()).expect("index"),
    );
    let mut args = vec![("x", x), ("i", index)];
    if matches!(case.kind, Kind::Scatter) {
        args.push(("s", values(&case.index_shape, case.dtype, 5)));
    }
    args
}

/// Small multiples of 0.5 (exact sums), distinct enough to catch a wrong read.
fn values(shape: &[usize], dtype: &str, seed: i64) -> Tensor {
    let n: usize = shape.iter().product();
    let v = |k: usize| ((k as i64 * 7 + seed) % 11 - 5) as f64 * 0.5;
    let shape = IxDyn(shape);
    match dtype {
        "f64" => {
            Tensor::F64(ArrayD::from_shape_vec(shape, (0..n).map(v).collect()).expect("shape"))
        }
        "i32" => Tensor::I32(
            ArrayD::from_shape_vec(shape, (0..n).map(|k| (v(k) * 2.0) as i32).collect())
                .expect("shape"),
        ),
        _ => Tensor::F32(
            ArrayD::from_shape_vec(shape, (0..n).map(|k| v(k) as f32).collect()).expect("shape"),
        ),
    }
}

/// The tensor as a value, optionally as a reversed-axes (non-contiguous) view of a copy
/// stored reversed.
fn argument(t: &Tensor, strided: bool) -> Value<'static> {
    fn rev<T: Clone>(a: &ArrayD<T>) -> ArrayD<T> {
        a.clone().reversed_axes().as_standard_layout().into_owned().reversed_axes()
    }
    if !strided || t.shape().len() < 2 {
        return Value::from(t.clone());
    }
    match t {
        Tensor::F32(a) => Value::from(rev(a)),
        Tensor::F64(a) => Value::from(rev(a)),
        Tensor::I32(a) => Value::from(rev(a)),
        Tensor::I64(a) => Value::from(rev(a)),
        Tensor::Bool(a) => Value::from(rev(a)),
        Tensor::I8(a) => Value::from(rev(a)),
        Tensor::U8(a) => Value::from(rev(a)),
        Tensor::F16(a) => Value::from(rev(a)),
        Tensor::BF16(a) => Value::from(rev(a)),
    }
}

thread_local! {
    static SESSIONS: (Session, Session) =
        (Session::with_backend(Backend::Jit), Session::with_backend(Backend::Interp));
    static COUNTER: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The part of an error that must agree: the op and the bad index.
fn error_key(e: &str) -> String {
    let op = e.split('`').nth(1).unwrap_or("");
    let index = e.split("index ").nth(1).and_then(|r| r.split(' ').next()).unwrap_or("");
    format!("{op} {index}")
}

fn run(
    s: &Session,
    name: &str,
    args: &[Value<'static>],
    grad: bool,
) -> (Result<Tensor, String>, Option<Result<Tensor, String>>) {
    let out = s.call(name, args).map_err(|e| e.to_string());
    let out = out.map(|mut v| v.remove(0).into_tensor().expect("tensor result"));
    let g = match &out {
        Ok(y) if grad => {
            let ct = values(y.shape(), if matches!(y, Tensor::F64(_)) { "f64" } else { "f32" }, 3);
            let g = s.vjp(name, args, &[Value::from(ct)]).map_err(|e| e.to_string());
            Some(g.map(|mut v| v.remove(0).into_tensor().expect("tensor gradient")))
        }
        _ => None,
    };
    (out, g)
}

fn check(case: &Case) -> Result<(), String> {
    let n = COUNTER.with(|c| {
        c.set(c.get() + 1);
        c.get()
    });
    let name = format!("case_{n}");
    let src = source(case, &name);
    let x = values(&case.x_shape, case.dtype, 0);
    let index = Tensor::I64(
        ArrayD::from_shape_vec(IxDyn(&case.index_shape), case.index.clone()).expect("index"),
    );
    let mut args = vec![argument(&x, case.x_strided), argument(&index, case.index_strided)];
    if matches!(case.kind, Kind::Scatter) {
        args.push(Value::from(values(&case.index_shape, case.dtype, 5)));
    }
    let grad = case.dtype != "i32";
    let (jit, reference) = SESSIONS.with(|(jit, interp)| {
        for s in [jit, interp] {
            s.load_str(&format!("{name}.tfn"), &src).map_err(|e| format!("load: {e}\n{src}"))?;
        }
        Ok::<_, String>((run(jit, &name, &args, grad), run(interp, &name, &args, grad)))
    })?;
    let context = || format!("\n{src}x = {x:?}\nindex = {index:?}\n{case:?}");
    let compare = |what: &str, a: &Result<Tensor, String>, b: &Result<Tensor, String>| match (a, b)
    {
        (Ok(a), Ok(b)) if a == b => Ok(()),
        (Err(a), Err(b)) if error_key(a) == error_key(b) => Ok(()),
        (a, b) => Err(format!("{what}: JIT {a:?}, interpreter {b:?}{}", context())),
    };
    compare("result", &jit.0, &reference.0)?;
    if let (Some(a), Some(b)) = (&jit.1, &reference.1) {
        compare("gradient", a, b)?;
    }
    Ok(())
}

// 200 cases from a fixed seed (deterministic `cargo test`); `PROPTEST_CASES` and
// `PROPTEST_RNG_SEED` explore further.
proptest! {
    #![proptest_config(proptest_config(200, 0x1dec_5eed))]

    #[test]
    fn indexed_programs_agree_with_the_interpreter(case in case_strategy()) {
        if let Err(e) = check(&case) {
            return Err(TestCaseError::fail(e));
        }
    }
}
