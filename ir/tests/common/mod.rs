//! Helpers shared by the `ir` integration tests: tensors and types from the text of the
//! generated case files (results are compared under `tfn-test-utils`' tolerance policy).

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
