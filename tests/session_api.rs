//! Tests of the `Session` API contract (spec/cli-and-api.md) that file tests cannot express:
//! strided inputs, `call_into`, the compile cache, extern kernels, concurrent calls, failed
//! loads, and shape errors. Each runs on both backends where the backend matters.

use ndarray::{s, ArrayD, IxDyn};
use tfn::{Backend, Error, OutputMut, Session, Tensor, Value};

const SOURCE: &str = r#"
fn mixed(Tensor x) -> Tensor {
    return x * 2.0 + sum(x, dims=[0], keepdim=true)
}

fn add2(Tensor x, Tensor y) -> Tensor {
    return x + y
}

fn mm(Tensor a, Tensor b) -> Tensor {
    return matmul(a, b)
}

fn doubled(Tensor<i32> x) -> Tensor {
    return cast(x, f32) * 2.0
}

fn moments(Tensor x, *, Int[] dims) -> (Tensor, Tensor) {
    let mu = mean(x, dims=dims, keepdim=true)
    let d = x - mu
    return (mu, mean(d * d, dims=dims, keepdim=true))
}
"#;

const BACKENDS: [Backend; 2] = [Backend::Interp, Backend::Jit];

fn session(backend: Backend) -> Session {
    let s = Session::with_backend(backend);
    s.load_str("api.tfn", SOURCE).unwrap_or_else(|e| panic!("load: {e}"));
    s
}

/// A deterministic f32 array with distinct values.
fn array(shape: &[usize], seed: f32) -> ArrayD<f32> {
    let n: usize = shape.iter().product();
    let values = (0..n).map(|i| ((i as f32 + seed) * 0.731).sin() * 3.0).collect();
    ArrayD::from_shape_vec(IxDyn(shape), values).expect("shape")
}

fn only_f32(results: Vec<Value<'static>>) -> ArrayD<f32> {
    match results.into_iter().next().and_then(Value::into_tensor) {
        Some(Tensor::F32(a)) => a,
        other => panic!("expected one f32 result, got {other:?}"),
    }
}

#[test]
fn strided_views_give_the_contiguous_result() {
    for backend in BACKENDS {
        let s = session(backend);
        let base = array(&[6, 8], 0.0);
        let first_row = base.slice(s![0..1, ..]);
        let views = [
            ("transposed", base.view().reversed_axes().into_dyn()),
            ("stepped", base.slice(s![.., ..;2]).into_dyn()),
            ("reversed", base.slice(s![..;-1, 1..5]).into_dyn()),
            ("broadcast", first_row.broadcast(IxDyn(&[3, 8])).expect("broadcast")),
        ];
        for (what, view) in views {
            let contiguous = view.as_standard_layout().into_owned();
            let strided =
                only_f32(s.call("mixed", &[Value::from(view.clone())]).expect("strided call"));
            let dense =
                only_f32(s.call("mixed", &[Value::from(contiguous.view())]).expect("dense call"));
            assert_eq!(strided, dense, "{backend:?} {what}");
        }
        // Both operands strided, in a matmul.
        let a = array(&[4, 3], 1.0);
        let b = array(&[5, 4], 2.0);
        let strided = only_f32(
            s.call(
                "mm",
                &[
                    Value::from(a.view().reversed_axes().into_dyn()),
                    Value::from(b.view().reversed_axes().into_dyn()),
                ],
            )
            .expect("strided matmul"),
        );
        let at = a.view().reversed_axes().as_standard_layout().into_owned();
        let bt = b.view().reversed_axes().as_standard_layout().into_owned();
        let dense = only_f32(
            s.call("mm", &[Value::from(at.view()), Value::from(bt.view())]).expect("matmul"),
        );
        assert_eq!(strided, dense, "{backend:?} matmul of transposed views");
    }
}

#[test]
fn call_into_writes_the_buffer_and_rejects_a_wrong_one() {
    for backend in BACKENDS {
        let s = session(backend);
        let x = array(&[3, 4], 0.5);
        let expected = only_f32(s.call("mixed", &[Value::from(x.view())]).expect("call"));
        let mut out = ArrayD::<f32>::from_elem(IxDyn(&[3, 4]), f32::NAN);
        s.call_into("mixed", &[Value::from(x.view())], &mut [OutputMut::from(out.view_mut())])
            .expect("call_into");
        assert_eq!(out, expected, "{backend:?}");

        // Into a strided (transposed) buffer of the right shape.
        let mut backing = ArrayD::<f32>::zeros(IxDyn(&[4, 3]));
        let view = backing.view_mut().reversed_axes().into_dyn();
        s.call_into("mixed", &[Value::from(x.view())], &mut [OutputMut::from(view)])
            .expect("strided buffer");
        assert_eq!(backing.t().into_dyn(), expected.view(), "{backend:?} strided output");

        // Two results, two buffers.
        let (mut mu, mut var) =
            (ArrayD::<f32>::zeros(IxDyn(&[3, 1])), ArrayD::<f32>::zeros(IxDyn(&[3, 1])));
        s.call_into_kw(
            "moments",
            &[Value::from(x.view())],
            &[("dims", Value::from(vec![-1i64]))],
            &mut [OutputMut::from(mu.view_mut()), OutputMut::from(var.view_mut())],
        )
        .expect("tuple call_into");
        assert!(var.iter().all(|v| *v > 0.0), "{backend:?} variance written: {var:?}");

        let mut wrong = ArrayD::<f32>::zeros(IxDyn(&[4, 3]));
        let err = s.call_into(
            "mixed",
            &[Value::from(x.view())],
            &mut [OutputMut::from(wrong.view_mut())],
        );
        assert!(
            matches!(err, Err(Error::Output { index: 0, .. })),
            "{backend:?} wrong shape: {err:?}"
        );
        let mut wrong_dtype = ArrayD::<f64>::zeros(IxDyn(&[3, 4]));
        let err = s.call_into(
            "mixed",
            &[Value::from(x.view())],
            &mut [OutputMut::from(wrong_dtype.view_mut())],
        );
        assert!(
            matches!(err, Err(Error::Output { index: 0, .. })),
            "{backend:?} wrong dtype: {err:?}"
        );
        let err = s.call_into("mixed", &[Value::from(x.view())], &mut []);
        assert!(matches!(err, Err(Error::Output { .. })), "{backend:?} no buffer: {err:?}");
        assert!(wrong.iter().all(|v| *v == 0.0), "a rejected buffer is left alone");
    }
}

#[test]
fn the_cache_is_keyed_on_dtype_and_rank_not_sizes() {
    for backend in BACKENDS {
        let s = session(backend);
        let call = |a: Value| s.call("mixed", &[a]).expect("call");
        call(Value::from(array(&[4, 6], 0.0)));
        let after_first = s.stats();
        assert_eq!(after_first.compiles, 1, "{backend:?}");
        call(Value::from(array(&[9, 6], 0.0)));
        call(Value::from(array(&[2, 3], 0.0)));
        let resized = s.stats();
        assert_eq!(resized.compiles, 1, "{backend:?}: new sizes must not recompile");
        assert_eq!(resized.cache_hits, after_first.cache_hits + 2, "{backend:?}");
        call(Value::from(array(&[4, 6], 0.0).mapv(f64::from)));
        assert_eq!(s.stats().compiles, 2, "{backend:?}: a new dtype compiles");
        call(Value::from(array(&[2, 3, 4], 0.0)));
        assert_eq!(s.stats().compiles, 3, "{backend:?}: a new rank compiles");
        call(Value::from(array(&[5, 7], 1.0)));
        assert_eq!(s.stats().compiles, 3, "{backend:?}: the first signature is still cached");
    }
}

#[test]
fn an_instantiated_handle_skips_the_lookup_but_checks_the_signature() {
    for backend in BACKENDS {
        let s = session(backend);
        let x = array(&[4, 6], 0.0);
        let handle = s.instantiate("mixed", &[Value::from(x.view())], &[]).expect("instantiate");
        let compiles = s.stats().compiles;
        for rows in [4, 7, 2] {
            let x = array(&[rows, 6], rows as f32);
            let expected = only_f32(s.call("mixed", &[Value::from(x.view())]).expect("call"));
            assert_eq!(
                only_f32(handle.call(&[Value::from(x.view())]).expect("handle call")),
                expected
            );
        }
        assert_eq!(s.stats().compiles, compiles, "{backend:?}: no compile after instantiate");
        let wrong = array(&[4, 6], 0.0).mapv(f64::from);
        let err = handle.call(&[Value::from(wrong)]);
        assert!(matches!(err, Err(Error::Signature { .. })), "{backend:?}: {err:?}");
        let err = handle.call(&[Value::from(array(&[2, 3, 4], 0.0))]);
        assert!(matches!(err, Err(Error::Signature { .. })), "{backend:?} rank: {err:?}");
    }
}

const EXTERN: &str = r#"
extern op clip(Tensor x, Float limit) -> Tensor
    shape: x
    dtype: x

fn clipped_twice(Tensor x) -> Tensor {
    return clip(x * 2.0, limit=1.5) + 1.0
}
"#;

#[test]
fn extern_ops_run_registered_kernels() {
    for backend in BACKENDS {
        let s = Session::with_backend(backend);
        s.load_str("extern.tfn", EXTERN).unwrap_or_else(|e| panic!("load: {e}"));
        let x = array(&[2, 5], 0.0);

        // No kernel registered yet: a typed error naming the op, not a panic.
        let err = s.call("clipped_twice", &[Value::from(x.view())]);
        match &err {
            Err(Error::Runtime(msg)) => assert!(msg.contains("clip"), "{msg}"),
            other => panic!("{backend:?}: expected a runtime error naming `clip`, got {other:?}"),
        }

        s.register_extern("clip", |inputs, attrs| {
            let limit = attrs
                .iter()
                .find_map(|a| a.as_f64())
                .ok_or_else(|| "no limit attribute".to_string())?;
            match inputs {
                [Tensor::F32(a)] => {
                    Ok(Tensor::F32(a.mapv(|v| v.clamp(-limit as f32, limit as f32))))
                }
                _ => Err("clip expects one f32 tensor".to_string()),
            }
        });
        let y =
            only_f32(s.call("clipped_twice", &[Value::from(x.view())]).expect("call with kernel"));
        let expected = x.mapv(|v| (v * 2.0).clamp(-1.5, 1.5) + 1.0);
        assert_eq!(y, expected, "{backend:?}");

        // A kernel's own error is a typed error too.
        let f64_input = x.mapv(f64::from);
        let err = s.call("clipped_twice", &[Value::from(f64_input)]);
        assert!(
            matches!(err, Err(Error::Runtime(ref m)) if m.contains("f32")),
            "{backend:?}: {err:?}"
        );
    }
}

#[test]
fn concurrent_calls_agree() {
    for backend in BACKENDS {
        let s = session(backend);
        let inputs: Vec<ArrayD<f32>> = (0..4).map(|i| array(&[3 + i, 5], i as f32)).collect();
        let expected: Vec<ArrayD<f32>> = inputs
            .iter()
            .map(|x| only_f32(s.call("mixed", &[Value::from(x.view())]).expect("call")))
            .collect();
        std::thread::scope(|scope| {
            for t in 0..4 {
                let (s, inputs, expected) = (&s, &inputs, &expected);
                scope.spawn(move || {
                    for round in 0..25 {
                        let i = (t + round) % inputs.len();
                        let y = only_f32(
                            s.call("mixed", &[Value::from(inputs[i].view())])
                                .expect("threaded call"),
                        );
                        assert_eq!(y, expected[i], "{backend:?} thread {t} round {round}");
                        let kw = s.call_kw(
                            "moments",
                            &[Value::from(inputs[i].view())],
                            &[("dims", Value::from(vec![0i64]))],
                        );
                        assert_eq!(kw.expect("moments").len(), 2);
                    }
                });
            }
        });
        // `mixed` was compiled before the threads started; `moments` once (a miss compiles
        // under the session's compile lock), never per call.
        assert_eq!(s.stats().compiles, 2, "{backend:?}: {:?}", s.stats());
    }
}

#[test]
fn a_failed_load_leaves_the_session_unchanged() {
    let s = session(Backend::Interp);
    let x = array(&[2, 3], 0.0);
    let before = only_f32(s.call("mixed", &[Value::from(x.view())]).expect("call"));
    let bad = "fn also_new(Tensor x) -> Tensor {\n    return x\n}\n\nfn broken(Tensor x) -> Tensor {\n    return nosuch(x)\n}\n";
    let err = s.load_str("bad.tfn", bad);
    match &err {
        Err(Error::Load { diagnostics, rendered }) => {
            assert!(!diagnostics.is_empty());
            assert!(rendered.contains("bad.tfn:6:"), "{rendered}");
        }
        other => panic!("expected a load error, got {other:?}"),
    }
    let after = only_f32(s.call("mixed", &[Value::from(x.view())]).expect("still callable"));
    assert_eq!(before, after);
    for name in ["also_new", "broken"] {
        let err = s.call(name, &[Value::from(x.view())]);
        assert!(matches!(err, Err(Error::UnknownFunction { .. })), "{name}: {err:?}");
    }
    // The failed file's names are free: a corrected file loads.
    s.load_str("fixed.tfn", "fn also_new(Tensor x) -> Tensor {\n    return x + 1.0\n}\n")
        .expect("reload");
    let y = only_f32(s.call("also_new", &[Value::from(x.view())]).expect("call"));
    assert_eq!(y, x.mapv(|v| v + 1.0));
    // A redefinition is an error, not a silent override.
    assert!(matches!(
        s.load_str("again.tfn", "fn mixed(Tensor x) -> Tensor {\n    return x\n}\n"),
        Err(Error::Load { .. })
    ));
    let io = s.load_file("/nonexistent/dir/none.tfn");
    assert!(matches!(io, Err(Error::Io { .. })), "{io:?}");
}

#[test]
fn shape_errors_name_both_shapes() {
    for backend in BACKENDS {
        let s = session(backend);
        let (x, y) = (array(&[2, 3], 0.0), array(&[4, 3], 1.0));
        let err = s.call("add2", &[Value::from(x.view()), Value::from(y.view())]);
        let msg = match err {
            Err(e @ Error::Shape(_)) => e.to_string(),
            other => panic!("{backend:?}: expected a shape error, got {other:?}"),
        };
        assert!(msg.contains("[2, 3]") && msg.contains("[4, 3]"), "{backend:?}: {msg}");

        let (a, b) = (array(&[2, 3], 0.0), array(&[4, 5], 1.0));
        let err = s.call("mm", &[Value::from(a.view()), Value::from(b.view())]);
        let msg = match err {
            Err(e @ Error::Shape(_)) => e.to_string(),
            other => panic!("{backend:?}: expected a shape error, got {other:?}"),
        };
        assert!(msg.contains("[2, 3]") && msg.contains("[4, 5]"), "{backend:?} matmul: {msg}");

        let err = s.call("nosuch", &[Value::from(x.view())]);
        assert!(matches!(err, Err(Error::UnknownFunction { .. })), "{err:?}");
        let err = s.call("add2", &[Value::from(x.view())]);
        assert!(matches!(err, Err(Error::Call { .. })), "missing argument: {err:?}");
        let err = s.call_kw(
            "add2",
            &[Value::from(x.view()), Value::from(x.view())],
            &[("z", Value::from(1i64))],
        );
        match err {
            Err(Error::Call { rendered, .. }) => assert!(rendered.contains('z'), "{rendered}"),
            other => panic!("unknown keyword: {other:?}"),
        }
    }
}

#[test]
fn vjp_without_a_float_tensor_argument_has_nothing_to_differentiate() {
    for backend in BACKENDS {
        let s = session(backend);
        let x = ndarray::ArrayD::<i32>::zeros(IxDyn(&[3]));
        let ct = array(&[3], 0.0);
        let err = s.vjp("doubled", &[Value::from(x.view())], &[Value::from(ct.view())]);
        match err {
            Err(Error::Call { diagnostics, rendered }) => {
                assert_eq!(diagnostics[0].code, "E0804", "{rendered}");
                assert!(rendered.contains("nothing to differentiate"), "{rendered}");
                assert!(rendered.contains("`doubled`"), "{rendered}");
                assert!(!rendered.contains("internal"), "{rendered}");
            }
            other => panic!("{backend:?}: expected a call error, got {other:?}"),
        }
    }
}

#[test]
fn value_and_vjp_equals_call_then_vjp_and_is_its_own_cache_entry() {
    for backend in BACKENDS {
        let s = session(backend);
        let x = array(&[3, 4], 0.5);
        let args = [Value::from(x.view())];
        let kw = [("dims", Value::from(vec![1i64]))];
        let (ct0, ct1) = (array(&[3, 1], 1.0), array(&[3, 1], 2.0));
        let cts = [Value::from(ct0.view()), Value::from(ct1.view())];
        let values = s.call_kw("moments", &args, &kw).unwrap();
        let grads = s.vjp_kw("moments", &args, &kw, &cts).unwrap();
        let compiles = s.stats().compiles;
        let (v2, g2) = s.value_and_vjp_kw("moments", &args, &kw, &cts).unwrap();
        assert_eq!(s.stats().compiles, compiles + 1, "{backend:?}: a third kind of entry");
        assert_eq!((v2.len(), g2.len()), (2, 1), "{backend:?}");
        let tensors = |vs: &[Value]| -> Vec<Tensor> {
            vs.iter().map(|v| v.as_tensor().expect("tensor").to_tensor()).collect()
        };
        assert_eq!(tensors(&v2), tensors(&values), "{backend:?}: values");
        assert_eq!(tensors(&g2), tensors(&grads), "{backend:?}: gradients");
        let err = s.value_and_vjp_kw("moments", &args, &kw, &cts[..1]);
        assert!(matches!(err, Err(Error::Shape(_))), "{backend:?}: {err:?}");
    }
}

/// `name.overload` calls that overload alone (the Python binding's `lib["scale.scalar"]`).
#[test]
fn explicit_overload_names() {
    let s = Session::with_backend(Backend::Interp);
    let src = "fn sc(Tensor x, Tensor s) -> Tensor {\n    return x * s\n}\n\
               fn sc.num(Tensor x, Scalar s) -> Tensor {\n    return x + s\n}\n";
    s.load_str("ov.tfn", src).unwrap_or_else(|e| panic!("load: {e}"));
    let x = ArrayD::<f64>::from_elem(IxDyn(&[2]), 3.0);
    let by_name = s.call("sc", &[x.view().into(), 2.0.into()]).unwrap();
    let explicit = s.call("sc.num", &[x.view().into(), 2.0.into()]).unwrap();
    let (Some(Tensor::F64(a)), Some(Tensor::F64(b))) =
        (by_name[0].clone().into_tensor(), explicit[0].clone().into_tensor())
    else {
        panic!("f64 results expected")
    };
    assert_eq!((a[[0]], b[[0]]), (5.0, 5.0));
    // A dot names an overload only when one of that name exists.
    let first = s.call("sc.", &[x.view().into(), 2.0.into()]);
    assert!(matches!(first, Err(Error::UnknownFunction { .. })), "{first:?}");
    let missing = s.call("sc.nope", &[x.view().into(), 2.0.into()]);
    assert!(matches!(missing, Err(Error::UnknownFunction { .. })), "{missing:?}");
}

#[test]
fn threads_missing_together_compile_a_signature_once() {
    for backend in BACKENDS {
        let s = session(backend);
        let x = array(&[64, 9], 0.5);
        let barrier = std::sync::Barrier::new(4);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                let (s, x, barrier) = (&s, &x, &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    s.call_kw(
                        "moments",
                        &[Value::from(x.view())],
                        &[("dims", Value::from(vec![1i64]))],
                    )
                    .expect("moments");
                });
            }
        });
        let stats = s.stats();
        assert_eq!((stats.compiles, stats.cache_hits), (1, 3), "{backend:?}: {stats:?}");
    }
}

/// Process CPU time (user + system) from `/proc/self/stat`, in seconds (10 ms ticks).
#[cfg(target_os = "linux")]
fn process_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The fields after the command name (which may contain spaces) end with `)`.
    let rest = &stat[stat.rfind(')').expect("stat format") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after `) `.
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0
}

/// Runs `work()` on `threads` threads for `seconds` each; returns the process CPU time per
/// wall-clock second over the run (about `threads` when they run in parallel on idle cores).
#[cfg(target_os = "linux")]
fn busy_ratio(threads: usize, seconds: f64, work: &(dyn Fn() + Sync)) -> f64 {
    use std::time::{Duration, Instant};
    let (cpu0, wall0) = (process_cpu_seconds(), Instant::now());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(move || {
                while wall0.elapsed() < Duration::from_secs_f64(seconds) {
                    work();
                }
            });
        }
    });
    (process_cpu_seconds() - cpu0) / wall0.elapsed().as_secs_f64()
}

/// Starts `long` on a thread and, once it has run for 50 ms, calls `short` here; whether the
/// short call finished first. Nothing else runs meanwhile, so the long call holds any lock it
/// takes from its start: a lock shared by the two calls makes the short one wait for its end.
/// `long` returns the instant it ended: for a lock it holds itself, taken before releasing it
/// (after the release the waiting short call may finish before the long thread runs again).
fn finishes_inside(long: &(dyn Fn() -> std::time::Instant + Sync), short: &dyn Fn()) -> bool {
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};
    let started = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let handle = scope.spawn(|| {
            started.store(true, std::sync::atomic::Ordering::SeqCst);
            long()
        });
        while !started.load(std::sync::atomic::Ordering::SeqCst) {
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis(50));
        short();
        let short_end = Instant::now();
        short_end < handle.join().expect("long call")
    })
}

#[test]
fn the_overlap_check_sees_a_lock() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let lock = std::sync::Mutex::new(());
    // The long call takes the lock before the short one asks for it, however late the busy
    // machine schedules it (the short one waits for `held`, not only for the 50 ms).
    let held = AtomicBool::new(false);
    let hold = |ms: u64| {
        let guard = lock.lock().unwrap();
        held.store(true, Ordering::SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(ms));
        let end = std::time::Instant::now();
        drop(guard);
        end
    };
    let wait_then_hold = || {
        while !held.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        let _g = lock.lock().unwrap();
    };
    assert!(!finishes_inside(&|| hold(400), &wait_then_hold));
    let sleep = |ms| std::thread::sleep(std::time::Duration::from_millis(ms));
    assert!(finishes_inside(
        &|| {
            sleep(400);
            std::time::Instant::now()
        },
        &|| sleep(1)
    ));
}

/// Two threads calling one session (of one kernel thread) run at the same time: a short call
/// finishes while a long call runs, and, when the machine gives this process two cores (a
/// plain Rust spin loop on two threads measures it), the process keeps both busy. A lock
/// around calls (or the kernels) would fail both.
#[cfg(target_os = "linux")]
#[test]
fn calls_from_two_threads_run_in_parallel() {
    let s = Session::with_options(tfn::SessionOptions { threads: 1, ..Default::default() });
    s.load_str("busy.tfn", "fn busy(Tensor x) -> Tensor { return exp(sin(x) * 0.5) + tanh(x) }")
        .expect("load");
    let call = |x: &ArrayD<f32>| {
        s.call("busy", &[Value::from(x.view())]).expect("busy");
    };
    // An input on which a call takes at least 0.3 s alone (debug and release builds differ).
    let mut n = 1 << 20;
    let big = loop {
        let x = array(&[n], 0.25);
        let t = std::time::Instant::now();
        call(&x);
        if t.elapsed().as_secs_f64() >= 0.3 || n >= 1 << 26 {
            break x;
        }
        n *= 4;
    };
    let small = array(&[64], 0.5);
    let long = || {
        call(&big);
        std::time::Instant::now()
    };
    assert!(finishes_inside(&long, &|| call(&small)), "calls are serialised");

    let spin = || {
        let mut v = 1u64;
        for i in 0..200_000u64 {
            v = std::hint::black_box(v.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
    };
    let medium = array(&[1 << 20], 0.25);
    // Other processes can take a core at any moment: an attempt counts only when a spin loop
    // kept two cores busy both before and after tfn's turn, and one attempt showing the
    // overlap passes. Serialised calls keep about 1.0 cores busy in every attempt.
    let mut seen = Vec::new();
    for _attempt in 0..4 {
        let before = busy_ratio(2, 0.4, &spin);
        let tfn_ratio = busy_ratio(2, 1.0, &|| call(&medium));
        let after = busy_ratio(2, 0.4, &spin);
        seen.push((before, tfn_ratio, after));
        if tfn_ratio > 1.6 {
            return;
        }
    }
    let idle: Vec<f64> =
        seen.iter().filter(|(b, _, a)| b.min(*a) >= 1.6).map(|(_, t, _)| *t).collect();
    assert!(
        idle.is_empty(),
        "two threads calling tfn keep {idle:.2?} cores busy while a spin loop keeps two \
         busy before and after ({seen:.2?})"
    );
    eprintln!(
        "calls_from_two_threads_run_in_parallel: never had two idle cores ({seen:?}); only the \
         overlap was checked"
    );
}

/// A `grad` formula whose shape differs from its input's only in a size computed from the
/// call's (`slice`, `concat`) is refused when the sizes disagree, on both backends, before
/// anything runs: the JIT once read the formula's 4 elements as 6.
#[test]
fn a_grad_formula_of_another_runtime_size_is_refused() {
    let src = "fn cut(Tensor x) -> Tensor { return x * 3.0 }\n\
               grad cut(x) { x: slice(grad, dim=1, start=1, end=3) }\n\
               fn twice(Tensor x) -> Tensor { return x * 3.0 }\n\
               grad twice(x) { x: concat([grad, grad], dim=1) }\n\
               fn fits(Tensor x) -> Tensor { return x * 3.0 }\n\
               grad fits(x) { x: slice(concat([grad, grad], dim=1), dim=1, start=0, end=3) }\n";
    for backend in [Backend::Jit, Backend::Interp] {
        let s = session(backend);
        s.load_str("grads.tfn", src).expect("loads");
        let x = Value::from(array(&[2, 3], 0.0));
        let ct = Value::from(array(&[2, 3], 1.0));
        for name in ["cut", "twice"] {
            let e = s.vjp(name, std::slice::from_ref(&x), std::slice::from_ref(&ct));
            assert!(e.is_err(), "{backend:?} {name}: {e:?}");
        }
        let g = s.vjp("fits", std::slice::from_ref(&x), std::slice::from_ref(&ct));
        let g = only_f32(g.expect("the sizes agree"));
        assert_eq!(g, array(&[2, 3], 1.0), "{backend:?}");
    }
}

/// Loading a file again as it is (re-running a notebook cell) adds nothing and keeps the
/// compiled functions; a file changed since, or one whose `use`d file changed, defining the
/// same names again is `E0115` with a note that says the file changed.
#[test]
fn loading_an_unchanged_file_again_adds_nothing() {
    let dir = tfn_test_utils::Scratch::new("session_api", "reload");
    let (main, dep) = (dir.join("main.tfn"), dir.join("dep.tfn"));
    std::fs::write(&dep, "fn dep_twice(Tensor x) -> Tensor {\n    return x * 2.0\n}\n").unwrap();
    let text =
        "use \"dep.tfn\"\n\nfn plus_one(Tensor x) -> Tensor {\n    return dep_twice(x) + 1.0\n}\n";
    std::fs::write(&main, text).unwrap();
    let s = Session::with_backend(Backend::Jit);
    s.load_file(&main).expect("first load");
    let x = array(&[2, 3], 0.5);
    let first = only_f32(s.call("plus_one", &[Value::from(x.view())]).expect("call"));
    let sources = s.library().sources.files().count();
    for _ in 0..2 {
        assert!(s.load_file(&main).expect("again").is_empty());
        s.load_file(&dep).expect("the used file on its own");
    }
    assert_eq!(s.library().sources.files().count(), sources, "nothing added");
    let again = only_f32(s.call("plus_one", &[Value::from(x.view())]).expect("call"));
    assert_eq!(first, again);
    assert_eq!((s.stats().compiles, s.stats().cache_hits), (1, 1), "the compile is kept");
    // The same text under another name is another file: its names are defined twice.
    let other = s.load_str("other.tfn", text.trim_start_matches("use \"dep.tfn\"\n"));
    assert!(matches!(&other, Err(Error::Load { rendered, .. }) if rendered.contains("E0115")));
    // A changed `use`d file, then a changed main file: E0115 naming the change.
    std::fs::write(&dep, "fn dep_twice(Tensor x) -> Tensor {\n    return x * 3.0\n}\n").unwrap();
    for changed in [false, true] {
        if changed {
            std::fs::write(&main, text.replace("1.0", "2.0")).unwrap();
        }
        match s.load_file(&main) {
            Err(Error::Load { rendered, .. }) => {
                assert!(rendered.contains("E0115"), "{rendered}");
                assert!(rendered.contains("has changed since"), "{rendered}");
            }
            other => panic!("changed={changed}: expected E0115, got {other:?}"),
        }
    }
    let kept = only_f32(s.call("plus_one", &[Value::from(x.view())]).expect("call"));
    assert_eq!(first, kept, "a failed load changes nothing");
}

/// A symbolic link and its target are one file, loaded once, whichever name comes first.
#[cfg(unix)]
#[test]
fn a_file_and_a_link_to_it_are_loaded_once() {
    let dir = tfn_test_utils::Scratch::new("session_api", "symlink");
    std::fs::write(
        dir.join("dep.tfn"),
        "fn dep_twice(Tensor x) -> Tensor {\n    return x * 2.0\n}\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("dep.tfn", dir.join("link.tfn")).unwrap();
    let main = "use \"link.tfn\"\nuse \"dep.tfn\"\nuse \"./link.tfn\"\n\n\
                fn plus_one(Tensor x) -> Tensor {\n    return dep_twice(x) + 1.0\n}\n";
    std::fs::write(dir.join("main.tfn"), main).unwrap();
    let s = Session::with_backend(Backend::Interp);
    s.load_file(dir.join("main.tfn")).expect("one dep_twice");
    let sources = s.library().sources.files().count();
    s.load_file(dir.join("dep.tfn")).expect("the target, already loaded through the link");
    s.load_file(dir.join("link.tfn")).expect("the link");
    assert_eq!(s.library().sources.files().count(), sources, "nothing added");
    let x = ArrayD::from_elem(IxDyn(&[2]), 0.5f32);
    let y = only_f32(s.call("plus_one", &[Value::from(x.view())]).expect("call"));
    assert_eq!(y.as_slice(), Some(&[2.0f32, 2.0][..]));
}

/// A `grad` block without a line for a float input is E0802 at that block when a vjp needs it.
#[test]
fn a_missing_gradient_formula_points_at_its_grad_block() {
    let src = "fn sp(Tensor x, Tensor z) -> Tensor {\n    return x * z\n}\n\ngrad sp(x) {\n    x: grad * z\n}\n";
    let s = Session::with_backend(Backend::Jit);
    s.load_str("partial.tfn", src).expect("a partial block loads: an int `z` needs no line");
    let x = array(&[2, 3], 0.5);
    let args = [Value::from(x.view()), Value::from(x.view())];
    let e = s.vjp("sp", &args, &[Value::from(x.view())]).expect_err("no formula for z");
    let e = e.to_string();
    assert!(e.contains("E0802") && e.contains("partial.tfn:5:1") && e.contains("`z: "), "{e}");
}
