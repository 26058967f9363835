//! The module `build.rs` generates from `examples/typed/ops/nn.tfn` with `tfn-build`'s AOT
//! mode, compiled with `deny(warnings)`: the generated code must compile cleanly.

#![deny(warnings)]

/// `examples/typed/ops/nn.tfn`'s functions, built ahead of time for the signatures in
/// `build.rs`.
pub mod nn {
    include!(concat!(env!("OUT_DIR"), "/nn.rs"));
}

use tfn_rt::Tensor;

/// `name: f32[2, 3] min=-0.1588 max=1.955 mean=0.4734 [-0.1588, 0, 0.3457, ...]`, as
/// `tfnc run` (and the JIT example, `tfn::cli::summary`) prints a result, for f32 tensors.
pub fn summarize(name: &str, t: &Tensor) -> String {
    let values: Vec<f64> = match t {
        Tensor::F32(a) => a.iter().map(|&v| v.into()).collect(),
        Tensor::F64(a) => a.iter().copied().collect(),
        other => return format!("{name}: {}{:?}", other.dtype(), other.shape()),
    };
    let head: Vec<String> = values.iter().take(6).map(|&v| number(v)).collect();
    let more = if values.len() > 6 { ", ..." } else { "" };
    let mut line = format!("{name}: {}{:?}", t.dtype(), t.shape());
    if !values.is_empty() {
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        line.push_str(&format!(" min={} max={} mean={}", number(min), number(max), number(mean)));
    }
    line.push_str(&format!(" [{}{more}]", head.join(", ")));
    line
}

/// `v` to 4 significant digits (whole numbers exactly).
fn number(v: f64) -> String {
    if !v.is_finite() || (v == v.trunc() && v.abs() < 1e15) {
        return format!("{v}");
    }
    let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 12) as usize;
    let text = format!("{v:.digits$}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}
