//! A quick, dependency-free kernel benchmark of the back end (median of timed batches), for
//! comparing changes within one run on a noisy machine:
//!
//! ```text
//! CARGO_TARGET_DIR=... cargo run --release -p tfn-backend --example kernel_bench [filter]
//! taskset -c 0 target/release/examples/kernel_bench
//! ```
//!
//! Every JIT figure writes into a preallocated output (`run_into`), no allocation of outputs.
//! Sections: workloads at 256K elements on 1 thread; relu(A@B + bias) GFLOP/s; 1 vs 2
//! threads; the per-call overhead on a 1-element tensor.

use ndarray::{ArrayD, IxDyn};
use std::hint::black_box;
use std::time::{Duration, Instant};
use tfn_backend::{CompileOptions, CompiledFunction, TensorView, TensorViewMut};
use tfn_ir::Tensor;

const ROW: usize = 1024;

const SAXPY: &str = "func saxpy(x: f32[s0], z: f32[s0]) -> (f32[s0]) {
  sym s0 = input(param 0 axis 0, param 1 axis 0)
  %0 = param 0 : f32[s0]
  %1 = param 1 : f32[s0]
  %2 = const 2.5 : f32[]
  %3 = mul %2, %0 : f32[s0]
  %4 = const -1.25 : f32[]
  %5 = mul %4, %1 : f32[s0]
  %6 = add %3, %5 : f32[s0]
  %7 = const 0.5 : f32[]
  %8 = add %6, %7 : f32[s0]
  return %8
}";

const GELU: &str = "func gelu(x: f32[s0]) -> (f32[s0]) {
  sym s0 = input(param 0 axis 0)
  %0 = param 0 : f32[s0]
  %1 = mul %0, %0 : f32[s0]
  %2 = mul %1, %0 : f32[s0]
  %3 = const 0.044715 : f32[]
  %4 = mul %3, %2 : f32[s0]
  %5 = add %0, %4 : f32[s0]
  %6 = const 0.7978845608 : f32[]
  %7 = mul %6, %5 : f32[s0]
  %8 = tanh %7 : f32[s0]
  %9 = const 1.0 : f32[]
  %10 = add %9, %8 : f32[s0]
  %11 = const 0.5 : f32[]
  %12 = mul %11, %0 : f32[s0]
  %13 = mul %12, %10 : f32[s0]
  return %13
}";

const BIAS_RELU: &str = "func bias_relu(x: f32[s0, s1], b: f32[s1]) -> (f32[s0, s1]) {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1, param 1 axis 0)
  %0 = param 0 : f32[s0, s1]
  %1 = param 1 : f32[s1]
  %2 = add %0, %1 : f32[s0, s1]
  %3 = const 0.0 : f32[]
  %4 = maximum %2, %3 : f32[s0, s1]
  return %4
}";

const SOFTMAX: &str = "func softmax(x: f32[s0, s1]) -> (f32[s0, s1]) {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1)
  %0 = param 0 : f32[s0, s1]
  %1 = max %0 {axes=[1], keepdim=true} : f32[s0, 1]
  %2 = sub %0, %1 : f32[s0, s1]
  %3 = exp %2 : f32[s0, s1]
  %4 = sum %3 {axes=[1], keepdim=true} : f32[s0, 1]
  %5 = div %3, %4 : f32[s0, s1]
  return %5
}";

const LAYERNORM: &str = "func layer_norm(x: f32[s0, s1]) -> (f32[s0, s1]) {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1)
  %0 = param 0 : f32[s0, s1]
  %1 = mean %0 {axes=[1], keepdim=true} : f32[s0, 1]
  %2 = sub %0, %1 : f32[s0, s1]
  %3 = mul %2, %2 : f32[s0, s1]
  %4 = mean %3 {axes=[1], keepdim=true} : f32[s0, 1]
  %5 = const 0.00001 : f32[]
  %6 = add %4, %5 : f32[s0, 1]
  %7 = rsqrt %6 : f32[s0, 1]
  %8 = mul %2, %7 : f32[s0, s1]
  return %8
}";

const SUM: &str = "func total(x: f32[s0]) -> (f32[]) {
  sym s0 = input(param 0 axis 0)
  %0 = param 0 : f32[s0]
  %1 = sum %0 {axes=[0], keepdim=false} : f32[]
  return %1
}";

const COLUMN_SUM: &str = "func column_sum(x: f32[s0, s1]) -> (f32[s1]) {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1)
  %0 = param 0 : f32[s0, s1]
  %1 = sum %0 {axes=[0], keepdim=false} : f32[s1]
  return %1
}";

const TRANSPOSE_ADD: &str = "func transpose_add(x: f32[s0, s1], y: f32[s1, s0]) -> (f32[s1, s0]) {
  sym s0 = input(param 0 axis 0, param 1 axis 1)
  sym s1 = input(param 0 axis 1, param 1 axis 0)
  %0 = param 0 : f32[s0, s1]
  %1 = param 1 : f32[s1, s0]
  %2 = transpose %0 {perm=[1, 0]} : f32[s1, s0]
  %3 = add %2, %1 : f32[s1, s0]
  return %3
}";

const LINEAR_RELU: &str =
    "func linear_relu(a: f32[s0, s1], b: f32[s1, s2], bias: f32[s2]) -> (f32[s0, s2]) {
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
}";

fn filled(shape: &[usize], seed: u32) -> Tensor {
    let n: usize = shape.iter().product();
    let data = (0..n).map(|i| {
        ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) >> 8) as f32 / (1u32 << 24) as f32
            * 4.0
            - 2.0
    });
    Tensor::F32(ArrayD::from_shape_vec(IxDyn(shape), data.collect()).expect("shape"))
}

/// Median time of one call, from batches lasting about 5 ms each over about `budget`.
fn time(budget: Duration, mut f: impl FnMut()) -> Duration {
    f();
    let start = Instant::now();
    let mut reps = 1u32;
    loop {
        let t = Instant::now();
        for _ in 0..reps {
            f();
        }
        if t.elapsed() > Duration::from_millis(5) || reps > 1 << 24 {
            break;
        }
        reps *= 2;
    }
    let mut samples = Vec::new();
    while start.elapsed() < budget || samples.len() < 5 {
        let t = Instant::now();
        for _ in 0..reps {
            f();
        }
        samples.push(t.elapsed() / reps);
    }
    samples.sort();
    samples[samples.len() / 2]
}

struct Bench {
    f: CompiledFunction,
    inputs: Vec<Tensor>,
    outs: Vec<Tensor>,
}

impl Bench {
    fn new(src: &str, threads: usize, shapes: &[Vec<usize>]) -> Bench {
        let g = tfn_ir::text::parse_graph(src).expect("graph parses");
        let f = CompiledFunction::compile(&g, &CompileOptions { threads, ..Default::default() })
            .expect("compiles");
        let inputs: Vec<Tensor> =
            shapes.iter().enumerate().map(|(i, s)| filled(s, i as u32)).collect();
        let views: Vec<TensorView<'_>> = inputs.iter().map(TensorView::from).collect();
        let outs = f.run(&views).expect("runs");
        Bench { f, inputs, outs }
    }

    fn time_into(&mut self, budget: Duration) -> Duration {
        let views: Vec<TensorView<'_>> = self.inputs.iter().map(TensorView::from).collect();
        let (f, outs) = (&self.f, &mut self.outs);
        time(budget, || {
            let mut out_views: Vec<TensorViewMut<'_>> = outs.iter_mut().map(Into::into).collect();
            f.run_into(&views, &mut out_views).expect("runs");
            black_box(&out_views);
        })
    }

    fn interpreted(&self) -> usize {
        self.f.interpreted_kernels().len()
    }
}

fn main() {
    let filter = std::env::args().nth(1).unwrap_or_default();
    let want = |name: &str| filter.is_empty() || name.contains(&filter);
    let budget = Duration::from_millis(400);
    let n = 256 << 10;
    let workloads: Vec<(&str, &str, Vec<Vec<usize>>)> = vec![
        ("saxpy", SAXPY, vec![vec![n], vec![n]]),
        ("bias_relu", BIAS_RELU, vec![vec![n / ROW, ROW], vec![ROW]]),
        ("sum", SUM, vec![vec![n]]),
        ("layernorm", LAYERNORM, vec![vec![n / ROW, ROW]]),
        ("gelu", GELU, vec![vec![n]]),
        ("softmax", SOFTMAX, vec![vec![n / ROW, ROW]]),
        ("column_sum", COLUMN_SUM, vec![vec![n / ROW, ROW]]),
        ("transpose_add", TRANSPOSE_ADD, vec![vec![n / ROW, ROW], vec![ROW, n / ROW]]),
    ];
    for (name, src, shapes) in &workloads {
        if !want(name) {
            continue;
        }
        let mut b = Bench::new(src, 1, shapes);
        let t = b.time_into(budget);
        let interp = b.interpreted();
        println!(
            "{name:<14} 256K 1 thread  {:>9.1} µs{}",
            t.as_secs_f64() * 1e6,
            if interp > 0 { format!("  ({interp} kernels interpreted)") } else { String::new() }
        );
    }
    if want("matmul") {
        for m in [256usize, 1024] {
            let mut b = Bench::new(LINEAR_RELU, 1, &[vec![m, m], vec![m, m], vec![m]]);
            let t = b.time_into(budget);
            let gflops = 2.0 * (m * m * m) as f64 / t.as_secs_f64() / 1e9;
            println!("linear_relu    {m}² 1 thread {gflops:>8.1} GFLOP/s ({t:?})");
        }
    }
    if want("threads") {
        for (name, src, len) in [("gelu", GELU, 4usize << 20), ("saxpy", SAXPY, 16 << 20)] {
            let shapes = if name == "saxpy" { vec![vec![len], vec![len]] } else { vec![vec![len]] };
            let one = Bench::new(src, 1, &shapes).time_into(budget);
            let two = Bench::new(src, 2, &shapes).time_into(budget);
            println!(
                "{name:<14} {}M 1 thread {:>8.0} µs, 2 threads {:>8.0} µs, speed-up {:.2}×",
                len >> 20,
                one.as_secs_f64() * 1e6,
                two.as_secs_f64() * 1e6,
                one.as_secs_f64() / two.as_secs_f64()
            );
        }
    }
    if want("overhead") {
        for (name, src, shapes) in [
            ("saxpy", SAXPY, vec![vec![1], vec![1]]),
            ("gelu", GELU, vec![vec![1]]),
            ("softmax", SOFTMAX, vec![vec![1, 1]]),
        ] {
            let t = Bench::new(src, 1, &shapes).time_into(budget);
            println!("overhead {name:<8} 1 element {:>8.3} µs per run_into", t.as_secs_f64() * 1e6);
        }
    }
}
