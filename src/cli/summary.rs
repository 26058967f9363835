//! One-line summaries of tensors for `tfnc run` without `--out`.

use crate::Tensor;

/// `name: f32[2, 3] min=-1 max=2.5 mean=0.25 [0.5, 1, ...]`.
pub(super) fn summarize(name: &str, t: &Tensor) -> String {
    let values: Vec<f64> = match t {
        Tensor::Bool(a) => a.iter().map(|&b| b as u8 as f64).collect(),
        Tensor::I32(a) => a.iter().map(|&v| v as f64).collect(),
        Tensor::I64(a) => a.iter().map(|&v| v as f64).collect(),
        Tensor::F32(a) => a.iter().map(|&v| v as f64).collect(),
        Tensor::F64(a) => a.iter().copied().collect(),
        Tensor::I8(a) => a.iter().map(|&v| v.into()).collect(),
        Tensor::U8(a) => a.iter().map(|&v| v.into()).collect(),
        Tensor::F16(a) => a.iter().map(|v| v.to_f64()).collect(),
        Tensor::BF16(a) => a.iter().map(|v| v.to_f64()).collect(),
    };
    let head: Vec<String> = values.iter().take(6).map(|v| format!("{v}")).collect();
    let more = if values.len() > 6 { ", ..." } else { "" };
    let mut line = format!("{name}: {}{:?}", t.dtype(), t.shape());
    if !values.is_empty() {
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        line.push_str(&format!(" min={min} max={max} mean={mean}"));
    }
    line.push_str(&format!(" [{}{more}]", head.join(", ")));
    line
}
