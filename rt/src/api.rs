//! The Rust API of the runtime: what the modules `tfn-build` generates in AOT mode call
//! (docs/rust-api.md, "Ahead of time"). A [`Module`] is an object's descriptor linked into the
//! program with the table of the signatures it was built for; [`Module::call_kw`],
//! [`Module::call_into_kw`] and [`Module::vjp_kw`] take the arguments as `tfn::Session`'s
//! methods of the same names do, pick the built signature the arguments fit (dtypes, ranks,
//! fixed sizes, literal values) and run it; arguments that fit none are an [`Error::Signature`]
//! naming what was built.
//!
//! [`Value`], [`TensorValue`], [`Element`] and [`Scalar`] are the `tfn` crate's types of the
//! same names (both re-export `tfn_ir::call`'s), so that the generated methods have the same
//! parameter and result types as the JIT's bindings with `tfn_rt::` for `tfn::`.

use crate::{load_for, threads, Failure};
use std::ffi::c_void;
use tfn_backend::aot::c_abi::{TFN_ERR_ARGUMENT, TFN_ERR_MODULE, TFN_ERR_RUN};
pub use tfn_backend::TensorViewMut as OutputMut;
use tfn_backend::{RunError, TensorView};
pub use tfn_ir::{half, Attr, DType, Tensor};

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The arguments fit none of the signatures the module was built for (names them).
    Signature(String),
    /// The arguments fit a signature but not each other (sizes), or an output buffer is wrong.
    Argument(String),
    /// The object cannot run with this runtime or on this CPU.
    Module(String),
    /// Running failed (an index out of range, the `TFN_MAX_TENSOR_BYTES` limit, ...).
    Run(String),
    /// A bug in tfn.
    Internal(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Signature(m) | Error::Argument(m) | Error::Module(m) | Error::Run(m) => {
                f.write_str(m)
            }
            Error::Internal(m) => write!(f, "internal error in the tfn runtime: {m}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<Failure> for Error {
    fn from(Failure(code, message): Failure) -> Error {
        match code {
            TFN_ERR_ARGUMENT => Error::Argument(message),
            TFN_ERR_MODULE => Error::Module(message),
            TFN_ERR_RUN => Error::Run(message),
            _ => Error::Internal(message),
        }
    }
}

/// A tensor argument or result, and the call values, as the `tfn` crate re-exports them.
pub use tfn_ir::call::{Element, Scalar, Value};
pub use tfn_ir::TensorValue;

/// A result of another type than its signature's (generated code's `Element::from_result`).
impl From<tfn_ir::call::ResultTypeError> for Error {
    fn from(e: tfn_ir::call::ResultTypeError) -> Error {
        Error::Internal(e.0)
    }
}

macro_rules! with_tensor {
    ($t:expr, $a:ident => $body:expr) => {
        tfn_ir::each_dtype!($t, TensorValue, $a => $body)
    };
}

/// The backend's view of a tensor argument.
fn backend_view<'t>(t: &'t TensorValue<'_>) -> TensorView<'t> {
    with_tensor!(t, a => TensorView::from(a.view()))
}

/// A parameter of a built signature, in the function's declaration order.
#[derive(Clone, Copy, Debug)]
pub enum Param {
    /// A tensor: its dtype and per axis the size it must have (`None`: any).
    Tensor { name: &'static str, dtype: DType, dims: &'static [Option<usize>] },
    /// A value baked into the object: the call must pass exactly it (`type value` text, as
    /// [`Value::describe`] writes it: `Int -1`, `Int[] [0, 1]`).
    Attr { name: &'static str, value: &'static str },
}

/// One function signature an object was built for.
#[derive(Clone, Copy, Debug)]
pub struct Signature {
    /// The function as called (`scale.scalar`).
    pub function: &'static str,
    /// Its vector-Jacobian product rather than the function.
    pub vjp: bool,
    /// The function's index in the object's descriptor.
    pub index: usize,
    /// Every parameter, in declaration order.
    pub params: &'static [Param],
    /// The tensor parameters' names in the order of the object's inputs.
    pub inputs: &'static [&'static str],
}

impl Signature {
    /// `gelu(x: f32[?, ?])`, `softmax(x: f32[?, ?], dim: Int -1)`.
    fn describe(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|p| match p {
                Param::Tensor { name, dtype, dims } => {
                    let dims: Vec<String> =
                        dims.iter().map(|d| d.map_or("?".into(), |n| n.to_string())).collect();
                    format!("{name}: {dtype}[{}]", dims.join(", "))
                }
                Param::Attr { name, value } => format!("{name}: {value}"),
            })
            .collect();
        format!("{}({})", self.function, params.join(", "))
    }

    /// The object's inputs for these arguments, or why they do not fit.
    fn bind<'v, 'a: 'v>(
        &self,
        args: &'v [Value<'a>],
        kwargs: &'v [(&str, Value<'a>)],
    ) -> Result<Vec<TensorView<'v>>, String> {
        if args.len() > self.params.len() {
            return Err(format!("{} positional arguments", args.len()));
        }
        let name = |p: &Param| match p {
            Param::Tensor { name, .. } | Param::Attr { name, .. } => *name,
        };
        let mut tensors: Vec<(&str, TensorView<'v>)> = Vec::new();
        for (i, p) in self.params.iter().enumerate() {
            let value: &'v Value<'a> = match args.get(i) {
                Some(v) => v,
                None => match kwargs.iter().find(|(k, _)| *k == name(p)) {
                    Some((_, v)) => v,
                    None => return Err(format!("no argument `{}`", name(p))),
                },
            };
            match (p, value) {
                (Param::Tensor { name, dtype, dims }, Value::Tensor(t)) => {
                    let fits = t.dtype() == *dtype
                        && t.shape().len() == dims.len()
                        && dims.iter().zip(t.shape()).all(|(d, s)| d.is_none_or(|d| d == *s));
                    if !fits {
                        return Err(format!("`{name}` is {}", value.describe()));
                    }
                    tensors.push((name, backend_view(t)));
                }
                (Param::Attr { name, value: want }, v) => {
                    if v.describe() != *want {
                        return Err(format!("`{name}` is {}", v.describe()));
                    }
                }
                (Param::Tensor { name, .. }, v) => {
                    return Err(format!("`{name}` is {}", v.describe()))
                }
            }
        }
        if let Some((k, _)) =
            kwargs.iter().find(|(k, _)| !self.params.iter().any(|p| name(p) == *k))
        {
            return Err(format!("no parameter `{k}`"));
        }
        self.inputs
            .iter()
            .map(|n| {
                tensors
                    .iter()
                    .find(|(t, _)| t == n)
                    .map(|(_, v)| v.clone())
                    .ok_or_else(|| format!("no tensor `{n}`"))
            })
            .collect()
    }
}

/// How a [`Module`] runs its functions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Threads per call; 0: the runtime's setting (`tfn_rt_set_threads`, every core by
    /// default).
    pub threads: usize,
}

/// An object's descriptor, linked into this program, with the signatures it was built for.
#[derive(Clone, Copy, Debug)]
pub struct Module {
    /// The descriptor's address (a `usize` so that a module is `Send + Sync`: the descriptor
    /// is immutable static data).
    descriptor: usize,
    signatures: &'static [Signature],
    options: Options,
}

impl Module {
    /// The module whose descriptor (`<prefix>_module`) is at `descriptor`, built for
    /// `signatures` (each `index` is the function's place in the descriptor).
    ///
    /// # Safety
    /// `descriptor` is the descriptor of an object linked into this program (as generated
    /// code passes it), and `signatures` describe its functions.
    pub unsafe fn from_descriptor(
        descriptor: *const u64,
        signatures: &'static [Signature],
        options: Options,
    ) -> Module {
        Module { descriptor: descriptor as usize, signatures, options }
    }

    /// The signatures the module was built for.
    pub fn signatures(&self) -> &'static [Signature] {
        self.signatures
    }

    /// The options of this module's calls.
    pub fn options(&self) -> Options {
        self.options
    }

    /// This module with other options (the loaded functions are shared).
    pub fn with_options(self, options: Options) -> Module {
        Module { options, ..self }
    }

    /// The signature `args`/`kwargs` fit and their inputs in object order.
    fn select<'v, 'a: 'v>(
        &self,
        function: &str,
        vjp: bool,
        args: &'v [Value<'a>],
        kwargs: &'v [(&str, Value<'a>)],
    ) -> Result<(&'static Signature, Vec<TensorView<'v>>), Error> {
        let mut built = Vec::new();
        let mut why = Vec::new();
        for s in self.signatures.iter().filter(|s| s.function == function && s.vjp == vjp) {
            match s.bind(args, kwargs) {
                Ok(inputs) => return Ok((s, inputs)),
                Err(e) => {
                    built.push(s.describe());
                    why.push(e);
                }
            }
        }
        let what = if vjp { format!("the vjp of `{function}`") } else { format!("`{function}`") };
        let given: Vec<String> = args
            .iter()
            .map(Value::describe)
            .chain(kwargs.iter().map(|(k, v)| format!("{k}={}", v.describe())))
            .collect();
        Err(Error::Signature(if built.is_empty() {
            format!("{what} was not built ahead of time into this module")
        } else {
            format!(
                "{what} was not built for these arguments ({}): {}; built for {}",
                given.join(", "),
                why.join("; "),
                built.join(", ")
            )
        }))
    }

    /// Runs signature `s` on `inputs`: its results, or with `outputs` into them.
    fn run(
        &self,
        s: &Signature,
        inputs: &[TensorView<'_>],
        outputs: Option<&mut [OutputMut<'_>]>,
    ) -> Result<Vec<Tensor>, Error> {
        let threads = match self.options.threads {
            0 => threads(),
            n => n,
        };
        // SAFETY: `from_descriptor`'s contract.
        let loaded = unsafe { load_for(self.descriptor as *const c_void, s.index, threads)? };
        let failed = |e: RunError| {
            let message = format!("`{}`: {e}", s.function);
            match e {
                RunError::Internal(_) => Error::Internal(message),
                RunError::InputCount { .. }
                | RunError::OutputCount { .. }
                | RunError::InputDType { .. }
                | RunError::OutputType { .. }
                | RunError::Bind(_) => Error::Argument(message),
                _ => Error::Run(message),
            }
        };
        match outputs {
            Some(outputs) => {
                loaded.run_into(inputs.to_vec(), outputs).map_err(failed)?;
                Ok(Vec::new())
            }
            None => loaded.run(inputs).map_err(failed),
        }
    }

    /// Calls `function` as `tfn::Session::call_kw` does: positional arguments, then
    /// keyword arguments; returns the results.
    pub fn call_kw<'a>(
        &self,
        function: &str,
        args: &[Value<'a>],
        kwargs: &[(&str, Value<'a>)],
    ) -> Result<Vec<Value<'static>>, Error> {
        let (s, views) = self.select(function, false, args, kwargs)?;
        let results = self.run(s, &views, None)?;
        Ok(results.into_iter().map(|t| Value::Tensor(t.into())).collect())
    }

    /// [`Module::call_kw`], writing the results into `outputs` (each of the result's dtype
    /// and shape, any strides).
    pub fn call_into_kw<'a>(
        &self,
        function: &str,
        args: &[Value<'a>],
        kwargs: &[(&str, Value<'a>)],
        outputs: &mut [OutputMut<'_>],
    ) -> Result<(), Error> {
        let (s, views) = self.select(function, false, args, kwargs)?;
        self.run(s, &views, Some(outputs)).map(drop)
    }

    /// The vector-Jacobian product of `function` (built with `vjp`): the gradients of the
    /// float tensor arguments for `cotangents`, one per result.
    pub fn vjp_kw<'a>(
        &self,
        function: &str,
        args: &[Value<'a>],
        kwargs: &[(&str, Value<'a>)],
        cotangents: &[Value<'_>],
    ) -> Result<Vec<Value<'static>>, Error> {
        let (s, mut views) = self.select(function, true, args, kwargs)?;
        for (i, c) in cotangents.iter().enumerate() {
            match c {
                Value::Tensor(t) => views.push(backend_view(t)),
                other => {
                    return Err(Error::Argument(format!(
                        "cotangent {i} of `{function}` is {}, not a tensor",
                        other.describe()
                    )))
                }
            }
        }
        let results = self.run(s, &views, None)?;
        Ok(results.into_iter().map(|t| Value::Tensor(t.into())).collect())
    }
}
