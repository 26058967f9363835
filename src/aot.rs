//! Ahead-of-time modules as a library: [`ModuleBuilder`] instantiates, plans and compiles
//! function signatures into one relocatable object, as `tfnc build` does (the same
//! `cli::build` planning, the same `tfn_backend::aot::ObjectBuilder`), for programs that build
//! objects themselves — `tfn-build`'s AOT mode calls it from a build script. See docs/aot.md.
//!
//! Unlike `tfnc build`, each added signature has its own arguments and may be a
//! vector-Jacobian product, and the same function may be added for several signatures (each
//! under its own exported name).

use crate::cli::build::{
    build_object, header, is_c_ident, parse_arg, plan_function, BuildArg, Built, ObjectError,
};
use crate::cli::Outcome;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tfn_backend::aot::{CpuChoice, FunctionMeta};
use tfn_ir::{Attr, DType, Library};

/// Why a module cannot be built: the message says what and where (rustc-style diagnostics
/// for a source error).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A request that is wrong whatever the source says: an `--arg`-style argument that does
    /// not parse, a prefix or name that is not a C identifier, a name added twice.
    #[error("{0}")]
    Usage(String),
    /// The source, the function or the signature cannot be built (unknown function, a kernel
    /// an object cannot hold yet, a file that cannot be read).
    #[error("{0}")]
    Build(String),
}

impl From<Outcome> for BuildError {
    fn from(o: Outcome) -> BuildError {
        match o {
            Outcome::UsageError(m) => BuildError::Usage(m),
            Outcome::UserError(m) => {
                BuildError::Build(m.strip_prefix("error: ").unwrap_or(&m).to_string())
            }
            Outcome::Ok => BuildError::Build("internal error: no error".into()),
        }
    }
}

/// One tensor input of an added signature, in the order of the object's entry point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// The parameter's name (`cotangent0`, ... for the cotangents of a vjp).
    pub name: String,
    pub dtype: DType,
    /// Per axis the declared size, `None` for `?`.
    pub dims: Vec<Option<usize>>,
}

/// What [`ModuleBuilder::add`] added: where the function sits in the module and how it is
/// called.
#[derive(Clone, Debug)]
pub struct Added {
    /// The function's index in the module's descriptor.
    pub index: usize,
    /// Its exported name: the C entry point is `<prefix>_<name>`.
    pub name: String,
    /// The tensor inputs in entry-point order: the tensor arguments, then (vjp) the
    /// cotangents.
    pub inputs: Vec<Input>,
    /// The literal arguments baked into the object, by parameter name.
    pub literals: Vec<(String, Attr)>,
    /// Per output its dtype and rank.
    pub outputs: Vec<(DType, usize)>,
}

/// The built module: the object's bytes, its C header and its global symbols.
pub struct Module {
    pub object: Vec<u8>,
    pub header: String,
    /// Every global symbol the object defines (`<prefix>_module`, `<prefix>_<fn>`, ...).
    pub symbols: Vec<String>,
}

/// Builds one module: [`ModuleBuilder::add`] per signature, then [`ModuleBuilder::finish`].
pub struct ModuleBuilder {
    file: PathBuf,
    prefix: String,
    library: Arc<Library>,
    functions: Vec<(FunctionMeta, Built)>,
}

impl ModuleBuilder {
    /// Loads `file` as `tfnc build` does, for a module whose symbols start with `prefix`.
    pub fn new(file: impl AsRef<Path>, prefix: &str) -> Result<ModuleBuilder, BuildError> {
        if !is_c_ident(prefix) {
            return Err(BuildError::Usage(format!(
                "the prefix `{prefix}` is not a C identifier (letters, digits, `_`)"
            )));
        }
        let file = file.as_ref().to_path_buf();
        let session = crate::Session::new();
        session.load_file(&file).map_err(|e| BuildError::Build(e.to_string()))?;
        let library = session.library();
        Ok(ModuleBuilder { file, prefix: prefix.to_string(), library, functions: Vec::new() })
    }

    /// Adds `function` (or its vector-Jacobian product) for `args`, each `name=dtype[sizes]`
    /// or `name=literal` as `tfnc build --arg`, exported as `name` (default: the function's
    /// name, `_vjp` appended for a vjp).
    pub fn add(
        &mut self,
        function: &str,
        args: &[(&str, &str)],
        vjp: bool,
        name: Option<&str>,
    ) -> Result<Added, BuildError> {
        let mut parsed = Vec::new();
        for (n, text) in args {
            parsed.push((n.to_string(), parse_arg(n, text)?));
        }
        let (mut meta, planned) = plan_function(&self.library, function, &parsed, vjp)?;
        if let Some(name) = name {
            if !is_c_ident(name) {
                return Err(BuildError::Usage(format!("`{name}` is not a C identifier")));
            }
            meta.name = name.to_string();
        }
        if self.functions.iter().any(|(m, _)| m.name == meta.name) {
            return Err(BuildError::Usage(format!(
                "`{}` added twice: the symbol `{}_{}` would clash",
                meta.name, self.prefix, meta.name
            )));
        }
        let graph = planned.signature();
        let inputs = meta
            .params
            .iter()
            .zip(&graph.params)
            .map(|((name, dims), p)| Input {
                name: name.clone(),
                dtype: p.ty.dtype,
                dims: if dims.is_empty() { vec![None; p.ty.shape.rank()] } else { dims.clone() },
            })
            .collect();
        let outputs = planned.results().iter().map(|ty| (ty.dtype, ty.shape.rank())).collect();
        let literals = parsed
            .into_iter()
            .filter_map(|(n, a)| match a {
                BuildArg::Literal(a) => Some((n, a)),
                BuildArg::Tensor(..) => None,
            })
            .collect();
        let added = Added {
            index: self.functions.len(),
            name: meta.name.clone(),
            inputs,
            literals,
            outputs,
        };
        self.functions.push((meta, planned));
        Ok(added)
    }

    /// Compiles every added function's kernels into the object and writes its header.
    pub fn finish(self) -> Result<Module, BuildError> {
        // One object for every x86-64 CPU, as `tfnc build`'s default.
        let bytes = build_object(&self.prefix, &CpuChoice::Portable, &self.functions).map_err(
            |e| match e {
                ObjectError::Unsupported(name, why) => {
                    BuildError::Build(format!("`{name}` cannot be built ahead of time: {why}"))
                }
                ObjectError::Internal(e) => BuildError::Build(e),
            },
        )?;
        let header = header(&self.prefix, &self.file, &self.functions);
        let mut symbols = vec![format!("{}_module", self.prefix)];
        symbols.extend(self.functions.iter().map(|(m, _)| format!("{}_{}", self.prefix, m.name)));
        Ok(Module { object: bytes, header, symbols })
    }
}
