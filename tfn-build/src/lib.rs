//! # tfn-build
//!
//! Typed Rust bindings for `.tfn` files, checked at `cargo build` time. In a crate's
//! `build.rs`:
//!
//! ```no_run
//! // build.rs
//! tfn_build::compile("ops/nn.tfn").unwrap();
//! ```
//!
//! and in the crate, `mod nn { include!(concat!(env!("OUT_DIR"), "/nn.rs")); }`, then
//! `let lib = nn::Lib::new()?; let y = lib.gelu(x.view())?;`.
//!
//! [`compile`] loads the file (and every file it `use`s) with the same front end as
//! `tfn::Session`: an error fails the build, printed rustc-style with `file:line:col`; warnings
//! become `cargo:warning=` lines. Every source file is reported with `cargo:rerun-if-changed`,
//! embedded into the generated module (a `Lib` loads the embedded text, never the file at run
//! time) and the module is written atomically into `OUT_DIR` as `<stem>.rs`. The generated code
//! depends on the `tfn` and `ndarray` crates, which the user's crate must depend on.
//!
//! The generated API is described in `docs/rust-api.md`.

#![forbid(unsafe_code)]

#[cfg(feature = "aot")]
mod aot;
mod generate;
mod names;
mod types;

#[cfg(feature = "aot")]
pub use aot::Aot;

use std::path::{Path, PathBuf};
use tfn_frontend::FsLoader;
use tfn_ir::diagnostic::render_all;
use tfn_ir::{Diagnostic, FileId, Library};

/// Why a `.tfn` file could not be turned into bindings. Both `Display` and `Debug` print the
/// message itself (rustc-style diagnostics for a source error), so `compile(...).unwrap()` in a
/// build script shows it readably.
pub enum Error {
    /// The source has errors: every diagnostic, rendered rustc-style with `file:line:col`.
    Source { diagnostics: Vec<Diagnostic>, rendered: String },
    /// A file could not be read or written.
    Io { path: String, message: String },
    /// The environment is not a build script's (no `OUT_DIR`).
    Env(String),
    /// Two functions map to the same Rust name (e.g. `a_b` and the overload `a.b`).
    Names(String),
    /// A signature cannot be built ahead of time ([`Aot`], feature `aot`): the message names
    /// it and why.
    Aot(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Source { rendered, .. } => f.write_str(rendered),
            Error::Io { path, message } => write!(f, "cannot access `{path}`: {message}"),
            Error::Env(m) | Error::Names(m) | Error::Aot(m) => f.write_str(m),
        }
    }
}

impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `unwrap()` prints `Debug`: show the diagnostics as rustc would, on their own lines.
        write!(f, "\n{self}\n")
    }
}

impl std::error::Error for Error {}

/// A checked `.tfn` file: the library it loads into and its warnings.
pub struct Checked {
    library: Library,
    main: String,
    files: Vec<(FileId, String, String)>,
    /// Load-time warnings (unused bindings, masked overloads, ...).
    pub warnings: Vec<Diagnostic>,
}

impl Checked {
    /// The user's source files (display name as in diagnostics), main file first. `use`d
    /// files are paths relative to the importing file, as the front end resolves them.
    pub fn files(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|(_, name, _)| name.as_str())
    }

    /// The warnings rendered rustc-style.
    pub fn rendered_warnings(&self) -> String {
        render_all(&self.warnings, &self.library.sources)
    }

    /// The generated Rust module.
    pub fn generate(&self) -> Result<String, Error> {
        generate::module(&self.input()).map_err(Error::Names)
    }

    /// What the generators read.
    fn input(&self) -> generate::Input<'_> {
        generate::Input {
            library: &self.library,
            main: self.main.clone(),
            files: self.files.clone(),
        }
    }
}

/// Loads and checks `path` (and the files it `use`s) as `tfn::Session::load_file` would.
/// Relative paths are relative to the current directory (a build script runs in its crate's
/// root); diagnostics name the path as given.
pub fn check(path: impl AsRef<Path>) -> Result<Checked, Error> {
    let path = path.as_ref();
    let shown = path.display().to_string();
    let text = tfn_frontend::read_source_file(path)
        .map_err(|message| Error::Io { path: shown.clone(), message })?;
    check_source(&shown, &text, &FsLoader::default()).map_err(|(e, _)| e)
}

/// Checks source text named `name` (its `use`s resolved by `loader`). On error also returns
/// the user files that were read, so a build script can still watch them.
fn check_source(
    name: &str,
    text: &str,
    loader: &dyn tfn_frontend::SourceLoader,
) -> Result<Checked, (Error, Vec<String>)> {
    let mut library = tfn_frontend::prelude().map_err(|d| {
        let rendered = render_all(&d, &Library::default().sources);
        (Error::Source { diagnostics: d, rendered }, Vec::new())
    })?;
    let first_user_file = library.sources.files().count();
    let result = tfn_frontend::load_source(&mut library, name, text, loader);
    let mut files: Vec<(FileId, String, String)> = library
        .sources
        .files()
        .skip(first_user_file)
        .filter(|(_, f)| !f.name.starts_with('<'))
        .map(|(id, f)| (id, f.name.clone(), f.text.clone()))
        .collect();
    // The main file first, then its `use`s in load order.
    files.sort_by_key(|(_, n, _)| n != name);
    match result {
        Ok(warnings) => Ok(Checked { library, main: name.to_string(), files, warnings }),
        Err(diagnostics) => {
            let rendered = render_all(&diagnostics, &library.sources).trim_end().to_string();
            let names = files.into_iter().map(|(_, n, _)| n).collect();
            Err((Error::Source { diagnostics, rendered }, names))
        }
    }
}

/// Options of a binding generation; [`compile`] is `Builder::new(path).compile()`.
pub struct Builder {
    path: PathBuf,
    out_dir: Option<PathBuf>,
    out_name: Option<String>,
}

impl Builder {
    pub fn new(path: impl AsRef<Path>) -> Builder {
        Builder { path: path.as_ref().to_path_buf(), out_dir: None, out_name: None }
    }

    /// Where to write the module (default: `OUT_DIR`).
    pub fn out_dir(mut self, dir: impl AsRef<Path>) -> Builder {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// The module's file name (default: the source's stem + `.rs`, `nn.tfn` → `nn.rs`).
    pub fn out_name(mut self, name: &str) -> Builder {
        self.out_name = Some(name.to_string());
        self
    }

    /// Checks the file, prints `cargo:` directives (rerun-if-changed for every source file,
    /// warnings) on stdout and writes the module. Returns the path written.
    pub fn compile(self) -> Result<PathBuf, Error> {
        let stdout = std::io::stdout();
        self.compile_to(&mut stdout.lock())
    }

    /// [`Builder::compile`], with the `cargo:` directives written to `directives`.
    pub fn compile_to(self, directives: &mut dyn std::io::Write) -> Result<PathBuf, Error> {
        let mut say = |line: String| {
            let _ = writeln!(directives, "{line}");
        };
        let checked = load_checked(&self.path, &mut say)?;
        let module = checked.generate()?;
        let out_dir = out_dir(self.out_dir)?;
        let name = self.out_name.unwrap_or_else(|| {
            let stem = self.path.file_stem().map_or("tfn".into(), |s| s.to_string_lossy());
            format!("{stem}.rs")
        });
        let target = out_dir.join(name);
        write_atomically(&target, &module)?;
        Ok(target)
    }
}

/// Reads and checks `path`, saying (`cargo:` directives) rerun-if-changed for every source
/// file it reads and a warning per line of its warnings.
fn load_checked(path: &Path, say: &mut dyn FnMut(String)) -> Result<Checked, Error> {
    let shown = path.display().to_string();
    say(format!("cargo:rerun-if-changed={shown}"));
    let text = tfn_frontend::read_source_file(path)
        .map_err(|message| Error::Io { path: shown.clone(), message })?;
    let checked = match check_source(&shown, &text, &FsLoader::default()) {
        Ok(c) => c,
        Err((e, files)) => {
            for f in files.iter().filter(|f| **f != shown) {
                say(format!("cargo:rerun-if-changed={f}"));
            }
            return Err(e);
        }
    };
    for f in checked.files().filter(|f| *f != shown) {
        say(format!("cargo:rerun-if-changed={f}"));
    }
    for w in &checked.warnings {
        for line in w.render(&checked.library.sources).lines() {
            say(format!("cargo:warning={line}"));
        }
    }
    Ok(checked)
}

/// `dir`, or `OUT_DIR`.
fn out_dir(dir: Option<PathBuf>) -> Result<PathBuf, Error> {
    match dir {
        Some(d) => Ok(d),
        None => std::env::var_os("OUT_DIR").map(PathBuf::from).ok_or_else(|| {
            Error::Env(
                "OUT_DIR is not set: tfn_build is meant to run in a build script \
                 (or give an output directory: `out_dir`)"
                    .to_string(),
            )
        }),
    }
}

/// Checks `path` and writes its bindings to `OUT_DIR/<stem>.rs` (see the crate docs).
pub fn compile(path: impl AsRef<Path>) -> Result<PathBuf, Error> {
    Builder::new(path).compile()
}

/// Writes `text` to a temporary file beside `target` and renames it over `target`; leaves an
/// unchanged file alone (so nothing that includes it rebuilds).
fn write_atomically(target: &Path, text: impl AsRef<[u8]>) -> Result<(), Error> {
    let io = |e: std::io::Error| Error::Io {
        path: target.display().to_string(),
        message: e.to_string(),
    };
    let text = text.as_ref();
    if std::fs::read(target).is_ok_and(|old| old == text) {
        return Ok(());
    }
    let mut tmp = target.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, target).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(e)
    })
}

/// Generates the bindings of in-memory source (tests, tools): the module text.
pub fn generate_str(name: &str, text: &str) -> Result<String, Error> {
    let loader = tfn_frontend::MemLoader::new().with(name, text);
    check_source(name, text, &loader).map_err(|(e, _)| e)?.generate()
}
