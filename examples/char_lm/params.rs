//! The model's sizes and parameter layout: every parameter's name and shape in `model.tfn`'s
//! order, how it starts and whether AdamW decays it (creating, loading and saving them is
//! `common::params`).

use crate::common::params::{Init, Spec};

/// The model's sizes.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub vocab: usize,
    pub block: usize,
    pub channels: usize,
    pub heads: usize,
}

impl Config {
    pub fn head_dim(&self) -> usize {
        self.channels / self.heads
    }
}

/// Names, shapes and initialisation of every parameter, in `gpt`'s argument order. Weight
/// decay applies to the blocks' matrices, not to embeddings, gains or biases.
pub fn layout(c: &Config) -> Vec<Spec> {
    let (v, t, ch) = (c.vocab, c.block, c.channels);
    // GPT-2's scheme: N(0, 0.02²), residual projections scaled by 1/sqrt(2 * blocks).
    let std = 0.02;
    let residual = std / (2.0f64 * 2.0).sqrt();
    let spec = |name: String, shape: Vec<usize>, init: Init| {
        let decays = shape.len() == 2 && name != "wte" && name != "wpe";
        Spec { name, shape, init, decays }
    };
    let mut out = vec![
        spec("wte".to_string(), vec![v, ch], Init::Normal(std)),
        spec("wpe".to_string(), vec![t, ch], Init::Normal(std)),
    ];
    for b in ["a", "b"] {
        let p = |n: &str| format!("{b}_{n}");
        out.extend([
            spec(p("ln1_g"), vec![ch], Init::Ones),
            spec(p("ln1_b"), vec![ch], Init::Zeros),
            spec(p("wq"), vec![ch, ch], Init::Normal(std)),
            spec(p("wk"), vec![ch, ch], Init::Normal(std)),
            spec(p("wv"), vec![ch, ch], Init::Normal(std)),
            spec(p("wo"), vec![ch, ch], Init::Normal(residual)),
            spec(p("bo"), vec![ch], Init::Zeros),
            spec(p("ln2_g"), vec![ch], Init::Ones),
            spec(p("ln2_b"), vec![ch], Init::Zeros),
            spec(p("w1"), vec![ch, 4 * ch], Init::Normal(std)),
            spec(p("b1"), vec![4 * ch], Init::Zeros),
            spec(p("w2"), vec![4 * ch, ch], Init::Normal(residual)),
            spec(p("b2"), vec![ch], Init::Zeros),
        ]);
    }
    out.push(spec("lnf_g".to_string(), vec![ch], Init::Ones));
    out.push(spec("lnf_b".to_string(), vec![ch], Init::Zeros));
    out
}
