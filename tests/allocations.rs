//! How many heap allocations a cache-hit call makes, counted on the calling thread by the
//! global allocator this module declares for the whole `it` binary (per thread, so the tests
//! running beside it do not disturb the count; otherwise it only forwards to the system's).
//! A 1-element call is all overhead, and that overhead was once mostly `malloc`/`free` of
//! per-call lists (16 per call from Python): this pins the count rather than a time (which
//! no test asserts).

use ndarray::{ArrayD, IxDyn};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use tfn::{Backend, OutputMut, Session, SessionOptions, Value};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; the counter is a const-initialised thread-local
// `Cell` (no allocation, no destructor).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

const SOURCE: &str = "
fn gelu(Tensor x) -> Tensor {
    let inner = 0.7978845608 * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1.0 + tanh(inner))
}

fn affine(Tensor x, Tensor w, Tensor b) -> Tensor {
    return maximum(x * w + b, 0.0)
}
";

/// Allocations per call of `call` after two warm-up calls (compile, pool), averaged over 100.
fn per_call(mut call: impl FnMut()) -> f64 {
    call();
    call();
    let before = allocations();
    for _ in 0..100 {
        call();
    }
    (allocations() - before) as f64 / 100.0
}

#[test]
fn a_cache_hit_call_into_makes_no_allocation() {
    let options = SessionOptions { backend: Backend::Jit, threads: 1, ..Default::default() };
    let s = Session::with_options(options);
    s.load_str("alloc.tfn", SOURCE).unwrap();
    let x = ArrayD::<f32>::from_elem(IxDyn(&[1]), 0.5);
    let w = ArrayD::<f32>::from_elem(IxDyn(&[3, 1]), 2.0);
    let b = ArrayD::<f32>::from_elem(IxDyn(&[4]), -1.0);
    let mut y = ArrayD::<f32>::zeros(IxDyn(&[1]));
    let mut z = ArrayD::<f32>::zeros(IxDyn(&[3, 4]));

    let args = [Value::from(x.view())];
    let gelu = per_call(|| {
        s.call_into("gelu", &args, &mut [OutputMut::from(y.view_mut())]).unwrap();
    });
    // Three broadcast arguments, a [3, 4] result.
    let args3 = [Value::from(x.view()), Value::from(w.view()), Value::from(b.view())];
    let affine = per_call(|| {
        s.call_into("affine", &args3, &mut [OutputMut::from(z.view_mut())]).unwrap();
    });
    // gelu made 9 before the per-call lists moved to the stack, the broadcasting call then
    // still made 7 until size binding stopped building a named description of every axis it
    // read, and the last two (the bound sizes, the list of outputs written in place) went on
    // the stack too.
    // An instantiated handle's call, the same path without the session's cache lookup.
    let handle = s.instantiate("affine", &args3, &[]).unwrap();
    let by_handle = per_call(|| {
        handle.call_into(&args3, &mut [OutputMut::from(z.view_mut())]).unwrap();
    });
    assert_eq!(gelu, 0.0, "allocations per 1-element gelu call_into");
    assert_eq!(by_handle, 0.0, "allocations per affine handle call_into");
    assert_eq!(affine, 0.0, "allocations per affine call_into");
    // The calls computed (gelu(0.5) = 0.345714; relu(0.5 * 2 - 1) = 0).
    assert!((y[[0]] - 0.345_714).abs() < 1e-5, "gelu(0.5) = {}", y[[0]]);
    assert!(z.iter().all(|&v| v == 0.0), "{z}");
}
