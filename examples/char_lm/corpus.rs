//! The training text, its alphabet, and the deterministic batch sampler.
//!
//! The sampler is specified exactly so that another framework can draw the same batches
//! (`benches/peers/char_lm_jax.py` does): SplitMix64 seeded with `--seed`; each sequence of a
//! batch takes the next output `r` and starts at `r % (n - T - 1)` of the split's tokens.

use std::path::Path;

/// The text as symbol ids, split 90/10 into training and validation.
pub struct Corpus {
    /// The alphabet: every distinct character of the text, sorted.
    pub alphabet: Vec<char>,
    pub train: Vec<i64>,
    pub valid: Vec<i64>,
}

impl Corpus {
    pub fn load(path: &Path) -> Result<Corpus, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the corpus {}: {e}", path.display()))?;
        let mut alphabet: Vec<char> = text.chars().collect();
        alphabet.sort_unstable();
        alphabet.dedup();
        let ids: Vec<i64> =
            text.chars().map(|c| alphabet.binary_search(&c).map_or(0, |i| i as i64)).collect();
        let split = ids.len() * 9 / 10;
        let (train, valid) = ids.split_at(split);
        Ok(Corpus { alphabet, train: train.to_vec(), valid: valid.to_vec() })
    }

    /// The unigram entropy of the training split in nats: the loss of the best model that
    /// ignores context, the bar the trained model must get well below.
    pub fn unigram_entropy(&self) -> f64 {
        let mut counts = vec![0usize; self.alphabet.len()];
        for &t in &self.train {
            counts[t as usize] += 1;
        }
        let n = self.train.len() as f64;
        counts.iter().filter(|&&c| c > 0).map(|&c| c as f64 / n).map(|p| -p * p.ln()).sum()
    }

    pub fn decode(&self, ids: &[i64]) -> String {
        ids.iter().map(|&i| self.alphabet.get(i as usize).copied().unwrap_or('?')).collect()
    }
}

/// SplitMix64 (Steele, Lea and Flood 2014): the batch sampler's and the sampler's generator.
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A float in [0, 1) from the top 53 bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// A batch of `batch` sequences of `t` tokens and their next-token targets, row-major.
pub fn batch(tokens: &[i64], batch: usize, t: usize, rng: &mut SplitMix64) -> (Vec<i64>, Vec<i64>) {
    let span = (tokens.len() - t - 1) as u64;
    let mut inputs = Vec::with_capacity(batch * t);
    let mut targets = Vec::with_capacity(batch * t);
    for _ in 0..batch {
        let start = (rng.next_u64() % span) as usize;
        inputs.extend_from_slice(&tokens[start..start + t]);
        targets.extend_from_slice(&tokens[start + 1..start + t + 1]);
    }
    (inputs, targets)
}
