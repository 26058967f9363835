//! The model's sizes and parameter layout: every parameter's name and shape in `model.tfn`'s
//! order, how it starts and whether AdamW decays it (creating, loading and saving them is
//! `common::params`).

use crate::common::params::{Init, Spec};

/// The model's sizes: the channels of the two convolutions.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub c1: usize,
    pub c2: usize,
}

impl Config {
    /// The flattened features after the second pooling: C2 channels of 2×2.
    pub fn feat(&self) -> usize {
        self.c2 * 4
    }
}

pub const CLASSES: usize = 10;

/// Names, shapes and initialisation of every parameter, in `predict`'s argument order. Weights
/// are N(0, 2 / fan_in) (He et al. 2015, for relu), the classifier's N(0, 1 / fan_in); biases
/// start at zero. Weight decay applies to the weights, not to the biases.
pub fn layout(c: &Config) -> Vec<Spec> {
    let he = |fan_in: usize| (2.0 / fan_in as f64).sqrt();
    let weight = |name: &str, shape: Vec<usize>, std: f64| Spec {
        name: name.to_string(),
        shape,
        init: Init::Normal(std),
        decays: true,
    };
    let bias = |name: &str, size: usize| Spec {
        name: name.to_string(),
        shape: vec![size],
        init: Init::Zeros,
        decays: false,
    };
    vec![
        weight("w1", vec![c.c1, 1, 3, 3], he(9)),
        bias("b1", c.c1),
        weight("w2", vec![c.c2, c.c1, 3, 3], he(9 * c.c1)),
        bias("b2", c.c2),
        weight("w3", vec![c.feat(), CLASSES], (1.0 / c.feat() as f64).sqrt()),
        bias("b3", CLASSES),
    ]
}
