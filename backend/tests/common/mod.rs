//! Shared helpers of the backend tests: a seeded RNG, random tensors for a graph's
//! parameters, and the JIT-vs-interpreter comparison with documented tolerances.

#![allow(dead_code)]

use ndarray::{ArrayD, IxDyn};
use tfn_backend::{CompileOptions, CompiledFunction, TensorView};
use tfn_ir::half::{bf16, f16};
use tfn_ir::{DType, Dim, Graph, SymDef, Tensor};

/// The project's one generator (`tfn_ir::rng::SplitMix`), over a bare `u64` state.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut g = tfn_ir::rng::SplitMix(self.0);
        let next = g.next_u64();
        self.0 = g.0;
        next
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next() >> 11) as f64 / (1u64 << 53) as f64)
    }
}

pub fn random_tensor(rng: &mut Rng, dtype: DType, shape: &[usize], range: (f64, f64)) -> Tensor {
    let n: usize = shape.iter().product();
    let s = IxDyn(shape);
    let floats: Vec<f64> = (0..n).map(|_| rng.uniform(range.0, range.1)).collect();
    match dtype {
        DType::F32 => Tensor::F32(
            ArrayD::from_shape_vec(s, floats.iter().map(|&x| x as f32).collect()).unwrap(),
        ),
        DType::F64 => Tensor::F64(ArrayD::from_shape_vec(s, floats).unwrap()),
        DType::I32 => Tensor::I32(
            ArrayD::from_shape_vec(s, floats.iter().map(|&x| x.round() as i32).collect()).unwrap(),
        ),
        DType::I64 => Tensor::I64(
            ArrayD::from_shape_vec(s, floats.iter().map(|&x| x.round() as i64).collect()).unwrap(),
        ),
        DType::Bool => Tensor::Bool(
            ArrayD::from_shape_vec(s, floats.iter().map(|&x| x > 0.0).collect()).unwrap(),
        ),
        DType::I8 => Tensor::I8(
            ArrayD::from_shape_vec(s, floats.iter().map(|&x| x.round() as i8).collect()).unwrap(),
        ),
        DType::U8 => Tensor::U8(
            ArrayD::from_shape_vec(s, floats.iter().map(|&x| x.round() as u8).collect()).unwrap(),
        ),
        DType::F16 => Tensor::F16(
            ArrayD::from_shape_vec(s, floats.iter().map(|&x| f16::from_f64(x)).collect()).unwrap(),
        ),
        DType::BF16 => Tensor::BF16(
            ArrayD::from_shape_vec(s, floats.iter().map(|&x| bf16::from_f64(x)).collect()).unwrap(),
        ),
    }
}

/// Random inputs for `graph`: every input symbol gets a size from `sizes` (cycled by the RNG).
pub fn random_inputs(
    rng: &mut Rng,
    graph: &Graph,
    sizes: &[usize],
    range: (f64, f64),
) -> Vec<Tensor> {
    let sym_values: Vec<usize> = graph
        .syms
        .iter()
        .map(|d| match d {
            SymDef::Input { .. } => sizes[rng.below(sizes.len())],
            SymDef::Derived(_) => 0,
        })
        .collect();
    graph
        .params
        .iter()
        .map(|p| {
            let shape: Vec<usize> =
                p.ty.shape
                    .dims()
                    .iter()
                    .map(|d| match d {
                        Dim::Const(c) => *c as usize,
                        Dim::Sym(s) => sym_values[s.0 as usize],
                    })
                    .collect();
            random_tensor(rng, p.ty.dtype, &shape, range)
        })
        .collect()
}

/// Tolerances of a comparison: `|jit - ref| <= atol + rtol * |ref|`.
#[derive(Clone, Copy, Debug)]
pub struct Tol {
    pub rtol: f64,
    pub atol: f64,
}

/// The default for f32 (and f64) results.
pub const TOL: Tol = Tol { rtol: 1e-5, atol: 1e-6 };

/// Compares two tensors; returns a description of the first difference.
pub fn compare(got: &Tensor, want: &Tensor, tol: Tol) -> Result<(), String> {
    if got.dtype() != want.dtype() || got.shape() != want.shape() {
        return Err(format!(
            "got {}{:?}, want {}{:?}",
            got.dtype(),
            got.shape(),
            want.dtype(),
            want.shape()
        ));
    }
    let close = |a: f64, b: f64| {
        (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= tol.atol + tol.rtol * b.abs()
    };
    let pairs: Vec<(f64, f64)> = match (got, want) {
        (Tensor::F32(a), Tensor::F32(b)) => {
            a.iter().zip(b).map(|(&x, &y)| (x as f64, y as f64)).collect()
        }
        (Tensor::F64(a), Tensor::F64(b)) => a.iter().zip(b).map(|(&x, &y)| (x, y)).collect(),
        (Tensor::I32(a), Tensor::I32(b)) => {
            a.iter().zip(b).map(|(&x, &y)| (x as f64, y as f64)).collect()
        }
        (Tensor::I64(a), Tensor::I64(b)) => {
            a.iter().zip(b).map(|(&x, &y)| (x as f64, y as f64)).collect()
        }
        (Tensor::Bool(a), Tensor::Bool(b)) => {
            a.iter().zip(b).map(|(&x, &y)| (x as u8 as f64, y as u8 as f64)).collect()
        }
        (Tensor::I8(a), Tensor::I8(b)) => {
            a.iter().zip(b).map(|(&x, &y)| (x as f64, y as f64)).collect()
        }
        (Tensor::U8(a), Tensor::U8(b)) => {
            a.iter().zip(b).map(|(&x, &y)| (x as f64, y as f64)).collect()
        }
        (Tensor::F16(a), Tensor::F16(b)) => {
            a.iter().zip(b).map(|(&x, &y)| (x.to_f64(), y.to_f64())).collect()
        }
        (Tensor::BF16(a), Tensor::BF16(b)) => {
            a.iter().zip(b).map(|(&x, &y)| (x.to_f64(), y.to_f64())).collect()
        }
        _ => return Err("dtype mismatch".into()),
    };
    let exact = !got.dtype().is_float();
    for (i, (a, b)) in pairs.into_iter().enumerate() {
        let ok = if exact { a == b } else { close(a, b) };
        if !ok {
            return Err(format!("element {i}: got {a}, want {b}"));
        }
    }
    Ok(())
}

pub fn views(ts: &[Tensor]) -> Vec<TensorView<'_>> {
    ts.iter().map(TensorView::from).collect()
}

/// Compiles `graph` (one thread unless `threads`), runs JIT and interpreter on `inputs`,
/// compares every output. Returns the compiled function for further checks.
pub fn check_against_interp(
    graph: &Graph,
    inputs: &[Tensor],
    tol: Tol,
    threads: usize,
) -> Result<CompiledFunction, String> {
    let f = CompiledFunction::compile(graph, &CompileOptions { threads, ..Default::default() })
        .map_err(|e| e.to_string())?;
    let want = tfn_ir::interp::run(graph, inputs).map_err(|e| format!("interp: {e}"))?;
    let got = f.run(&views(inputs)).map_err(|e| format!("jit: {e}"))?;
    for (o, (g, w)) in got.iter().zip(&want).enumerate() {
        compare(g, w, tol).map_err(|e| format!("output {o}: {e}"))?;
    }
    // The forced fallbacks: every other SIMD level this CPU runs gives the same bits.
    for simd in other_simd_levels() {
        let g = compiler(threads, simd)
            .compile(graph)
            .map_err(|e| format!("simd {}: {e}", simd.name()))?;
        let other = g.run(&views(inputs)).map_err(|e| format!("jit simd {}: {e}", simd.name()))?;
        for (o, (a, b)) in other.iter().zip(&got).enumerate() {
            compare(a, b, Tol { rtol: 0.0, atol: 0.0 })
                .map_err(|e| format!("output {o} at simd {} vs default: {e}", simd.name()))?;
        }
    }
    // The same through caller buffers.
    let mut outs: Vec<Tensor> = want.iter().map(zeros_like).collect();
    {
        let mut views_mut: Vec<tfn_backend::TensorViewMut<'_>> =
            outs.iter_mut().map(Into::into).collect();
        f.run_into(&views(inputs), &mut views_mut).map_err(|e| format!("jit into: {e}"))?;
    }
    for (o, (g, w)) in outs.iter().zip(&want).enumerate() {
        compare(g, w, tol).map_err(|e| format!("output {o} (run_into): {e}"))?;
    }
    Ok(f)
}

/// One JIT module per (threads, level) for the whole test binary: a module's code lives as
/// long as the process, so a module per compiled case would grow without bound.
pub fn compiler(threads: usize, simd: tfn_backend::SimdLevel) -> tfn_backend::JitCompiler {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    type Compilers = Mutex<HashMap<(usize, tfn_backend::SimdLevel), tfn_backend::JitCompiler>>;
    static COMPILERS: OnceLock<Compilers> = OnceLock::new();
    let map = COMPILERS.get_or_init(|| Mutex::new(HashMap::new()));
    let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
    map.entry((threads, simd))
        .or_insert_with(|| {
            tfn_backend::JitCompiler::new(CompileOptions { threads, simd }).expect("host JIT")
        })
        .clone()
}

/// The SIMD levels this CPU runs besides the default's (`TFN_SIMD` or the widest): the forced
/// fallbacks every JIT check also runs, so a machine without AVX-512 is exercised here too.
pub fn other_simd_levels() -> Vec<tfn_backend::SimdLevel> {
    use tfn_backend::SimdLevel;
    let default = CompileOptions::default().simd;
    [SimdLevel::V128, SimdLevel::Avx2, SimdLevel::Avx512]
        .into_iter()
        .filter(|&l| l != default && l.clamp_to_cpu() == l)
        .collect()
}

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

/// Every element as its bit pattern (NaN payloads and signed zeros included).
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
