//! The digits: loading `data/images.npy` and `data/labels.npy`, the fixed train/test split and
//! the per-epoch shuffled mini-batches.
//!
//! The split and the batch order are specified exactly so that another framework can reproduce
//! them (`benches/peers/cnn_jax.py` does): a Fisher–Yates shuffle driven by SplitMix64 (for
//! `i` from n - 1 down to 1, swap `i` with `r % (i + 1)`, `r` the generator's next output).
//! The split shuffles 0..n with seed [`SPLIT_SEED`] and holds out the last 20 %; each epoch
//! shuffles the training positions with the generator seeded by `--seed` (one generator for the
//! whole run) and cuts them into batches, the last one smaller.

use ndarray::{ArrayD, Axis};
use std::path::Path;
use tfn::Tensor;

/// The seed of the train/test permutation: fixed, not `--seed`, so every run tests on the same
/// 359 images.
pub const SPLIT_SEED: u64 = 2024;

/// Images `[n, 1, 8, 8]` (f32, pixel values 0..16) and their labels (i64, 0..9).
pub struct Split {
    pub images: ArrayD<f32>,
    pub labels: ArrayD<i64>,
}

impl Split {
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// The rows `rows` of this split, in that order.
    pub fn select(&self, rows: &[usize]) -> Split {
        Split {
            images: self.images.select(Axis(0), rows),
            labels: self.labels.select(Axis(0), rows),
        }
    }
}

/// The training and test splits of the digits in `dir`.
pub fn load(dir: &Path) -> Result<(Split, Split), String> {
    let read = |name: &str| {
        let path = dir.join(name);
        tfn::npy::read(&path).map_err(|e| format!("{}: {e}", path.display()))
    };
    let images = match read("images.npy")? {
        Tensor::F32(a) => a,
        other => return Err(format!("images.npy: expected f32, got {}", other.dtype())),
    };
    let labels = match read("labels.npy")? {
        Tensor::I64(a) => a,
        other => return Err(format!("labels.npy: expected i64, got {}", other.dtype())),
    };
    let n = labels.len();
    if labels.ndim() != 1 || images.shape() != [n, 1, 8, 8] || n < 10 {
        return Err(format!(
            "expected images [n, 1, 8, 8] and labels [n], got {:?} and {:?}",
            images.shape(),
            labels.shape()
        ));
    }
    if let Some(bad) = labels.iter().find(|&&l| !(0..10).contains(&l)) {
        return Err(format!("labels.npy: label {bad} is not a digit 0..9"));
    }
    let all = Split { images, labels };
    let order = permutation(n, &mut SplitMix64(SPLIT_SEED));
    let test = n / 5;
    Ok((all.select(&order[..n - test]), all.select(&order[n - test..])))
}

/// 0..n shuffled by Fisher–Yates with `rng`.
pub fn permutation(n: usize, rng: &mut SplitMix64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

/// One epoch's batches of row numbers into the training split.
pub fn epoch(n: usize, batch: usize, rng: &mut SplitMix64) -> Vec<Vec<usize>> {
    permutation(n, rng).chunks(batch.max(1)).map(<[usize]>::to_vec).collect()
}

/// SplitMix64 (Steele, Lea and Flood 2014).
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// The number of rows of `logits` ([n, classes], row-major) whose largest entry (the first, on
/// a tie) is at the row's label.
pub fn correct(logits: &ArrayD<f32>, labels: &ArrayD<i64>) -> usize {
    let classes = logits.shape().last().copied().unwrap_or(1).max(1);
    let rows = logits.as_slice().map(|s| s.chunks(classes)).into_iter().flatten();
    rows.zip(labels.iter())
        .filter(|(row, &label)| {
            let best = row.iter().enumerate().fold((0, f32::NEG_INFINITY), |best, (i, &v)| {
                if v > best.1 {
                    (i, v)
                } else {
                    best
                }
            });
            best.0 as i64 == label
        })
        .count()
}
