//! Small tensor utilities the tests share: [`zeros_like`] (caller-provided output buffers) and
//! [`bits`] (bit-for-bit identity, where [`crate::Tolerance::EXACT`] is not strict enough).

use ndarray::{ArrayD, IxDyn};
use tfn_ir::half::{bf16, f16};
use tfn_ir::{DType, Tensor};

/// A tensor of zeros (false) with `t`'s dtype and shape.
pub fn zeros_like(t: &Tensor) -> Tensor {
    let s = IxDyn(t.shape());
    match t.dtype() {
        DType::Bool => Tensor::Bool(ArrayD::from_elem(s, false)),
        DType::I32 => Tensor::I32(ArrayD::zeros(s)),
        DType::I64 => Tensor::I64(ArrayD::zeros(s)),
        DType::F32 => Tensor::F32(ArrayD::zeros(s)),
        DType::F64 => Tensor::F64(ArrayD::zeros(s)),
        DType::I8 => Tensor::I8(ArrayD::zeros(s)),
        DType::U8 => Tensor::U8(ArrayD::zeros(s)),
        DType::F16 => Tensor::F16(ArrayD::from_elem(s, f16::ZERO)),
        DType::BF16 => Tensor::BF16(ArrayD::from_elem(s, bf16::ZERO)),
    }
}

/// Every element as its bit pattern, in row-major order (NaN payloads and signed zeros
/// included): two results are the same bits when their `bits` are equal.
pub fn bits(t: &Tensor) -> Vec<u64> {
    match t {
        Tensor::Bool(a) => a.iter().map(|&x| u64::from(x)).collect(),
        Tensor::I8(a) => a.iter().map(|&x| x as u8 as u64).collect(),
        Tensor::U8(a) => a.iter().map(|&x| u64::from(x)).collect(),
        Tensor::I32(a) => a.iter().map(|&x| x as u32 as u64).collect(),
        Tensor::I64(a) => a.iter().map(|&x| x as u64).collect(),
        Tensor::F16(a) => a.iter().map(|x| u64::from(x.to_bits())).collect(),
        Tensor::BF16(a) => a.iter().map(|x| u64::from(x.to_bits())).collect(),
        Tensor::F32(a) => a.iter().map(|x| u64::from(x.to_bits())).collect(),
        Tensor::F64(a) => a.iter().map(|x| x.to_bits()).collect(),
    }
}
