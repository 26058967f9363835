//! Size binding (`bind_sizes`, `slice_range`) and the interpreter's API around the ops: extern
//! kernels, typed errors instead of panics, non-contiguous inputs, standard-layout outputs.

use ndarray::{array, ArrayD, IxDyn, ShapeBuilder};
use tfn_ir::bind::{slice_range, AxisRef};
use tfn_ir::interp::NoExterns;
use tfn_ir::*;

fn graph(text: &str) -> Graph {
    parse_graph(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// `x: f32[s0, s1]`, `y: f32[s1]`, `z: f32[s0, s0]`, with derived sizes.
const SYMBOLIC: &str = "\
func f(x: f32[s0, s1], y: f32[s1], z: f32[s0, s0]) -> () {
  sym s0 = input(param 0 axis 0, param 2 axis 0, param 2 axis 1)
  sym s1 = input(param 0 axis 1, param 1 axis 0)
  sym s2 = ((s0 * s1) / 2)
  sym s3 = slice_len(s1, -1, none, -2)
  sym s4 = (s3 - 1)
  return
}
";

#[test]
fn binds_input_and_derived_sizes() {
    let g = graph(SYMBOLIC);
    assert_eq!(bind_sizes(&g, &[&[2, 5], &[5], &[2, 2]]), Ok(vec![2, 5, 5, 3, 2]));
    assert_eq!(concrete_shape(&g.params[0].ty.shape, &[2, 5, 5, 3, 2]), vec![2, 5]);
}

#[test]
fn binding_errors_name_parameters_and_shapes() {
    let g = graph(SYMBOLIC);
    let cases: &[(&[&[usize]], &str)] = &[
        (
            &[&[3, 4], &[5], &[3, 3]],
            "`x` has shape [3, 4] but `y` has shape [5]: axis 1 of `x` must match axis 0 of `y` (4 vs 5)",
        ),
        (&[&[3, 4], &[4], &[5, 3]], "`x` has shape [3, 4] but `z` has shape [5, 3]: axis 0 must match (3 vs 5)"),
        (
            &[&[3, 4], &[4], &[3, 2]],
            "`x` has shape [3, 4] but `z` has shape [3, 2]: axis 0 of `x` must match axis 1 of `z` (3 vs 2)",
        ),
        (&[&[3, 4], &[4]], "expected 3 tensor argument(s), got 2"),
        (&[&[3, 4], &[4, 1], &[3, 3]], "`y` must have rank 1, but has shape [4, 1] (rank 2)"),
        (&[&[3, 3], &[3], &[3, 3]], "size `(size(x, 0) * size(x, 1)) / 2` = 9 / 2 is not a whole number"),
        (&[&[2, 0], &[0], &[2, 2]], "size `len(range(size(x, 1))[-1:end:-2]) - 1` would be negative (-1)"),
    ];
    for (shapes, message) in cases {
        let err = bind_sizes(&g, shapes).expect_err(message);
        assert_eq!(err.to_string(), *message);
    }
    let square = graph("func f(z: f32[s0, s0]) -> () {\n  sym s0 = input(param 0 axis 0, param 0 axis 1)\n  return\n}");
    let err = bind_sizes(&square, &[&[3, 2]]).expect_err("not square");
    assert_eq!(err.to_string(), "`z` has shape [3, 2]: axes 0 and 1 must match (3 vs 2)");
    let err = bind_sizes(&g, &[&[3, 4], &[5], &[3, 3]]).expect_err("mismatch");
    assert_eq!(
        err,
        BindError::Mismatch {
            first: AxisRef { param: "x".into(), axis: 1, shape: vec![3, 4] },
            second: AxisRef { param: "y".into(), axis: 0, shape: vec![5] },
        }
    );
}

#[test]
fn ceil_div_rounds_up_and_needs_a_positive_divisor() {
    let g = graph(
        "func f(x: f32[s0, s1]) -> () {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1)
  sym s2 = ceil_div((s0 + 1), s1)
  return
}",
    );
    assert!(print_graph(&g).contains("sym s2 = ceil_div((s0 + 1), s1)"));
    for (x, want) in [([0, 1], 1), ([6, 7], 1), ([6, 3], 3), ([7, 4], 2), ([0, 5], 1)] {
        assert_eq!(bind_sizes(&g, &[&x]).map(|s| s[2]), Ok(want), "{x:?}");
    }
    let err = bind_sizes(&g, &[&[3, 0]]).expect_err("zero divisor");
    assert_eq!(
        err.to_string(),
        "size `ceil((size(x, 0) + 1) / size(x, 1))` divides by 0, which is not positive"
    );
    let folded = tfn_ir::lower::fold_dims(&DimExpr::CeilDiv(
        Box::new(DimExpr::Dim(Dim::Const(7))),
        Box::new(DimExpr::Dim(Dim::Const(2))),
    ));
    assert_eq!(folded, DimExpr::Dim(Dim::Const(4)));
}

#[test]
fn static_dims_and_malformed_graphs_are_errors() {
    let g = graph("func f(x: f32[2, s0]) -> () {\n  sym s0 = input(param 0 axis 1)\n  return\n}");
    let err = bind_sizes(&g, &[&[3, 4]]).expect_err("static dim");
    assert_eq!(err.to_string(), "`x` has shape [3, 4], but axis 0 must be 2");

    let mut bad = g.clone();
    bad.syms[0] = SymDef::Input { sources: vec![(0, 7)] };
    assert!(matches!(bind_sizes(&bad, &[&[2, 4]]), Err(BindError::Malformed(_))));
    bad.syms[0] = SymDef::Derived(DimExpr::Dim(Dim::Sym(Sym(0))));
    assert!(matches!(bind_sizes(&bad, &[&[2, 4]]), Err(BindError::Malformed(_))));
    bad.params[0].ty.shape = Shape(vec![Dim::Const(2), Dim::Sym(Sym(9))]);
    assert!(matches!(bind_sizes(&bad, &[&[2, 4]]), Err(BindError::Malformed(_))));
}

#[test]
fn slice_range_is_python_slicing() {
    // (size, start, end, step, first index, length) from Python's `slice.indices`.
    type Row = (i64, i64, Option<i64>, i64, i64, usize);
    let table: &[Row] = &[
        (10, 0, None, 1, 0, 10),
        (10, 2, Some(7), 2, 2, 3),
        (10, -3, None, 1, 7, 3),
        (10, 8, Some(2), -2, 8, 3),
        (10, -1, None, -1, 9, 10),
        (10, 5, None, -3, 5, 2),
        (10, 100, Some(-100), -1, 9, 10),
        (10, -100, Some(100), 3, 0, 4),
        (10, 3, Some(3), 1, 0, 0),
        (10, 7, Some(2), 1, 0, 0),
        (10, 0, Some(-1), -1, 0, 0),
        (10, -2, Some(-12), -4, 8, 3),
        (0, 0, None, 1, 0, 0),
        (0, -1, None, -1, 0, 0),
        (1, 5, None, -1, 0, 1),
        (7, -8, None, 2, 0, 4),
    ];
    for &(size, start, end, step, first, len) in table {
        let (got_first, got_len) = slice_range(size, start, end, step).expect("step != 0");
        assert_eq!(got_len, len, "{size} {start} {end:?} {step}");
        if len > 0 {
            assert_eq!(got_first, first, "{size} {start} {end:?} {step}");
        }
    }
    assert_eq!(slice_range(5, 0, None, 0), None);
}

struct Scale;

impl ExternKernels for Scale {
    fn call(
        &self,
        name: &str,
        attrs: &[Attr],
        inputs: &[Tensor],
        out_shape: &[usize],
        out_dtype: DType,
    ) -> Result<Tensor, String> {
        match (name, attrs, inputs) {
            ("scale", [Attr::Float(k)], [Tensor::F32(x)]) if out_dtype == DType::F32 => {
                assert_eq!(out_shape, x.shape());
                Ok(Tensor::F32(x.mapv(|v| v * *k as f32)))
            }
            ("bad_shape", _, _) => Ok(Tensor::F32(ArrayD::zeros(IxDyn(&[1])))),
            _ => Err(format!("cannot run `{name}`")),
        }
    }
}

const EXTERN: &str = "\
func f(x: f32[s0]) -> (f32[s0]) {
  sym s0 = input(param 0 axis 0)
  %0 = param 0 : f32[s0]
  %1 = extern.scale %0 {attrs=[2.0]} : f32[s0]
  %2 = extern.bad_shape %0 {attrs=[]} : f32[s0]
  return %1
}
";

#[test]
fn extern_kernels_are_called_and_checked() {
    let g = graph(EXTERN);
    let x = Tensor::F32(array![1.0f32, 2.0, 3.0].into_dyn());
    let err =
        run_with_externs(&g, std::slice::from_ref(&x), &Scale).expect_err("bad_shape returns [1]");
    assert_eq!(
        err.to_string(),
        "extern op `bad_shape` (%2): the kernel returned f32[1], expected f32[3]"
    );
    let mut only_scale = g.clone();
    only_scale.nodes.pop();
    assert_eq!(
        run_with_externs(&only_scale, std::slice::from_ref(&x), &Scale),
        Ok(vec![Tensor::F32(array![2.0f32, 4.0, 6.0].into_dyn())])
    );
    let err = run_with_externs(&only_scale, std::slice::from_ref(&x), &NoExterns)
        .expect_err("no kernels");
    assert_eq!(
        err.to_string(),
        "extern op `scale` (%1): no kernel is registered for extern op `scale`"
    );
    assert!(matches!(run(&only_scale, &[x]), Err(InterpError::Extern { .. })));
}

#[test]
fn inconsistent_graphs_are_internal_errors_not_panics() {
    let base = "func f(x: f32[2, 3]) -> () {\n  %0 = param 0 : f32[2, 3]\n";
    let x = Tensor::F32(ArrayD::zeros(IxDyn(&[2, 3])));
    for body in [
        "  %1 = exp %0 : f32[3, 2]\n  return\n}",
        "  %1 = exp %0 : f64[2, 3]\n  return\n}",
        "  %1 = transpose %0 {perm=[0, 0]} : f32[2, 3]\n  return\n}",
        "  %1 = sum %0 {axes=[5], keepdim=false} : f32[2, 3]\n  return\n}",
        "  %1 = param 4 : f32[2, 3]\n  return\n}",
        "  %1 = matmul %0, %0 : f32[2, 3]\n  return\n}",
        "  %1 = exp %0, %0 : f32[2, 3]\n  return\n}",
        "  %1 = slice %0 {axis=0, start=0, end=none, step=0} : f32[2, 3]\n  return\n}",
    ] {
        let g = graph(&format!("{base}{body}"));
        match run(&g, std::slice::from_ref(&x)) {
            Err(InterpError::Internal { .. } | InterpError::Shape { .. }) => {}
            other => panic!("{body}: expected an internal or shape error, got {other:?}"),
        }
    }
    let g = graph(&format!("{base}  %1 = div %0, %0 : f32[2, 3]\n  return\n}}"));
    let err = run(&g, &[Tensor::I32(ArrayD::zeros(IxDyn(&[2, 3])))]).expect_err("dtype");
    assert_eq!(err.to_string(), "`x` must have dtype f32, got i32");
    let g = graph(
        "func f(x: i32[2]) -> () {\n  %0 = param 0 : i32[2]\n  %1 = exp %0 : i32[2]\n  return\n}",
    );
    let err = run(&g, &[Tensor::I32(ArrayD::zeros(IxDyn(&[2])))]).expect_err("exp of ints");
    assert_eq!(err.to_string(), "`exp` (%1) is not defined for i32");
}

#[test]
fn non_contiguous_inputs_and_standard_layout_outputs() {
    let g = graph(
        "func f(x: i32[2, 3]) -> (i32[6], i32[3, 2], i32[2, 3]) {
  %0 = param 0 : i32[2, 3]
  %1 = reshape %0 : i32[6]
  %2 = transpose %0 {perm=[1, 0]} : i32[3, 2]
  %3 = neg %0 : i32[2, 3]
  return %1, %2, %3
}",
    );
    // Column-major storage of [[0, 1, 2], [3, 4, 5]].
    let x = ArrayD::from_shape_vec(IxDyn(&[2, 3]).f(), vec![0, 3, 1, 4, 2, 5]).expect("shape");
    assert!(!x.is_standard_layout());
    let out = run(&g, &[Tensor::I32(x)]).expect("runs");
    assert_eq!(out[0], Tensor::I32(array![0, 1, 2, 3, 4, 5].into_dyn()));
    assert_eq!(out[1], Tensor::I32(array![[0, 3], [1, 4], [2, 5]].into_dyn()));
    assert_eq!(out[2], Tensor::I32(array![[0, -1, -2], [-3, -4, -5]].into_dyn()));
    for t in &out {
        let Tensor::I32(a) = t else { panic!("dtype") };
        assert!(a.is_standard_layout());
    }
}

#[test]
fn values_too_large_to_allocate_are_refused_before_running() {
    // An outer product of a long vector with itself: 300000² f32 is 360 GB.
    let g = graph(
        "\
func outer(x: f32[s0]) -> (f32[s0, s0]) {
  sym s0 = input(param 0 axis 0)
  %0 = param 0 : f32[s0]
  %1 = reshape %0 : f32[s0, 1]
  %2 = reshape %0 : f32[1, s0]
  %3 = mul %1, %2 : f32[s0, s0]
  return %3
}
",
    );
    assert!(bind_sizes(&g, &[&[1000]]).is_ok());
    match bind_sizes(&g, &[&[300_000]]) {
        Err(BindError::TooLarge { value: 3, shape, .. }) => {
            assert_eq!(shape, vec![300_000, 300_000])
        }
        other => panic!("expected TooLarge for the product, got {other:?}"),
    }
    let x = Tensor::F32(ArrayD::zeros(IxDyn(&[300_000])));
    assert!(matches!(
        interp::run(&g, &[x]),
        Err(interp::InterpError::Bind(BindError::TooLarge { .. }))
    ));
    // Only the values a call allocates count: a compiled function that never stores the
    // product (a reduction fused with it) is not refused for it.
    use tfn_ir::bind::{bind_sizes_allocating, Allocated};
    assert!(bind_sizes_allocating(&g, &[&[300_000]], Allocated::Only(&[ValueId(0)])).is_ok());
    let only_product = [ValueId(3)];
    let e = bind_sizes_allocating(&g, &[&[300_000]], Allocated::Only(&only_product));
    assert!(matches!(e, Err(BindError::TooLarge { value: 3, bytes: Some(360_000_000_000), .. })));
    // A size past 64 bits is said so (not printed as 2^64 - 1 bytes).
    let e = bind_sizes(&g, &[&[usize::MAX / 2]]).expect_err("overflows");
    assert!(matches!(e, BindError::TooLarge { bytes: None, .. }), "{e:?}");
    let text = e.to_string();
    assert!(text.contains("more than 2^64 bytes") && !text.contains("18446744073709551615"));
}

#[test]
fn an_invalid_tensor_limit_is_an_error_naming_the_variable_and_value() {
    use tfn_ir::bind::{parse_max_tensor_bytes, DEFAULT_MAX_TENSOR_BYTES};
    let parse = |v: &str| parse_max_tensor_bytes(Some(v.into()));
    assert_eq!(parse_max_tensor_bytes(None), Ok(DEFAULT_MAX_TENSOR_BYTES));
    assert_eq!(parse("1024"), Ok(1024));
    assert_eq!(parse("0"), Ok(0));
    // Set but empty is not "unset": an error like any other value that is not a number.
    assert!(parse("").is_err());
    for bad in ["abc", "-1", "1e23", "+5", " 5", "5 ", "1.5", "99999999999999999999999", ""] {
        let e = parse(bad).expect_err(bad);
        let text = e.to_string();
        assert!(text.contains("TFN_MAX_TENSOR_BYTES") && text.contains(bad), "{text}");
    }
}
