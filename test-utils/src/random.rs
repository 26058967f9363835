//! Random test data from the project's one generator: [`Rng`] (SplitMix64 from
//! [`tfn_ir::rng`]), [`random_tensor`], [`random_array`] and [`random_inputs`].
//!
//! Every function draws one `f64` per element, in row-major order, so a seed describes the
//! data of every dtype and the same seed gives the same data on every machine.

use ndarray::{ArrayD, IxDyn};
use tfn_ir::half::{bf16, f16};
use tfn_ir::rng::SplitMix;
use tfn_ir::{DType, Dim, Graph, SymDef, Tensor};

/// The project's one generator, [`SplitMix`], with helpers for test data. It dereferences to
/// [`SplitMix`] (`unit`, `uniform`, `index`, `pick`, `normal`, `next_u64`, ...), so it is also
/// what the library's own random functions take (`&mut rng` coerces to `&mut SplitMix`).
/// `Rng::new(seed)` gives exactly `SplitMix(seed)`'s sequence.
#[derive(Clone, Debug)]
pub struct Rng(pub SplitMix);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(SplitMix(seed))
    }

    /// An array of `shape`, elements uniform in `[lo, hi)` (see [`random_array`]).
    pub fn array(&mut self, shape: &[usize], lo: f64, hi: f64) -> ArrayD<f64> {
        random_array(self, shape, (lo, hi))
    }

    /// A tensor of `dtype` and `shape` from `range` (see [`random_tensor`]).
    pub fn tensor(&mut self, dtype: DType, shape: &[usize], range: (f64, f64)) -> Tensor {
        random_tensor(self, dtype, shape, range)
    }
}

impl std::ops::Deref for Rng {
    type Target = SplitMix;
    fn deref(&self) -> &SplitMix {
        &self.0
    }
}

impl std::ops::DerefMut for Rng {
    fn deref_mut(&mut self) -> &mut SplitMix {
        &mut self.0
    }
}

/// An array of `shape`, elements uniform in `[range.0, range.1)`.
pub fn random_array(rng: &mut SplitMix, shape: &[usize], range: (f64, f64)) -> ArrayD<f64> {
    ArrayD::from_shape_simple_fn(IxDyn(shape), || rng.uniform(range.0, range.1))
}

/// A tensor of `dtype` and `shape`, one draw uniform in `[range.0, range.1)` per element,
/// converted as the dtype needs: floats rounded to nearest (`f32`/`f16`/`bf16`), integers
/// rounded to the nearest integer (saturating at the dtype's limits), bools `x > 0`.
pub fn random_tensor(
    rng: &mut SplitMix,
    dtype: DType,
    shape: &[usize],
    range: (f64, f64),
) -> Tensor {
    let x = random_array(rng, shape, range);
    match dtype {
        DType::F32 => Tensor::F32(x.mapv(|v| v as f32)),
        DType::F64 => Tensor::F64(x),
        DType::F16 => Tensor::F16(x.mapv(f16::from_f64)),
        DType::BF16 => Tensor::BF16(x.mapv(bf16::from_f64)),
        DType::I32 => Tensor::I32(x.mapv(|v| v.round() as i32)),
        DType::I64 => Tensor::I64(x.mapv(|v| v.round() as i64)),
        DType::I8 => Tensor::I8(x.mapv(|v| v.round() as i8)),
        DType::U8 => Tensor::U8(x.mapv(|v| v.round() as u8)),
        DType::Bool => Tensor::Bool(x.mapv(|v| v > 0.0)),
    }
}

/// Random arguments for `graph`'s parameters ([`random_tensor`] from `range`): each input
/// symbol takes a size drawn from `sizes`, symbols first, then the parameters in order.
pub fn random_inputs(
    rng: &mut SplitMix,
    graph: &Graph,
    sizes: &[usize],
    range: (f64, f64),
) -> Vec<Tensor> {
    let sym_values: Vec<usize> = graph
        .syms
        .iter()
        .map(|d| match d {
            SymDef::Input { .. } => sizes[rng.index(sizes.len())],
            SymDef::Derived(_) => 0,
        })
        .collect();
    graph
        .params
        .iter()
        .map(|p| {
            let shape: Vec<usize> =
                p.ty.shape
                    .dims()
                    .iter()
                    .map(|d| match d {
                        Dim::Const(c) => *c as usize,
                        Dim::Sym(s) => sym_values[s.0 as usize],
                    })
                    .collect();
            random_tensor(rng, p.ty.dtype, &shape, range)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_the_one_generator() {
        let (mut a, mut b) = (Rng::new(42), SplitMix(42));
        assert!((0..50).all(|_| a.next_u64() == b.next_u64()));
        let mut c = Rng::new(3);
        let x = c.array(&[2, 3], -1.0, 1.0);
        assert_eq!(x.shape(), &[2, 3]);
        assert!(x.iter().all(|v| (-1.0..1.0).contains(v)));
    }

    #[test]
    fn every_dtype_takes_the_same_draws() {
        let floats = random_tensor(&mut SplitMix(9), DType::F64, &[4, 5], (-3.0, 3.0));
        let Tensor::F64(f) = floats else { unreachable!() };
        let ints = random_tensor(&mut SplitMix(9), DType::I32, &[4, 5], (-3.0, 3.0));
        let Tensor::I32(i) = ints else { unreachable!() };
        assert!(f.iter().zip(&i).all(|(&f, &i)| f.round() as i32 == i));
        let bools = random_tensor(&mut SplitMix(9), DType::Bool, &[4, 5], (-3.0, 3.0));
        let Tensor::Bool(b) = bools else { unreachable!() };
        assert!(f.iter().zip(&b).all(|(&f, &b)| (f > 0.0) == b));
        for dtype in DType::ALL {
            let t = random_tensor(&mut SplitMix(1), dtype, &[3], (0.0, 2.0));
            assert_eq!((t.dtype(), t.shape()), (dtype, &[3][..]));
        }
    }
}
