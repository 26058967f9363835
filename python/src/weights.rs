//! Checkpoints from Python: `tfn.weights(source, mapping=None)` (a safetensors file,
//! memory-mapped, or a dict of NumPy arrays, with a mapping applied), the `weights=` keyword of
//! every call (`with_params`), and `tfn.save_safetensors(path, tensors)`.
//!
//! A mapping is a dict `{param: "tensor-pattern[:T]"}` or a list of `"param=pattern[:T]"`
//! strings (`{i}` stacks layers, `:T` transposes; see `tfn::weights::Mapping`). A dict of
//! arrays is read in place at each call (stacked `{i}` entries are copied at each call); a file
//! is bound once, when `tfn.weights` opens it.

use crate::convert::{self, Arg};
use crate::errors;
use numpy::PyUntypedArray;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use tfn::weights::{Bound as BoundWeights, Mapping, NamedTensors, Params};
use tfn::{TensorValue, Value};

/// A checkpoint with a mapping applied: `tfn.weights("model.safetensors", {"wq": "l.{i}.q:T"})`.
/// Pass it as `weights=` to any call; `names()`, `len()`, `w[name]` (a copy as a NumPy array),
/// `name in w` inspect it.
#[pyclass(module = "tfn", frozen, name = "Weights")]
pub struct Weights {
    kind: Kind,
    /// The `mapping` argument as given (`None` for none): what a pickle passes again.
    mapping: Option<Py<PyAny>>,
}

enum Kind {
    File(BoundWeights<tfn::Weights>),
    Dict(Py<PyDict>, Mapping),
}

#[pymethods]
impl Weights {
    /// The tensors' names, sorted.
    fn names(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        match &self.kind {
            Kind::File(b) => Ok(b.store().names().map(str::to_string).collect()),
            Kind::Dict(d, _) => {
                let mut names: Vec<String> =
                    d.bind(py).keys().iter().map(|k| k.extract()).collect::<PyResult<_>>()?;
                names.sort();
                Ok(names)
            }
        }
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.names(py)?.len())
    }

    /// Whether the checkpoint holds a tensor `name`; anything but a string is not a name.
    fn __contains__(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(name) = name.extract::<String>() else { return Ok(false) };
        Ok(self.names(py)?.contains(&name))
    }

    /// The tensor `name` of the file, as a NumPy array (a copy).
    fn __getitem__(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        match &self.kind {
            Kind::File(b) => match b.store().tensor(name) {
                Ok(Some(t)) if t.dtype() == tfn::DType::BF16 => {
                    let c = errors::classes(py)?;
                    Err(errors::raise(
                        py,
                        &c.dtype,
                        format!(
                            "tensor `{name}` is bf16, which NumPy has no dtype for: bind it to a \
                             function's parameter (which may cast it), or read the file with a \
                             library that has bfloat16"
                        ),
                    ))
                }
                Ok(Some(t)) => convert::to_numpy(py, Value::from(t.to_tensor())),
                Ok(None) => Err(pyo3::exceptions::PyKeyError::new_err(name.to_string())),
                Err(e) => Err(errors::to_py(py, tfn::Error::Weights(e), None)),
            },
            Kind::Dict(d, _) => match d.bind(py).get_item(name)? {
                Some(v) => Ok(v.unbind()),
                None => Err(pyo3::exceptions::PyKeyError::new_err(name.to_string())),
            },
        }
    }

    /// The file's path (`None` for a dict).
    #[getter]
    fn path(&self) -> Option<String> {
        match &self.kind {
            Kind::File(b) => Some(b.store().path().to_string()),
            Kind::Dict(..) => None,
        }
    }

    /// A `Weights` pickles as the arguments of `tfn.weights`: a file's path (the receiving
    /// process opens and checks the file again, so it must exist there) or the dict of arrays,
    /// and the mapping.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, Py<PyAny>)> {
        let source: Py<PyAny> = match &self.kind {
            Kind::File(b) => PyString::new(py, b.store().path()).into_any().unbind(),
            Kind::Dict(d, _) => d.clone_ref(py).into_any(),
        };
        let mapping = self.mapping.as_ref().map_or_else(|| py.None(), |m| m.clone_ref(py));
        let args = PyTuple::new(py, [source, mapping])?;
        Ok((py.import("tfn")?.getattr("weights")?, args.into_any().unbind()))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let n = self.__len__(py)?;
        Ok(match &self.kind {
            Kind::File(b) => format!("<tfn.Weights {:?}: {n} tensors>", b.store().path()),
            Kind::Dict(..) => format!("<tfn.Weights dict: {n} tensors>"),
        })
    }
}

fn checkpoint_error(py: Python<'_>, e: tfn::weights::WeightsError) -> PyErr {
    errors::to_py(py, tfn::Error::Weights(e), None)
}

/// A mapping from `None`, a dict `{param: pattern}` or a list of `"param=pattern"`.
fn mapping(py: Python<'_>, obj: Option<&Bound<'_, PyAny>>) -> PyResult<Mapping> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else { return Ok(Mapping::new()) };
    let entries: Vec<String> = if let Ok(d) = obj.cast::<PyDict>() {
        d.iter()
            .map(|(k, v)| Ok(format!("{}={}", k.extract::<String>()?, v.extract::<String>()?)))
            .collect::<PyResult<_>>()?
    } else if obj.cast::<PyList>().is_ok() || obj.cast::<PyTuple>().is_ok() {
        obj.try_iter()?.map(|e| e?.extract::<String>()).collect::<PyResult<_>>()?
    } else {
        return Err(PyTypeError::new_err(
            "mapping must be a dict {param: \"tensor-pattern[:T]\"} or a list of \"param=pattern\" strings",
        ));
    };
    Mapping::parse(&entries).map_err(|e| checkpoint_error(py, e))
}

/// `tfn.weights(source, mapping=None)`: `source` is a path to a safetensors file (opened
/// memory-mapped and validated now) or a dict of NumPy arrays by name.
#[pyfunction]
#[pyo3(signature = (source, mapping = None))]
pub fn weights(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    mapping: Option<&Bound<'_, PyAny>>,
) -> PyResult<Weights> {
    let m = self::mapping(py, mapping)?;
    let given = mapping.filter(|o| !o.is_none()).map(|o| o.clone().unbind());
    if let Ok(d) = source.cast::<PyDict>() {
        // Checked now (every entry's tensors exist and agree), bound again at each call.
        with_dict(py, d, &m, |_| Ok(()))?;
        return Ok(Weights { kind: Kind::Dict(d.clone().unbind(), m), mapping: given });
    }
    if source.cast::<PyString>().is_err() && !source.hasattr("__fspath__")? {
        return Err(PyTypeError::new_err(
            "tfn.weights takes a path to a .safetensors file or a dict of arrays",
        ));
    }
    let path: std::path::PathBuf = source.extract()?;
    let opened = py.detach(|| tfn::Weights::open(&path).and_then(|w| w.bind(&m)));
    let bound = opened.map_err(|e| checkpoint_error(py, e))?;
    Ok(Weights { kind: Kind::File(bound), mapping: given })
}

/// Runs `f` with the parameters `weights=` gives: a `tfn.Weights` or a dict of arrays.
pub fn with_params<R>(
    py: Python<'_>,
    weights: &Bound<'_, PyAny>,
    f: impl FnOnce(&(dyn Params + Sync)) -> PyResult<R>,
) -> PyResult<R> {
    if let Ok(w) = weights.cast::<Weights>() {
        return match &w.get().kind {
            Kind::File(b) => f(b),
            Kind::Dict(d, m) => with_dict(py, d.bind(py), m, f),
        };
    }
    if let Ok(d) = weights.cast::<PyDict>() {
        return with_dict(py, d, &Mapping::new(), f);
    }
    Err(PyTypeError::new_err(
        "weights= takes tfn.weights(path or dict, mapping) or a dict of arrays by name",
    ))
}

/// The NumPy arrays a `weights=` dict (or a `tfn.weights` of a dict) holds, by key: what
/// an `out=` array must not share memory with. A file's tensors are read-only mappings of
/// their own, so none.
pub fn held_arrays<'py>(
    py: Python<'py>,
    weights: &Bound<'py, PyAny>,
) -> Vec<(String, Bound<'py, PyUntypedArray>)> {
    let dict = match weights.cast::<Weights>() {
        Ok(w) => match &w.get().kind {
            Kind::Dict(d, _) => d.bind(py).clone(),
            Kind::File(_) => return Vec::new(),
        },
        Err(_) => match weights.cast::<PyDict>() {
            Ok(d) => d.clone(),
            Err(_) => return Vec::new(),
        },
    };
    dict.iter()
        .filter_map(|(k, v)| Some((k.extract::<String>().ok()?, v.cast_into().ok()?)))
        .collect()
}

/// The arrays of a dict, borrowed, with `mapping` applied.
fn with_dict<R>(
    py: Python<'_>,
    d: &Bound<'_, PyDict>,
    mapping: &Mapping,
    f: impl FnOnce(&(dyn Params + Sync)) -> PyResult<R>,
) -> PyResult<R> {
    let items = arrays(d, "weights")?;
    let mut named = NamedTensors::new("<dict>");
    for (k, a) in &items {
        named.insert(k, tensor_of(a, k)?);
    }
    let bound = named.bind(mapping).map_err(|e| checkpoint_error(py, e))?;
    f(&bound)
}

/// A dict's values as borrowed arrays, by key.
fn arrays<'py>(d: &Bound<'py, PyDict>, what: &str) -> PyResult<Vec<(String, Arg<'py>)>> {
    d.iter()
        .map(|(k, v)| {
            let k: String = k.extract()?;
            let arg = Arg::from_py_value(&v, &|| format!("{what}[{k:?}]"))?;
            Ok((k, arg))
        })
        .collect()
}

fn tensor_of<'a>(a: &'a Arg<'_>, name: &str) -> PyResult<TensorValue<'a>> {
    match a.value() {
        Value::Tensor(t) => Ok(t),
        _ => Err(PyTypeError::new_err(format!("`{name}`: a checkpoint holds arrays only"))),
    }
}

/// `tfn.save_safetensors(path, tensors)`: writes a dict of arrays by name (any dtype tfn
/// has, any strides) as a safetensors file, atomically.
#[pyfunction]
pub fn save_safetensors(
    py: Python<'_>,
    path: std::path::PathBuf,
    tensors: &Bound<'_, PyDict>,
) -> PyResult<()> {
    let items = arrays(tensors, "tensors")?;
    let named = items
        .iter()
        .map(|(k, a)| Ok((k.as_str(), tensor_of(a, k)?)))
        .collect::<PyResult<Vec<_>>>()?;
    py.detach(|| tfn::save_safetensors(&path, &named)).map_err(|e| checkpoint_error(py, e))
}
