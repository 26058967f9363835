//! Binding parameters to checkpoint tensors: a [`Store`] of named tensors (a safetensors
//! [`super::Weights`] file, or [`NamedTensors`] in memory), a [`super::Mapping`] applied to it
//! ([`Bound`]), and [`Params`], what [`crate::Session::call_with`] asks for a parameter.
//!
//! Binding is checked when the mapping is applied: every entry's tensor exists, `{i}`
//! tensors agree in dtype and shape, `:T` is applied to tensors of rank ≥ 2. Stacked tensors
//! are a view when the file lays them out evenly spaced, else copied once here; transposes
//! are always views.

use super::error::WeightsError;
use super::file::tensor_view;
use super::mapping::{MapEntry, Mapping};
use crate::value::TensorValue;
use ndarray::Axis;
use std::collections::BTreeMap;
use tfn_ir::Tensor;

/// Named tensors: a checkpoint file, or arrays in memory.
pub trait Store {
    /// Where the tensors come from, for messages (the file's path).
    fn origin(&self) -> &str;
    /// The tensor `name`; `Ok(None)` when there is none of that name.
    fn get(&self, name: &str) -> Result<Option<TensorValue<'_>>, WeightsError>;
    /// Every tensor's name.
    fn names(&self) -> Vec<String>;
    /// The tensors `names` (one dtype and shape) stacked along a new leading axis without a
    /// copy, when the store's layout allows it.
    fn stacked(&self, _names: &[String]) -> Option<TensorValue<'_>> {
        None
    }
}

/// A parameter's tensor, and where it came from (for messages).
#[derive(Clone, Debug)]
pub struct ParamTensor<'a> {
    pub tensor: TensorValue<'a>,
    /// "tensor `w` of `model.safetensors`", "tensors `l.{i}.w` (i = 0..5, stacked, transposed)
    /// of `model.safetensors`".
    pub source: String,
    /// The names of the tensors it was made of.
    pub tensors: Vec<String>,
}

/// What a call asks for the parameters it is not given ([`crate::Session::call_with`]).
pub trait Params {
    /// The tensor for parameter `param`; `Ok(None)` when there is none.
    fn param(&self, param: &str) -> Result<Option<ParamTensor<'_>>, WeightsError>;
    /// Where the tensors come from, for messages.
    fn origin(&self) -> String;
    /// Every tensor's name (to list those a call does not use).
    fn tensor_names(&self) -> Vec<String>;
    /// The parameters with an explicit mapping entry.
    fn mapped(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Tensors in memory by name (a Python dict of arrays, arrays a program made).
#[derive(Clone, Debug, Default)]
pub struct NamedTensors<'a> {
    origin: String,
    tensors: BTreeMap<String, TensorValue<'a>>,
}

impl<'a> NamedTensors<'a> {
    /// An empty set; `origin` names it in messages (the Python door's dict is `<dict>`).
    pub fn new(origin: &str) -> NamedTensors<'a> {
        NamedTensors { origin: origin.to_string(), tensors: BTreeMap::new() }
    }

    /// Adds (or replaces) a tensor.
    pub fn insert(&mut self, name: &str, tensor: TensorValue<'a>) {
        self.tensors.insert(name.to_string(), tensor);
    }

    /// Applies a mapping (see [`Bound`]).
    pub fn bind(self, mapping: &Mapping) -> Result<Bound<NamedTensors<'a>>, WeightsError> {
        Bound::new(self, mapping)
    }
}

impl Store for NamedTensors<'_> {
    fn origin(&self) -> &str {
        &self.origin
    }
    fn get(&self, name: &str) -> Result<Option<TensorValue<'_>>, WeightsError> {
        Ok(self.tensors.get(name).map(TensorValue::view))
    }
    fn names(&self) -> Vec<String> {
        self.tensors.keys().cloned().collect()
    }
}

impl super::Weights {
    /// This file with a mapping applied: parameters named in `mapping` come from their
    /// pattern, every other parameter from the tensor of its own name.
    pub fn bind(&self, mapping: &Mapping) -> Result<Bound<super::Weights>, WeightsError> {
        Bound::new(self.clone(), mapping)
    }
}

/// A store with a mapping applied, checked.
#[derive(Debug)]
pub struct Bound<S> {
    store: S,
    entries: Vec<BoundEntry>,
}

#[derive(Debug)]
struct BoundEntry {
    entry: MapEntry,
    /// The tensors it reads (one, or `{i}` = 0, 1, …).
    names: Vec<String>,
    /// The stacked copy, when the store cannot stack them as a view.
    copy: Option<Tensor>,
}

impl<S: Store> Bound<S> {
    pub fn new(store: S, mapping: &Mapping) -> Result<Bound<S>, WeightsError> {
        let mut entries = Vec::new();
        for entry in mapping.entries() {
            entries.push(bind_entry(&store, entry)?);
        }
        Ok(Bound { store, entries })
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    fn source(&self, e: &BoundEntry) -> String {
        let origin = Store::origin(&self.store);
        let t = if e.entry.transpose { ", transposed" } else { "" };
        if e.entry.stacks() {
            format!(
                "tensors `{}` (i = 0..{}, stacked{t}) of `{origin}`",
                e.entry.pattern,
                e.names.len() - 1
            )
        } else if e.entry.transpose {
            format!("tensor `{}` (transposed) of `{origin}`", e.entry.pattern)
        } else {
            format!("tensor `{}` of `{origin}`", e.entry.pattern)
        }
    }
}

fn bind_entry<S: Store>(store: &S, entry: &MapEntry) -> Result<BoundEntry, WeightsError> {
    let origin = Store::origin(store);
    let what = |tensor: &str, reason: String| {
        WeightsError::Mapping(format!(
            "mapping `{entry}` (parameter `{}`): tensor `{tensor}` of `{origin}` {reason}",
            entry.param
        ))
    };
    if !entry.stacks() {
        let t = store
            .get(&entry.pattern)?
            .ok_or_else(|| what(&entry.pattern, "does not exist".into()))?;
        check_transpose(entry, &t).map_err(|r| what(&entry.pattern, r))?;
        return Ok(BoundEntry {
            entry: entry.clone(),
            names: vec![entry.pattern.clone()],
            copy: None,
        });
    }
    // `{i}` = 0, 1, … up to the first missing one (at most as many as the store has).
    let limit = store.names().len();
    let mut names = Vec::new();
    let mut first: Option<(tfn_ir::DType, Vec<usize>)> = None;
    for i in 0..=limit {
        let name = entry.name(i);
        let Some(t) = store.get(&name)? else { break };
        let kind = (t.dtype(), t.shape().to_vec());
        match &first {
            None => first = Some(kind),
            Some(f) if *f == kind => {}
            Some((d, s)) => {
                return Err(what(
                    &name,
                    format!(
                        "is {}{:?} but `{}` is {d}{s:?}: stacked tensors must agree",
                        kind.0,
                        kind.1,
                        entry.name(0)
                    ),
                ))
            }
        }
        names.push(name);
    }
    if names.is_empty() {
        return Err(what(&entry.name(0), "does not exist (the first of the stack, i = 0)".into()));
    }
    if let Some(t) = store.get(&names[0])? {
        // The stacked tensor has one more axis: `:T` on stacked vectors is a matrix's.
        if entry.transpose && t.shape().is_empty() {
            return Err(what(&names[0], "is a scalar: `:T` needs a matrix".into()));
        }
    }
    let copy = if store.stacked(&names).is_some() {
        None
    } else {
        let views = names
            .iter()
            .map(|n| store.get(n)?.ok_or_else(|| what(n, "vanished".into())))
            .collect::<Result<Vec<_>, _>>()?;
        Some(stack(&views).map_err(|r| what(&names[0], r))?)
    };
    Ok(BoundEntry { entry: entry.clone(), names, copy })
}

fn check_transpose(entry: &MapEntry, t: &TensorValue) -> Result<(), String> {
    if entry.transpose && t.shape().len() < 2 {
        return Err(format!("has shape {:?}: `:T` swaps the last two axes of a matrix", t.shape()));
    }
    Ok(())
}

/// Stacks tensors of one dtype and shape along a new leading axis (a copy).
fn stack(views: &[TensorValue]) -> Result<Tensor, String> {
    macro_rules! stack_as {
        ($variant:ident) => {{
            let arrays = views
                .iter()
                .map(|v| match v {
                    TensorValue::$variant(a) => Ok(a.view()),
                    _ => Err("stacked tensors must have one dtype".to_string()),
                })
                .collect::<Result<Vec<_>, _>>()?;
            ndarray::stack(Axis(0), &arrays).map(Tensor::$variant).map_err(|e| e.to_string())
        }};
    }
    match views.first().ok_or("nothing to stack")? {
        TensorValue::Bool(_) => stack_as!(Bool),
        TensorValue::I8(_) => stack_as!(I8),
        TensorValue::U8(_) => stack_as!(U8),
        TensorValue::I32(_) => stack_as!(I32),
        TensorValue::I64(_) => stack_as!(I64),
        TensorValue::F16(_) => stack_as!(F16),
        TensorValue::BF16(_) => stack_as!(BF16),
        TensorValue::F32(_) => stack_as!(F32),
        TensorValue::F64(_) => stack_as!(F64),
    }
}

/// Swaps the last two axes (a view).
pub(super) fn transposed(t: TensorValue<'_>) -> TensorValue<'_> {
    let r = t.shape().len();
    if r < 2 {
        return t;
    }
    macro_rules! swap {
        ($($variant:ident),*) => {
            match t {
                $(TensorValue::$variant(mut a) => {
                    a.swap_axes(r - 2, r - 1);
                    TensorValue::$variant(a)
                })*
            }
        };
    }
    swap!(Bool, I8, U8, I32, I64, F16, BF16, F32, F64)
}

impl<S: Store> Params for Bound<S> {
    fn param(&self, param: &str) -> Result<Option<ParamTensor<'_>>, WeightsError> {
        let Some(e) = self.entries.iter().find(|e| e.entry.param == param) else {
            return self.store.param(param);
        };
        let tensor = match &e.copy {
            Some(t) => tensor_view(t),
            None if e.entry.stacks() => self.store.stacked(&e.names).ok_or_else(|| {
                WeightsError::Mapping(format!("mapping `{}`: the stacked view vanished", e.entry))
            })?,
            None => self.store.get(&e.names[0])?.ok_or_else(|| {
                WeightsError::Mapping(format!("mapping `{}`: the tensor vanished", e.entry))
            })?,
        };
        let tensor = if e.entry.transpose { transposed(tensor) } else { tensor };
        Ok(Some(ParamTensor { tensor, source: self.source(e), tensors: e.names.clone() }))
    }

    fn origin(&self) -> String {
        Store::origin(&self.store).to_string()
    }

    fn tensor_names(&self) -> Vec<String> {
        self.store.names()
    }

    fn mapped(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.entry.param.clone()).collect()
    }
}

/// Every store binds parameters by name, without a mapping.
impl<T: Store + ?Sized> Params for T {
    fn param(&self, param: &str) -> Result<Option<ParamTensor<'_>>, WeightsError> {
        Ok(self.get(param)?.map(|tensor| ParamTensor {
            tensor,
            source: format!("tensor `{param}` of `{}`", Store::origin(self)),
            tensors: vec![param.to_string()],
        }))
    }

    fn origin(&self) -> String {
        Store::origin(self).to_string()
    }

    fn tensor_names(&self) -> Vec<String> {
        self.names()
    }
}
