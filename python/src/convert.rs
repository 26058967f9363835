//! Python objects ↔ tfn [`Value`]s.
//!
//! A call converts in two steps: [`Arg::from_py`] classifies each Python argument (a NumPy
//! array kept alive as it is when tfn can read it in place, a copy otherwise; or an
//! attribute), then [`Arg::value`] borrows the arrays as `ndarray` views — no copy, any
//! strides, so a C-contiguous input is read where it lies. Results are owned `ndarray`s handed
//! to NumPy without a copy (`PyArray::from_owned_array`).

use crate::errors;
use ndarray::ArrayD;
use numpy::{
    PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};
use smallvec::SmallVec;
use tfn::{Attr, DType, OutputMut, TensorValue, Value};
use tfn_ir::dispatch::ArgKind;

/// An array tfn reads in place, with its dtype.
pub type Held<'py> = (Bound<'py, PyUntypedArray>, DType);

/// One converted call argument.
pub enum Arg<'py> {
    Array(Bound<'py, PyUntypedArray>, DType),
    List(Vec<Held<'py>>),
    Attr(Attr),
    /// A value of no tfn type (a string that is not a dtype name, a `dict`, ...), described
    /// with the argument it is: no overload accepts it, and the call's error lists every
    /// candidate ([`ArgKind::Unsupported`]). Never passed to the session.
    Unsupported(String),
}

struct NumpyTypes {
    module: Py<PyModule>,
    bool_: Py<PyType>,
    integer: Py<PyType>,
    floating: Py<PyType>,
    dtype: Py<PyType>,
}

static NUMPY: PyOnceLock<NumpyTypes> = PyOnceLock::new();

fn numpy(py: Python<'_>) -> PyResult<&'static NumpyTypes> {
    NUMPY.get_or_try_init(py, || {
        let np = py.import("numpy")?;
        let ty = |name: &str| -> PyResult<Py<PyType>> {
            Ok(np.getattr(name)?.cast_into::<PyType>()?.unbind())
        };
        Ok(NumpyTypes {
            bool_: ty("bool_")?,
            integer: ty("integer")?,
            floating: ty("floating")?,
            dtype: ty("dtype")?,
            module: np.unbind(),
        })
    })
}

/// How an argument is named in messages: `argument 2` or `argument `dim``.
pub fn describe_arg(position: Option<usize>, keyword: Option<&str>) -> String {
    match (keyword, position) {
        (Some(k), _) => format!("argument `{k}`"),
        (None, Some(i)) => format!("argument {}", i + 1),
        (None, None) => "argument".into(),
    }
}

/// Which argument of a call: its position or keyword.
#[derive(Clone, Copy)]
pub enum ArgName<'a> {
    Position(usize),
    Keyword(&'a str),
    /// An array of the `weights=` dict, by key.
    Weight(&'a str),
}

impl ArgName<'_> {
    pub fn describe(self) -> String {
        match self {
            ArgName::Position(i) => describe_arg(Some(i), None),
            ArgName::Keyword(k) => describe_arg(None, Some(k)),
            ArgName::Weight(k) => format!("weights[{k:?}]"),
        }
    }
}

/// The tfn dtype of a NumPy dtype (by kind and size, so it is the same on every platform).
fn dtype_of(descr: &Bound<'_, numpy::PyArrayDescr>) -> Option<DType> {
    match (descr.kind(), descr.itemsize()) {
        (b'f', 4) => Some(DType::F32),
        (b'f', 8) => Some(DType::F64),
        (b'i', 4) => Some(DType::I32),
        (b'i', 8) => Some(DType::I64),
        (b'b', 1) => Some(DType::Bool),
        (b'f', 2) => Some(DType::F16),
        (b'i', 1) => Some(DType::I8),
        (b'u', 1) => Some(DType::U8),
        // bf16: NumPy has no bfloat16 of its own (ml_dtypes' is a 'V' type); not accepted.
        _ => None,
    }
}

/// Whether tfn can view the array's memory in place: native byte order, aligned, and every
/// stride a whole number of elements.
fn viewable(a: &Bound<'_, PyUntypedArray>) -> bool {
    let item = a.dtype().itemsize() as isize;
    let order_ok =
        a.dtype().byteorder() != if cfg!(target_endian = "little") { b'>' } else { b'<' };
    order_ok && a.is_aligned() && a.strides().iter().all(|s| s % item == 0)
}

/// The most axes an array tfn reads or writes may have: rust-numpy's views take at most 32
/// (NumPy 2 allows 64).
pub const MAX_ARRAY_RANK: usize = 32;

/// The NumPy dtypes [`dtype_of`] accepts, in words.
const ARRAY_DTYPES: &str = "float32, float64, float16, int32, int64, int8, uint8 and bool";

/// Refuses an array (an argument, an `out=` array, a result: `what` names it) of more than
/// [`MAX_ARRAY_RANK`] axes with a `tfn.ShapeError`.
fn check_rank(py: Python<'_>, ndim: usize, what: &dyn Fn() -> String) -> PyResult<()> {
    if ndim <= MAX_ARRAY_RANK {
        return Ok(());
    }
    let c = errors::classes(py)?;
    Err(errors::raise(
        py,
        &c.shape,
        format!("{} has {ndim} axes; tfn's arrays have at most {MAX_ARRAY_RANK}", what()),
    ))
}

/// A supported array as tfn reads it: itself, or a native, aligned copy of it.
fn array_arg<'py>(
    a: Bound<'py, PyUntypedArray>,
    what: &dyn Fn() -> String,
) -> PyResult<(Bound<'py, PyUntypedArray>, DType)> {
    let py = a.py();
    check_rank(py, a.ndim(), what)?;
    let Some(dtype) = dtype_of(&a.dtype()) else {
        let c = errors::classes(py)?;
        let got = a.dtype().str()?.to_string();
        return Err(errors::raise(
            py,
            &c.dtype,
            format!("{} has dtype {got}; tfn takes {ARRAY_DTYPES} arrays", what()),
        ));
    };
    if viewable(&a) {
        return Ok((a, dtype));
    }
    let np = numpy(py)?.module.bind(py);
    let native = a.dtype().call_method1("newbyteorder", ("=",))?;
    // `np.array(copy=True)`: `ascontiguousarray` would return a misaligned contiguous
    // array as it is.
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("dtype", native)?;
    kwargs.set_item("order", "C")?;
    kwargs.set_item("copy", true)?;
    let copy = np.call_method("array", (&a,), Some(&kwargs))?;
    Ok((copy.cast_into::<PyUntypedArray>()?, dtype))
}

fn parse_dtype_name(name: &str) -> Option<DType> {
    Some(match name {
        "f32" | "float32" => DType::F32,
        "f64" | "float64" | "float" => DType::F64,
        "i32" | "int32" => DType::I32,
        "i64" | "int64" | "int" => DType::I64,
        "bool" => DType::Bool,
        "f16" | "float16" => DType::F16,
        "bf16" | "bfloat16" => DType::BF16,
        "i8" | "int8" => DType::I8,
        "u8" | "uint8" => DType::U8,
        _ => return None,
    })
}

impl<'py> Arg<'py> {
    /// Classifies one Python argument.
    pub fn from_py(obj: &Bound<'py, PyAny>, what: &dyn Fn() -> String) -> PyResult<Arg<'py>> {
        let py = obj.py();
        if let Ok(a) = obj.cast::<PyUntypedArray>() {
            let (a, d) = array_arg(a.clone(), what)?;
            return Ok(Arg::Array(a, d));
        }
        let np = numpy(py)?;
        if obj.is_instance_of::<PyBool>() || obj.is_instance(np.bool_.bind(py))? {
            return Ok(Arg::Attr(Attr::Bool(obj.is_truthy()?)));
        }
        if obj.is_instance_of::<PyInt>() || obj.is_instance(np.integer.bind(py))? {
            let v: i64 = obj.extract().map_err(|_| {
                let c = errors::classes(py).map(|c| c.call.clone_ref(py));
                match c {
                    Ok(c) => errors::raise(
                        py,
                        &c,
                        format!("{} = {obj} does not fit a 64-bit integer", what()),
                    ),
                    Err(e) => e,
                }
            })?;
            return Ok(Arg::Attr(Attr::Int(v)));
        }
        if obj.is_instance_of::<PyFloat>() || obj.is_instance(np.floating.bind(py))? {
            return Ok(Arg::Attr(Attr::Float(obj.extract()?)));
        }
        if let Ok(s) = obj.cast::<PyString>() {
            let text = s.to_cow()?;
            return Ok(match parse_dtype_name(&text) {
                Some(d) => Arg::Attr(Attr::DType(d)),
                None => Arg::Unsupported(format!(
                    "the string {text:?} ({}), which is not a dtype (f32, f64, i32, i64, bool, \
                     f16, bf16, i8, u8)",
                    what()
                )),
            });
        }
        if obj.is_instance(np.dtype.bind(py))? || obj.is_instance_of::<PyType>() {
            // `np.float32`, `np.dtype("int64")`, `float`: whatever `np.dtype` accepts.
            if let Ok(d) = np.dtype.bind(py).call1((obj,)) {
                if let Ok(d) = d.cast::<numpy::PyArrayDescr>() {
                    if let Some(dt) = dtype_of(d) {
                        return Ok(Arg::Attr(Attr::DType(dt)));
                    }
                }
            }
            return Ok(Arg::Unsupported(format!("{obj} ({}), which is not a tfn dtype", what())));
        }
        if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
            return list_arg(obj, what);
        }
        if obj.hasattr("__array__")? || obj.hasattr("__array_interface__")? {
            // jax arrays, array-likes: NumPy's view of them (a copy only when they need one).
            let a = numpy(py)?.module.bind(py).call_method1("asarray", (obj,))?;
            let a = a.cast_into::<PyUntypedArray>()?;
            let (a, d) = array_arg(a, what)?;
            return Ok(Arg::Array(a, d));
        }
        let ty = obj.get_type().name()?.to_string();
        Ok(Arg::Unsupported(format!(
            "a Python `{ty}` ({}); tfn takes NumPy arrays, numbers, bools, dtypes and lists of \
             them",
            what()
        )))
    }

    /// [`Arg::from_py`] for a value that is not matched against a signature (a cotangent):
    /// an unsupported value is an error here.
    pub fn from_py_value(obj: &Bound<'py, PyAny>, what: &dyn Fn() -> String) -> PyResult<Arg<'py>> {
        match Arg::from_py(obj, what)? {
            Arg::Unsupported(description) => {
                Err(dispatch_error(obj.py(), format!("{}: {description}", what()))?)
            }
            arg => Ok(arg),
        }
    }

    /// The dispatcher's view of the argument.
    pub fn kind(&self) -> ArgKind {
        match self {
            Arg::Unsupported(what) => ArgKind::Unsupported { what: what.clone() },
            other => errors::arg_kind(&other.value()),
        }
    }

    /// The argument as tfn sees it, borrowing the arrays. (An [`Arg::Unsupported`] never gets
    /// here: `Call::parse` refuses the call first; it would be an empty list of tensors.)
    pub fn value(&self) -> Value<'_> {
        match self {
            Arg::Array(a, d) => Value::Tensor(view(a, *d)),
            Arg::List(items) => Value::TensorList(items.iter().map(|(a, d)| view(a, *d)).collect()),
            Arg::Attr(a) => Value::Attr(a.clone()),
            Arg::Unsupported(_) => Value::TensorList(Vec::new()),
        }
    }

    /// The arrays this argument reads (for the overlap check of `out=`).
    pub fn arrays(&self) -> impl Iterator<Item = &Bound<'py, PyUntypedArray>> {
        let (one, many): (Option<&Bound<'py, PyUntypedArray>>, &[Held<'py>]) = match self {
            Arg::Array(a, _) => (Some(a), &[]),
            Arg::List(items) => (None, items),
            Arg::Attr(_) | Arg::Unsupported(_) => (None, &[]),
        };
        one.into_iter().chain(many.iter().map(|(a, _)| a))
    }
}

fn dispatch_error(py: Python<'_>, msg: String) -> PyResult<PyErr> {
    let c = errors::classes(py)?;
    Ok(errors::raise(py, &c.dispatch, msg))
}

/// A list or tuple: `Int[]`, `Float[]` or `Tensor[]`.
fn list_arg<'py>(obj: &Bound<'py, PyAny>, what: &dyn Fn() -> String) -> PyResult<Arg<'py>> {
    let items: Vec<Bound<'py, PyAny>> = obj.try_iter()?.collect::<PyResult<_>>()?;
    if items.is_empty() {
        return Ok(Arg::Attr(Attr::IntList(Vec::new())));
    }
    let mut parts = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let item_what = || format!("{} (item {i})", what());
        match Arg::from_py(item, &item_what)? {
            // A list holding a value of no tfn type is one.
            unsupported @ Arg::Unsupported(_) => return Ok(unsupported),
            part => parts.push(part),
        }
    }
    if parts.iter().all(|p| matches!(p, Arg::Array(..))) {
        // A tensor list has one dtype: said here, as the dtype error it is.
        let dtypes: Vec<DType> = parts
            .iter()
            .filter_map(|p| if let Arg::Array(_, d) = p { Some(*d) } else { None })
            .collect();
        if let Some(i) = dtypes.iter().position(|d| *d != dtypes[0]) {
            let c = errors::classes(obj.py())?;
            return Err(errors::raise(
                obj.py(),
                &c.dtype,
                format!(
                    "{}: the tensors of a list have one dtype, but item 0 is {} and item {i} is {}",
                    what(),
                    dtypes[0],
                    dtypes[i]
                ),
            ));
        }
        let arrays = parts
            .into_iter()
            .filter_map(|p| match p {
                Arg::Array(a, d) => Some((a, d)),
                _ => None,
            })
            .collect();
        return Ok(Arg::List(arrays));
    }
    let mut ints = Vec::new();
    let mut floats = Vec::new();
    let mut all_int = true;
    for p in &parts {
        match p {
            Arg::Attr(Attr::Int(i)) => {
                ints.push(*i);
                floats.push(*i as f64);
            }
            Arg::Attr(Attr::Float(f)) => {
                all_int = false;
                floats.push(*f);
            }
            _ => {
                return Ok(Arg::Unsupported(format!(
                    "a list mixing kinds of items ({}); a list is all ints (Int[]), all numbers \
                     (Float[]) or all arrays (Tensor[])",
                    what()
                )))
            }
        }
    }
    Ok(Arg::Attr(if all_int { Attr::IntList(ints) } else { Attr::FloatList(floats) }))
}

/// A borrowed view of an array tfn can read in place (checked by [`viewable`]).
fn view<'a>(a: &'a Bound<'_, PyUntypedArray>, dtype: DType) -> TensorValue<'a> {
    // SAFETY: the array's dtype was checked to be this element type in native byte order,
    // aligned, with whole-element strides (`array_arg`); the array object is kept alive by
    // the `Arg` for as long as the view. NumPy arrays may be written by other Python code
    // while tfn reads them (as with any NumPy function that releases the GIL); tfn never
    // writes through these views.
    unsafe {
        match dtype {
            DType::F32 => TensorValue::F32(a.cast_unchecked::<PyArrayDyn<f32>>().as_array().into()),
            DType::F64 => TensorValue::F64(a.cast_unchecked::<PyArrayDyn<f64>>().as_array().into()),
            DType::I32 => TensorValue::I32(a.cast_unchecked::<PyArrayDyn<i32>>().as_array().into()),
            DType::I64 => TensorValue::I64(a.cast_unchecked::<PyArrayDyn<i64>>().as_array().into()),
            DType::Bool => {
                TensorValue::Bool(a.cast_unchecked::<PyArrayDyn<bool>>().as_array().into())
            }
            DType::I8 => TensorValue::I8(a.cast_unchecked::<PyArrayDyn<i8>>().as_array().into()),
            DType::U8 => TensorValue::U8(a.cast_unchecked::<PyArrayDyn<u8>>().as_array().into()),
            DType::F16 => {
                TensorValue::F16(a.cast_unchecked::<PyArrayDyn<half::f16>>().as_array().into())
            }
            // Never produced by `dtype_of`; 2-byte elements read as bf16 bits.
            DType::BF16 => {
                let bits = a.cast_unchecked::<PyArrayDyn<u16>>().as_array();
                let (ptr, dim, strides) = (bits.as_ptr(), bits.raw_dim(), bits.strides().to_vec());
                let strides: Vec<usize> = strides.iter().map(|&s| s as usize).collect();
                TensorValue::BF16(
                    ndarray::ArrayViewD::from_shape_ptr(
                        ndarray::ShapeBuilder::strides(dim, ndarray::IxDyn(&strides)),
                        ptr as *const half::bf16,
                    )
                    .into(),
                )
            }
        }
    }
}

/// The `out=` arrays of a call, each with its dtype (on the stack for one or two).
pub type OutArrays<'py> = SmallVec<[(Bound<'py, PyUntypedArray>, DType); 2]>;

/// The `out=` arrays of a call, checked: supported dtype, writeable, viewable in place.
pub fn out_arrays<'py>(out: &Bound<'py, PyAny>) -> PyResult<OutArrays<'py>> {
    let py = out.py();
    let items: SmallVec<[Bound<'py, PyAny>; 2]> =
        if out.is_instance_of::<PyTuple>() || out.is_instance_of::<PyList>() {
            out.try_iter()?.collect::<PyResult<_>>()?
        } else {
            smallvec::smallvec![out.clone()]
        };
    let shape_error = |msg: String| -> PyResult<PyErr> {
        let c = errors::classes(py)?;
        Ok(errors::raise(py, &c.shape, msg))
    };
    let mut arrays = SmallVec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let Ok(a) = item.cast_into::<PyUntypedArray>() else {
            return Err(shape_error(format!("out[{i}] must be a NumPy array"))?);
        };
        let Some(dtype) = dtype_of(&a.dtype()) else {
            let got = a.dtype().str()?.to_string();
            return Err(shape_error(format!(
                "out[{i}] has dtype {got}, which tfn does not write (it writes {ARRAY_DTYPES} \
                 arrays)"
            ))?);
        };
        check_rank(py, a.ndim(), &|| format!("out[{i}]"))?;
        if !is_writeable(&a) {
            return Err(shape_error(format!("out[{i}] is read-only"))?);
        }
        if overlaps_itself(&a) {
            return Err(shape_error(format!(
                "out[{i}] has elements that may share memory (strides {:?} over shape {:?}); tfn \
                 writes every element of an output once",
                a.strides(),
                a.shape()
            ))?);
        }
        if !viewable(&a) {
            return Err(shape_error(format!(
                "out[{i}] must be aligned, in native byte order, with whole-element strides"
            ))?);
        }
        arrays.push((a, dtype));
    }
    Ok(arrays)
}

/// A mutable view of a checked `out=` array.
pub fn out_view<'a>(a: &'a Bound<'_, PyUntypedArray>, dtype: DType) -> OutputMut<'a> {
    // SAFETY: checked by `out_arrays` (dtype, alignment, strides, writeable); `no_overlap`
    // made sure no input or other output shares its bytes, so this is the only view writing
    // them during the call.
    unsafe {
        match dtype {
            DType::F32 => OutputMut::F32(a.cast_unchecked::<PyArrayDyn<f32>>().as_array_mut()),
            DType::F64 => OutputMut::F64(a.cast_unchecked::<PyArrayDyn<f64>>().as_array_mut()),
            DType::I32 => OutputMut::I32(a.cast_unchecked::<PyArrayDyn<i32>>().as_array_mut()),
            DType::I64 => OutputMut::I64(a.cast_unchecked::<PyArrayDyn<i64>>().as_array_mut()),
            DType::Bool => OutputMut::Bool(a.cast_unchecked::<PyArrayDyn<bool>>().as_array_mut()),
            DType::I8 => OutputMut::I8(a.cast_unchecked::<PyArrayDyn<i8>>().as_array_mut()),
            DType::U8 => OutputMut::U8(a.cast_unchecked::<PyArrayDyn<u8>>().as_array_mut()),
            DType::F16 => {
                OutputMut::F16(a.cast_unchecked::<PyArrayDyn<half::f16>>().as_array_mut())
            }
            // Never produced by `dtype_of` (see `view`).
            DType::BF16 => {
                let mut bits = a.cast_unchecked::<PyArrayDyn<u16>>().as_array_mut();
                let (ptr, dim) = (bits.as_mut_ptr(), bits.raw_dim());
                let strides: Vec<usize> = bits.strides().iter().map(|&s| s as usize).collect();
                OutputMut::BF16(ndarray::ArrayViewMutD::from_shape_ptr(
                    ndarray::ShapeBuilder::strides(dim, ndarray::IxDyn(&strides)),
                    ptr as *mut half::bf16,
                ))
            }
        }
    }
}

/// The byte range an array's elements span (empty for an empty array).
fn byte_range(a: &Bound<'_, PyUntypedArray>) -> Option<(usize, usize)> {
    let shape = a.shape();
    if shape.contains(&0) {
        return None;
    }
    // SAFETY: reading the data pointer field of a live array object.
    let base = unsafe { (*a.as_array_ptr()).fields.data } as isize;
    let (mut lo, mut hi) = (base, base);
    for (&n, &s) in shape.iter().zip(a.strides()) {
        let extent = (n as isize - 1) * s;
        if extent < 0 {
            lo += extent;
        } else {
            hi += extent;
        }
    }
    Some((lo as usize, hi as usize + a.dtype().itemsize()))
}

/// Whether two indices of a (non-empty) array reach the same bytes: walking the axes longer
/// than 1 from the smallest stride up, each stride must pass the extent of the axes before it
/// (ndarray's rule for mutable views; a conservative test, as NumPy's `may_share_memory`).
fn overlaps_itself(a: &Bound<'_, PyUntypedArray>) -> bool {
    let shape = a.shape();
    if shape.contains(&0) {
        return false;
    }
    let mut axes: Vec<(usize, usize)> = shape
        .iter()
        .zip(a.strides())
        .filter(|(&n, _)| n > 1)
        .map(|(&n, &s)| (n, s.unsigned_abs()))
        .collect();
    axes.sort_by_key(|&(_, s)| s);
    // In bytes: `extent` is the offset of the last element the axes so far reach; the next
    // axis's first step must clear that element entirely.
    let item = a.dtype().itemsize().max(1);
    let mut extent = 0usize;
    for (n, s) in axes {
        if s < extent.saturating_add(item) {
            return true;
        }
        extent = extent.saturating_add((n - 1).saturating_mul(s));
    }
    false
}

/// Fails when an output may share memory with an input or another output (tfn does not
/// compute in place: pass a copy).
pub fn no_overlap(
    py: Python<'_>,
    inputs: &[(ArgName<'_>, &Bound<'_, PyUntypedArray>)],
    outs: &[(Bound<'_, PyUntypedArray>, DType)],
) -> PyResult<()> {
    let overlaps = |a: (usize, usize), b: (usize, usize)| a.0 < b.1 && b.0 < a.1;
    for (i, (o, _)) in outs.iter().enumerate() {
        let Some(r) = byte_range(o) else { continue };
        let clash = inputs
            .iter()
            .find(|(_, a)| byte_range(a).is_some_and(|q| overlaps(r, q)))
            .map(|(name, _)| name.describe())
            .or_else(|| {
                outs[..i]
                    .iter()
                    .position(|(a, _)| byte_range(a).is_some_and(|q| overlaps(r, q)))
                    .map(|j| format!("out[{j}]"))
            });
        if let Some(name) = clash {
            let c = errors::classes(py)?;
            return Err(errors::raise(
                py,
                &c.shape,
                format!("out[{i}] may share memory with {name}; tfn does not compute in place (pass a copy)"),
            ));
        }
    }
    Ok(())
}

/// A result as a NumPy array (no copy: NumPy takes the `ndarray`'s buffer).
pub fn to_numpy(py: Python<'_>, v: Value<'static>) -> PyResult<Py<PyAny>> {
    fn owned<T: numpy::Element>(py: Python<'_>, a: ArrayD<T>) -> Py<PyAny> {
        numpy::PyArray::from_owned_array(py, a).into_any().unbind()
    }
    if let Value::Tensor(t) = &v {
        check_rank(py, t.shape().len(), &|| "a result".to_string())?;
        // NumPy refuses (and rust-numpy then dereferences null for) an array whose nonzero
        // sizes pass isize bytes, even an empty one. Binding and checkpoints refuse them
        // first; this keeps the door safe whatever produced the value.
        let item = t.dtype().size_bytes() as u64;
        if !tfn_ir::describable(t.shape().iter().map(|&d| d as u64), item) {
            let c = errors::classes(py)?;
            let shape = t.shape().to_vec();
            return Err(errors::raise(
                py,
                &c.shape,
                format!("a result of shape {shape:?} is too large for a NumPy array"),
            ));
        }
    }
    match v {
        Value::Tensor(t) => Ok(match t {
            TensorValue::Bool(a) => owned(py, a.into_owned()),
            TensorValue::I32(a) => owned(py, a.into_owned()),
            TensorValue::I64(a) => owned(py, a.into_owned()),
            TensorValue::F32(a) => owned(py, a.into_owned()),
            TensorValue::F64(a) => owned(py, a.into_owned()),
            TensorValue::I8(a) => owned(py, a.into_owned()),
            TensorValue::U8(a) => owned(py, a.into_owned()),
            TensorValue::F16(a) => owned(py, a.into_owned()),
            TensorValue::BF16(_) => {
                let c = errors::classes(py)?;
                return Err(errors::raise(
                    py,
                    &c.dtype,
                    "a bf16 result cannot become a NumPy array (NumPy has no bfloat16): cast it \
                     to f32 in the function"
                        .to_string(),
                ));
            }
        }),
        other => {
            let c = errors::classes(py)?;
            Err(errors::raise(
                py,
                &c.internal,
                format!("a result is not a tensor: {}", other.describe()),
            ))
        }
    }
}

fn is_writeable(a: &Bound<'_, PyUntypedArray>) -> bool {
    // SAFETY: reading the flags field of a live array object.
    let flags = unsafe { (*a.as_array_ptr()).fields.flags };
    flags & numpy::npyffi::flags::NPY_ARRAY_WRITEABLE != 0
}
