//! Tests of the strided-copy engine on its own: axis normalisation, and random layouts
//! (permuted, stepped, reversed sources; permuted destinations with gaps) of every element
//! size against a plain index walk, including layouts the ops never produce (a transpose
//! tile with non-unit strides on both sides).

use super::*;
use tfn_test_utils::Rng;

fn axis(len: usize, src: isize, dst: isize) -> CopyAxis {
    CopyAxis { len, src, dst }
}

#[test]
fn normalisation_drops_unit_axes_and_merges_contiguous_neighbours() {
    // [64, 256, 256] transposed with perm [2, 0, 1]: output [256, 64, 256].
    let got = copy_axes(&[256, 64, 256], &[1, 65536, 256], &[16384, 256, 1]);
    assert_eq!(got, Some(vec![axis(256, 1, 16384), axis(16384, 256, 1)]));
    assert_eq!(copy_axes(&[1, 5, 1], &[5, 1, 1], &[5, 1, 1]), Some(vec![axis(5, 1, 1)]));
    assert_eq!(copy_axes(&[3, 0, 2], &[0, 2, 1], &[0, 2, 1]), None);
    assert_eq!(copy_axes(&[], &[], &[]), Some(vec![]));
}

/// A layout of `shape` in a buffer: per-axis element strides (the axes nested in a random
/// order, each stepped by one of `steps`) and the offset of index 0.
fn random_layout(rng: &mut Rng, shape: &[usize], steps: &[isize]) -> (Vec<isize>, isize, usize) {
    let rank = shape.len();
    let mut order: Vec<usize> = (0..rank).collect();
    for i in (1..rank).rev() {
        order.swap(i, rng.index(i + 1));
    }
    let mut strides = vec![0isize; rank];
    let (mut span, mut base) = (1usize, 0isize);
    for &a in order.iter().rev() {
        let step = steps[rng.index(steps.len())];
        strides[a] = step * span as isize;
        if step < 0 {
            base += (shape[a] as isize - 1) * -strides[a];
        }
        span *= shape[a].max(1) * step.unsigned_abs();
    }
    (strides, base, span)
}

fn offset(index: &[usize], strides: &[isize], base: isize) -> usize {
    let at = index.iter().zip(strides).map(|(&i, &s)| i as isize * s).sum::<isize>() + base;
    at as usize
}

#[test]
fn random_layouts_match_an_index_walk() {
    for threads in 1..=4 {
        random_layouts(threads);
    }
}

/// Random layouts copied on `threads` threads, split whatever their size.
fn random_layouts(threads: usize) {
    const SIZES: [usize; 13] = [0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 33, 64, 65];
    for seed in 1..=300u64 {
        let mut rng = Rng::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let size = [1, 2, 4, 8][rng.index(4)];
        let rank = rng.index(5);
        let mut shape: Vec<usize> = (0..rank).map(|_| SIZES[rng.index(SIZES.len())]).collect();
        while shape.iter().product::<usize>() > 20_000 {
            let big = (0..rank).max_by_key(|&a| shape[a]).unwrap_or(0);
            shape[big] /= 2;
        }
        let (ss, sbase, sspan) = random_layout(&mut rng, &shape, &[1, 1, 2, -1, -3]);
        let (ds, dbase, dspan) = random_layout(&mut rng, &shape, &[1, 1, 1, 2]);
        let src: Vec<u8> = (0..sspan * size).map(|_| rng.index(256) as u8).collect();
        let mut dst = vec![0u8; dspan * size];
        let mut want = dst.clone();
        let n: usize = shape.iter().product();
        let mut index = vec![0usize; rank];
        for _ in 0..n {
            let (s, d) = (offset(&index, &ss, sbase) * size, offset(&index, &ds, dbase) * size);
            want[d..d + size].copy_from_slice(&src[s..s + size]);
            for a in (0..rank).rev() {
                index[a] += 1;
                if index[a] < shape[a] {
                    break;
                }
                index[a] = 0;
            }
        }
        if let Some(axes) = copy_axes(&shape, &ss, &ds) {
            // SAFETY: both layouts address elements inside their buffers, the destination's
            // pairwise distinct (positive steps over disjoint spans); the buffers are separate.
            let copied = unsafe {
                let s = src.as_ptr().offset(sbase * size as isize);
                let d = dst.as_mut_ptr().offset(dbase * size as isize);
                copy_strided(size, s, d, &axes, threads, 0)
            };
            assert_eq!(copied, Ok(()), "element size {size}");
        }
        assert!(
            dst == want,
            "seed {seed}, {threads} threads: size {size}, shape {shape:?}, src {ss:?}+{sbase}, \
             dst {ds:?}+{dbase}"
        );
    }
}

#[test]
fn large_copies_split_on_block_and_page_boundaries() {
    // A 2-D transpose plane: the outer axis is split in whole 128-element blocks.
    let axes = [axis(1000, 1, 3000), axis(3000, 1000, 1)];
    assert_eq!(split_axis(&axes, 2, 4), Some((0, 512)));
    assert_eq!(split_axis(&axes, 1, 4), None);
    // One contiguous run: split in whole pages.
    assert_eq!(split_axis(&[axis(10_000, 1, 1)], 3, 4), Some((0, 4096)));
    // Too short to split along the outer axis: the next one.
    assert_eq!(split_axis(&[axis(1, 7, 7), axis(5000, 1, 1)], 2, 8), Some((1, 2560)));
    assert_eq!(split_axis(&[axis(100, 1, 1)], 2, 4), None);
}
