//! `tfnc run FILE FN --arg NAME=VALUE... [--vjp COTANGENT]... [--out PATH]...`: call a function
//! (or its vector-Jacobian product, one `--vjp` per result) on `.npy` files and literals, write
//! or summarise its results. The `--out` files are written atomically, all or none.

use super::args::{parse_value, ArgValue};
use super::{session_for, BackendArg, Outcome};
use crate::{Tensor, Value};
use std::path::PathBuf;

pub(super) struct RunRequest {
    pub file: PathBuf,
    pub function: String,
    pub args: Vec<(String, String)>,
    pub outs: Vec<PathBuf>,
    pub backend: BackendArg,
    pub threads: Option<usize>,
    /// Cotangents, one per result of the function; empty for a plain call.
    pub vjps: Vec<PathBuf>,
    pub optimize: bool,
}

/// Loads the `--arg` values: `.npy` files become tensors, literals attributes.
pub(super) fn load_args(
    args: &[(String, String)],
) -> Result<Vec<(String, Value<'static>)>, Outcome> {
    let mut seen = std::collections::HashSet::new();
    let mut values = Vec::new();
    for (name, text) in args {
        if !seen.insert(name.clone()) {
            return Err(Outcome::UsageError(format!("argument `{name}` is given twice")));
        }
        let value = match parse_value(text).map_err(|e| Outcome::UsageError(format!("--arg {name}: {e}")))? {
            ArgValue::Literal(a) => Value::Attr(a),
            ArgValue::NpyPath(p) => {
                let t = crate::npy::read(std::path::Path::new(&p))
                    .map_err(|e| Outcome::UserError(format!("error: argument `{name}`: {e}")))?;
                Value::from(t)
            }
            ArgValue::TensorType(..) => {
                return Err(Outcome::UsageError(format!(
                    "--arg {name}: `run` needs data, give a .npy file (tensor types are for `ir` and `bench`)"
                )))
            }
        };
        values.push((name.clone(), value));
    }
    Ok(values)
}

pub(super) fn run(req: RunRequest) -> Outcome {
    if let Some(path) = first_duplicate(&req.outs) {
        return Outcome::UsageError(format!("--out `{}` is given twice", path.display()));
    }
    let session = match session_for(&req.file, req.backend, req.threads, req.optimize) {
        Ok(s) => s,
        Err(o) => return o,
    };
    let args = match load_args(&req.args) {
        Ok(a) => a,
        Err(o) => return o,
    };
    let kwargs: Vec<(&str, Value)> = args.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
    let results = if req.vjps.is_empty() {
        session.call_kw(&req.function, &[], &kwargs)
    } else {
        let mut cotangents = Vec::new();
        for (i, path) in req.vjps.iter().enumerate() {
            match crate::npy::read(path) {
                Ok(ct) => cotangents.push(Value::from(ct)),
                Err(e) => return Outcome::UserError(format!("error: --vjp (cotangent {i}): {e}")),
            }
        }
        session.vjp_kw(&req.function, &[], &kwargs, &cotangents)
    };
    let results: Vec<Tensor> = match results {
        Ok(r) => r.into_iter().filter_map(Value::into_tensor).collect(),
        Err(e) => return Outcome::from(e),
    };
    if req.outs.is_empty() {
        for (i, t) in results.iter().enumerate() {
            outln!("{}", super::summary::summarize(&format!("out{i}"), t));
        }
        return Outcome::Ok;
    }
    if req.outs.len() != results.len() {
        return Outcome::UsageError(format!(
            "`{}` has {} result(s) but {} --out path(s) were given",
            req.function,
            results.len(),
            req.outs.len()
        ));
    }
    let outputs: Vec<(&std::path::Path, &Tensor)> =
        req.outs.iter().map(PathBuf::as_path).zip(&results).collect();
    match crate::npy::write_all(&outputs) {
        Ok(()) => Outcome::Ok,
        Err(e) => Outcome::UserError(format!("error: {e}")),
    }
}

/// The first path given twice (both outputs would go to one file).
fn first_duplicate(paths: &[PathBuf]) -> Option<&PathBuf> {
    paths.iter().enumerate().find(|(i, p)| paths[..*i].contains(p)).map(|(_, p)| p)
}
