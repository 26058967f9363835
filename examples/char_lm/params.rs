//! The model's parameters: their names and shapes in `model.tfn`'s order, their
//! initialisation (drawn by tfn's own `randn_like`), and `.npy` loading and saving.

use ndarray::{ArrayD, IxDyn};
use std::path::Path;
use tfn::{Session, Tensor, Value};

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

/// How a parameter starts: N(0, std²), zeros or ones.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Init {
    Normal(f64),
    Zeros,
    Ones,
}

pub struct Param {
    pub name: String,
    pub value: ArrayD<f32>,
    /// Whether AdamW decays it (the matrices, not the gains, biases or embeddings).
    pub decays: bool,
}

/// Names, shapes and initialisation of every parameter, in `gpt`'s argument order.
pub fn layout(c: &Config) -> Vec<(String, Vec<usize>, Init)> {
    let (v, t, ch) = (c.vocab, c.block, c.channels);
    // GPT-2's scheme: N(0, 0.02²), residual projections scaled by 1/sqrt(2 * blocks).
    let std = 0.02;
    let residual = std / (2.0f64 * 2.0).sqrt();
    let mut out = vec![
        ("wte".to_string(), vec![v, ch], Init::Normal(std)),
        ("wpe".to_string(), vec![t, ch], Init::Normal(std)),
    ];
    for b in ["a", "b"] {
        let p = |n: &str| format!("{b}_{n}");
        out.extend([
            (p("ln1_g"), vec![ch], Init::Ones),
            (p("ln1_b"), vec![ch], Init::Zeros),
            (p("wq"), vec![ch, ch], Init::Normal(std)),
            (p("wk"), vec![ch, ch], Init::Normal(std)),
            (p("wv"), vec![ch, ch], Init::Normal(std)),
            (p("wo"), vec![ch, ch], Init::Normal(residual)),
            (p("bo"), vec![ch], Init::Zeros),
            (p("ln2_g"), vec![ch], Init::Ones),
            (p("ln2_b"), vec![ch], Init::Zeros),
            (p("w1"), vec![ch, 4 * ch], Init::Normal(std)),
            (p("b1"), vec![4 * ch], Init::Zeros),
            (p("w2"), vec![4 * ch, ch], Init::Normal(residual)),
            (p("b2"), vec![ch], Init::Zeros),
        ]);
    }
    out.push(("lnf_g".to_string(), vec![ch], Init::Ones));
    out.push(("lnf_b".to_string(), vec![ch], Init::Zeros));
    out
}

/// Fresh parameters; the normal ones come from `init_normal` in model.tfn with key
/// `[seed, 1000 + index]`, so they are the same on every backend and machine.
pub fn initialise(s: &Session, c: &Config, seed: i64) -> Result<Vec<Param>, String> {
    let mut params = Vec::new();
    for (i, (name, shape, init)) in layout(c).into_iter().enumerate() {
        let value = match init {
            Init::Zeros => ArrayD::zeros(IxDyn(&shape)),
            Init::Ones => ArrayD::ones(IxDyn(&shape)),
            Init::Normal(std) => {
                let like = ArrayD::<f32>::zeros(IxDyn(&shape));
                let key = ArrayD::from_shape_vec(IxDyn(&[2]), vec![seed, 1000 + i as i64])
                    .map_err(|e| e.to_string())?;
                let args = [Value::from(like.view()), Value::from(key.view())];
                let out = s
                    .call_kw("init_normal", &args, &[("std", Value::from(std))])
                    .map_err(|e| format!("initialising `{name}`: {e}"))?;
                into_f32(out.into_iter().next())?
            }
        };
        params.push(Param { decays: decays(&name, shape.len()), name, value });
    }
    Ok(params)
}

/// Parameters read from `DIR/NAME.npy`, each checked against the layout's shape.
pub fn load(dir: &Path, c: &Config) -> Result<Vec<Param>, String> {
    let mut params = Vec::new();
    for (name, shape, _) in layout(c) {
        let path = dir.join(format!("{name}.npy"));
        let tensor = tfn::npy::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let value = match tensor {
            Tensor::F32(a) => a,
            other => {
                return Err(format!("{}: expected f32, got {}", path.display(), other.dtype()))
            }
        };
        if value.shape() != shape.as_slice() {
            return Err(format!(
                "{}: expected shape {shape:?}, got {:?}",
                path.display(),
                value.shape()
            ));
        }
        params.push(Param { decays: decays(&name, value.ndim()), name, value });
    }
    Ok(params)
}

/// Writes every parameter to `DIR/NAME.npy` (each file atomically).
pub fn save(dir: &Path, params: &[Param]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let tensors: Vec<(std::path::PathBuf, Tensor)> = params
        .iter()
        .map(|p| (dir.join(format!("{}.npy", p.name)), Tensor::F32(p.value.clone())))
        .collect();
    let refs: Vec<(&Path, &Tensor)> = tensors.iter().map(|(p, t)| (p.as_path(), t)).collect();
    tfn::npy::write_all(&refs).map_err(|e| e.to_string())
}

/// Weight decay applies to the blocks' matrices, not to embeddings, gains or biases.
fn decays(name: &str, rank: usize) -> bool {
    rank == 2 && name != "wte" && name != "wpe"
}

pub fn into_f32(value: Option<Value<'static>>) -> Result<ArrayD<f32>, String> {
    match value.and_then(Value::into_tensor) {
        Some(Tensor::F32(a)) => Ok(a),
        other => Err(format!("expected an f32 tensor, got {other:?}")),
    }
}
