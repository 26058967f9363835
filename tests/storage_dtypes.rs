//! Storage dtypes (`f16`, `bf16`, `i8`, `u8`) through the `Session` API on both backends:
//! the JIT against the interpreter bit for bit (exhaustively over every 16-bit pattern for
//! the casts to and from `f32`), the interpreter's conversions against the `half` crate's
//! (an independent implementation), arithmetic computing in `f32` and rounding once, NumPy's
//! wrapping for `i8`/`u8`, saturating float → byte casts, `matmul` accumulating in `f32`.

use ndarray::{ArrayD, IxDyn};
use tfn::{Backend, Session, Tensor, Value};
use tfn_ir::half::{bf16, f16};
use tfn_ir::storage::bits;

const SOURCE: &str = r#"
fn to_f32(Tensor x) -> Tensor<f32> {
    return cast(x, f32)
}
fn to_f16(Tensor x) -> Tensor<f16> {
    return cast(x, f16)
}
fn to_bf16(Tensor x) -> Tensor<bf16> {
    return cast(x, bf16)
}
fn to_i8(Tensor x) -> Tensor<i8> {
    return cast(x, i8)
}
fn to_u8(Tensor x) -> Tensor<u8> {
    return cast(x, u8)
}
fn fma(Tensor x, Tensor y) -> Tensor {
    return x * y + 1.0
}
fn fma_cast(Tensor x, Tensor y) -> Tensor {
    return cast(x * y, bf16) + 1.0
}
fn product(Tensor x, Tensor y) -> Tensor {
    return x * y
}
fn fma_call(Tensor x, Tensor y) -> Tensor {
    return product(x, y) + 1.0
}
fn fma_moved(Tensor x, Tensor y) -> Tensor {
    let p = reshape(transpose(transpose(reshape(x * y, [2, -1]))), [-1])
    return where(p > 0.0, p, slice(concat([p, p], dim=0), dim=0, start=1002)) + 1.0
}
fn byte_mix(Tensor x, Tensor y) -> Tensor {
    return floor_div(x + y, 3) + where(x * y > 0, x - y, maximum(-(x * y), y)) + bitwise_and(x, y) * 3
}
fn iaff(Tensor x, Tensor y) -> Tensor {
    return x * y + x - y
}
fn gelu(Tensor x) -> Tensor {
    return 0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
}
fn rowsum(Tensor x) -> Tensor {
    return sum(x, dims=[1])
}
fn bias_rows(Tensor x, Tensor b) -> (Tensor, Tensor) {
    let y = maximum(x + b, 0.0)
    let e = exp(y - max(y, dims=[1], keepdim=true))
    return (y, e / sum(e, dims=[1], keepdim=true))
}
fn mm(Tensor a, Tensor b) -> Tensor {
    return matmul(a, b)
}
fn linear_t(Tensor x, Tensor w, Tensor bias) -> Tensor {
    return maximum(matmul(x, transpose(w)) + bias, 0.0)
}
fn moves(Tensor x) -> Tensor {
    return concat([transpose(x), slice(transpose(x), dim=0, start=1)], dim=0)
}
"#;

fn session(backend: Backend) -> Session {
    let s = Session::with_backend(backend);
    s.load_str("storage.tfn", SOURCE).unwrap_or_else(|e| panic!("load: {e}"));
    s
}

fn call(backend: Backend, f: &str, args: &[Value]) -> Tensor {
    let out = session(backend).call(f, args).unwrap_or_else(|e| panic!("{f} on {backend:?}: {e}"));
    out.into_iter().next().and_then(Value::into_tensor).expect("one tensor")
}

/// Runs `f` on both backends and checks they agree bit for bit; returns the result.
fn both(f: &str, args: &[Value]) -> Tensor {
    let interp = call(Backend::Interp, f, args);
    let jit = call(Backend::Jit, f, args);
    assert_eq!(bit_patterns(&interp), bit_patterns(&jit), "`{f}`: JIT and interpreter differ");
    interp
}

fn bit_patterns(t: &Tensor) -> (tfn::DType, Vec<usize>, Vec<u64>) {
    let v: Vec<u64> = match t {
        Tensor::F16(a) => a.iter().map(|v| v.to_bits().into()).collect(),
        Tensor::BF16(a) => a.iter().map(|v| v.to_bits().into()).collect(),
        Tensor::F32(a) => a.iter().map(|v| v.to_bits().into()).collect(),
        Tensor::F64(a) => a.iter().map(|v| v.to_bits()).collect(),
        Tensor::I8(a) => a.iter().map(|&v| v as u8 as u64).collect(),
        Tensor::U8(a) => a.iter().map(|&v| v.into()).collect(),
        Tensor::I32(a) => a.iter().map(|&v| v as u32 as u64).collect(),
        Tensor::I64(a) => a.iter().map(|&v| v as u64).collect(),
        Tensor::Bool(a) => a.iter().map(|&v| v.into()).collect(),
    };
    (t.dtype(), t.shape().to_vec(), v)
}

fn all_patterns() -> Vec<u16> {
    (0..=u16::MAX).collect()
}

fn vec1<T>(v: Vec<T>) -> ArrayD<T> {
    let n = v.len();
    ArrayD::from_shape_vec(IxDyn(&[n]), v).expect("1-d")
}

/// The `f32` inputs that exercise f32 → 16-bit rounding: every 16-bit value, the midpoints
/// between neighbours (ties), one `f32` ulp either side, overflow, NaNs with payloads.
fn rounding_inputs(widen: fn(u16) -> f32) -> Vec<f32> {
    let mut xs = Vec::new();
    for h in 0..u16::MAX {
        let (a, b) = (widen(h), widen(h + 1));
        xs.push(a);
        if a.is_finite() && b.is_finite() && (a.is_sign_negative() == b.is_sign_negative()) {
            let mid = ((f64::from(a) + f64::from(b)) / 2.0) as f32;
            xs.extend([mid, f32::from_bits(mid.to_bits() + 1), f32::from_bits(mid.to_bits() - 1)]);
        }
    }
    xs.extend([f32::MAX, -f32::MAX, 65519.99, 65520.0, 1e-8, -1e-8, 3e-39, f32::NAN]);
    xs.extend([f32::from_bits(0x7f80_0001), f32::from_bits(0xffc1_2345), f32::INFINITY]);
    xs
}

#[test]
fn every_f16_and_bf16_pattern_widens_exactly_on_both_backends() {
    let h = vec1(all_patterns().into_iter().map(f16::from_bits).collect());
    let Tensor::F32(got) = both("to_f32", &[Value::from(h.clone())]) else { panic!() };
    for (x, y) in h.iter().zip(got.iter()) {
        assert_eq!(y.to_bits(), bits::f16_to_f32(x.to_bits()).to_bits());
        if !x.is_nan() {
            assert_eq!(*y, x.to_f32(), "{:#06x}", x.to_bits());
        }
    }
    let b = vec1(all_patterns().into_iter().map(bf16::from_bits).collect());
    let Tensor::F32(got) = both("to_f32", &[Value::from(b.clone())]) else { panic!() };
    for (x, y) in b.iter().zip(got.iter()) {
        assert_eq!(y.to_bits(), u32::from(x.to_bits()) << 16);
    }
}

#[test]
fn f32_rounds_to_f16_and_bf16_to_nearest_even_on_both_backends() {
    let xs = rounding_inputs(bits::f16_to_f32);
    let Tensor::F16(got) = both("to_f16", &[Value::from(vec1(xs.clone()))]) else { panic!() };
    for (x, y) in xs.iter().zip(got.iter()) {
        if x.is_nan() {
            assert!(y.is_nan(), "{x} -> {:#06x}", y.to_bits());
        } else {
            assert_eq!(y.to_bits(), f16::from_f32(*x).to_bits(), "{x:e} ({:#010x})", x.to_bits());
        }
    }
    let xs = rounding_inputs(bits::bf16_to_f32);
    let Tensor::BF16(got) = both("to_bf16", &[Value::from(vec1(xs.clone()))]) else { panic!() };
    for (x, y) in xs.iter().zip(got.iter()) {
        if x.is_nan() {
            assert!(y.is_nan());
        } else {
            assert_eq!(y.to_bits(), bf16::from_f32(*x).to_bits(), "{x:e}");
        }
    }
}

#[test]
fn f64_rounds_to_f16_once() {
    // Values just above an f16 tie that an f64 → f32 → f16 double rounding would get wrong.
    let mut xs: Vec<f64> = Vec::new();
    for h in 0x3c00u16..0x3c40 {
        let (a, b) = (f64::from(bits::f16_to_f32(h)), f64::from(bits::f16_to_f32(h + 1)));
        let mid = (a + b) / 2.0;
        xs.extend([mid, mid + 1e-12, mid - 1e-12, a + 1e-9]);
    }
    let Tensor::F16(got) = both("to_f16", &[Value::from(vec1(xs.clone()))]) else { panic!() };
    for (x, y) in xs.iter().zip(got.iter()) {
        assert_eq!(y.to_bits(), nearest_f16(*x), "{x:e}");
    }
}

/// The positive `f16` nearest to `x` (ties to the even pattern), by comparing distances in
/// `f64` (exact for these magnitudes). (`half`'s `from_f64` rounds twice.)
fn nearest_f16(x: f64) -> u16 {
    let guess = bits::f32_to_f16(x as f32);
    let candidates = [guess - 1, guess, guess + 1];
    let dist = |h: u16| (f64::from(bits::f16_to_f32(h)) - x).abs();
    let mut best = candidates[0];
    for &h in &candidates[1..] {
        if dist(h) < dist(best) || (dist(h) == dist(best) && h % 2 == 0) {
            best = h;
        }
    }
    best
}

#[test]
fn float_to_bytes_saturates_and_ints_wrap() {
    let xs =
        vec1(vec![-1e10f32, -300.0, -128.9, -1.5, -0.5, 0.7, 127.9, 200.0, 255.9, 300.0, f32::NAN]);
    let Tensor::I8(i) = both("to_i8", &[Value::from(xs.clone())]) else { panic!() };
    assert_eq!(i.as_slice().unwrap(), &[-128, -128, -128, -1, 0, 0, 127, 127, 127, 127, 0]);
    let Tensor::U8(u) = both("to_u8", &[Value::from(xs)]) else { panic!() };
    assert_eq!(u.as_slice().unwrap(), &[0, 0, 0, 0, 0, 0, 127, 200, 255, 255, 0]);
    let ints = vec1(vec![-129i32, 128, 255, 256, -1, 1000]);
    let Tensor::I8(i) = both("to_i8", &[Value::from(ints.clone())]) else { panic!() };
    assert_eq!(i.as_slice().unwrap(), &[127, -128, -1, 0, -1, -24]);
    let Tensor::U8(u) = both("to_u8", &[Value::from(ints)]) else { panic!() };
    assert_eq!(u.as_slice().unwrap(), &[127, 128, 255, 0, 255, 232]);
}

#[test]
fn byte_arithmetic_wraps_like_numpy() {
    let n = 37;
    let x: Vec<i8> = (0..n).map(|i| (i * 7 - 120) as i8).collect();
    let y: Vec<i8> = (0..n).map(|i| (i * 13 + 5) as i8).collect();
    let Tensor::I8(got) =
        both("iaff", &[Value::from(vec1(x.clone())), Value::from(vec1(y.clone()))])
    else {
        panic!()
    };
    for ((a, b), g) in x.iter().zip(&y).zip(got.iter()) {
        let want = a.wrapping_mul(*b).wrapping_add(*a).wrapping_sub(*b);
        assert_eq!(*g, want);
    }
    let xu: Vec<u8> = x.iter().map(|&v| v as u8).collect();
    let yu: Vec<u8> = y.iter().map(|&v| v as u8).collect();
    let Tensor::U8(got) =
        both("iaff", &[Value::from(vec1(xu.clone())), Value::from(vec1(yu.clone()))])
    else {
        panic!()
    };
    for ((a, b), g) in xu.iter().zip(&yu).zip(got.iter()) {
        assert_eq!(*g, a.wrapping_mul(*b).wrapping_add(*a).wrapping_sub(*b));
    }
    // Ops whose result depends on more than the low 8 bits (division, comparisons, maximum)
    // read the wrapped value: per-op wrapping, as in NumPy.
    let args = [Value::from(vec1(x.clone())), Value::from(vec1(y.clone()))];
    let Tensor::I8(got) = both("byte_mix", &args) else { panic!() };
    for ((&a, &b), g) in x.iter().zip(&y).zip(got.iter()) {
        let m = a.wrapping_mul(b);
        let pick = if m > 0 { a.wrapping_sub(b) } else { m.wrapping_neg().max(b) };
        let want = a
            .wrapping_add(b)
            .div_euclid(3)
            .wrapping_add(pick)
            .wrapping_add((a & b).wrapping_mul(3));
        assert_eq!(*g, want, "byte_mix({a}, {b})");
    }
    let args = [Value::from(vec1(xu.clone())), Value::from(vec1(yu.clone()))];
    let Tensor::U8(got) = both("byte_mix", &args) else { panic!() };
    for ((&a, &b), g) in xu.iter().zip(&yu).zip(got.iter()) {
        let m = a.wrapping_mul(b);
        let pick = if m > 0 { a.wrapping_sub(b) } else { m.wrapping_neg().max(b) };
        let want = (a.wrapping_add(b) / 3).wrapping_add(pick).wrapping_add((a & b).wrapping_mul(3));
        assert_eq!(*g, want, "byte_mix({a}, {b})");
    }
}

/// `x * y + 1` on 16-bit floats computes in f32 and rounds once, at the function's output
/// (excess precision, `ir/src/lower/storage.rs`); an explicit `cast` and a function return
/// round where they are; data movement (`reshape`, `transpose`, `where`, `concat`, `slice`)
/// carries the f32 value.
#[test]
fn half_arithmetic_computes_in_f32_and_rounds_once() {
    let n = 1002;
    let xs: Vec<f32> = (0..n).map(|i| ((i as f32) * 0.377).sin() * 40.0).collect();
    let ys: Vec<f32> = (0..n).map(|i| ((i as f32) * 0.911).cos() * 3.0).collect();
    let x = vec1(xs.iter().map(|&v| f16::from_f32(v)).collect());
    let y = vec1(ys.iter().map(|&v| f16::from_f32(v)).collect());
    let Tensor::F16(got) = both("fma", &[Value::from(x.clone()), Value::from(y.clone())]) else {
        panic!()
    };
    let mut double_rounding_differs = 0;
    for ((a, b), g) in x.iter().zip(y.iter()).zip(got.iter()) {
        let once = f16::from_f32(a.to_f32() * b.to_f32() + 1.0);
        assert_eq!(g.to_bits(), once.to_bits(), "{a} * {b} + 1");
        let twice = f16::from_f32(f16::from_f32(a.to_f32() * b.to_f32()).to_f32() + 1.0);
        double_rounding_differs += usize::from(once != twice);
    }
    // The inputs tell one rounding from two.
    assert!(double_rounding_differs > 10, "{double_rounding_differs}");
    let xb: ArrayD<bf16> = vec1(xs.iter().map(|&v| bf16::from_f32(v)).collect());
    let yb: ArrayD<bf16> = vec1(ys.iter().map(|&v| bf16::from_f32(v)).collect());
    let args = [Value::from(xb.clone()), Value::from(yb.clone())];
    let once = |a: &bf16, b: &bf16| bf16::from_f32(a.to_f32() * b.to_f32() + 1.0);
    let twice =
        |a: &bf16, b: &bf16| bf16::from_f32(bf16::from_f32(a.to_f32() * b.to_f32()).to_f32() + 1.0);
    let check = |f: &str, want: &dyn Fn(&bf16, &bf16) -> bf16| {
        let Tensor::BF16(got) = both(f, &args) else { panic!("{f}: not bf16") };
        let mut differs = 0;
        for ((a, b), g) in xb.iter().zip(yb.iter()).zip(got.iter()) {
            assert_eq!(g.to_bits(), want(a, b).to_bits(), "`{f}`: {a} * {b} + 1");
            differs += usize::from(once(a, b) != twice(a, b));
        }
        assert!(differs > 10, "{differs}");
    };
    check("fma", &once);
    check("fma_moved", &once);
    check("fma_cast", &twice);
    check("fma_call", &twice);
    // Transcendentals and reductions agree across backends within the f32 tolerance that
    // rounding to bf16 absorbs almost always; checked exactly against each other here.
    let Tensor::BF16(g) = call(Backend::Jit, "gelu", &args[..1]) else { panic!() };
    let Tensor::BF16(r) = call(Backend::Interp, "gelu", &args[..1]) else { panic!() };
    let close = g
        .iter()
        .zip(r.iter())
        .all(|(a, b)| (a.to_f32() - b.to_f32()).abs() <= 0.02 * b.to_f32().abs().max(1e-3));
    assert!(close, "gelu on bf16: JIT and interpreter differ by more than one bf16 ulp");
}

#[test]
fn reductions_shape_ops_and_matmul_on_storage_dtypes() {
    let a: Vec<f32> = (0..6 * 5).map(|i| ((i as f32) * 0.71).sin() * 2.0).collect();
    let x = ArrayD::from_shape_vec(IxDyn(&[6, 5]), a.iter().map(|&v| f16::from_f32(v)).collect())
        .unwrap();
    let Tensor::F16(s) = call(Backend::Interp, "rowsum", &[Value::from(x.clone())]) else {
        panic!()
    };
    for (r, row) in s.iter().zip(x.outer_iter()) {
        let want: f32 = row.iter().map(|v| v.to_f32()).sum();
        assert!((r.to_f32() - want).abs() <= want.abs() * 1e-3 + 1e-3);
    }
    let Tensor::F16(s2) = call(Backend::Jit, "rowsum", &[Value::from(x.clone())]) else { panic!() };
    assert_eq!(s, s2);
    let moved = both("moves", &[Value::from(x.clone())]);
    assert_eq!(moved.shape(), &[9, 6]);
    let u = x.mapv(|v| (v.to_f32().abs() * 50.0) as u8);
    assert_eq!(both("moves", &[Value::from(u)]).dtype(), tfn::DType::U8);
    // matmul: f32 accumulation of the exact products, rounded once.
    let b = ArrayD::from_shape_vec(
        IxDyn(&[5, 4]),
        (0..20).map(|i| bf16::from_f32(i as f32 * 0.25 - 2.0)).collect(),
    )
    .unwrap();
    let ab = x.mapv(|v| bf16::from_f32(v.to_f32()));
    let Tensor::BF16(m) = both("mm", &[Value::from(ab.clone()), Value::from(b.clone())]) else {
        panic!()
    };
    for i in 0..6 {
        for j in 0..4 {
            let acc: f32 = (0..5).map(|k| ab[[i, k]].to_f32() * b[[k, j]].to_f32()).sum();
            let got = m[[i, j]].to_f32();
            assert!((got - acc).abs() <= acc.abs() / 128.0 + 1e-6, "[{i}, {j}] {got} vs {acc}");
        }
    }
}

#[test]
fn npy_round_trips_every_storage_dtype() {
    let dir = std::env::temp_dir().join(format!("tfn-storage-npy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tensors = [
        Tensor::F16(vec1(all_patterns().into_iter().map(f16::from_bits).collect())),
        Tensor::BF16(vec1(all_patterns().into_iter().map(bf16::from_bits).collect())),
        Tensor::I8(vec1((-128..=127).collect())),
        Tensor::U8(vec1((0..=255).collect())),
    ];
    for (i, t) in tensors.iter().enumerate() {
        let path = dir.join(format!("t{i}.npy"));
        tfn::npy::write(&path, t).unwrap();
        let back = tfn::npy::read(&path).unwrap();
        assert_eq!(bit_patterns(&back), bit_patterns(t));
    }
    let header = std::fs::read(dir.join("t1.npy")).unwrap();
    assert!(String::from_utf8_lossy(&header[..80]).contains("'descr': '<V2'"));
    std::fs::remove_dir_all(&dir).ok();
}

/// Functions of `std:nn` and values used several times, for the gradient tests.
const GRAD_SOURCE: &str = r#"
use "std:nn"
fn sq(Tensor x) -> Tensor {
    return x * x
}
fn exp_sin(Tensor x) -> Tensor {
    return exp(x) + sin(x)
}
fn spread(Tensor x, Tensor y) -> Tensor {
    return broadcast_to(x, [4, 5]) * y
}
fn norm(Tensor x, Tensor gamma, Tensor beta) -> Tensor {
    return layer_norm(x, gamma, beta)
}
fn loss(Tensor logits, Tensor targets) -> Tensor {
    return cross_entropy(logits, targets)
}
"#;

/// `Session::vjp` of f16 and bf16 functions (a value used twice, `broadcast_to`, `layer_norm`
/// and `cross_entropy`) on both backends: the gradients have the arguments' dtype and are the
/// f32 gradients of the same values rounded (within one ulp; the f32 contributions of a value
/// used several times add before rounding).
#[test]
fn half_gradients_match_the_f32_gradients_on_both_backends() {
    // Values on a grid of 1/32: exact in f16 and bf16.
    let grid = |shape: &[usize], seed: usize| {
        let n: usize = shape.iter().product();
        let v = (0..n).map(|i| (((i * 7 + seed * 13) % 61) as f32 - 30.0) / 32.0).collect();
        ArrayD::from_shape_vec(IxDyn(shape), v).unwrap()
    };
    let targets = ArrayD::from_shape_vec(IxDyn(&[4]), vec![0i64, 3, 4, 1]).unwrap();
    // (function, argument shapes, result shape)
    type Case = (&'static str, &'static [&'static [usize]], &'static [usize]);
    let cases: &[Case] = &[
        ("sq", &[&[3, 4]], &[3, 4]),
        ("exp_sin", &[&[9]], &[9]),
        ("spread", &[&[5], &[4, 5]], &[4, 5]),
        ("norm", &[&[4, 5], &[5], &[5]], &[4, 5]),
        ("loss", &[&[4, 5]], &[]),
    ];
    for backend in [Backend::Interp, Backend::Jit] {
        let s = Session::with_backend(backend);
        s.load_str("grads.tfn", GRAD_SOURCE).unwrap_or_else(|e| panic!("load: {e}"));
        for (name, shapes, out) in cases {
            let values: Vec<ArrayD<f32>> =
                shapes.iter().enumerate().map(|(i, sh)| grid(sh, i)).collect();
            let cot = grid(out, 5);
            let vjp = |args: Vec<Value<'static>>, cot: Value<'static>| -> Vec<Tensor> {
                let mut args = args;
                if *name == "loss" {
                    args.push(Value::from(targets.clone()));
                }
                s.vjp(name, &args, &[cot])
                    .unwrap_or_else(|e| panic!("vjp of `{name}` on {backend:?}: {e}"))
                    .into_iter()
                    .map(|v| v.into_tensor().expect("a tensor"))
                    .collect()
            };
            let full =
                vjp(values.iter().map(|v| Value::from(v.clone())).collect(), cot.clone().into());
            let to_f16 = |a: &ArrayD<f32>| Value::from(a.mapv(f16::from_f32));
            let to_bf16 = |a: &ArrayD<f32>| Value::from(a.mapv(bf16::from_f32));
            for (dtype, conv, ulp) in [
                (tfn::DType::F16, &to_f16 as &dyn Fn(&ArrayD<f32>) -> Value<'static>, 1.0 / 1024.0),
                (tfn::DType::BF16, &to_bf16, 1.0 / 128.0),
            ] {
                let half = vjp(values.iter().map(conv).collect(), conv(&cot));
                assert_eq!(half.len(), full.len());
                for (k, (h, f)) in half.iter().zip(&full).enumerate() {
                    assert_eq!(h.dtype(), dtype, "`{name}` gradient {k}");
                    let h: Vec<f32> = match h {
                        Tensor::F16(a) => a.iter().map(|v| v.to_f32()).collect(),
                        Tensor::BF16(a) => a.iter().map(|v| v.to_f32()).collect(),
                        other => panic!("{other:?}"),
                    };
                    let Tensor::F32(f) = f else { panic!("an f32 gradient") };
                    let scale = f.iter().fold(0f32, |m, v| m.max(v.abs()));
                    for (a, b) in h.iter().zip(f.iter()) {
                        let tol = ulp * b.abs() + 1e-3 * scale;
                        assert!(
                            (a - b).abs() <= tol,
                            "`{name}` on {backend:?} in {dtype}, gradient {k}: {a}, f32 gives {b}"
                        );
                    }
                }
            }
        }
    }
}

/// Large 16-bit kernels run as f32 blocks converted by the CPU's F16C or vectorised code
/// (`backend/src/executor/widened.rs`), at sizes spanning many blocks and threads, on 1 and
/// 3 threads: flat elementwise against the interpreter; rows with a broadcast bias and a
/// softmax, and a row sum (whose `exp` and summation order are the JIT's own), against the
/// JIT on the same values as f32, rounded once (what computing in f32 and rounding at the
/// store means).
#[test]
fn large_half_kernels_run_widened_with_the_same_bits() {
    let (rows, cols) = (333, 1031);
    let data = |n: usize, k: f32| -> Vec<f32> {
        (0..n).map(|i| ((i as f32) * k).sin() * 6.0 + (i % 7) as f32 * 1e-3).collect()
    };
    let jit = |threads: usize, f: &str, args: &[Value]| -> Vec<Tensor> {
        let s = Session::with_options(tfn::SessionOptions {
            backend: Backend::Jit,
            threads,
            ..Default::default()
        });
        s.load_str("storage.tfn", SOURCE).unwrap();
        let out = s.call(f, args).unwrap_or_else(|e| panic!("{f}: {e}"));
        out.into_iter().filter_map(Value::into_tensor).collect()
    };
    let check = |f: &str, args: &[Value], want: Vec<Tensor>| {
        let want: Vec<_> = want.iter().map(bit_patterns).collect();
        for threads in [1, 3] {
            let got: Vec<_> = jit(threads, f, args).iter().map(bit_patterns).collect();
            assert!(got == want, "`{f}` on {threads} threads differs");
        }
    };
    let interp = |f: &str, args: &[Value]| -> Vec<Tensor> {
        let out = session(Backend::Interp).call(f, args).unwrap();
        out.into_iter().filter_map(Value::into_tensor).collect()
    };
    let flat = 300_001;
    let (xs, ys) = (data(flat, 0.377), data(flat, 0.911));
    let x = [
        vec1(xs.iter().map(|&v| f16::from_f32(v)).collect()),
        vec1(ys.iter().map(|&v| f16::from_f32(v)).collect()),
    ];
    let args = x.map(Value::from);
    check("fma", &args, interp("fma", &args));
    let x = [
        vec1(xs.iter().map(|&v| bf16::from_f32(v)).collect()),
        vec1(ys.iter().map(|&v| bf16::from_f32(v)).collect()),
    ];
    let args = x.map(Value::from);
    check("fma", &args, interp("fma", &args));
    // The reference: the f32 function on the 16-bit values, each output rounded once.
    let m = data(rows * cols, 0.131);
    let b = data(cols, 0.7);
    for half in [false, true] {
        let round = |v: f32| {
            if half {
                bits::f16_to_f32(bits::f32_to_f16(v))
            } else {
                bits::bf16_to_f32(bits::f32_to_bf16(v))
            }
        };
        let xm =
            ArrayD::from_shape_vec(IxDyn(&[rows, cols]), m.iter().map(|&v| round(v)).collect())
                .unwrap();
        let bm = vec1(b.iter().map(|&v| round(v)).collect::<Vec<f32>>());
        let as16 = |a: &ArrayD<f32>| -> Value {
            if half {
                Value::from(a.mapv(f16::from_f32))
            } else {
                Value::from(a.mapv(bf16::from_f32))
            }
        };
        let narrow = |t: Tensor| -> Tensor {
            let Tensor::F32(a) = t else { panic!("f32 reference") };
            if half {
                Tensor::F16(a.mapv(f16::from_f32))
            } else {
                Tensor::BF16(a.mapv(bf16::from_f32))
            }
        };
        for (f, args16, args32) in [
            (
                "bias_rows",
                vec![as16(&xm), as16(&bm)],
                vec![Value::from(xm.clone()), Value::from(bm.clone())],
            ),
            ("rowsum", vec![as16(&xm)], vec![Value::from(xm.clone())]),
        ] {
            let want = jit(1, f, &args32).into_iter().map(narrow).collect();
            check(f, &args16, want);
        }
    }
}

/// A 16-bit matmul is the f32 matmul of its widened operands, rounded once: the GEMM widens
/// them while packing (no widened copy; `packed_gemm::half`), so its sums are the f32 GEMM's
/// own, bit for bit, on 1 and 3 threads — a row-major `x`, a `[out, in]` weight read
/// transposed, a broadcast bias, sizes crossing the packers' blocks.
#[test]
fn half_matmuls_are_the_f32_matmul_of_their_values_rounded_once() {
    let (m, k, n) = (197, 300, 77);
    let data = |len: usize, f: f32| -> Vec<f32> {
        (0..len).map(|i| ((i as f32) * f).sin() * 2.0 + (i % 5) as f32 * 1e-3).collect()
    };
    let jit = |threads: usize, args: &[Value]| -> Tensor {
        let s = Session::with_options(tfn::SessionOptions {
            backend: Backend::Jit,
            threads,
            ..Default::default()
        });
        s.load_str("storage.tfn", SOURCE).unwrap();
        let out = s.call("linear_t", args).unwrap_or_else(|e| panic!("linear_t: {e}"));
        out.into_iter().next().and_then(Value::into_tensor).expect("one tensor")
    };
    for half in [true, false] {
        let round = |v: f32| {
            if half {
                bits::f16_to_f32(bits::f32_to_f16(v))
            } else {
                bits::bf16_to_f32(bits::f32_to_bf16(v))
            }
        };
        let array = |shape: &[usize], v: Vec<f32>| {
            ArrayD::from_shape_vec(IxDyn(shape), v.into_iter().map(round).collect()).unwrap()
        };
        let (x, w, b) = (
            array(&[m, k], data(m * k, 0.37)),
            array(&[n, k], data(n * k, 0.71)),
            array(&[n], data(n, 0.5)),
        );
        let as16 = |a: &ArrayD<f32>| -> Value {
            if half {
                Value::from(a.mapv(f16::from_f32))
            } else {
                Value::from(a.mapv(bf16::from_f32))
            }
        };
        let Tensor::F32(want) = jit(1, &[x.clone().into(), w.clone().into(), b.clone().into()])
        else {
            panic!("f32 reference")
        };
        let want = if half {
            bit_patterns(&Tensor::F16(want.mapv(f16::from_f32)))
        } else {
            bit_patterns(&Tensor::BF16(want.mapv(bf16::from_f32)))
        };
        for threads in [1, 3] {
            let got = jit(threads, &[as16(&x), as16(&w), as16(&b)]);
            assert!(bit_patterns(&got) == want, "half {half} on {threads} threads differs");
        }
    }
}
