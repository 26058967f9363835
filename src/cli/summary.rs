//! One-line summaries of tensors, as `tfnc run` prints results without `--out` (and the
//! examples print theirs): dtype, shape, range, mean and the first values, each number to 4
//! significant digits.

use crate::Tensor;

/// The values shown after the statistics.
const HEAD: usize = 6;

/// `name: f32[2, 3] min=-1 max=2.5 mean=0.25 [0.5, 1, -1, 2.5, 0, -0.75]` (the first six
/// values in row-major order, then `...` if there are more). Integers print exactly, floats to
/// 4 significant digits; an empty tensor prints `[]`.
pub fn summarize(name: &str, t: &Tensor) -> String {
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
    let head: Vec<String> = values.iter().take(HEAD).map(|&v| number(v)).collect();
    let more = if values.len() > HEAD { ", ..." } else { "" };
    let mut line = format!("{name}: {}{:?}", t.dtype(), t.shape());
    if !values.is_empty() {
        // As NumPy's `min`/`max`: a NaN anywhere makes them NaN.
        let nan = |f: fn(f64, f64) -> f64| {
            move |a: f64, b: f64| if a.is_nan() || b.is_nan() { f64::NAN } else { f(a, b) }
        };
        let min = values.iter().copied().fold(f64::INFINITY, nan(f64::min));
        let max = values.iter().copied().fold(f64::NEG_INFINITY, nan(f64::max));
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        line.push_str(&format!(" min={} max={} mean={}", number(min), number(max), number(mean)));
    }
    line.push_str(&format!(" [{}{more}]", head.join(", ")));
    line
}

/// `v` to 4 significant digits: `0.3457`, `1.955`, `-12`, `1.235e-7`, `inf`, `NaN`; whole
/// numbers below 10^15 print exactly.
pub fn number(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    if v == v.trunc() && v.abs() < 1e15 {
        return format!("{}", v as i64);
    }
    let magnitude = v.abs().log10().floor();
    if !(-4.0..6.0).contains(&magnitude) {
        let text = format!("{v:.3e}");
        // `1.500e-7` -> `1.5e-7`.
        return match text.split_once('e') {
            Some((mantissa, exponent)) => format!("{}e{exponent}", trim_zeros(mantissa)),
            None => text,
        };
    }
    let decimals = (3.0 - magnitude).max(0.0) as usize;
    trim_zeros(&format!("{v:.decimals$}")).to_string()
}

/// `0.3400` -> `0.34`, `2.000` -> `2`.
fn trim_zeros(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_people_write_them() {
        let cases = [
            (0.0, "0"),
            (-12.0, "-12"),
            (0.345714, "0.3457"),
            (1.95459, "1.955"),
            (-0.15880796, "-0.1588"),
            (123456.7, "123457"),
            (2.384185791015625e-7, "2.384e-7"),
            (0.5, "0.5"),
            (f64::INFINITY, "inf"),
            (f64::NAN, "NaN"),
            (1e20, "1e20"),
        ];
        for (v, expected) in cases {
            assert_eq!(number(v), expected, "{v}");
        }
    }

    #[test]
    fn a_summary_has_dtype_shape_statistics_and_the_first_values() {
        let t = Tensor::F32(
            ndarray::ArrayD::from_shape_vec(vec![2, 4], (0..8).map(|i| i as f32 * 0.25).collect())
                .unwrap(),
        );
        assert_eq!(
            summarize("y", &t),
            "y: f32[2, 4] min=0 max=1.75 mean=0.875 [0, 0.25, 0.5, 0.75, 1, 1.25, ...]"
        );
        let empty = Tensor::I64(ndarray::ArrayD::zeros(vec![0, 3]));
        assert_eq!(summarize("e", &empty), "e: i64[0, 3] []");
        let nans = Tensor::F32(ndarray::ArrayD::from_elem(vec![2], f32::NAN));
        assert_eq!(summarize("n", &nans), "n: f32[2] min=NaN max=NaN mean=NaN [NaN, NaN]");
    }
}
