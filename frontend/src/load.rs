//! Loading source into a [`Library`]: a file, the files it `use`s, check, convert, add.
//!
//! A load is atomic for definitions: when any file of the batch has an error, no function,
//! gradient or rewrite rule is added. The batch's *sources* are always added to
//! `lib.sources`, so the returned diagnostics can be rendered with [`tfn_ir::diagnostic::render_all`].
//!
//! A `use`d file already loaded into the library (same display name and text, and at least one
//! definition from it) or already part of the batch is skipped, so diamonds and cycles of `use`
//! load each file once. A top-level load of a file already loaded with the same text, whose
//! `use`d files are all unchanged too, adds nothing (re-running a notebook cell); a changed
//! file defines its names a second time, which is an error (`E0115`, with a note saying so).

use crate::ast::{File, Item};
use crate::check::check_batch;
use crate::loader::{std_source, SourceLoader};
use crate::parser::parse_file;
use tfn_ir::{Diagnostic, FileId, Library};

/// The display name of the prelude's source.
pub const PRELUDE_NAME: &str = "<prelude>";
/// The prelude's text: the primitives the compiler has kernels for.
pub const PRELUDE: &str = include_str!("../prelude/core.tfn");
/// The name the prelude's gradient definitions show in diagnostics.
pub const PRELUDE_GRADS_NAME: &str = "<prelude-grads>";
/// The prelude's `grad` blocks: one vector-Jacobian product per differentiable primitive.
pub const PRELUDE_GRADS: &str = include_str!("../prelude/grads.tfn");

/// A fresh library holding the prelude: the primitives, then their gradients.
pub fn prelude() -> Result<Library, Vec<Diagnostic>> {
    let mut lib = Library::default();
    let loader = crate::loader::MemLoader::new();
    load_source(&mut lib, PRELUDE_NAME, PRELUDE, &loader)?;
    load_source(&mut lib, PRELUDE_GRADS_NAME, PRELUDE_GRADS, &loader)?;
    Ok(lib)
}

/// Parses, checks and adds `text` (displayed as `name`) and the files it `use`s to `lib`.
///
/// `Ok` holds the warnings; `Err` every diagnostic (errors and warnings) in source order.
/// To check a file *as* a prelude (declaring primitives without the shipped prelude), load it
/// into `Library::default()`.
pub fn load_source(
    lib: &mut Library,
    name: &str,
    text: &str,
    loader: &dyn SourceLoader,
) -> Result<Vec<Diagnostic>, Vec<Diagnostic>> {
    if unchanged(lib, name, text, loader, &mut Vec::new()) {
        return Ok(Vec::new());
    }
    let mut batch = Batch { names: Default::default(), files: Vec::new(), diags: Vec::new() };
    batch.visit(lib, name, text, loader, 0);
    if batch.diags.iter().any(|d| d.is_error()) {
        return Err(batch.diags);
    }
    let (checked, diags) = check_batch(lib, &batch.files);
    let Some(checked) = checked else { return Err(diags) };
    for f in checked.functions {
        lib.functions.entry(f.name.clone()).or_default().push(f);
    }
    lib.grads.extend(checked.grads);
    lib.rewrites.extend(checked.rewrites);
    Ok(diags)
}

/// The file ids a library's sources have under `name` (several if it was loaded again).
pub fn file_ids(lib: &Library, name: &str) -> Vec<FileId> {
    lib.sources.files().filter(|(_, f)| f.name == name).map(|(id, _)| id).collect()
}

/// Deepest chain of `use`s followed.
const MAX_USE_DEPTH: usize = 64;

struct Batch {
    /// The identity ([`SourceLoader::identity`]) of each file visited.
    names: std::collections::HashSet<String>,
    /// Parsed files in load order: a file's `use`d files before it.
    files: Vec<File>,
    diags: Vec<Diagnostic>,
}

impl Batch {
    fn visit(
        &mut self,
        lib: &mut Library,
        name: &str,
        text: &str,
        loader: &dyn SourceLoader,
        depth: usize,
    ) {
        self.names.insert(loader.identity(name));
        let id = lib.sources.add(name, text);
        let file = match parse_file(id, text) {
            Ok(file) => file,
            Err(errors) => {
                self.diags.extend(errors);
                return;
            }
        };
        for item in &file.items {
            let Item::Use(u) = item else { continue };
            let loaded =
                std_source(&u.path).map(Ok).unwrap_or_else(|| loader.load(&u.path, Some(name)));
            let (display, source) = match loaded {
                Ok(found) => found,
                Err(reason) => {
                    self.diags.push(
                        Diagnostic::error("E0461", format!("cannot load `{}`: {reason}", u.path))
                            .at(u.path_span, "cannot load this file"),
                    );
                    continue;
                }
            };
            let in_batch = self.names.contains(&loader.identity(&display));
            if in_batch || already_loaded(lib, &display, &source, loader) {
                continue;
            }
            if depth >= MAX_USE_DEPTH {
                self.diags.push(
                    Diagnostic::error(
                        "E0462",
                        format!("`use` chain deeper than {MAX_USE_DEPTH} files"),
                    )
                    .at(u.path_span, "too deep"),
                );
                continue;
            }
            self.visit(lib, &display, &source, loader, depth + 1);
        }
        self.files.push(file);
    }
}

/// Whether an earlier load brought in this file with this text, and every file it `use`s
/// (through any depth) as it reads now: loading it again would add nothing.
fn unchanged(
    lib: &Library,
    name: &str,
    text: &str,
    loader: &dyn SourceLoader,
    seen: &mut Vec<String>,
) -> bool {
    if seen.iter().any(|s| s == name) {
        return true;
    }
    if seen.len() > MAX_USE_DEPTH || !already_loaded(lib, name, text, loader) {
        return false;
    }
    seen.push(name.to_string());
    let same = |f: &&tfn_ir::span::SourceFile| f.text == text && loader.same_file(&f.name, name);
    let Some((id, _)) = lib.sources.files().find(|(_, f)| same(f)) else {
        return false;
    };
    let Ok(file) = parse_file(id, text) else { return false };
    file.items.iter().all(|item| {
        let Item::Use(u) = item else { return true };
        let loaded =
            std_source(&u.path).map(Ok).unwrap_or_else(|| loader.load(&u.path, Some(name)));
        match loaded {
            Ok((display, source)) => unchanged(lib, &display, &source, loader, seen),
            Err(_) => false,
        }
    })
}

/// Whether a successful earlier load already brought this file in (under this name or another
/// name of the same file).
fn already_loaded(lib: &Library, name: &str, text: &str, loader: &dyn SourceLoader) -> bool {
    let ids: Vec<FileId> = lib
        .sources
        .files()
        .filter(|(_, f)| f.text == text && loader.same_file(&f.name, name))
        .map(|(id, _)| id)
        .collect();
    let defines = |file: FileId| {
        lib.functions.values().flatten().any(|f| f.span.file == file)
            || lib.grads.iter().any(|g| g.span.file == file)
            || lib.rewrites.iter().any(|r| r.span.file == file)
    };
    ids.into_iter().any(defines)
}
