//! Thread counts never change a result: every `tests/cases/*.tir` graph (loops, row and column
//! reductions, full reductions, scans, arg-reductions, matmuls with epilogues, strided copies)
//! runs on 1, 2, 3 and 4 threads at sizes above the parallel thresholds — odd sizes, so chunk
//! boundaries, vector tails and GEMM edge tiles all occur — and every output must be the same
//! bits as on one thread, and so must every output streamed to memory (`Streaming::Always`).
//! The split is a function of the sizes and the thread count only, and chunks that are summed
//! (a long reduction's) have a fixed size, so this holds by construction; this test keeps it
//! so.

use crate::common;

use common::views;
use std::path::Path;
use tfn_backend::{CompileOptions, CompiledFunction, Streaming};
use tfn_ir::Tensor;
use tfn_test_utils::{bits, random_inputs, Rng};

/// An odd size per symbol such that a full-rank parameter has at least `elements` elements.
fn odd_size(rank: usize, elements: usize) -> usize {
    let mut s = (elements as f64).powf(1.0 / rank.max(1) as f64).ceil() as usize;
    while s.pow(rank.max(1) as u32) < elements {
        s += 1;
    }
    s | 1
}

fn check_case(path: &Path, elements: usize) -> Result<(), String> {
    let src = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let graph = tfn_ir::text::parse_graph(&src).map_err(|e| format!("parse: {e}"))?;
    let rank = graph.params.iter().map(|p| p.ty.shape.rank()).max().unwrap_or(1);
    let size = odd_size(rank, elements);
    let inputs = random_inputs(&mut Rng::new(7), &graph, &[size], (-2.0, 2.0));
    let run = |threads, stream| -> Result<Vec<Tensor>, String> {
        let options = CompileOptions { threads, stream, ..Default::default() };
        let f = CompiledFunction::compile(&graph, &options).map_err(|e| format!("compile: {e}"))?;
        f.run(&views(&inputs)).map_err(|e| format!("{threads} threads: {e}"))
    };
    let one = run(1, Streaming::Never)?;
    // Thread counts, and light kernels' outputs streamed block by block.
    let runs = (2..=4).map(|t| (t, Streaming::Never)).chain([1, 3].map(|t| (t, Streaming::Always)));
    for (threads, stream) in runs {
        let many = run(threads, stream)?;
        for (o, (a, b)) in one.iter().zip(&many).enumerate() {
            if bits(a) != bits(b) {
                return Err(format!(
                    "size {size}: output {o} differs between 1 and {threads} threads ({stream:?})"
                ));
            }
        }
    }
    Ok(())
}

fn check_all(elements: usize) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut paths: Vec<_> =
        std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.retain(|p| p.extension().is_some_and(|e| e == "tir"));
    paths.sort();
    assert!(paths.len() > 20, "cases in {}", dir.display());
    let failures: Vec<String> = paths
        .iter()
        .filter_map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            check_case(p, elements).err().map(|e| format!("{name}: {e}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Just above the 64K-element loop threshold (and the 2M multiply-add GEMM threshold).
#[test]
fn every_case_is_bit_identical_on_1_to_4_threads_near_the_threshold() {
    check_all(70_000);
}

/// Light kernels (no reduction, little arithmetic) stream their outputs to memory when forced
/// (`executor/streamed.rs`; the cases above then compare them bit for bit), and only they:
/// the cases that must stream do, those that must not do not.
#[test]
fn light_kernels_and_only_they_stream_their_outputs() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let streamed = |name: &str| {
        let src = std::fs::read_to_string(dir.join(name)).unwrap();
        let graph = tfn_ir::text::parse_graph(&src).unwrap();
        let options = CompileOptions { stream: Streaming::Always, ..Default::default() };
        CompiledFunction::compile(&graph, &options).unwrap().streamed_kernels()
    };
    let light = ["saxpy.tir", "bias_relu.tir", "casts.tir", "int_where.tir"];
    for name in light.into_iter().chain(["float_division_f64.tir"]) {
        assert!(!streamed(name).is_empty(), "{name}: no kernel streams");
    }
    for name in ["gelu.tir", "softmax.tir", "layernorm.tir", "row_stats.tir", "scans.tir"] {
        assert!(streamed(name).is_empty(), "{name}: a kernel streams");
    }
}

/// Larger: every kind of kernel splits into four uneven chunks.
#[test]
fn every_case_is_bit_identical_on_1_to_4_threads_at_300k_elements() {
    check_all(300_000);
}

/// Long reductions with few rows (a full `sum`) run as fixed-size chunks of the reduced axis
/// split across threads, combined in chunk order: right (against the interpreter) for every
/// reduction and dtype the chunking takes, NaN kept, and the same bits on 1 to 4 threads.
#[test]
fn long_reductions_are_chunked_and_identical_on_1_to_4_threads() {
    use tfn_test_utils::Tolerance;
    let cases = [
        (
            "func f(x: f32[s0, s1]) -> (f32[s0], f32[s0], f32[s0], f32[s0], f32[]) {\n\
             sym s0 = input(param 0 axis 0)\n sym s1 = input(param 0 axis 1)\n\
             %0 = param 0 : f32[s0, s1]\n\
             %1 = sum %0 {axes=[1], keepdim=false} : f32[s0]\n\
             %2 = mean %0 {axes=[1], keepdim=false} : f32[s0]\n\
             %3 = max %0 {axes=[1], keepdim=false} : f32[s0]\n\
             %4 = min %0 {axes=[1], keepdim=false} : f32[s0]\n\
             %5 = mul %0, %0 : f32[s0, s1]\n\
             %6 = sum %5 {axes=[0, 1], keepdim=false} : f32[]\n\
             return %1, %2, %3, %4, %6\n}",
            Tolerance::uniform("f32 sums", 1e-4, 1e-3),
        ),
        (
            "func g(x: f64[s0, s1]) -> (f64[s0], f64[]) {\n\
             sym s0 = input(param 0 axis 0)\n sym s1 = input(param 0 axis 1)\n\
             %0 = param 0 : f64[s0, s1]\n\
             %1 = sum %0 {axes=[1], keepdim=false} : f64[s0]\n\
             %2 = mean %0 {axes=[0, 1], keepdim=false} : f64[]\n\
             return %1, %2\n}",
            Tolerance::uniform("f64 sums", 1e-12, 1e-10),
        ),
        (
            "func h(x: i32[s0, s1]) -> (i32[s0], i32[s0]) {\n\
             sym s0 = input(param 0 axis 0)\n sym s1 = input(param 0 axis 1)\n\
             %0 = param 0 : i32[s0, s1]\n\
             %1 = sum %0 {axes=[1], keepdim=false} : i32[s0]\n\
             %2 = max %0 {axes=[1], keepdim=false} : i32[s0]\n\
             return %1, %2\n}",
            Tolerance::EXACT,
        ),
    ];
    for (src, tol) in cases {
        let graph = tfn_ir::text::parse_graph(src).unwrap();
        for (rows, len) in [(1, 65_536), (3, 200_003), (1, 1 << 20)] {
            let dtype = graph.params[0].ty.dtype;
            let x =
                tfn_test_utils::random_tensor(&mut Rng::new(3), dtype, &[rows, len], (-2.0, 2.0));
            let mut inputs = vec![x];
            if let Tensor::F32(a) = &mut inputs[0] {
                // A NaN in the last chunk of row 0: max, min, sum and mean all keep it.
                a[[0, len - 5]] = f32::NAN;
            }
            let f = common::check_against_interp(&graph, &inputs, tol, 2)
                .unwrap_or_else(|e| panic!("{} {rows}x{len}: {e}", graph.name));
            assert!(!f.chunked_reductions().is_empty(), "{}: no chunked kernel", graph.name);
            let run = |threads| {
                let f = CompiledFunction::compile(
                    &graph,
                    &CompileOptions { threads, ..Default::default() },
                )
                .unwrap();
                f.run(&views(&inputs)).unwrap()
            };
            let one = run(1);
            for threads in 2..=4 {
                for (a, b) in one.iter().zip(&run(threads)) {
                    assert_eq!(bits(a), bits(b), "{} {rows}x{len} on {threads}", graph.name);
                }
            }
        }
    }
    // A softmax row (its max read by the exp) is never chunked.
    let softmax = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases/softmax.tir"),
    )
    .unwrap();
    let graph = tfn_ir::text::parse_graph(&softmax).unwrap();
    let f = CompiledFunction::compile(&graph, &CompileOptions::default()).unwrap();
    assert!(f.chunked_reductions().is_empty());
}

/// Kernels over f16/bf16 run as f32 blocks (`executor/widened.rs`): a flat chain, rows with
/// a broadcast 16-bit bias and a row sum are widened, give the interpreter's bits (which
/// computes in f32 and rounds once, like the kernels) and the same bits on 1 to 4 threads.
#[test]
fn half_kernels_are_widened_and_identical_on_1_to_4_threads() {
    for d in ["f16", "bf16"] {
        let src = format!(
            "func h(x: {d}[s0, s1], b: {d}[s1]) -> ({d}[s0, s1], {d}[s0]) {{\n\
             sym s0 = input(param 0 axis 0)\n sym s1 = input(param 0 axis 1)\n\
             %0 = param 0 : {d}[s0, s1]\n %1 = param 1 : {d}[s1]\n\
             %2 = cast %0 {{to=f32}} : f32[s0, s1]\n %3 = cast %1 {{to=f32}} : f32[s1]\n\
             %4 = mul %2, %3 : f32[s0, s1]\n %5 = add %4, %2 : f32[s0, s1]\n\
             %6 = cast %5 {{to={d}}} : {d}[s0, s1]\n\
             %7 = sum %2 {{axes=[1], keepdim=false}} : f32[s0]\n\
             %8 = cast %7 {{to={d}}} : {d}[s0]\n\
             return %6, %8\n}}"
        );
        let graph = tfn_ir::text::parse_graph(&src).unwrap_or_else(|e| panic!("{d}: {e}"));
        let x = random_inputs(&mut Rng::new(5), &graph, &[517], (-3.0, 3.0));
        let want = tfn_ir::interp::run(&graph, &x).unwrap();
        for threads in 1..=4 {
            let f = CompiledFunction::compile(
                &graph,
                &CompileOptions { threads, ..Default::default() },
            )
            .unwrap();
            assert!(!f.widened_kernels().is_empty(), "{d}: not widened");
            let got = f.run(&views(&x)).unwrap();
            for (o, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(bits(g), bits(w), "{d} output {o} on {threads} threads");
            }
        }
    }
}
