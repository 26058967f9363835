//! Raw buffers of the executor: allocation, pointers and copies between tensors and memory.

use crate::tensors::{TensorView, TensorViewMut};
use ndarray::{ArrayD, ArrayViewD, IxDyn};
use tfn_ir::{DType, Tensor};

/// A contiguous row-major buffer somewhere in memory (a tensor, an input view, a caller
/// output). The executor keeps whatever owns it alive while the pointer is in use.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawBuf {
    pub ptr: *mut u8,
    pub dtype: DType,
}

/// A zero-filled tensor (large ones come from `calloc`, so untouched pages cost nothing).
pub(crate) fn alloc(dtype: DType, shape: &[usize]) -> Tensor {
    let s = IxDyn(shape);
    match dtype {
        DType::Bool => Tensor::Bool(ArrayD::from_elem(s, false)),
        DType::I32 => Tensor::I32(ArrayD::zeros(s)),
        DType::I64 => Tensor::I64(ArrayD::zeros(s)),
        DType::F32 => Tensor::F32(ArrayD::zeros(s)),
        DType::F64 => Tensor::F64(ArrayD::zeros(s)),
        DType::I8 => Tensor::I8(ArrayD::from_elem(s, Default::default())),
        DType::U8 => Tensor::U8(ArrayD::from_elem(s, Default::default())),
        DType::F16 => Tensor::F16(ArrayD::from_elem(s, Default::default())),
        DType::BF16 => Tensor::BF16(ArrayD::from_elem(s, Default::default())),
    }
}

/// The data pointer of a standard-layout tensor.
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
pub(crate) fn assign(dst: &mut TensorViewMut<'_>, src: &TensorView<'_>) -> bool {
    match (dst, src) {
        (TensorViewMut::Bool(d), TensorView::Bool(s)) => d.assign(s),
        (TensorViewMut::I32(d), TensorView::I32(s)) => d.assign(s),
        (TensorViewMut::I64(d), TensorView::I64(s)) => d.assign(s),
        (TensorViewMut::F32(d), TensorView::F32(s)) => d.assign(s),
        (TensorViewMut::F64(d), TensorView::F64(s)) => d.assign(s),
        (TensorViewMut::I8(d), TensorView::I8(s)) => d.assign(s),
        (TensorViewMut::U8(d), TensorView::U8(s)) => d.assign(s),
        (TensorViewMut::F16(d), TensorView::F16(s)) => d.assign(s),
        (TensorViewMut::BF16(d), TensorView::BF16(s)) => d.assign(s),
        _ => return false,
    }
    true
}
