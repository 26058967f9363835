//! Shared helpers of the backend tests: the JIT-vs-interpreter check (every SIMD level this
//! CPU runs, returned and caller buffers) under the test toolkit's tolerance policy
//! (`tfn-test-utils`, which also provides the random data).

#![allow(dead_code)]

use tfn_backend::{CompileOptions, CompiledFunction, TensorView};
use tfn_ir::{Graph, Tensor};
use tfn_test_utils::{compare, zeros_like, Tolerance};

pub fn views(ts: &[Tensor]) -> Vec<TensorView<'_>> {
    ts.iter().map(TensorView::from).collect()
}

/// Compiles `graph` (one thread unless `threads`), runs JIT and interpreter on `inputs`,
/// compares every output. Returns the compiled function for further checks.
pub fn check_against_interp(
    graph: &Graph,
    inputs: &[Tensor],
    tol: Tolerance,
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
            compare(a, b, Tolerance::EXACT)
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
            let stream = Default::default();
            tfn_backend::JitCompiler::new(CompileOptions { threads, simd, stream })
                .expect("host JIT")
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
