//! Philox-4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2,
//! 3", SC 2011; the Random123 library): the counter-based generator behind `rand_like` and
//! `randn_like`, and the one definition of how a key tensor and an element's flat index become
//! four random 32-bit words.
//!
//! # Key and counter
//!
//! The key tensor is `i64`, of shape `[]` (`k`) or `[2]` (`[k0, k1]`; `k` means `[k, 0]`).
//! Element `i` (its flat row-major index in the result, `0 ≤ i < 2^64`) gets the words
//!
//! ```text
//! philox4x32_10(counter = (lo i, hi i, lo k1, hi k1), key = (lo k0, hi k0))
//! ```
//!
//! where `lo`/`hi` are the low and high 32 bits of the two's-complement 64-bit value. Nothing
//! else enters: not the thread count, the backend, the tile an element falls in, nor the
//! tensor's other dimensions. `[seed, step]` keys thus give independent streams per step,
//! and `[k, 0]` is the same stream as `k`.
//!
//! # One definition, two instantiations
//!
//! [`philox`] (and its halves [`round_keys`], [`rounds`]) is generic over [`WordOps`]: the
//! interpreter instantiates it on `u32` ([`U32`]), the JIT on Cranelift values — scalars in
//! scalar loops, `i32x4` vectors of four elements' words in vector loops — so both run the same
//! rounds by construction. Every step is exact integer arithmetic, so the instantiations agree
//! bit for bit. The Random123 known-answer vectors are checked below.
//!
//! How the words become floats is [`crate::random`].

/// The Philox-4x32 multipliers and Weyl key increments (Random123's `PHILOX_M4x32_0` …).
pub const M0: u32 = 0xD251_1F53;
pub const M1: u32 = 0xCD9E_8D57;
pub const W0: u32 = 0x9E37_79B9;
pub const W1: u32 = 0xBB67_AE85;

/// Rounds of Philox-4x32-10.
pub const ROUNDS: usize = 10;

/// 32-bit word arithmetic on some representation of one or several elements' words.
pub trait WordOps {
    /// The words (one per element) that the operations act on.
    type Word: Copy;
    /// The constant `c` in every lane.
    fn word(&mut self, c: u32) -> Self::Word;
    /// Wrapping addition.
    fn add(&mut self, a: Self::Word, b: Self::Word) -> Self::Word;
    fn xor(&mut self, a: Self::Word, b: Self::Word) -> Self::Word;
    /// The high and low halves of the 64-bit product `m × a`.
    fn mul_hi_lo(&mut self, m: u32, a: Self::Word) -> (Self::Word, Self::Word);
}

/// The key of each of the ten rounds: `(k0 + r·W0, k1 + r·W1)` for round `r` (mod 2^32).
pub fn round_keys<O: WordOps>(o: &mut O, key: [O::Word; 2]) -> [[O::Word; 2]; ROUNDS] {
    let mut keys = [key; ROUNDS];
    for r in 1..ROUNDS {
        let (w0, w1) = (o.word(W0), o.word(W1));
        keys[r] = [o.add(keys[r - 1][0], w0), o.add(keys[r - 1][1], w1)];
    }
    keys
}

/// The ten Philox-4x32 rounds on counter `c` with the round keys of [`round_keys`].
pub fn rounds<O: WordOps>(
    o: &mut O,
    mut c: [O::Word; 4],
    keys: &[[O::Word; 2]; ROUNDS],
) -> [O::Word; 4] {
    for k in keys {
        let (hi0, lo0) = o.mul_hi_lo(M0, c[0]);
        let (hi1, lo1) = o.mul_hi_lo(M1, c[2]);
        let x0 = o.xor(hi1, c[1]);
        let x0 = o.xor(x0, k[0]);
        let x2 = o.xor(hi0, c[3]);
        let x2 = o.xor(x2, k[1]);
        c = [x0, lo1, x2, lo0];
    }
    c
}

/// Philox-4x32-10 of `counter` under `key`.
pub fn philox<O: WordOps>(o: &mut O, counter: [O::Word; 4], key: [O::Word; 2]) -> [O::Word; 4] {
    let keys = round_keys(o, key);
    rounds(o, counter, &keys)
}

/// [`WordOps`] on plain `u32`s: the interpreter's instantiation.
#[derive(Clone, Copy, Debug, Default)]
pub struct U32;

impl WordOps for U32 {
    type Word = u32;
    fn word(&mut self, c: u32) -> u32 {
        c
    }
    fn add(&mut self, a: u32, b: u32) -> u32 {
        a.wrapping_add(b)
    }
    fn xor(&mut self, a: u32, b: u32) -> u32 {
        a ^ b
    }
    fn mul_hi_lo(&mut self, m: u32, a: u32) -> (u32, u32) {
        let p = u64::from(m) * u64::from(a);
        ((p >> 32) as u32, p as u32)
    }
}

/// The Philox key and the two counter words that come from a key tensor's values (see the
/// module documentation): `(key, [counter word 2, counter word 3])`.
pub fn key_words(key: &[i64]) -> ([u32; 2], [u32; 2]) {
    let k0 = key.first().copied().unwrap_or(0) as u64;
    let k1 = key.get(1).copied().unwrap_or(0) as u64;
    ([k0 as u32, (k0 >> 32) as u32], [k1 as u32, (k1 >> 32) as u32])
}

/// The four words of element `index` under a key tensor's values.
pub fn element_words(key: &[i64], index: u64) -> [u32; 4] {
    let (k, c) = key_words(key);
    philox(&mut U32, [index as u32, (index >> 32) as u32, c[0], c[1]], k)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random123's `kat_vectors`, the three `philox4x32 10` lines: counter, key, expected.
    const KAT: [([u32; 4], [u32; 2], [u32; 4]); 3] = [
        ([0; 4], [0; 2], [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]),
        ([u32::MAX; 4], [u32::MAX; 2], [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]),
        (
            [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
            [0xa409_3822, 0x299f_31d0],
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1],
        ),
    ];

    #[test]
    fn known_answers() {
        for (ctr, key, want) in KAT {
            assert_eq!(philox(&mut U32, ctr, key), want, "counter {ctr:08x?} key {key:08x?}");
        }
    }

    #[test]
    fn key_tensor_mapping() {
        // key [] k == key [k, 0]; the words of the pi vector through the tensor mapping.
        assert_eq!(element_words(&[7], 3), element_words(&[7, 0], 3));
        let k0 = (0x299f_31d0_i64 << 32) | 0xa409_3822;
        let k1 = (0x0370_7344_i64 << 32) | 0x1319_8a2e;
        let index = (0x85a3_08d3_u64 << 32) | 0x243f_6a88;
        assert_eq!(element_words(&[k0, k1], index), KAT[2].2);
        assert_eq!(element_words(&[-1, -1], u64::MAX), KAT[1].2);
    }
}
