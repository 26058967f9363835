//! `scatter_add` and `index_add` ([`tfn_passes::fusion::KernelKind::Scatter`]): a native
//! kernel that copies `x` into the output, then adds `src` element by element at the
//! addresses the index gives, in row-major order of `src` — one fixed order, so the result
//! (float rounding included) is the same for any thread count and equals the interpreter's.
//! The addresses come from [`tfn_ir::op_index::addresses`], the one definition both
//! backends use (negative indices, range and size checks).

use crate::buffers::RawBuf;
use crate::error::RunError;
use tfn_ir::op_index::{addresses, AddressError};
use tfn_ir::{DType, IndexKind, ValueId};

/// Adds `src[i]` into `out[offs[i]]` for every `i`, in order.
///
/// # Safety
/// `out` holds at least `max(offs) + 1` elements of `T`, `src` `offs.len()`.
unsafe fn accumulate<T: Copy>(out: *mut T, src: *const T, offs: &[usize], add: impl Fn(T, T) -> T) {
    for (i, &o) in offs.iter().enumerate() {
        // SAFETY: guaranteed by the caller.
        unsafe {
            let p = out.add(o);
            *p = add(*p, *src.add(i));
        }
    }
}

/// Runs one accumulation: `x`, `index`, `src` are the operands' buffers and shapes, `out` the
/// output (of `x`'s shape).
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
    let count: usize = is.iter().product();
    // SAFETY: the index buffer holds `count` elements of its dtype.
    let values: Vec<i64> = unsafe {
        match index.dtype {
            DType::I32 => std::slice::from_raw_parts(index.ptr as *const i32, count)
                .iter()
                .map(|&v| v as i64)
                .collect(),
            DType::I64 => std::slice::from_raw_parts(index.ptr as *const i64, count).to_vec(),
            d => return Err(bad(format!("index of dtype {d}"))),
        }
    };
    let (space, offs) = addresses(kind, axis as usize, xs, is, &values).map_err(|e| match e {
        AddressError::Index(error) => {
            RunError::IndexOutOfRange { node, op: kind.name().into(), axis, error }
        }
        AddressError::Shape(message) => RunError::Shape { node, op: kind.name().into(), message },
    })?;
    if space != *ss {
        return Err(bad(format!("src has shape {ss:?}, expected {space:?}")));
    }
    let elements: usize = xs.iter().product();
    let size = x.dtype.size_bytes();
    // SAFETY: `x` and `out` hold `elements` elements and do not overlap; every offset is in
    // `x`'s range (checked by `addresses`) and `src` has one element per offset.
    unsafe {
        std::ptr::copy_nonoverlapping(x.ptr, out.ptr, elements * size);
        match x.dtype {
            DType::F32 => {
                accumulate(out.ptr as *mut f32, src.ptr as *const f32, &offs, |a, b| a + b)
            }
            DType::F64 => {
                accumulate(out.ptr as *mut f64, src.ptr as *const f64, &offs, |a, b| a + b)
            }
            DType::I32 => {
                accumulate(out.ptr as *mut i32, src.ptr as *const i32, &offs, i32::wrapping_add)
            }
            DType::I64 => {
                accumulate(out.ptr as *mut i64, src.ptr as *const i64, &offs, i64::wrapping_add)
            }
            d => return Err(bad(format!("accumulation on {d}"))),
        }
    }
    Ok(())
}
