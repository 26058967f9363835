//! Matmuls with a fused epilogue that runs tile by tile as output rows become final: JIT
//! against the interpreter for every way the epilogue's loop can map onto the output —
//! row-aligned steps (`bias[n]`, `bias[m, 1]`), one flat step per element (`relu(a @ b)`),
//! whole-matrix steps that straddle thread regions (`bias[B, 1, n]`), broadcast batches —
//! on one and two threads, with row counts that span several row blocks, f32 and f64; and
//! operands produced by a last-two-axes `Transpose`, which the matmul reads through the
//! transpose's source (fusion leaves no copy kernel) unless something else also reads it.

use crate::common;

use common::check_against_interp;
use tfn_test_utils::{random_tensor, Rng, Tolerance};

struct Case {
    name: &'static str,
    text: &'static str,
    /// Input shapes, one list per run.
    shapes: &'static [&'static [&'static [usize]]],
    /// Copy kernels left after fusion (a transpose read in place by its matmul has none).
    copies: usize,
}

const CASES: &[Case] = &[
    Case {
        name: "linear_relu",
        text: "func linear_relu(a: f32[s0, s1], b: f32[s1, s2], bias: f32[s2]) -> (f32[s0, s2]) {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1, param 1 axis 0)
  sym s2 = input(param 1 axis 1, param 2 axis 0)
  %0 = param 0 : f32[s0, s1]
  %1 = param 1 : f32[s1, s2]
  %2 = param 2 : f32[s2]
  %3 = matmul %0, %1 : f32[s0, s2]
  %4 = add %3, %2 : f32[s0, s2]
  %5 = const 0.0 : f32[]
  %6 = maximum %4, %5 : f32[s0, s2]
  return %6
}",
        shapes: &[
            &[&[1, 1], &[1, 1], &[1]],
            &[&[300, 70], &[70, 45], &[45]],
            &[&[5, 0], &[0, 7], &[7]],
            &[&[0, 3], &[3, 4], &[4]],
            &[&[290, 64], &[64, 130], &[130]],
        ],
        copies: 0,
    },
    Case {
        name: "relu_only_flat",
        text: "func relu_mm(a: f32[s0, s1], b: f32[s1, s2]) -> (f32[s0, s2]) {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1, param 1 axis 0)
  sym s2 = input(param 1 axis 1)
  %0 = param 0 : f32[s0, s1]
  %1 = param 1 : f32[s1, s2]
  %2 = matmul %0, %1 : f32[s0, s2]
  %3 = const 0.0 : f32[]
  %4 = maximum %2, %3 : f32[s0, s2]
  return %4
}",
        shapes: &[&[&[7, 3], &[3, 5]], &[&[301, 50], &[50, 147]]],
        copies: 0,
    },
    Case {
        name: "row_bias_and_both_outputs",
        text: "func row_bias(a: f32[s0, s1], b: f32[s1, s2], c: f32[s0, 1]) -> (f32[s0, s2], f32[s0, s2]) {
  sym s0 = input(param 0 axis 0, param 2 axis 0)
  sym s1 = input(param 0 axis 1, param 1 axis 0)
  sym s2 = input(param 1 axis 1)
  %0 = param 0 : f32[s0, s1]
  %1 = param 1 : f32[s1, s2]
  %2 = param 2 : f32[s0, 1]
  %3 = matmul %0, %1 : f32[s0, s2]
  %4 = mul %3, %2 : f32[s0, s2]
  return %3, %4
}",
        shapes: &[&[&[13, 4], &[4, 9], &[13, 1]], &[&[299, 40], &[40, 180], &[299, 1]]],
        copies: 0,
    },
    Case {
        name: "batched_per_matrix_bias",
        text: "func batched(a: f32[s0, s1, s2], b: f32[s2, s3], bias: f32[s0, 1, s3]) -> (f32[s0, s1, s3]) {
  sym s0 = input(param 0 axis 0, param 2 axis 0)
  sym s1 = input(param 0 axis 1)
  sym s2 = input(param 0 axis 2, param 1 axis 0)
  sym s3 = input(param 1 axis 1, param 2 axis 2)
  %0 = param 0 : f32[s0, s1, s2]
  %1 = param 1 : f32[s2, s3]
  %2 = param 2 : f32[s0, 1, s3]
  %3 = matmul %0, %1 : f32[s0, s1, s3]
  %4 = add %3, %2 : f32[s0, s1, s3]
  %5 = tanh %4 : f32[s0, s1, s3]
  return %5
}",
        shapes: &[&[&[2, 3, 4], &[4, 5], &[2, 1, 5]], &[&[3, 150, 40], &[40, 120], &[3, 1, 120]]],
        copies: 0,
    },
    Case {
        name: "batched_shared_bias_f64",
        text: "func batched64(a: f64[s0, s1, s2], b: f64[s0, s2, s3], bias: f64[s3]) -> (f64[s0, s1, s3]) {
  sym s0 = input(param 0 axis 0, param 1 axis 0)
  sym s1 = input(param 0 axis 1)
  sym s2 = input(param 0 axis 2, param 1 axis 1)
  sym s3 = input(param 1 axis 2, param 2 axis 0)
  %0 = param 0 : f64[s0, s1, s2]
  %1 = param 1 : f64[s0, s2, s3]
  %2 = param 2 : f64[s3]
  %3 = matmul %0, %1 : f64[s0, s1, s3]
  %4 = add %3, %2 : f64[s0, s1, s3]
  return %4
}",
        shapes: &[&[&[2, 17, 5], &[2, 5, 33], &[33]]],
        copies: 0,
    },
    Case {
        name: "transposed_operands",
        text: "func grads(x: f32[s0, s1], ct: f32[s0, s2], w: f32[s1, s2]) -> (f32[s1, s2], f32[s0, s1]) {
  sym s0 = input(param 0 axis 0, param 1 axis 0)
  sym s1 = input(param 0 axis 1, param 2 axis 0)
  sym s2 = input(param 1 axis 1, param 2 axis 1)
  %0 = param 0 : f32[s0, s1]
  %1 = param 1 : f32[s0, s2]
  %2 = param 2 : f32[s1, s2]
  %3 = transpose %0 {perm=[1, 0]} : f32[s1, s0]
  %4 = matmul %3, %1 : f32[s1, s2]
  %5 = transpose %2 {perm=[1, 0]} : f32[s2, s1]
  %6 = matmul %1, %5 : f32[s0, s1]
  return %4, %6
}",
        shapes: &[
            &[&[1, 1], &[1, 1], &[1, 1]],
            &[&[37, 20], &[37, 45], &[20, 45]],
            &[&[130, 150], &[130, 70], &[150, 70]],
        ],
        copies: 0,
    },
    Case {
        name: "transposes_kept_for_other_readers",
        text: "func kept(a: f64[s0, s1, s2], b: f64[s0, s3, s2]) -> (f64[s0, s1, s3], f64[s0, s2, s3]) {
  sym s0 = input(param 0 axis 0, param 1 axis 0)
  sym s1 = input(param 0 axis 1)
  sym s2 = input(param 0 axis 2, param 1 axis 2)
  sym s3 = input(param 1 axis 1)
  %0 = param 0 : f64[s0, s1, s2]
  %1 = param 1 : f64[s0, s3, s2]
  %2 = transpose %1 {perm=[0, 2, 1]} : f64[s0, s2, s3]
  %3 = matmul %0, %2 : f64[s0, s1, s3]
  return %3, %2
}",
        shapes: &[&[&[3, 5, 7], &[3, 4, 7]]],
        copies: 1,
    },
    Case {
        name: "batched_transposed_f32",
        text: "func bt(a: f32[s0, s1, s2], b: f32[s3, s2]) -> (f32[s0, s1, s3]) {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1)
  sym s2 = input(param 0 axis 2, param 1 axis 1)
  sym s3 = input(param 1 axis 0)
  %0 = param 0 : f32[s0, s1, s2]
  %1 = param 1 : f32[s3, s2]
  %2 = transpose %1 {perm=[1, 0]} : f32[s2, s3]
  %3 = matmul %0, %2 : f32[s0, s1, s3]
  %4 = const 0.0 : f32[]
  %5 = maximum %3, %4 : f32[s0, s1, s3]
  return %5
}",
        shapes: &[&[&[2, 3, 4], &[5, 4]], &[&[3, 100, 64], &[90, 64]]],
        copies: 0,
    },
];

fn copy_kernels(f: &tfn_backend::CompiledFunction) -> usize {
    f.fused().kernels.iter().filter(|k| k.kind == tfn_passes::fusion::KernelKind::Copy).count()
}

#[test]
fn tile_epilogues_match_the_interpreter() {
    let mut rng = Rng::new(0x51_7CC1_B727_220A);
    let mut failures = Vec::new();
    for case in CASES {
        let graph = match tfn_ir::text::parse_graph(case.text) {
            Ok(g) => g,
            Err(e) => {
                failures.push(format!("{}: parse: {e}", case.name));
                continue;
            }
        };
        for shapes in case.shapes {
            let inputs: Vec<_> = graph
                .params
                .iter()
                .zip(shapes.iter())
                .map(|(p, s)| random_tensor(&mut rng, p.ty.dtype, s, (-1.0, 1.0)))
                .collect();
            for threads in [1, 2] {
                match check_against_interp(&graph, &inputs, Tolerance::ACCUMULATED, threads) {
                    Ok(f) if !f.interpreted_kernels().is_empty() => failures.push(format!(
                        "{} {shapes:?}: interpreted {:?}",
                        case.name,
                        f.interpreted_kernels()
                    )),
                    Ok(f) if copy_kernels(&f) != case.copies => failures.push(format!(
                        "{}: {} copy kernels, expected {}",
                        case.name,
                        copy_kernels(&f),
                        case.copies
                    )),
                    Ok(_) => {}
                    Err(e) => {
                        failures.push(format!("{} {shapes:?} threads {threads}: {e}", case.name))
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// Strided arguments that only GEMMs read are read where they lie, not copied: a `[out, in]`
/// weight passed as its `[in, out]` transposed view, a stacked weight's permuted view, a
/// weight shared by the rows of a batched product; and an argument something else also reads
/// is still copied. Each is checked against the interpreter on the contiguous copy.
#[test]
fn strided_gemm_operands_are_read_in_place() {
    use ndarray::{ArrayD, IxDyn};
    /// (name, graph, `a`'s shape, `b` as stored (its last two axes swapped), read in place)
    type Case<'c> = (&'c str, &'c str, &'c [usize], &'c [usize], bool);
    let cases: &[Case] = &[
        (
            "gelu_linear",
            "func f(a: f32[s0, s1], b: f32[s1, s2]) -> (f32[s0, s2]) {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1, param 1 axis 0)
  sym s2 = input(param 1 axis 1)
  %0 = param 0 : f32[s0, s1]
  %1 = param 1 : f32[s1, s2]
  %2 = matmul %0, %1 : f32[s0, s2]
  %3 = erf %2 : f32[s0, s2]
  return %3
}",
            &[37, 70],
            &[45, 70],
            true,
        ),
        (
            "batched_shared_weight",
            "func f(a: f32[s0, s1, s2], b: f32[s2, s3]) -> (f32[s0, s1, s3]) {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1)
  sym s2 = input(param 0 axis 2, param 1 axis 0)
  sym s3 = input(param 1 axis 1)
  %0 = param 0 : f32[s0, s1, s2]
  %1 = param 1 : f32[s2, s3]
  %2 = matmul %0, %1 : f32[s0, s1, s3]
  return %2
}",
            &[3, 29, 40],
            &[33, 40],
            true,
        ),
        (
            "batched_per_matrix_weight",
            "func f(a: f32[s0, s1, s2], b: f32[s0, s2, s3]) -> (f32[s0, s1, s3]) {
  sym s0 = input(param 0 axis 0, param 1 axis 0)
  sym s1 = input(param 0 axis 1)
  sym s2 = input(param 0 axis 2, param 1 axis 1)
  sym s3 = input(param 1 axis 2)
  %0 = param 0 : f32[s0, s1, s2]
  %1 = param 1 : f32[s0, s2, s3]
  %2 = matmul %0, %1 : f32[s0, s1, s3]
  return %2
}",
            &[4, 13, 24],
            &[4, 40, 24],
            true,
        ),
        (
            "also_read_elementwise",
            "func f(a: f32[s0, s1], b: f32[s1, s1]) -> (f32[s0, s1], f32[s1, s1]) {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1, param 1 axis 0, param 1 axis 1)
  %0 = param 0 : f32[s0, s1]
  %1 = param 1 : f32[s1, s1]
  %2 = matmul %0, %1 : f32[s0, s1]
  %3 = exp %1 : f32[s1, s1]
  return %2, %3
}",
            &[9, 35],
            &[35, 35],
            false,
        ),
    ];
    let mut rng = Rng::new(0x7E57_1D3A);
    for &(name, text, a_shape, b_stored, in_place) in cases {
        let graph = tfn_ir::text::parse_graph(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let a = random_tensor(&mut rng, tfn_ir::DType::F32, a_shape, (-1.0, 1.0));
        let stored = random_tensor(&mut rng, tfn_ir::DType::F32, b_stored, (-1.0, 1.0));
        let tfn_ir::Tensor::F32(stored) = stored else { unreachable!("f32") };
        let rank = stored.ndim();
        let mut b_view = stored.view();
        b_view.swap_axes(rank - 2, rank - 1);
        assert!(!b_view.is_standard_layout());
        let b_copy: ArrayD<f32> = b_view
            .as_standard_layout()
            .into_owned()
            .into_shape_with_order(IxDyn(b_view.shape()))
            .unwrap();
        let want = tfn_ir::interp::run(&graph, &[a.clone(), tfn_ir::Tensor::F32(b_copy)])
            .unwrap_or_else(|e| panic!("{name}: interp: {e}"));
        for threads in [1, 2] {
            let f = tfn_backend::CompiledFunction::compile(
                &graph,
                &tfn_backend::CompileOptions { threads, ..Default::default() },
            )
            .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(f.reads_in_place(1), in_place, "{name}: in place");
            let tfn_ir::Tensor::F32(a_arr) = &a else { unreachable!("f32") };
            let inputs = [
                tfn_backend::TensorView::F32(a_arr.view()),
                tfn_backend::TensorView::F32(b_view.clone()),
            ];
            let got = f.run(&inputs).unwrap_or_else(|e| panic!("{name}: {e}"));
            for (g, w) in got.iter().zip(&want) {
                tfn_test_utils::compare(g, w, Tolerance::ACCUMULATED)
                    .unwrap_or_else(|e| panic!("{name} threads {threads}: {e}"));
            }
        }
    }
}

/// `f16`/`bf16` operands are read by the GEMM where they lie and widened while it packs them:
/// the `cast` to `f32` in front of a matmul (and a transpose above or below it) leaves no
/// kernel of its own, in every packing path — row-major and column-major `B` (a weight read
/// transposed), `A` read down its columns, attention's head split — against the interpreter
/// on one and two threads, with shapes crossing the packers' blocks (`MR` 12, `NR` 32, `MC` 96,
/// 256-row column runs, `KC` 1536). A cast something else also reads keeps its kernel.
#[test]
fn half_operands_are_widened_while_packed() {
    /// (name, graph with `DT` for the 16-bit dtype, shapes per run, kernels after fusion)
    type Case<'c> = (&'c str, &'c str, &'c [&'c [&'c [usize]]], usize);
    let cases: &[Case] = &[
        (
            "linear_bias_relu",
            "func f(a: DT[s0, s1], b: DT[s1, s2], bias: DT[s2]) -> (DT[s0, s2]) {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1, param 1 axis 0)
  sym s2 = input(param 1 axis 1, param 2 axis 0)
  %0 = param 0 : DT[s0, s1]
  %1 = param 1 : DT[s1, s2]
  %2 = param 2 : DT[s2]
  %3 = cast %0 {to=f32} : f32[s0, s1]
  %4 = cast %1 {to=f32} : f32[s1, s2]
  %5 = cast %2 {to=f32} : f32[s2]
  %6 = matmul %3, %4 : f32[s0, s2]
  %7 = add %6, %5 : f32[s0, s2]
  %8 = const 0.0 : f32[]
  %9 = maximum %7, %8 : f32[s0, s2]
  %10 = cast %9 {to=DT} : DT[s0, s2]
  return %10
}",
            &[
                &[&[1, 1], &[1, 1], &[1]],
                &[&[101, 70], &[70, 45], &[45]],
                &[&[13, 1600], &[1600, 33], &[33]],
                &[&[0, 3], &[3, 4], &[4]],
                &[&[5, 0], &[0, 7], &[7]],
            ],
            // The bias's cast is the epilogue's input (its own kernel).
            2,
        ),
        (
            "weight_transposed_then_cast",
            "func f(a: DT[s0, s1], w: DT[s2, s1]) -> (f32[s0, s2]) {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1, param 1 axis 1)
  sym s2 = input(param 1 axis 0)
  %0 = param 0 : DT[s0, s1]
  %1 = param 1 : DT[s2, s1]
  %2 = transpose %1 {perm=[1, 0]} : DT[s1, s2]
  %3 = cast %2 {to=f32} : f32[s1, s2]
  %4 = cast %0 {to=f32} : f32[s0, s1]
  %5 = matmul %4, %3 : f32[s0, s2]
  return %5
}",
            &[&[&[7, 5], &[3, 5]], &[&[98, 300], &[77, 300]], &[&[2, 9], &[64, 9]]],
            1,
        ),
        (
            "weight_cast_then_transposed",
            "func f(a: DT[s0, s1], w: DT[s2, s1]) -> (f32[s0, s2]) {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1, param 1 axis 1)
  sym s2 = input(param 1 axis 0)
  %0 = param 0 : DT[s0, s1]
  %1 = param 1 : DT[s2, s1]
  %2 = cast %1 {to=f32} : f32[s2, s1]
  %3 = transpose %2 {perm=[1, 0]} : f32[s1, s2]
  %4 = cast %0 {to=f32} : f32[s0, s1]
  %5 = matmul %4, %3 : f32[s0, s2]
  return %5
}",
            &[&[&[98, 263], &[40, 263]]],
            1,
        ),
        (
            "a_read_down_its_columns",
            "func f(x: DT[s1, s0], b: DT[s1, s2]) -> (f32[s0, s2]) {
  sym s0 = input(param 0 axis 1)
  sym s1 = input(param 0 axis 0, param 1 axis 0)
  sym s2 = input(param 1 axis 1)
  %0 = param 0 : DT[s1, s0]
  %1 = param 1 : DT[s1, s2]
  %2 = transpose %0 {perm=[1, 0]} : DT[s0, s1]
  %3 = cast %2 {to=f32} : f32[s0, s1]
  %4 = cast %1 {to=f32} : f32[s1, s2]
  %5 = matmul %3, %4 : f32[s0, s2]
  return %5
}",
            &[&[&[31, 100], &[31, 50]], &[&[5, 3], &[5, 2]]],
            1,
        ),
        (
            "attention_scores",
            "func f(q: DT[s0, s1, s2, s3], k: DT[s0, s4, s2, s3]) -> (f32[s0, s2, s1, s4]) {
  sym s0 = input(param 0 axis 0, param 1 axis 0)
  sym s1 = input(param 0 axis 1)
  sym s2 = input(param 0 axis 2, param 1 axis 2)
  sym s3 = input(param 0 axis 3, param 1 axis 3)
  sym s4 = input(param 1 axis 1)
  %0 = param 0 : DT[s0, s1, s2, s3]
  %1 = param 1 : DT[s0, s4, s2, s3]
  %2 = transpose %0 {perm=[0, 2, 1, 3]} : DT[s0, s2, s1, s3]
  %3 = cast %2 {to=f32} : f32[s0, s2, s1, s3]
  %4 = transpose %1 {perm=[0, 2, 3, 1]} : DT[s0, s2, s3, s4]
  %5 = cast %4 {to=f32} : f32[s0, s2, s3, s4]
  %6 = matmul %3, %5 : f32[s0, s2, s1, s4]
  return %6
}",
            &[&[&[2, 37, 3, 16], &[2, 29, 3, 16]]],
            1,
        ),
        (
            "batched_shared_weight",
            "func f(a: DT[s0, s1, s2], b: DT[s2, s3]) -> (DT[s0, s1, s3]) {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1)
  sym s2 = input(param 0 axis 2, param 1 axis 0)
  sym s3 = input(param 1 axis 1)
  %0 = param 0 : DT[s0, s1, s2]
  %1 = param 1 : DT[s2, s3]
  %2 = cast %0 {to=f32} : f32[s0, s1, s2]
  %3 = cast %1 {to=f32} : f32[s2, s3]
  %4 = matmul %2, %3 : f32[s0, s1, s3]
  %5 = cast %4 {to=DT} : DT[s0, s1, s3]
  return %5
}",
            &[&[&[3, 29, 40], &[40, 33]]],
            1,
        ),
        (
            "square_operand_twice",
            "func f(a: DT[s0, s0]) -> (f32[s0, s0]) {
  sym s0 = input(param 0 axis 0, param 0 axis 1)
  %0 = param 0 : DT[s0, s0]
  %1 = cast %0 {to=f32} : f32[s0, s0]
  %2 = matmul %1, %1 : f32[s0, s0]
  return %2
}",
            &[&[&[45, 45]]],
            1,
        ),
        (
            "cast_also_read_elsewhere",
            "func f(a: DT[s0, s1], b: DT[s1, s2]) -> (f32[s0, s2], f32[s0, s1]) {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1, param 1 axis 0)
  sym s2 = input(param 1 axis 1)
  %0 = param 0 : DT[s0, s1]
  %1 = param 1 : DT[s1, s2]
  %2 = cast %0 {to=f32} : f32[s0, s1]
  %3 = cast %1 {to=f32} : f32[s1, s2]
  %4 = matmul %2, %3 : f32[s0, s2]
  %5 = exp %2 : f32[s0, s1]
  return %4, %5
}",
            &[&[&[20, 30], &[30, 40]]],
            2,
        ),
    ];
    let mut rng = Rng::new(0x16B1_7F00_D5EE_D123);
    let mut failures = Vec::new();
    for (name, text, runs, kernels) in cases {
        for dtype in ["f16", "bf16"] {
            let graph = match tfn_ir::text::parse_graph(&text.replace("DT", dtype)) {
                Ok(g) => g,
                Err(e) => {
                    failures.push(format!("{name} {dtype}: parse: {e}"));
                    continue;
                }
            };
            for shapes in *runs {
                let inputs: Vec<_> = graph
                    .params
                    .iter()
                    .zip(shapes.iter())
                    .map(|(p, s)| random_tensor(&mut rng, p.ty.dtype, s, (-1.0, 1.0)))
                    .collect();
                for threads in [1, 2] {
                    match check_against_interp(&graph, &inputs, Tolerance::ACCUMULATED, threads) {
                        Ok(f) if !f.interpreted_kernels().is_empty() => failures.push(format!(
                            "{name} {dtype}: interpreted {:?}",
                            f.interpreted_kernels()
                        )),
                        Ok(f) if f.fused().kernels.len() != *kernels => failures.push(format!(
                            "{name} {dtype}: {} kernels, expected {kernels}",
                            f.fused().kernels.len()
                        )),
                        Ok(_) => {}
                        Err(e) => failures
                            .push(format!("{name} {dtype} {shapes:?} threads {threads}: {e}")),
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// A 16-bit weight passed as a strided view (a `[out, in]` tensor bound as its transpose) is
/// read where it lies by the GEMM through the folded widening cast, as an f32 one is.
#[test]
fn strided_half_weights_are_read_in_place() {
    use ndarray::{ArrayD, IxDyn};
    let text = "func f(a: bf16[s0, s1], b: bf16[s1, s2]) -> (f32[s0, s2]) {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1, param 1 axis 0)
  sym s2 = input(param 1 axis 1)
  %0 = param 0 : bf16[s0, s1]
  %1 = param 1 : bf16[s1, s2]
  %2 = cast %0 {to=f32} : f32[s0, s1]
  %3 = cast %1 {to=f32} : f32[s1, s2]
  %4 = matmul %2, %3 : f32[s0, s2]
  return %4
}";
    let graph = tfn_ir::text::parse_graph(text).unwrap();
    let mut rng = Rng::new(0xB_F16);
    let a = random_tensor(&mut rng, tfn_ir::DType::BF16, &[37, 70], (-1.0, 1.0));
    let tfn_ir::Tensor::BF16(stored) =
        random_tensor(&mut rng, tfn_ir::DType::BF16, &[45, 70], (-1.0, 1.0))
    else {
        unreachable!("bf16")
    };
    let b_view = stored.view().reversed_axes();
    let b_copy: ArrayD<_> =
        b_view.as_standard_layout().into_owned().into_shape_with_order(IxDyn(&[70, 45])).unwrap();
    let want = tfn_ir::interp::run(&graph, &[a.clone(), tfn_ir::Tensor::BF16(b_copy)]).unwrap();
    for threads in [1, 2] {
        let f = tfn_backend::CompiledFunction::compile(
            &graph,
            &tfn_backend::CompileOptions { threads, ..Default::default() },
        )
        .unwrap();
        assert!(f.reads_in_place(1), "the weight is read in place");
        let tfn_ir::Tensor::BF16(a_arr) = &a else { unreachable!("bf16") };
        let inputs = [
            tfn_backend::TensorView::BF16(a_arr.view()),
            tfn_backend::TensorView::BF16(b_view.clone()),
        ];
        let got = f.run(&inputs).unwrap();
        for (g, w) in got.iter().zip(&want) {
            tfn_test_utils::compare(g, w, Tolerance::ACCUMULATED)
                .unwrap_or_else(|e| panic!("threads {threads}: {e}"));
        }
    }
}
