//! [`SplitMix`]: the one small deterministic random generator of the project (SplitMix64).
//!
//! Used wherever tfn or its tests need reproducible random data without a dependency: rewrite
//! rule soundness checks, `tfnc gradcheck` and `tfnc bench` inputs, and the random-program and
//! property tests of every crate. A seed reproduces a run on every machine.

/// SplitMix64 (Steele, Lea and Flood): one `u64` of state, good statistical quality for test
/// data, and any seed (including 0) is fine.
#[derive(Clone, Debug)]
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn new(seed: u64) -> SplitMix {
        SplitMix(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`, 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// Uniform in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// [`Self::below`] for indices.
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// One of `items` (which must not be empty).
    pub fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.index(items.len())].clone()
    }

    /// A standard normal sample (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u = ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let v = self.unit();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::SplitMix;

    #[test]
    fn reproducible_and_roughly_uniform() {
        let (mut a, mut b) = (SplitMix(7), SplitMix(7));
        assert!((0..100).all(|_| a.next_u64() == b.next_u64()));
        let mut r = SplitMix(1);
        let n = 20_000;
        let mean = (0..n).map(|_| r.unit()).sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.01, "{mean}");
        let normal_mean = (0..n).map(|_| r.normal()).sum::<f64>() / n as f64;
        assert!(normal_mean.abs() < 0.03, "{normal_mean}");
        assert!((0..1000).all(|_| r.below(7) < 7));
    }
}
