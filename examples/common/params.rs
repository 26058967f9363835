//! A model's parameters: named `f32` arrays, created from a layout (name, shape, how each
//! starts), drawn by std:optim's `init_normal`, and read from or written to `DIR/NAME.npy`.

use ndarray::{ArrayD, IxDyn};
use std::path::Path;
use tfn::{Session, Tensor, Value};

/// How a parameter starts: N(0, std²), zeros or ones.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Init {
    Normal(f64),
    Zeros,
    Ones,
}

/// One entry of a model's layout.
#[derive(Clone, Debug)]
pub struct Spec {
    pub name: String,
    pub shape: Vec<usize>,
    pub init: Init,
    /// Whether AdamW's weight decay applies to it.
    pub decays: bool,
}

pub struct Param {
    pub name: String,
    pub value: ArrayD<f32>,
    /// Whether AdamW's weight decay applies to it.
    pub decays: bool,
}

/// Fresh parameters; the normal ones come from std:optim's `init_normal` (which `session` must
/// have loaded) with key `[seed, 1000 + index]`, so they are the same on every backend and
/// machine.
pub fn initialise(session: &Session, layout: &[Spec], seed: i64) -> Result<Vec<Param>, String> {
    let mut params = Vec::new();
    for (i, spec) in layout.iter().enumerate() {
        let value = match spec.init {
            Init::Zeros => ArrayD::zeros(IxDyn(&spec.shape)),
            Init::Ones => ArrayD::ones(IxDyn(&spec.shape)),
            Init::Normal(std) => {
                let like = ArrayD::<f32>::zeros(IxDyn(&spec.shape));
                let key = ArrayD::from_shape_vec(IxDyn(&[2]), vec![seed, 1000 + i as i64])
                    .map_err(|e| e.to_string())?;
                let args = [Value::from(like.view()), Value::from(key.view())];
                let out = session
                    .call_kw("init_normal", &args, &[("std", Value::from(std))])
                    .map_err(|e| format!("initialising `{}`: {e}", spec.name))?;
                into_f32(out.into_iter().next())?
            }
        };
        params.push(Param { name: spec.name.clone(), value, decays: spec.decays });
    }
    Ok(params)
}

/// Parameters read from `DIR/NAME.npy`, each checked against the layout's shape.
pub fn load(dir: &Path, layout: &[Spec]) -> Result<Vec<Param>, String> {
    let mut params = Vec::new();
    for spec in layout {
        let path = dir.join(format!("{}.npy", spec.name));
        let tensor = tfn::npy::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let value = match tensor {
            Tensor::F32(a) => a,
            other => {
                return Err(format!("{}: expected f32, got {}", path.display(), other.dtype()))
            }
        };
        if value.shape() != spec.shape.as_slice() {
            return Err(format!(
                "{}: expected shape {:?}, got {:?}",
                path.display(),
                spec.shape,
                value.shape()
            ));
        }
        params.push(Param { name: spec.name.clone(), value, decays: spec.decays });
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

/// The number of values of all parameters.
pub fn count(params: &[Param]) -> usize {
    params.iter().map(|p| p.value.len()).sum()
}

/// A call's result as an `f32` array (an error naming what came instead).
pub fn into_f32(value: Option<Value<'static>>) -> Result<ArrayD<f32>, String> {
    match value.and_then(Value::into_tensor) {
        Some(Tensor::F32(a)) => Ok(a),
        other => Err(format!("expected an f32 tensor, got {other:?}")),
    }
}
