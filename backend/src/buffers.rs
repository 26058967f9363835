//! Raw buffers of the executor: allocation, pointers and copies between tensors and memory.

use crate::error::RunError;
use crate::huge_pages;
use crate::tensors::{TensorView, TensorViewMut};
use ndarray::{ArrayViewD, IxDyn};
use tfn_ir::{DType, Tensor};

/// A contiguous row-major buffer somewhere in memory (a tensor, an input view, a caller
/// output). The executor keeps whatever owns it alive while the pointer is in use.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawBuf {
    pub ptr: *mut u8,
    pub dtype: DType,
}

/// A zero-filled tensor starting on a cache line (`tfn_ir::BUFFER_ALIGN`; large ones come
/// from `calloc`, so untouched pages cost nothing; from [`huge_pages::MIN_OWN_BYTES`] on they
/// are advised onto huge pages before anything touches them), or [`RunError::OutOfMemory`]
/// when the allocator has not the memory (a process or container limit): a call fails
/// instead of aborting the process.
pub(crate) fn alloc(dtype: DType, shape: &[usize]) -> Result<Tensor, RunError> {
    let out_of_memory = || RunError::OutOfMemory { dtype, shape: shape.to_vec() };
    macro_rules! zeros {
        ($t:ty) => {{
            let n = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
            let padded = n.and_then(|n| n.checked_add(tfn_ir::align_pad::<$t>(n)));
            let v = padded.and_then(zeroed::<$t>).ok_or_else(out_of_memory)?;
            let bytes = v.len() * std::mem::size_of::<$t>();
            huge_pages::advise_from(v.as_ptr() as *const u8, bytes, huge_pages::MIN_OWN_BYTES);
            // `v` holds the shape's element count and its alignment padding.
            tfn_ir::aligned_array(v, shape).map_err(|e| RunError::Internal(e.to_string()))?
        }};
    }
    Ok(match dtype {
        DType::Bool => Tensor::Bool(zeros!(bool)),
        DType::I32 => Tensor::I32(zeros!(i32)),
        DType::I64 => Tensor::I64(zeros!(i64)),
        DType::F32 => Tensor::F32(zeros!(f32)),
        DType::F64 => Tensor::F64(zeros!(f64)),
        DType::I8 => Tensor::I8(zeros!(i8)),
        DType::U8 => Tensor::U8(zeros!(u8)),
        DType::F16 => Tensor::F16(zeros!(tfn_ir::half::f16)),
        DType::BF16 => Tensor::BF16(zeros!(tfn_ir::half::bf16)),
    })
}

/// Element types whose all-zero bits are their zero (`false`, `+0.0`, `0`).
trait ZeroBits {}
impl ZeroBits for bool {}
impl ZeroBits for i8 {}
impl ZeroBits for u8 {}
impl ZeroBits for i32 {}
impl ZeroBits for i64 {}
impl ZeroBits for f32 {}
impl ZeroBits for f64 {}
impl ZeroBits for tfn_ir::half::f16 {}
impl ZeroBits for tfn_ir::half::bf16 {}

/// `n` zeros from `calloc` (`alloc_zeroed`), or `None` when the allocator has not the memory
/// (what `vec![0; n]` does, without aborting).
fn zeroed<T: ZeroBits>(n: usize) -> Option<Vec<T>> {
    let layout = std::alloc::Layout::array::<T>(n).ok()?;
    if layout.size() == 0 {
        return Some(Vec::new());
    }
    // SAFETY: a nonzero-sized layout; all-zero bits are a valid `T` (`ZeroBits`), so the `n`
    // elements are initialised, and the block was allocated by the global allocator with
    // exactly the layout of `n` `T`s, as `Vec::from_raw_parts` requires.
    unsafe {
        let p = std::alloc::alloc_zeroed(layout) as *mut T;
        (!p.is_null()).then(|| Vec::from_raw_parts(p, n, n))
    }
}

pub(crate) fn tensor_buf(t: &mut Tensor) -> RawBuf {
    let dtype = t.dtype();
    let ptr = match t {
        Tensor::Bool(a) => a.as_mut_ptr() as *mut u8,
        Tensor::I32(a) => a.as_mut_ptr() as *mut u8,
        Tensor::I64(a) => a.as_mut_ptr() as *mut u8,
        Tensor::F32(a) => a.as_mut_ptr() as *mut u8,
        Tensor::F64(a) => a.as_mut_ptr() as *mut u8,
        Tensor::I8(a) => a.as_mut_ptr() as *mut u8,
        Tensor::U8(a) => a.as_mut_ptr(),
        Tensor::F16(a) => a.as_mut_ptr() as *mut u8,
        Tensor::BF16(a) => a.as_mut_ptr() as *mut u8,
    };
    RawBuf { ptr, dtype }
}

/// The buffer of a standard-layout view, or `None` when the view is strided.
pub(crate) fn view_buf(v: &TensorView<'_>) -> Option<RawBuf> {
    if !v.is_standard_layout() {
        return None;
    }
    let ptr = match v {
        TensorView::Bool(a) => a.as_ptr() as *mut u8,
        TensorView::I32(a) => a.as_ptr() as *mut u8,
        TensorView::I64(a) => a.as_ptr() as *mut u8,
        TensorView::F32(a) => a.as_ptr() as *mut u8,
        TensorView::F64(a) => a.as_ptr() as *mut u8,
        TensorView::I8(a) => a.as_ptr() as *mut u8,
        TensorView::U8(a) => a.as_ptr() as *mut u8,
        TensorView::F16(a) => a.as_ptr() as *mut u8,
        TensorView::BF16(a) => a.as_ptr() as *mut u8,
    };
    Some(RawBuf { ptr, dtype: v.dtype() })
}

/// The buffer of a standard-layout output view, or `None` when it is strided.
pub(crate) fn view_mut_buf(v: &mut TensorViewMut<'_>) -> Option<RawBuf> {
    let dtype = v.dtype();
    let ptr = match v {
        TensorViewMut::Bool(a) if a.is_standard_layout() => a.as_mut_ptr() as *mut u8,
        TensorViewMut::I32(a) if a.is_standard_layout() => a.as_mut_ptr() as *mut u8,
        TensorViewMut::I64(a) if a.is_standard_layout() => a.as_mut_ptr() as *mut u8,
        TensorViewMut::F32(a) if a.is_standard_layout() => a.as_mut_ptr() as *mut u8,
        TensorViewMut::F64(a) if a.is_standard_layout() => a.as_mut_ptr() as *mut u8,
        TensorViewMut::I8(a) if a.is_standard_layout() => a.as_mut_ptr() as *mut u8,
        TensorViewMut::U8(a) if a.is_standard_layout() => a.as_mut_ptr(),
        TensorViewMut::F16(a) if a.is_standard_layout() => a.as_mut_ptr() as *mut u8,
        TensorViewMut::BF16(a) if a.is_standard_layout() => a.as_mut_ptr() as *mut u8,
        _ => return None,
    };
    Some(RawBuf { ptr, dtype })
}

/// A standard-layout copy of a view.
pub(crate) fn view_to_tensor(v: &TensorView<'_>) -> Tensor {
    match v {
        TensorView::Bool(a) => Tensor::Bool(a.as_standard_layout().into_owned()),
        TensorView::I32(a) => Tensor::I32(a.as_standard_layout().into_owned()),
        TensorView::I64(a) => Tensor::I64(a.as_standard_layout().into_owned()),
        TensorView::F32(a) => Tensor::F32(a.as_standard_layout().into_owned()),
        TensorView::F64(a) => Tensor::F64(a.as_standard_layout().into_owned()),
        TensorView::I8(a) => Tensor::I8(a.as_standard_layout().into_owned()),
        TensorView::U8(a) => Tensor::U8(a.as_standard_layout().into_owned()),
        TensorView::F16(a) => Tensor::F16(a.as_standard_layout().into_owned()),
        TensorView::BF16(a) => Tensor::BF16(a.as_standard_layout().into_owned()),
    }
}

/// A standard-layout copy of a strided view (an input that is a transposed or sliced view,
/// such as a checkpoint's `[out, in]` weight read as `[in, out]`) by the strided-copy engine:
/// cache-blocked tiles for a transpose instead of one element at a time (a 384 × 1536 f32
/// transpose: ~0.3 ms instead of ~3 ms). Exactly the same values as [`view_to_tensor`].
pub(crate) fn strided_to_tensor(v: &TensorView<'_>, threads: usize) -> Result<Tensor, RunError> {
    let (src, strides): (*const u8, &[isize]) = match v {
        TensorView::Bool(a) => (a.as_ptr() as *const u8, a.strides()),
        TensorView::I32(a) => (a.as_ptr() as *const u8, a.strides()),
        TensorView::I64(a) => (a.as_ptr() as *const u8, a.strides()),
        TensorView::F32(a) => (a.as_ptr() as *const u8, a.strides()),
        TensorView::F64(a) => (a.as_ptr() as *const u8, a.strides()),
        TensorView::I8(a) => (a.as_ptr() as *const u8, a.strides()),
        TensorView::U8(a) => (a.as_ptr(), a.strides()),
        TensorView::F16(a) => (a.as_ptr() as *const u8, a.strides()),
        TensorView::BF16(a) => (a.as_ptr() as *const u8, a.strides()),
    };
    let shape = v.shape().to_vec();
    let mut out = alloc(v.dtype(), &shape)?;
    let dst = tensor_buf(&mut out).ptr;
    let mut dense = vec![1isize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        dense[i] = dense[i + 1] * shape[i + 1] as isize;
    }
    let Some(axes) = crate::strided_copy::copy_axes(&shape, strides, &dense) else {
        return Ok(out);
    };
    // SAFETY: every index of `axes` addresses an element of the view (its own strides from its
    // element 0) and of `out` (dense strides over the same shape), a fresh allocation that
    // overlaps nothing and whose elements are distinct.
    unsafe {
        crate::strided_copy::copy_strided(
            v.dtype().size_bytes(),
            src,
            dst,
            &axes,
            threads,
            crate::strided_copy::MIN_PARALLEL_BYTES,
        )?;
    }
    Ok(out)
}

/// Reads `shape` elements at `buf` as a view.
///
/// # Safety
/// `buf` must point at `shape.iter().product()` initialised elements of `buf.dtype` that stay
/// alive and unwritten while the view is used.
pub(crate) unsafe fn buf_view<'a>(buf: RawBuf, shape: &[usize]) -> TensorView<'a> {
    let s = IxDyn(shape);
    // SAFETY: guaranteed by the caller.
    unsafe {
        match buf.dtype {
            DType::Bool => TensorView::Bool(ArrayViewD::from_shape_ptr(s, buf.ptr as *const bool)),
            DType::I32 => TensorView::I32(ArrayViewD::from_shape_ptr(s, buf.ptr as *const i32)),
            DType::I64 => TensorView::I64(ArrayViewD::from_shape_ptr(s, buf.ptr as *const i64)),
            DType::F32 => TensorView::F32(ArrayViewD::from_shape_ptr(s, buf.ptr as *const f32)),
            DType::F64 => TensorView::F64(ArrayViewD::from_shape_ptr(s, buf.ptr as *const f64)),
            DType::I8 => TensorView::I8(ArrayViewD::from_shape_ptr(s, buf.ptr as *const i8)),
            DType::U8 => TensorView::U8(ArrayViewD::from_shape_ptr(s, buf.ptr as *const u8)),
            DType::F16 => {
                TensorView::F16(ArrayViewD::from_shape_ptr(s, buf.ptr as *const tfn_ir::half::f16))
            }
            DType::BF16 => TensorView::BF16(ArrayViewD::from_shape_ptr(
                s,
                buf.ptr as *const tfn_ir::half::bf16,
            )),
        }
    }
}

/// Copies a view into an output view of the same dtype and shape; false on a dtype mismatch.
///
/// By the strided-copy engine, one routine per element size, on the calling thread: not
/// `ndarray`'s `assign`, whose code is instantiated per dtype and rank-generic walk (~100 KB
/// of the runtime for this function alone); the same bits (elements are moved, not converted).
pub(crate) fn assign(dst: &mut TensorViewMut<'_>, src: &TensorView<'_>) -> Result<bool, RunError> {
    if dst.dtype() != src.dtype() || dst.shape() != src.shape() {
        return Ok(false);
    }
    let shape = src.shape().to_vec();
    let (to, strides) = tfn_ir::each_dtype!(dst, TensorViewMut, a => {
        (a.as_mut_ptr().cast::<u8>(), a.strides().to_vec())
    });
    let Some(axes) = crate::strided_copy::copy_axes(&shape, src.strides(), &strides) else {
        return Ok(true);
    };
    // SAFETY: every index of `axes` addresses an element of `src` and of `dst` (each from its
    // own element 0 with its own strides, over the same shape); `dst` is a mutable view (its
    // elements distinct) that overlaps no input the caller passed.
    unsafe {
        crate::strided_copy::copy_strided(
            src.dtype().size_bytes(),
            src.first_ptr(),
            to,
            &axes,
            1,
            crate::strided_copy::MIN_PARALLEL_BYTES,
        )?;
    }
    Ok(true)
}

/// An owned row-major copy of `shape` contiguous elements at `buf` (one `memcpy`).
///
/// # Safety
/// As [`buf_view`].
pub(crate) unsafe fn buf_to_tensor(buf: RawBuf, shape: &[usize]) -> Result<Tensor, RunError> {
    let mut out = alloc(buf.dtype, shape)?;
    let bytes = shape.iter().product::<usize>() * buf.dtype.size_bytes();
    // SAFETY: `buf` holds `bytes` initialised bytes (the caller's contract); `out` is a fresh
    // allocation of as many.
    unsafe { std::ptr::copy_nonoverlapping(buf.ptr, tensor_buf(&mut out).ptr, bytes) };
    Ok(out)
}

/// Copies the owned tensor `src` into `dst` (any strides): [`assign`]'s copy, for the
/// callers' outputs of functions with loops (the AOT runtime); `false` when dtype or shape
/// differ.
pub fn assign_tensor(dst: &mut TensorViewMut<'_>, src: &Tensor) -> Result<bool, RunError> {
    assign(dst, &TensorView::from(src))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{s, Array3, ArrayD};

    /// The blocked copy of an input view gives what the element-by-element one gives, for
    /// transposes (large enough to split across threads), slices, reversed and stepped axes.
    /// Every dtype's buffers start on a cache line, hold zeros and have the asked shape (the
    /// wide routines' loads and stores of tfn's own buffers never split a line).
    #[test]
    fn allocated_tensors_start_on_a_cache_line() {
        let dtypes = [DType::Bool, DType::I8, DType::U8, DType::I32, DType::I64];
        let dtypes = dtypes.into_iter().chain([DType::F16, DType::BF16, DType::F32, DType::F64]);
        for dtype in dtypes {
            for shape in [vec![1usize], vec![3, 5], vec![1000], vec![70_001], vec![0, 4]] {
                let mut t = alloc(dtype, &shape).expect("alloc");
                assert_eq!(t.shape(), &shape[..]);
                let n: usize = shape.iter().product();
                let p = tensor_buf(&mut t).ptr as usize;
                assert!(n == 0 || p.is_multiple_of(tfn_ir::BUFFER_ALIGN), "{dtype:?} {shape:?}");
                if let Tensor::F32(a) = &t {
                    assert!(a.iter().all(|&x| x.to_bits() == 0) && a.as_slice().is_some());
                }
            }
        }
    }

    #[test]
    fn strided_inputs_copy_as_the_element_walk_does() {
        let big = ArrayD::from_shape_fn(IxDyn(&[3, 200, 300]), |i| {
            (i[0] * 60_000 + i[1] * 300 + i[2]) as f32
        });
        let small =
            Array3::from_shape_fn((4, 5, 6), |(a, b, c)| (a * 30 + b * 6 + c) as i64).into_dyn();
        let f32_views = [
            big.view().permuted_axes(IxDyn(&[0, 2, 1])),
            big.view().permuted_axes(IxDyn(&[2, 1, 0])),
            big.slice(s![.., 10..150;3, ..;-1]).into_dyn(),
        ];
        for v in f32_views {
            let view = TensorView::F32(v);
            for threads in [1, 2] {
                let got = strided_to_tensor(&view, threads).expect("copy");
                assert_eq!(got, view_to_tensor(&view), "threads {threads}");
            }
        }
        let i64_views = [
            small.view().permuted_axes(IxDyn(&[1, 2, 0])),
            small.slice(s![..;-1, 1..4, ..;2]).into_dyn(),
            small.slice(s![.., 2..2, ..]).into_dyn(),
        ];
        for v in i64_views {
            let view = TensorView::I64(v);
            assert_eq!(strided_to_tensor(&view, 2).expect("copy"), view_to_tensor(&view));
        }
        let bools = ArrayD::from_shape_fn(IxDyn(&[7, 9]), |i| (i[0] + 2 * i[1]) % 3 == 0);
        let view = TensorView::Bool(bools.view().reversed_axes());
        assert_eq!(strided_to_tensor(&view, 1).expect("copy"), view_to_tensor(&view));
    }

    /// A result copied into a caller's output of any strides (transposed, reversed, stepped)
    /// holds what `ndarray`'s `assign` writes; another dtype or shape writes nothing.
    #[test]
    fn outputs_of_any_strides_get_the_elements_assign_writes() {
        let src =
            ArrayD::from_shape_fn(IxDyn(&[4, 5, 6]), |i| (i[0] * 30 + i[1] * 6 + i[2]) as f32);
        let mut whole = ArrayD::<f32>::zeros(IxDyn(&[6, 10, 4]));
        let mut want = whole.clone();
        let perm = IxDyn(&[2, 1, 0]);
        let mut out = TensorViewMut::F32(
            whole.slice_mut(s![..;-1, ..;2, ..]).into_dyn().permuted_axes(perm.clone()),
        );
        assert!(assign_tensor(&mut out, &Tensor::F32(src.clone())).expect("copy"));
        want.slice_mut(s![..;-1, ..;2, ..]).into_dyn().permuted_axes(perm).assign(&src);
        assert_eq!(whole, want);
        let mut small = ArrayD::<f32>::zeros(IxDyn(&[4, 5]));
        let mut out = TensorViewMut::F32(small.view_mut());
        assert!(!assign_tensor(&mut out, &Tensor::F32(src.clone())).expect("copy"));
        let mut ints = ArrayD::<i32>::zeros(IxDyn(&[4, 5, 6]));
        let mut out = TensorViewMut::I32(ints.view_mut());
        assert!(!assign_tensor(&mut out, &Tensor::F32(src)).expect("copy"));
        assert!(ints.iter().all(|&x| x == 0) && small.iter().all(|&x| x == 0.0));
    }
}
