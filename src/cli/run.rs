//! `tfnc run FILE FN --arg NAME=VALUE... [--weights CKPT [--map P=T]...] [--vjp COTANGENT]...
//! [--out PATH]...`: call a function (or its vector-Jacobian product, one `--vjp` per result) on
//! `.npy` files and literals, with the tensor parameters no `--arg` gives bound from a
//! safetensors checkpoint; write or summarise its results. The `--out` files (`.npy` each, or
//! one `.safetensors` holding every result by name) are written atomically, all or none.

use super::args::{parse_value, ArgValue};
use super::{session_for, BackendArg, Outcome};
use crate::{Tensor, Value};
use std::path::PathBuf;

pub(super) struct RunRequest {
    pub file: PathBuf,
    pub function: String,
    pub args: Vec<(String, String)>,
    pub outs: Vec<PathBuf>,
    pub weights: Option<PathBuf>,
    pub maps: Vec<String>,
    pub list_unused: bool,
    pub backend: BackendArg,
    pub threads: Option<usize>,
    /// Cotangents, one per result of the function; empty for a plain call.
    pub vjps: Vec<PathBuf>,
    /// `--checkpoint-loops`: recompute loop states in the backward pass.
    pub checkpoint_loops: bool,
    pub optimize: bool,
}

/// Loads the `--arg` values: `.npy` files become tensors, literals attributes.
pub(super) fn load_args(
    args: &[(String, String)],
) -> Result<Vec<(String, Value<'static>)>, Outcome> {
    let mut values = Vec::new();
    for (name, text) in args {
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
    match run_checked(req) {
        Ok(()) => Outcome::Ok,
        Err(o) => o,
    }
}

fn usage(text: String) -> Outcome {
    Outcome::UsageError(text)
}

fn run_checked(req: RunRequest) -> Result<(), Outcome> {
    if let Some(path) = first_duplicate(&req.outs) {
        return Err(usage(format!("--out `{}` is given twice", path.display())));
    }
    let safetensors_out = req.outs.iter().any(|p| is_safetensors(p));
    if safetensors_out && req.outs.len() > 1 {
        return Err(usage("a .safetensors --out holds every result: give it alone".to_string()));
    }
    if req.weights.is_none() && (!req.maps.is_empty() || req.list_unused) {
        let flag = if req.list_unused { "--list-unused" } else { "--map" };
        return Err(usage(format!("{flag} needs --weights FILE")));
    }
    let mapping = crate::Mapping::parse(&req.maps).map_err(|e| usage(format!("--map: {e}")))?;
    let session =
        session_for(&req.file, req.backend, req.threads, req.optimize, req.checkpoint_loops)?;
    check_mapping(&session, &req.function, &mapping)?;
    let args = load_args(&req.args)?;
    let weights = match &req.weights {
        Some(path) => {
            let w = crate::Weights::open(path)
                .map_err(|e| Outcome::UserError(format!("error: {e}")))?;
            Some(w.bind(&mapping).map_err(|e| Outcome::UserError(format!("error: {e}")))?)
        }
        None => None,
    };
    let kwargs: Vec<(&str, Value)> = args.iter().map(|(n, v)| (n.as_str(), v.view())).collect();
    let bound = match &weights {
        Some(w) => {
            Some(session.bind_weights(&req.function, &[], &kwargs, w).map_err(Outcome::from)?)
        }
        None => None,
    };
    let kwargs = match &bound {
        Some(b) => crate::weights::merged(&kwargs, b),
        None => kwargs,
    };
    let given: Vec<&str> = kwargs.iter().map(|(n, _)| *n).collect();
    super::ir::missing_args(&session.library(), &req.function, &given, "a .npy file", "NAME.npy")?;
    let explain = |e: crate::Error| match &bound {
        Some(b) => Outcome::from(crate::weights::explain(e, b)),
        None => Outcome::from(e),
    };
    let results = if req.vjps.is_empty() {
        session.call_kw(&req.function, &[], &kwargs)
    } else {
        // One cotangent per result: a miscount is the command line's, as `--out`'s is.
        if let Some(n) = result_count(&session, &req.function) {
            if n != req.vjps.len() {
                return Err(usage(format!(
                    "`{}` has {n} result(s), so --vjp needs {n} cotangent(s), got {}",
                    req.function,
                    req.vjps.len()
                )));
            }
        }
        let mut cotangents = Vec::new();
        for (i, path) in req.vjps.iter().enumerate() {
            match crate::npy::read(path) {
                Ok(ct) => cotangents.push(Value::from(ct)),
                Err(e) => {
                    return Err(Outcome::UserError(format!("error: --vjp (cotangent {i}): {e}")))
                }
            }
        }
        session.vjp_kw(&req.function, &[], &kwargs, &cotangents)
    };
    let results: Vec<Tensor> =
        results.map_err(explain)?.into_iter().filter_map(Value::into_tensor).collect();
    if req.list_unused {
        if let (Some(w), Some(b)) = (&weights, &bound) {
            let mut unused = crate::weights::Params::tensor_names(w);
            unused.retain(|n| !b.tensors.contains(n));
            err!(
                "note: tensors of `{}` not used by `{}` ({} of {}){}\n",
                crate::weights::Params::origin(w),
                req.function,
                unused.len(),
                crate::weights::Params::tensor_names(w).len(),
                if unused.is_empty() { "" } else { ":" }
            );
            for name in unused {
                err!("  {name}\n");
            }
        }
    }
    if req.outs.is_empty() {
        for (i, t) in results.iter().enumerate() {
            outln!("{}", super::summary::summarize(&format!("out{i}"), t));
        }
        return Ok(());
    }
    if safetensors_out {
        let names: Vec<String> = if req.vjps.is_empty() {
            (0..results.len()).map(|i| format!("out{i}")).collect()
        } else {
            session.vjp_names(&req.function, &[], &kwargs).map_err(Outcome::from)?
        };
        if names.len() != results.len() {
            return Err(Outcome::UserError(format!(
                "internal error: {} gradient names for {} gradients",
                names.len(),
                results.len()
            )));
        }
        let named: Vec<(&str, crate::TensorValue)> = names
            .iter()
            .map(String::as_str)
            .zip(results.iter().map(crate::weights::tensor_view))
            .collect();
        return crate::weights::save_safetensors(&req.outs[0], &named)
            .map_err(|e| Outcome::UserError(format!("error: {e}")));
    }
    if req.outs.len() != results.len() {
        let what = if req.vjps.is_empty() { "result(s)" } else { "gradient(s) (with --vjp)" };
        return Err(usage(format!(
            "`{}` has {} {what} but {} --out path(s) were given",
            req.function,
            results.len(),
            req.outs.len()
        )));
    }
    let outputs: Vec<(&std::path::Path, &Tensor)> =
        req.outs.iter().map(PathBuf::as_path).zip(&results).collect();
    crate::npy::write_all(&outputs).map_err(|e| Outcome::UserError(format!("error: {e}")))
}

/// How many results `function` (or `name.overload`) returns, when every overload agrees.
fn result_count(session: &crate::Session, function: &str) -> Option<usize> {
    let library = session.library();
    let overloads = library.callable(function);
    let first = overloads.first()?.returns.len();
    overloads.iter().all(|f| f.returns.len() == first).then_some(first)
}

fn is_safetensors(path: &std::path::Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("safetensors"))
}

/// A `--map` entry must name a parameter of the function (a typo would otherwise be ignored).
fn check_mapping(
    session: &crate::Session,
    function: &str,
    mapping: &crate::Mapping,
) -> Result<(), Outcome> {
    let library = session.library();
    let overloads = library.callable(function);
    if overloads.is_empty() {
        return Ok(()); // the call reports the unknown function
    }
    for e in mapping.entries() {
        if let Some(why) = crate::weights::no_such_param(&overloads, function, &e.param) {
            return Err(usage(format!("--map `{e}`: {why}")));
        }
    }
    Ok(())
}

/// The first path given twice (both outputs would go to one file), however it is spelled
/// (`s.npy` and `./s.npy`, a symlinked directory): paths compare resolved, as far as they exist.
fn first_duplicate(paths: &[PathBuf]) -> Option<&PathBuf> {
    let resolved = |p: &PathBuf| -> PathBuf {
        if let Ok(whole) = std::fs::canonicalize(p) {
            return whole;
        }
        let parent = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => std::path::Path::new("."),
        };
        match (std::fs::canonicalize(parent), p.file_name()) {
            (Ok(dir), Some(name)) => dir.join(name),
            _ => p.clone(),
        }
    };
    let keys: Vec<PathBuf> = paths.iter().map(resolved).collect();
    (0..paths.len()).find(|&i| keys[..i].contains(&keys[i])).map(|i| &paths[i])
}
