//! [`Session`] calls whose missing tensor parameters come from a checkpoint:
//! [`Session::call_with`] and its `_kw`, `_into` and vjp variants.
//!
//! The parameters a call gives (positionally or by keyword) win; every other `Tensor`
//! parameter without a default is asked of the [`Params`] (a mapping entry, else the tensor of
//! the parameter's name). With several overloads, the first whose missing parameters are all
//! found (with dtypes its signature accepts) is completed; the dispatcher then sees an
//! ordinary keyword call. A missing tensor, a dtype the parameter's constraint rejects, or a
//! shape the call rejects is an error naming the parameter and the tensor.

use super::bind::Params;
use super::error::WeightsError;
use crate::error::Error;
use crate::session::Session;
use crate::value::{OutputMut, TensorValue, Value};
use tfn_ir::library::{DTypeRef, FunctionDef, ParamType};

/// The keyword arguments a checkpoint adds to a call, and where each came from.
#[derive(Debug)]
pub struct BoundArgs<'w> {
    /// `(parameter, tensor)`, in parameter order.
    pub kwargs: Vec<(String, TensorValue<'w>)>,
    /// `(parameter, source)`: "tensor `w` of `model.safetensors`".
    pub sources: Vec<(String, String)>,
    /// The names of the checkpoint tensors they read.
    pub tensors: Vec<String>,
}

impl Session {
    /// Calls `name` with positional arguments; its other tensor parameters are bound from
    /// `weights` (a [`super::Weights`] file, a [`super::Bound`] mapping, [`super::NamedTensors`]).
    pub fn call_with(
        &self,
        name: &str,
        args: &[Value],
        weights: &dyn Params,
    ) -> Result<Vec<Value<'static>>, Error> {
        self.call_with_kw(name, args, &[], weights)
    }

    /// [`Session::call_with`] with keyword arguments.
    pub fn call_with_kw(
        &self,
        name: &str,
        args: &[Value],
        kwargs: &[(&str, Value)],
        weights: &dyn Params,
    ) -> Result<Vec<Value<'static>>, Error> {
        let bound = self.bind_weights(name, args, kwargs, weights)?;
        let kw = merged(kwargs, &bound);
        self.call_kw(name, args, &kw).map_err(|e| explain(e, &bound))
    }

    /// [`Session::call_into_kw`] with tensor parameters bound from `weights`.
    pub fn call_into_with_kw(
        &self,
        name: &str,
        args: &[Value],
        kwargs: &[(&str, Value)],
        weights: &dyn Params,
        outputs: &mut [OutputMut],
    ) -> Result<(), Error> {
        let bound = self.bind_weights(name, args, kwargs, weights)?;
        let kw = merged(kwargs, &bound);
        self.call_into_kw(name, args, &kw, outputs).map_err(|e| explain(e, &bound))
    }

    /// [`Session::vjp`] with tensor parameters bound from `weights`: the gradients include
    /// those of the bound (float) parameters, in parameter order.
    pub fn vjp_with(
        &self,
        name: &str,
        args: &[Value],
        cotangents: &[Value],
        weights: &dyn Params,
    ) -> Result<Vec<Value<'static>>, Error> {
        self.vjp_with_kw(name, args, &[], cotangents, weights)
    }

    pub fn vjp_with_kw(
        &self,
        name: &str,
        args: &[Value],
        kwargs: &[(&str, Value)],
        cotangents: &[Value],
        weights: &dyn Params,
    ) -> Result<Vec<Value<'static>>, Error> {
        let bound = self.bind_weights(name, args, kwargs, weights)?;
        let kw = merged(kwargs, &bound);
        self.vjp_kw(name, args, &kw, cotangents).map_err(|e| explain(e, &bound))
    }

    /// [`Session::value_and_vjp_kw`] with tensor parameters bound from `weights`.
    #[allow(clippy::type_complexity)]
    pub fn value_and_vjp_with_kw(
        &self,
        name: &str,
        args: &[Value],
        kwargs: &[(&str, Value)],
        cotangents: &[Value],
        weights: &dyn Params,
    ) -> Result<(Vec<Value<'static>>, Vec<Value<'static>>), Error> {
        let bound = self.bind_weights(name, args, kwargs, weights)?;
        let kw = merged(kwargs, &bound);
        self.value_and_vjp_kw(name, args, &kw, cotangents).map_err(|e| explain(e, &bound))
    }

    /// The tensors `weights` gives a call of `name` (the parameters it does not give).
    pub fn bind_weights<'w>(
        &self,
        name: &str,
        args: &[Value],
        kwargs: &[(&str, Value)],
        weights: &'w dyn Params,
    ) -> Result<BoundArgs<'w>, Error> {
        let library = self.library();
        let overloads = library.callable(name);
        if overloads.is_empty() {
            // The call reports the unknown name (with its suggestion).
            return Ok(BoundArgs { kwargs: Vec::new(), sources: Vec::new(), tensors: Vec::new() });
        }
        // A mapping entry must name a parameter (a misspelt one would otherwise be ignored
        // while a tensor of the real name is bound). One mapping may serve a whole model, so
        // a parameter of another function of the session is fine; `--map`, for one call, is
        // stricter (`tfnc run`).
        for param in weights.mapped() {
            let anywhere = library.functions.values().flatten().any(|f| f.param(&param).is_some());
            if let (false, Some(why)) = (anywhere, no_such_param(&overloads, name, &param)) {
                return Err(WeightsError::Mapping(format!(
                    "the mapping binds `{param}`, but {why}, and no other function has one"
                ))
                .into());
            }
        }
        let mut first_error = None;
        for def in overloads {
            match bind_overload(def, name, args, kwargs, weights) {
                Ok(bound) => return Ok(bound),
                Err(Fail::Hard(e)) => return Err(e.into()),
                Err(Fail::Soft(e)) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        Err(first_error.map_or_else(|| Error::Internal("no overload to bind".into()), Error::from))
    }

    /// The names of the tensors of `weights` that a call of `name` does not read (sorted).
    pub fn unused_weights(
        &self,
        name: &str,
        args: &[Value],
        kwargs: &[(&str, Value)],
        weights: &dyn Params,
    ) -> Result<Vec<String>, Error> {
        let bound = self.bind_weights(name, args, kwargs, weights)?;
        let mut names = weights.tensor_names();
        names.retain(|n| !bound.tensors.contains(n));
        names.sort();
        Ok(names)
    }
}

/// Why none of `overloads` (those of `name`) has parameter `param`, or `None` if one has it.
pub(crate) fn no_such_param(overloads: &[&FunctionDef], name: &str, param: &str) -> Option<String> {
    if overloads.iter().any(|f| f.param(param).is_some()) {
        return None;
    }
    let mut params: Vec<&str> =
        overloads.iter().flat_map(|f| f.params.iter().map(|p| p.name.as_str())).collect();
    params.dedup();
    Some(format!("`{name}` has no parameter `{param}` (its parameters: {})", params.join(", ")))
}

enum Fail {
    /// This overload cannot be completed (another may be).
    Soft(WeightsError),
    /// The checkpoint itself is wrong.
    Hard(WeightsError),
}

fn bind_overload<'w>(
    def: &FunctionDef,
    name: &str,
    args: &[Value],
    kwargs: &[(&str, Value)],
    weights: &'w dyn Params,
) -> Result<BoundArgs<'w>, Fail> {
    let mut bound = BoundArgs { kwargs: Vec::new(), sources: Vec::new(), tensors: Vec::new() };
    for (i, p) in def.params.iter().enumerate() {
        let given = i < args.len() && !p.keyword_only || kwargs.iter().any(|(k, _)| *k == p.name);
        if given || p.default.is_some() || !matches!(p.ty, ParamType::Tensor(_)) {
            continue;
        }
        let Some(t) = weights.param(&p.name).map_err(Fail::Hard)? else {
            let origin = weights.origin();
            let names = weights.tensor_names();
            // A name in another case (`W1` for `w1`), or a typo of a name long enough for one.
            let near = names
                .iter()
                .map(String::as_str)
                .find(|n| n.eq_ignore_ascii_case(&p.name))
                .or_else(|| {
                    let long = p.name.chars().count() >= 4;
                    long.then(|| tfn_frontend::closest(&p.name, names.iter().map(String::as_str)))
                        .flatten()
                })
                .map(|n| format!("; did you mean `{n}`?"))
                .unwrap_or_default();
            return Err(Fail::Soft(WeightsError::Missing {
                function: name.to_string(),
                param: p.name.clone(),
                reason: format!(
                    "no argument gives it and `{origin}` has no tensor `{}` (map another tensor to it with `{}=TENSOR`){near}",
                    p.name, p.name
                ),
            }));
        };
        if let Some(allowed) = accepted_dtypes(def, &p.ty) {
            if !allowed.contains(&t.tensor.dtype()) {
                let names: Vec<String> = allowed.iter().map(|d| d.to_string()).collect();
                return Err(Fail::Soft(WeightsError::Mismatch {
                    function: name.to_string(),
                    param: p.name.clone(),
                    reason: format!(
                        "{} is {}{:?}, but the parameter takes {}",
                        t.source,
                        t.tensor.dtype(),
                        t.tensor.shape(),
                        names.join(" or ")
                    ),
                }));
            }
        }
        bound.sources.push((p.name.clone(), t.source));
        bound.tensors.extend(t.tensors);
        bound.kwargs.push((p.name.clone(), t.tensor));
    }
    Ok(bound)
}

/// The dtypes a `Tensor` parameter's signature accepts (`None`: any).
fn accepted_dtypes(def: &FunctionDef, ty: &ParamType) -> Option<Vec<tfn_ir::DType>> {
    match ty {
        ParamType::Tensor(DTypeRef::Fixed(d)) => Some(vec![*d]),
        ParamType::Tensor(DTypeRef::Var(v)) => {
            def.type_params.iter().find(|t| &t.name == v).and_then(|t| t.allowed.clone())
        }
        _ => None,
    }
}

/// The call's keyword arguments followed by the bound ones (views, nothing copied).
pub(crate) fn merged<'a>(
    kwargs: &'a [(&str, Value)],
    bound: &'a BoundArgs,
) -> Vec<(&'a str, Value<'a>)> {
    let mut kw: Vec<(&str, Value)> = kwargs.iter().map(|(k, v)| (*k, v.view())).collect();
    kw.extend(bound.kwargs.iter().map(|(k, t)| (k.as_str(), Value::Tensor(t.view()))));
    kw
}

/// Adds to a dispatch error which tensor every bound parameter was bound from (the error may
/// come from an op inside the body, whose own argument names say nothing of the function's
/// parameters: "argument `b` is i32" of `matmul(x, w)`), and to a shape error (whose messages
/// name the function's parameters) which tensor each parameter it names was bound from (every
/// one when it names none). The notes go before the closing `error: aborting due to ...` line.
pub(crate) fn explain(e: Error, bound: &BoundArgs) -> Error {
    let notes = |text: &str, every: bool| -> String {
        let named: Vec<&(String, String)> = bound
            .sources
            .iter()
            .filter(|(param, _)| !every && text.contains(&format!("`{param}`")))
            .collect();
        let shown = if named.is_empty() { bound.sources.iter().collect() } else { named };
        shown
            .iter()
            .map(|(param, source)| format!("note: parameter `{param}` was bound from {source}\n"))
            .collect()
    };
    let with_notes = |text: String, every: bool| -> String {
        if bound.sources.is_empty() {
            return text;
        }
        let notes = notes(&text, every);
        match text.rfind("error: aborting due to") {
            Some(at) if text[..at].is_empty() || text[..at].ends_with('\n') => {
                format!("{}{notes}{}", &text[..at], &text[at..])
            }
            _ if text.ends_with('\n') => format!("{text}{}", notes.trim_end()),
            _ => format!("{text}\n{}", notes.trim_end()),
        }
    };
    match e {
        Error::Call { diagnostics, rendered } => {
            Error::Call { diagnostics, rendered: with_notes(rendered, true) }
        }
        Error::Shape(text) => Error::Shape(with_notes(text, false)),
        other => other,
    }
}

impl From<WeightsError> for Error {
    fn from(e: WeightsError) -> Error {
        Error::Weights(e)
    }
}
