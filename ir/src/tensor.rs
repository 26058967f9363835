//! Owned runtime tensors of any dtype, as the interpreter and the session hand them around.

use crate::dtype::DType;
use ndarray::ArrayD;

#[derive(Clone, Debug, PartialEq)]
pub enum Tensor {
    Bool(ArrayD<bool>),
    I8(ArrayD<i8>),
    U8(ArrayD<u8>),
    I32(ArrayD<i32>),
    I64(ArrayD<i64>),
    F16(ArrayD<half::f16>),
    BF16(ArrayD<half::bf16>),
    F32(ArrayD<f32>),
    F64(ArrayD<f64>),
}

impl Tensor {
    pub fn dtype(&self) -> DType {
        crate::each_dtype!(self, Tensor, _, D => D)
    }

    pub fn shape(&self) -> &[usize] {
        crate::each_dtype!(self, Tensor, a => a.shape())
    }
}

macro_rules! impl_from {
    ($t:ty, $v:ident) => {
        impl From<ArrayD<$t>> for Tensor {
            fn from(a: ArrayD<$t>) -> Tensor {
                Tensor::$v(a)
            }
        }
    };
}
impl_from!(bool, Bool);
impl_from!(i8, I8);
impl_from!(u8, U8);
impl_from!(half::f16, F16);
impl_from!(half::bf16, BF16);
impl_from!(i32, I32);
impl_from!(i64, I64);
impl_from!(f32, F32);
impl_from!(f64, F64);

/// The alignment, in bytes, of every buffer tfn allocates: a cache line, so a 512-bit load or
/// store at a multiple of 16 `f32` elements from the start never splits a line (a split costs
/// a wide routine a second cache access per vector).
pub const BUFFER_ALIGN: usize = 64;

/// How many elements of `T` to allocate beyond a buffer's length so that [`aligned_array`]
/// finds a [`BUFFER_ALIGN`]ed start in it (none for an empty buffer).
pub fn align_pad<T>(len: usize) -> usize {
    let size = std::mem::size_of::<T>();
    if len == 0 || size == 0 || size > BUFFER_ALIGN {
        0
    } else {
        BUFFER_ALIGN / size - 1
    }
}

/// An array of `shape` over `v`, which holds the shape's element count `n` plus
/// [`align_pad`]`(n)` elements: the array starts at `v`'s first [`BUFFER_ALIGN`]ed element and
/// the elements around it are unused (the array still owns, and frees, all of `v`).
pub fn aligned_array<T>(v: Vec<T>, shape: &[usize]) -> Result<ArrayD<T>, ndarray::ShapeError> {
    let n: usize = shape.iter().product();
    let pad = align_pad::<T>(n);
    if v.len() != n + pad {
        return Err(ndarray::ShapeError::from_kind(ndarray::ErrorKind::IncompatibleShape));
    }
    let size = std::mem::size_of::<T>().max(1);
    let misaligned = v.as_ptr() as usize % BUFFER_ALIGN;
    // An allocation is aligned to its element size, so the distance to the next line is a
    // whole number of elements, at most `pad`.
    let skip = if pad == 0 || misaligned == 0 { 0 } else { (BUFFER_ALIGN - misaligned) / size };
    let skip = skip.min(pad);
    let mut flat = ndarray::Array1::from_vec(v);
    flat.slice_axis_inplace(ndarray::Axis(0), ndarray::Slice::from(skip..skip + n));
    flat.into_shape_with_order(ndarray::IxDyn(shape))
}

#[cfg(test)]
mod aligned_tests {
    use super::*;

    #[test]
    fn aligned_arrays_start_on_a_cache_line_and_keep_their_shape() {
        for n in [0usize, 1, 3, 16, 17, 1000, 70_000] {
            let v: Vec<f32> = (0..n + align_pad::<f32>(n)).map(|i| i as f32).collect();
            let a = aligned_array(v, &[n]).expect("shape");
            assert_eq!(a.shape(), &[n]);
            if n > 0 {
                assert_eq!(a.as_ptr() as usize % BUFFER_ALIGN, 0, "n = {n}");
                let first = a[[0]] as usize;
                assert!(first <= align_pad::<f32>(n));
                assert!(a.iter().enumerate().all(|(i, &x)| x as usize == first + i));
                let b = a.clone();
                assert_eq!(a, b);
            }
            let bytes: Vec<u8> = vec![7; 2 * n + align_pad::<u8>(2 * n)];
            let b = aligned_array(bytes, &[n, 2]).expect("shape");
            assert!(n == 0 || (b.as_ptr() as usize).is_multiple_of(BUFFER_ALIGN));
            assert!(b.as_slice().is_some());
        }
        assert!(aligned_array(vec![0f64; 5], &[5]).is_err());
    }
}
