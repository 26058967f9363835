//! The packed f32 GEMM (`tfn_backend::packed_gemm::matmul_f32`) against a naive f64-accumulated
//! reference: random shapes with every operand layout (row-major, transposed, negative and
//! padded strides, a broadcast operand), shapes crossing every block size, and output buffers
//! that start out full of NaN (the product must overwrite, not accumulate).

use ndarray::{s, Array2, ArrayView2};
use tfn_backend::packed_gemm::{matmul_f32, GemmError};
use tfn_test_utils::Rng;

/// A random matrix of multiples of 1/1000 in `[-1, 1]`.
fn matrix(rng: &mut Rng, rows: usize, cols: usize) -> Array2<f32> {
    Array2::from_shape_fn((rows, cols), |_| (rng.next_u64() % 2001) as f32 / 1000.0 - 1.0)
}

/// How an operand is laid out in memory; every variant presents the same logical matrix.
#[derive(Clone, Copy, Debug)]
enum Layout {
    RowMajor,
    /// A transposed view of a column-major buffer (row stride 1).
    Transposed,
    /// Rows in reverse order (negative row stride).
    Reversed,
    /// Every other column of a wider buffer (column stride 2).
    Strided,
}

const LAYOUTS: [Layout; 4] =
    [Layout::RowMajor, Layout::Transposed, Layout::Reversed, Layout::Strided];

/// Buffer holding `m` in `layout`, and a function viewing it as the logical matrix.
fn store(m: &Array2<f32>, layout: Layout) -> Array2<f32> {
    match layout {
        Layout::RowMajor => m.clone(),
        Layout::Transposed => m.t().as_standard_layout().into_owned(),
        Layout::Reversed => m.slice(s![..;-1, ..]).to_owned(),
        Layout::Strided => {
            let mut wide = Array2::from_elem((m.nrows(), 2 * m.ncols()), f32::NAN);
            wide.slice_mut(s![.., ..;2]).assign(m);
            wide
        }
    }
}

fn view(buf: &Array2<f32>, layout: Layout) -> ArrayView2<'_, f32> {
    match layout {
        Layout::RowMajor => buf.view(),
        Layout::Transposed => buf.t(),
        Layout::Reversed => buf.slice(s![..;-1, ..]),
        Layout::Strided => buf.slice(s![.., ..;2]),
    }
}

/// Checks `a · b` through the given layouts against the f64 reference, within the classic
/// bound `k · ε · Σ|a||b|` for any summation order.
fn check(a: &Array2<f32>, b: &Array2<f32>, la: Layout, lb: Layout) -> Result<(), String> {
    let (m, k) = a.dim();
    let n = b.ncols();
    let (abuf, bbuf) = (store(a, la), store(b, lb));
    let mut c = Array2::from_elem((m, n), f32::NAN);
    matmul_f32(view(&abuf, la), view(&bbuf, lb), &mut c.view_mut()).map_err(|e| e.to_string())?;
    for i in 0..m {
        for j in 0..n {
            let (mut want, mut mag) = (0f64, 0f64);
            for p in 0..k {
                let t = a[[i, p]] as f64 * b[[p, j]] as f64;
                want += t;
                mag += t.abs();
            }
            let bound = (k as f64 + 2.0) * f32::EPSILON as f64 * mag;
            let got = c[[i, j]] as f64;
            let close = (got - want).abs() <= bound; // false for NaN
            if !close {
                return Err(format!(
                    "{m}×{k}·{k}×{n} ({la:?}, {lb:?}): c[{i},{j}] = {got}, want {want} ± {bound}"
                ));
            }
        }
    }
    Ok(())
}

#[test]
fn random_small_shapes_in_every_layout() {
    let mut rng = Rng::new(0x2545_F491_4F6C_DD1D);
    let mut failures = Vec::new();
    for case in 0..120 {
        let (m, n, k) = (rng.index(71), rng.index(71), rng.index(71));
        let (a, b) = (matrix(&mut rng, m, k), matrix(&mut rng, k, n));
        let (la, lb) = (LAYOUTS[case % 4], LAYOUTS[(case / 4) % 4]);
        if let Err(e) = check(&a, &b, la, lb) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn degenerate_and_block_crossing_shapes() {
    let mut rng = Rng::new(0x9E37_79B9_7F4A_7C15);
    // (m, n, k): empty and unit extents; every block size crossed (MR = 12, NR = 32,
    // MC = 96, KC = 1024, NC = 2048); odd large sizes.
    let shapes = [
        (0, 0, 0),
        (0, 5, 3),
        (4, 0, 3),
        (3, 4, 0),
        (1, 1, 1),
        (1, 33, 1),
        (13, 1, 2),
        (12, 32, 1),
        (145, 33, 7),
        (5, 17, 1025),
        (2, 4097, 3),
        (257, 513, 129),
    ];
    for (i, &(m, n, k)) in shapes.iter().enumerate() {
        let (a, b) = (matrix(&mut rng, m, k), matrix(&mut rng, k, n));
        let (la, lb) = (LAYOUTS[i % 4], LAYOUTS[(i + 1) % 4]);
        check(&a, &b, la, lb).unwrap();
    }
}

#[test]
fn broadcast_operands_and_strided_outputs() {
    let mut rng = Rng::new(7);
    // A zero-stride (broadcast) row: every row of `a` is the same.
    let row = matrix(&mut rng, 1, 40);
    let a = row.broadcast((30, 40)).unwrap();
    let b = matrix(&mut rng, 40, 50);
    let mut wide = Array2::from_elem((30, 64), f32::NAN);
    matmul_f32(a, b.view(), &mut wide.slice_mut(s![.., ..50])).unwrap();
    let want = row.dot(&b);
    for i in 0..30 {
        for j in 0..50 {
            assert!((wide[[i, j]] - want[[0, j]]).abs() <= 1e-4, "({i}, {j})");
        }
        assert!(wide.slice(s![i, 50..]).iter().all(|v| v.is_nan()), "padding of row {i} written");
    }
    // A column-strided output falls back but is still correct.
    let mut c = Array2::from_elem((50, 30), f32::NAN);
    matmul_f32(a, b.view(), &mut c.view_mut().reversed_axes()).unwrap();
    assert!((c[[3, 4]] - want[[0, 3]]).abs() <= 1e-4);
}

#[test]
fn mismatched_shapes_are_an_error() {
    let (a, b) = (Array2::<f32>::zeros((2, 3)), Array2::<f32>::zeros((4, 5)));
    let mut c = Array2::<f32>::zeros((2, 5));
    let err = matmul_f32(a.view(), b.view(), &mut c.view_mut()).unwrap_err();
    assert_eq!(err, GemmError::Shapes { a: [2, 3], b: [4, 5], c: [2, 5] });
}
