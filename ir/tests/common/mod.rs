//! Helpers shared by the `ir` integration tests: tensors from whitespace-separated literals, and
//! comparison with NumPy-style tolerances.

#![allow(dead_code)]

use ndarray::{ArrayD, IxDyn};
use tfn_ir::{DType, Tensor};

/// A tensor of `dtype` and `shape` from whitespace-separated literals (`nan`, `inf`, `true`).
pub fn tensor_from_text(dtype: DType, shape: &[usize], text: &str) -> Result<Tensor, String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    fn parse_all<T: std::str::FromStr>(words: &[&str]) -> Result<Vec<T>, String> {
        words.iter().map(|w| w.parse::<T>().map_err(|_| format!("bad literal `{w}`"))).collect()
    }
    fn build<T>(shape: &[usize], v: Vec<T>) -> Result<ArrayD<T>, String> {
        ArrayD::from_shape_vec(IxDyn(shape), v).map_err(|e| format!("{e}"))
    }
    Ok(match dtype {
        DType::Bool => Tensor::Bool(build(shape, parse_all::<bool>(&words)?)?),
        DType::I32 => Tensor::I32(build(shape, parse_all::<i32>(&words)?)?),
        DType::I64 => Tensor::I64(build(shape, parse_all::<i64>(&words)?)?),
        DType::F32 => Tensor::F32(build(
            shape,
            parse_all::<f64>(&words)?.into_iter().map(|x| x as f32).collect(),
        )?),
        DType::F64 => Tensor::F64(build(shape, parse_all::<f64>(&words)?)?),
        DType::I8 => Tensor::I8(build(shape, parse_all::<i8>(&words)?)?),
        DType::U8 => Tensor::U8(build(shape, parse_all::<u8>(&words)?)?),
        DType::F16 => Tensor::F16(build(
            shape,
            parse_all::<f64>(&words)?
                .into_iter()
                .map(|x| tfn_ir::half::f16::from_bits(tfn_ir::storage::bits::f64_to_f16(x)))
                .collect(),
        )?),
        DType::BF16 => Tensor::BF16(build(
            shape,
            parse_all::<f64>(&words)?
                .into_iter()
                .map(|x| tfn_ir::half::bf16::from_bits(tfn_ir::storage::bits::f64_to_bf16(x)))
                .collect(),
        )?),
    })
}

fn close(actual: f64, expected: f64, rtol: f64, atol: f64) -> bool {
    if expected.is_nan() || actual.is_nan() {
        return expected.is_nan() && actual.is_nan();
    }
    if expected.is_infinite() || actual.is_infinite() {
        return expected == actual;
    }
    (actual - expected).abs() <= atol + rtol * expected.abs()
}

/// `Ok` when `actual` equals `expected` in dtype and shape, and in value: exactly for bools and
/// integers, within `rtol`/`atol` for floats (NaN matches NaN, infinities must be equal).
pub fn compare(actual: &Tensor, expected: &Tensor) -> Result<(), String> {
    if actual.dtype() != expected.dtype() || actual.shape() != expected.shape() {
        return Err(format!(
            "got {}{:?}, expected {}{:?}",
            actual.dtype(),
            actual.shape(),
            expected.dtype(),
            expected.shape()
        ));
    }
    let (rtol, atol) = match expected.dtype() {
        DType::F32 => (1e-5, 1e-6),
        _ => (1e-12, 1e-12),
    };
    let mismatch = |i: usize, a: String, e: String| {
        Err(format!(
            "element {i}: got {a}, expected {e}\n  got      {actual:?}\n  expected {expected:?}"
        ))
    };
    match (actual, expected) {
        (Tensor::F32(a), Tensor::F32(e)) => {
            for (i, (&x, &y)) in a.iter().zip(e.iter()).enumerate() {
                if !close(x as f64, y as f64, rtol, atol) {
                    return mismatch(i, x.to_string(), y.to_string());
                }
            }
        }
        (Tensor::F64(a), Tensor::F64(e)) => {
            for (i, (&x, &y)) in a.iter().zip(e.iter()).enumerate() {
                if !close(x, y, rtol, atol) {
                    return mismatch(i, x.to_string(), y.to_string());
                }
            }
        }
        // Storage floats: the same value exactly (the expected one is NumPy's, or bits
        // computed independently), NaN matching NaN.
        (Tensor::F16(a), Tensor::F16(e)) => {
            for (i, (&x, &y)) in a.iter().zip(e.iter()).enumerate() {
                if x.to_bits() != y.to_bits() && !(x.is_nan() && y.is_nan()) {
                    return mismatch(i, x.to_string(), y.to_string());
                }
            }
        }
        (Tensor::BF16(a), Tensor::BF16(e)) => {
            for (i, (&x, &y)) in a.iter().zip(e.iter()).enumerate() {
                if x.to_bits() != y.to_bits() && !(x.is_nan() && y.is_nan()) {
                    return mismatch(i, x.to_string(), y.to_string());
                }
            }
        }
        _ => {
            if actual != expected {
                return Err(format!("got {actual:?}\nexpected {expected:?}"));
            }
        }
    }
    Ok(())
}

/// Parses `f32[2, 3]`-like `dtype [shape]` headers: `f32 [2, 3]`.
pub fn parse_type(text: &str) -> Result<(DType, Vec<usize>), String> {
    let (dtype, shape) = text.split_once(' ').ok_or_else(|| format!("bad type `{text}`"))?;
    let dtype: DType = dtype.parse().map_err(|()| format!("bad dtype `{dtype}`"))?;
    let inner = shape.trim().trim_start_matches('[').trim_end_matches(']');
    let shape = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>().map_err(|_| format!("bad size `{s}`")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((dtype, shape))
}
