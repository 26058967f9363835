//! Equalities between sizes that lowering relies on but cannot substitute away: a derived
//! size (`slice`, `concat`, `reshape(x, [-1])`) unified with another size or a constant, and
//! a `reshape` to a static shape of an input with several runtime sizes. Each becomes one of
//! the graph's `checks`, which `bind_sizes` evaluates: a call whose sizes break one fails at
//! binding instead of computing garbage (or reading out of bounds in compiled code).

use super::tests::lower;
use crate::bind::BindError;
use crate::interp::InterpError;
use crate::tensor::Tensor;
use ndarray::ArrayD;

const SRC: &str = r#"
fn two_slices(Tensor x) -> Tensor {
    return slice(x, dim=1, start=1, end=3) * slice(x, dim=1, start=-2)
}
fn three_slices(Tensor x) -> Tensor {
    return slice(x, dim=1, start=1, end=3) * slice(x, dim=1, start=-2) + slice(x, dim=1, start=-2)
}
fn shifted(Tensor x) -> Tensor {
    return slice(x, dim=0, start=1) + x
}
fn flat_six(Tensor x) -> Tensor {
    return reshape(x, [-1]) + full([6], 1.0, dtype=f64)
}
fn to_six(Tensor x) -> Tensor {
    return reshape(x, [6])
}
fn two_concats(Tensor x, Tensor y) -> Tensor {
    return concat([x, y], dim=0) + concat([y, x], dim=0)
}
"#;

fn ramp(shape: &[usize]) -> Tensor {
    let n = shape.iter().product::<usize>();
    Tensor::F64(ArrayD::from_shape_vec(shape.to_vec(), (0..n).map(|i| i as f64).collect()).unwrap())
}

/// Runs `name` lowered for `args` on inputs of `shapes`; `Ok` holds the first output.
fn run(name: &str, args: &str, shapes: &[&[usize]]) -> Result<Tensor, InterpError> {
    let inst = lower(SRC, name, args).unwrap_or_else(|e| panic!("{name}: {e}"));
    crate::verify::verify(&inst.graph).unwrap_or_else(|e| panic!("{name}: {e}"));
    let inputs: Vec<Tensor> = shapes.iter().map(|s| ramp(s)).collect();
    crate::run(&inst.graph, &inputs).map(|mut out| out.remove(0))
}

fn is_check_failure(r: &Result<Tensor, InterpError>) -> bool {
    matches!(r, Err(InterpError::Bind(BindError::SizeCheck { .. })))
}

#[test]
fn equal_derived_sizes_lower_and_are_checked() {
    // [1:3] and [-2:] of an axis of 4 both have 2 elements: columns 1, 2 times 2, 3.
    let out = run("two_slices", "f64[?, ?]", &[&[1, 4]]).unwrap();
    assert_eq!(out, Tensor::F64(ArrayD::from_shape_vec(vec![1, 2], vec![2.0, 6.0]).unwrap()));
    // Of an axis of 2, [1:3] has 1 element but [-2:] has 2.
    let bad = run("two_slices", "f64[?, ?]", &[&[1, 2]]);
    assert!(is_check_failure(&bad), "{bad:?}");
    // The third slice's size is the one unified away: it stands for its representative.
    let out = run("three_slices", "f64[?, ?]", &[&[1, 4]]).unwrap();
    assert_eq!(out, Tensor::F64(ArrayD::from_shape_vec(vec![1, 2], vec![4.0, 9.0]).unwrap()));
    let ok = run("two_concats", "f64[?], f64[?]", &[&[2], &[3]]);
    assert!(ok.is_ok(), "{ok:?}");
}

#[test]
fn checks_print_and_parse_back() {
    let g = lower(SRC, "two_slices", "f64[?, ?]").unwrap().graph;
    assert_eq!(g.checks.len(), 1, "{g:?}");
    let text = crate::text::print_graph(&g);
    assert!(text.contains("  check s"), "{text}");
    assert_eq!(crate::text::parse_graph(&text), Ok(g));
}

#[test]
fn a_derived_size_equal_to_its_own_input_is_checked() {
    assert!(run("shifted", "f64[?]", &[&[0]]).is_ok());
    let bad = run("shifted", "f64[?]", &[&[3]]);
    assert!(is_check_failure(&bad), "{bad:?}");
}

#[test]
fn a_derived_size_equal_to_a_constant_is_checked() {
    assert!(run("flat_six", "f64[?, ?]", &[&[2, 3]]).is_ok());
    let bad = run("flat_six", "f64[?, ?]", &[&[2, 4]]);
    assert!(is_check_failure(&bad), "{bad:?}");
}

#[test]
fn a_static_reshape_of_several_runtime_sizes_checks_the_count() {
    assert!(run("to_six", "f64[?, ?]", &[&[3, 2]]).is_ok());
    let bad = run("to_six", "f64[?, ?]", &[&[2, 4]]);
    assert!(is_check_failure(&bad), "{bad:?}");
}
