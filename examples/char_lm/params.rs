//! The model's sizes and parameter layout: every parameter's name and shape in `model.tfn`'s
//! order, how it starts and whether AdamW decays it (creating, loading and saving them is
//! `common::params`). The blocks' weights are stacked: one tensor of `[layers, ...]` per kind,
//! block `l` using row `l`.

use crate::common::params::{Init, Spec};

/// The model's sizes.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub vocab: usize,
    pub block: usize,
    pub channels: usize,
    pub heads: usize,
    /// Transformer blocks (the first axis of every stacked weight).
    pub layers: usize,
}

impl Config {
    pub fn head_dim(&self) -> usize {
        self.channels / self.heads
    }
}

/// Names, shapes and initialisation of every parameter, in `gpt`'s argument order. Weight
/// decay applies to the blocks' matrices, not to embeddings, gains or biases.
pub fn layout(c: &Config) -> Vec<Spec> {
    let (v, t, ch, l) = (c.vocab, c.block, c.channels, c.layers);
    // GPT-2's scheme: N(0, 0.02²), residual projections scaled by 1/sqrt(2 * layers).
    let std = 0.02;
    let residual = std / (2.0 * l as f64).sqrt();
    let spec = |name: &str, shape: Vec<usize>, init: Init| {
        // The stacked matrices: [layers, in, out].
        let decays = shape.len() == 3;
        Spec { name: name.to_string(), shape, init, decays }
    };
    vec![
        spec("wte", vec![v, ch], Init::Normal(std)),
        spec("wpe", vec![t, ch], Init::Normal(std)),
        spec("ln1_g", vec![l, ch], Init::Ones),
        spec("ln1_b", vec![l, ch], Init::Zeros),
        spec("wq", vec![l, ch, ch], Init::Normal(std)),
        spec("wk", vec![l, ch, ch], Init::Normal(std)),
        spec("wv", vec![l, ch, ch], Init::Normal(std)),
        spec("wo", vec![l, ch, ch], Init::Normal(residual)),
        spec("bo", vec![l, ch], Init::Zeros),
        spec("ln2_g", vec![l, ch], Init::Ones),
        spec("ln2_b", vec![l, ch], Init::Zeros),
        spec("w1", vec![l, ch, 4 * ch], Init::Normal(std)),
        spec("b1", vec![l, 4 * ch], Init::Zeros),
        spec("w2", vec![l, 4 * ch, ch], Init::Normal(residual)),
        spec("b2", vec![l, ch], Init::Zeros),
        spec("lnf_g", vec![ch], Init::Ones),
        spec("lnf_b", vec![ch], Init::Zeros),
    ]
}
