//! The model's parameters: their names and shapes in `model.tfn`'s order, their
//! initialisation (drawn by tfn's own `randn_like`), and `.npy` loading and saving.

use ndarray::{ArrayD, IxDyn};
use std::path::Path;
use tfn::{Session, Tensor, Value};

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

pub struct Param {
    pub name: String,
    pub value: ArrayD<f32>,
    /// Whether AdamW decays it (the weights, not the biases).
    pub decays: bool,
}

/// Names, shapes and initial standard deviations (0 = zeros) of every parameter, in
/// `predict`'s argument order. Weights are N(0, 2 / fan_in) (He et al. 2015, for relu), the
/// classifier's N(0, 1 / fan_in); biases start at zero.
pub fn layout(c: &Config) -> Vec<(&'static str, Vec<usize>, f64)> {
    let he = |fan_in: usize| (2.0 / fan_in as f64).sqrt();
    vec![
        ("w1", vec![c.c1, 1, 3, 3], he(9)),
        ("b1", vec![c.c1], 0.0),
        ("w2", vec![c.c2, c.c1, 3, 3], he(9 * c.c1)),
        ("b2", vec![c.c2], 0.0),
        ("w3", vec![c.feat(), CLASSES], (1.0 / c.feat() as f64).sqrt()),
        ("b3", vec![CLASSES], 0.0),
    ]
}

/// Fresh parameters; the normal ones come from `init_normal` in model.tfn with key
/// `[seed, 1000 + index]`, so they are the same on every backend and machine.
pub fn initialise(s: &Session, c: &Config, seed: i64) -> Result<Vec<Param>, String> {
    let mut params = Vec::new();
    for (i, (name, shape, std)) in layout(c).into_iter().enumerate() {
        let value = if std == 0.0 {
            ArrayD::zeros(IxDyn(&shape))
        } else {
            let like = ArrayD::<f32>::zeros(IxDyn(&shape));
            let key = ArrayD::from_shape_vec(IxDyn(&[2]), vec![seed, 1000 + i as i64])
                .map_err(|e| e.to_string())?;
            let args = [Value::from(like.view()), Value::from(key.view())];
            let out = s
                .call_kw("init_normal", &args, &[("std", Value::from(std))])
                .map_err(|e| format!("initialising `{name}`: {e}"))?;
            into_f32(out.into_iter().next())?
        };
        params.push(Param { decays: decays(name), name: name.to_string(), value });
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
        params.push(Param { decays: decays(name), name: name.to_string(), value });
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

/// Weight decay applies to the weights, not to the biases.
fn decays(name: &str) -> bool {
    name.starts_with('w')
}

pub fn into_f32(value: Option<Value<'static>>) -> Result<ArrayD<f32>, String> {
    match value.and_then(Value::into_tensor) {
        Some(Tensor::F32(a)) => Ok(a),
        other => Err(format!("expected an f32 tensor, got {other:?}")),
    }
}
