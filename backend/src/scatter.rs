//! `scatter_add` and `index_add` ([`tfn_passes::fusion::KernelKind::Scatter`]): a native
//! kernel that copies `x` into the output, then adds `src` element by element at the
//! addresses the index gives, in row-major order of `src` — one fixed order, so the result
//! (float rounding included) is the same for any thread count and equals the interpreter's.
//! The addresses come from [`tfn_ir::op_index::for_each_address`], the one definition both
//! backends use (negative indices, range and size checks).

use crate::buffers::RawBuf;
use crate::error::RunError;
use tfn_ir::op_index::{for_each_address, index_space, resolve_index, AddressError};
use tfn_ir::{DType, IndexKind, ValueId};

/// Runs one accumulation: `x`, `index`, `src` are the operands' buffers and shapes, `out` the
/// output (of `x`'s shape). Nothing is allocated per call: the index is checked in one pass
/// (an error leaves `out` untouched), then `x` is copied and `src` added at addresses
/// computed on the fly ([`for_each_address`]), on the calling thread — one fixed order.
///
/// # Safety
/// Buffers must be live, contiguous row-major for their shapes, of the node's dtypes, and
/// `out` must not overlap the inputs.
pub(crate) unsafe fn run_scatter(
    node: ValueId,
    kind: IndexKind,
    axis: u32,
    inputs: &[(RawBuf, Vec<usize>)],
    out: RawBuf,
) -> Result<(), RunError> {
    let bad = |what: String| RunError::Internal(format!("scatter kernel: {what}"));
    let [(x, xs), (index, is), (src, ss)] = inputs else {
        return Err(bad("three operands expected".into()));
    };
    let a = axis as usize;
    let op = || kind.name().to_string();
    let shape_error = |message| RunError::Shape { node, op: op(), message };
    kind.check_sizes(a, xs, is).map_err(shape_error)?;
    let space = index_space(kind, a, xs, is);
    if space != *ss {
        return Err(bad(format!("src has shape {ss:?}, expected {space:?}")));
    }
    let count: usize = is.iter().product();
    let (ptr, dtype) = (index.ptr as usize, index.dtype);
    // SAFETY: the index buffer holds `count` elements of its dtype; `q < count`.
    let read = move |q: usize| -> i64 {
        unsafe {
            match dtype {
                DType::I32 => i64::from(*(ptr as *const i32).add(q)),
                _ => *(ptr as *const i64).add(q),
            }
        }
    };
    if !matches!(dtype, DType::I32 | DType::I64) {
        return Err(bad(format!("index of dtype {dtype}")));
    }
    let size = xs.get(a).copied().ok_or_else(|| bad("axis".into()))?;
    // The first bad index in row-major order (what the interpreter reports), before any write;
    // with nothing to visit there is nothing to check (as in the interpreter).
    if space.iter().product::<usize>() > 0 {
        if let Some(error) = (0..count).find_map(|q| resolve_index(read(q), size).err()) {
            return Err(RunError::IndexOutOfRange { node, op: op(), axis, error });
        }
    }
    let elements: usize = xs.iter().product();
    // SAFETY: `x` and `out` hold `elements` elements of the dtype and do not overlap.
    unsafe { std::ptr::copy_nonoverlapping(x.ptr, out.ptr, elements * x.dtype.size_bytes()) };
    let run = |result: Result<(), AddressError>| {
        result.map_err(|e| match e {
            AddressError::Index(error) => RunError::IndexOutOfRange { node, op: op(), axis, error },
            AddressError::Shape(message) => shape_error(message),
        })
    };
    // SAFETY (each arm): every offset is inside `out` (`for_each_address` resolves the index
    // against the axis size and the other coordinates range over x's sizes), and `src` holds
    // one element per position of the index space.
    macro_rules! accumulate {
        ($t:ty, $add:expr) => {{
            let (o, s) = (out.ptr as *mut $t, src.ptr as *const $t);
            run(for_each_address(kind, a, xs, is, read, |i, off| unsafe {
                *o.add(off) = $add(*o.add(off), *s.add(i));
            }))
        }};
    }
    match x.dtype {
        DType::F32 => accumulate!(f32, |p: f32, q: f32| p + q),
        DType::F64 => accumulate!(f64, |p: f64, q: f64| p + q),
        DType::I32 => accumulate!(i32, i32::wrapping_add),
        DType::I64 => accumulate!(i64, i64::wrapping_add),
        d => Err(bad(format!("accumulation on {d}"))),
    }
}
