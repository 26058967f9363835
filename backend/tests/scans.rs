//! Property test (proptest, with shrinking): generated scan kernels (`cumsum`, `cumprod`, the
//! gradient of `cumprod`) and `iota` indices against the interpreter, for random ranks 1–4,
//! sizes (0, 1, vector tails, several vector blocks), axes, `exclusive`/`reverse` and dtypes.
//! Both compute each element by the same sequential recurrence in the same order, so results
//! must be identical (tolerance 0; NaN matches NaN).

use crate::common;

use common::check_against_interp;
use proptest::prelude::*;
use tfn_ir::DType;
use tfn_test_utils::{proptest_config, random_tensor, Rng, Tolerance};

#[derive(Clone, Debug)]
struct ScanCase {
    sizes: Vec<usize>,
    axis: usize,
    op: &'static str,
    exclusive: bool,
    reverse: bool,
    dtype: DType,
    seed: u64,
}

fn graph_text(c: &ScanCase) -> String {
    let dims: Vec<String> = (0..c.sizes.len()).map(|i| format!("s{i}")).collect();
    let ty = format!("{}[{}]", c.dtype, dims.join(", "));
    let mut lines: Vec<String> =
        (0..c.sizes.len()).map(|i| format!("  sym s{i} = input(param 0 axis {i})")).collect();
    let attrs = format!("{{axis={}, exclusive={}, reverse={}}}", c.axis, c.exclusive, c.reverse);
    let grad = c.op == "cumprod_grad";
    let params = if grad { format!("x: {ty}, g: {ty}") } else { format!("x: {ty}") };
    lines.push(format!("  %0 = param 0 : {ty}"));
    if grad {
        lines.push(format!("  %1 = param 1 : {ty}"));
        lines.push(format!("  %2 = cumprod_grad %0, %1 {attrs} : {ty}"));
    } else {
        lines.push(format!("  %1 = param 0 : {ty}"));
        lines.push(format!("  %2 = {} %0 {attrs} : {ty}", c.op));
    }
    lines.push(format!("  %3 = iota {{axis={}}} : {ty}", c.axis));
    lines.push(format!("  %4 = add %2, %3 : {ty}"));
    format!("func f({params}) -> ({ty}, {ty}) {{\n{}\n  return %2, %4\n}}", lines.join("\n"))
}

fn size() -> impl Strategy<Value = usize> {
    prop_oneof![0usize..=3, 4usize..=9, Just(17), Just(33)]
}

fn scan_case() -> impl Strategy<Value = ScanCase> {
    (
        prop::collection::vec(size(), 1..=4),
        any::<prop::sample::Index>(),
        prop::sample::select(vec!["cumsum", "cumprod", "cumprod_grad"]),
        any::<bool>(),
        any::<bool>(),
        prop::sample::select(vec![DType::F32, DType::F64, DType::I32, DType::I64]),
        any::<u64>(),
    )
        .prop_map(|(sizes, axis, op, exclusive, reverse, dtype, seed)| {
            let axis = axis.index(sizes.len());
            // The gradient is float-only.
            let dtype = if op == "cumprod_grad" && !dtype.is_float() { DType::F64 } else { dtype };
            ScanCase { sizes, axis, op, exclusive, reverse, dtype, seed }
        })
        .prop_filter("at most 4096 elements", |c| c.sizes.iter().product::<usize>() <= 4096)
}

proptest! {
    #![proptest_config(proptest_config(96, 0x5CA9))]

    #[test]
    fn scans_match_the_interpreter(c in scan_case()) {
        let text = graph_text(&c);
        let graph = tfn_ir::text::parse_graph(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut rng = Rng::new(c.seed | 1);
        let range = if c.dtype.is_float() { (0.5, 1.5) } else { (-40.0, 40.0) };
        let mut inputs = vec![random_tensor(&mut rng, c.dtype, &c.sizes, range)];
        if c.op == "cumprod_grad" {
            // Some zeros in `x`: the gradient must stay exact there.
            match &mut inputs[0] {
                tfn_ir::Tensor::F32(a) => a.iter_mut().step_by(5).for_each(|x| *x = 0.0),
                tfn_ir::Tensor::F64(a) => a.iter_mut().step_by(5).for_each(|x| *x = 0.0),
                _ => {}
            }
            inputs.push(random_tensor(&mut rng, c.dtype, &c.sizes, (-1.0, 1.0)));
        }
        let threads = 1 + (c.seed % 2) as usize;
        let f = check_against_interp(&graph, &inputs, Tolerance::EXACT, threads)
            .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert!(f.interpreted_kernels().is_empty(), "fallback: {:?}", f.interpreted_kernels());
        prop_assert!(f.reference_kernels().is_empty(), "reference: {:?}", f.reference_kernels());
    }
}

#[derive(Clone, Debug)]
struct ArgCase {
    sizes: Vec<usize>,
    axis: usize,
    max: bool,
    keepdim: bool,
    dtype: DType,
    seed: u64,
}

fn arg_text(c: &ArgCase) -> String {
    let dims: Vec<String> = (0..c.sizes.len()).map(|i| format!("s{i}")).collect();
    let ty = format!("{}[{}]", c.dtype, dims.join(", "));
    let mut out: Vec<String> = dims.clone();
    if c.keepdim {
        out[c.axis] = "1".into();
    } else {
        out.remove(c.axis);
    }
    let out = format!("i64[{}]", out.join(", "));
    let mut lines: Vec<String> =
        (0..c.sizes.len()).map(|i| format!("  sym s{i} = input(param 0 axis {i})")).collect();
    lines.push(format!("  %0 = param 0 : {ty}"));
    let op = if c.max { "argmax" } else { "argmin" };
    lines.push(format!("  %1 = {op} %0 {{axis={}, keepdim={}}} : {out}", c.axis, c.keepdim));
    format!("func f(x: {ty}) -> ({out}) {{\n{}\n  return %1\n}}", lines.join("\n"))
}

fn arg_case() -> impl Strategy<Value = ArgCase> {
    (
        prop::collection::vec(size(), 1..=4),
        any::<prop::sample::Index>(),
        any::<bool>(),
        any::<bool>(),
        prop::sample::select(vec![DType::F32, DType::F64, DType::I32, DType::I64]),
        any::<u64>(),
    )
        .prop_map(|(sizes, axis, max, keepdim, dtype, seed)| {
            let axis = axis.index(sizes.len());
            ArgCase { sizes, axis, max, keepdim, dtype, seed }
        })
        .prop_filter("a non-empty axis, at most 4096 elements", |c| {
            c.sizes[c.axis] > 0 && c.sizes.iter().product::<usize>() <= 4096
        })
}

proptest! {
    #![proptest_config(proptest_config(96, 0xA9))]

    /// argmax/argmin kernels: ties (small integers), NaN (a tenth of float elements).
    #[test]
    fn arg_kernels_match_the_interpreter(c in arg_case()) {
        let text = arg_text(&c);
        let graph = tfn_ir::text::parse_graph(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut rng = Rng::new(c.seed | 1);
        let mut x = random_tensor(&mut rng, c.dtype, &c.sizes, (-3.0, 3.0));
        match &mut x {
            tfn_ir::Tensor::F32(a) => a.iter_mut().step_by(10).for_each(|v| *v = f32::NAN),
            tfn_ir::Tensor::F64(a) => a.iter_mut().skip(3).step_by(10).for_each(|v| *v = f64::NAN),
            _ => {}
        }
        let threads = 1 + (c.seed % 2) as usize;
        let f = check_against_interp(&graph, &[x], Tolerance::EXACT, threads)
            .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert!(f.reference_kernels().is_empty(), "reference: {:?}", f.reference_kernels());
    }
}
