//! Where `use "path"` finds its source: the [`SourceLoader`] trait and two loaders.
//!
//! `use "std:<name>"` is served from the standard library embedded in the binary (`std:nn`,
//! see `prelude/nn.tfn`, and `std:optim`, `prelude/optim.tfn`) whatever the loader. Other paths are resolved lexically relative to the
//! importing file's display name (`models/a.tfn` using `"b.tfn"` loads `models/b.tfn`).
//! Files on disk are read by [`read_source_file`]: regular files of at most 16 MiB only.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// Supplies the text of a `use`d file.
pub trait SourceLoader {
    /// Loads `path` as written in `use "path"` inside the file displayed as `from` (`None` for a
    /// top-level load). Returns the display name (used in diagnostics and to load each file
    /// once) and the text, or a one-line reason.
    fn load(&self, path: &str, from: Option<&str>) -> Result<(String, String), String>;

    /// What makes the file displayed as `display` the same file as another: two display
    /// names of one identity (a symbolic link and its target) load once, as two spellings of
    /// one path (`./a.tfn`, `a.tfn`) do. By default the display name itself.
    fn identity(&self, display: &str) -> String {
        display.to_string()
    }

    /// Whether the display names `a` and `b` are one file (see [`SourceLoader::identity`]).
    fn same_file(&self, a: &str, b: &str) -> bool {
        a == b || self.identity(a) == self.identity(b)
    }
}

/// The standard library's network functions: `use "std:nn"`.
pub const STD_NN: &str = include_str!("../prelude/nn.tfn");

/// The standard library's optimiser updates and initialisers: `use "std:optim"`.
pub const STD_OPTIM: &str = include_str!("../prelude/optim.tfn");

/// Every module of the standard library: its `use` path and its text.
pub const STD_MODULES: [(&str, &str); 2] = [("std:nn", STD_NN), ("std:optim", STD_OPTIM)];

/// The embedded file a `std:` path names, as (display name, text).
pub fn std_source(path: &str) -> Option<(String, String)> {
    STD_MODULES
        .iter()
        .find(|(name, _)| *name == path)
        .map(|(name, text)| (format!("<{name}>"), text.to_string()))
}

/// Why a `std:` path that names no module cannot load (`None`: not a `std:` path).
fn unknown_std(path: &str) -> Option<String> {
    path.starts_with("std:").then(|| {
        let names: Vec<&str> = STD_MODULES.iter().map(|(n, _)| *n).collect();
        format!("the standard library has no module `{path}` (it has {})", names.join(", "))
    })
}

/// `path` relative to the directory of `from`, normalised lexically (`a/../b` → `b`).
pub fn resolve_path(path: &str, from: Option<&str>) -> String {
    let joined: PathBuf = match from.and_then(|f| Path::new(f).parent()) {
        Some(dir) if !Path::new(path).is_absolute() => dir.join(path),
        _ => PathBuf::from(path),
    };
    let mut parts: Vec<Component> = Vec::new();
    for c in joined.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if matches!(parts.last(), Some(Component::Normal(_))) => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    let normal: PathBuf = parts.iter().collect();
    if normal.as_os_str().is_empty() {
        // `use "."` from `a.tfn`: the current directory, not the empty path.
        return ".".to_string();
    }
    normal.to_string_lossy().into_owned()
}

/// The largest source file read from disk: 16 MiB.
pub const MAX_SOURCE_BYTES: u64 = 16 << 20;

/// Reads a source file from disk: a regular file (not a device, FIFO or directory such as
/// `/dev/zero`, which would be read forever) of at most [`MAX_SOURCE_BYTES`], in UTF-8.
/// `Err` is a one-line reason.
pub fn read_source_file(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let not_regular = |meta: &std::fs::Metadata| {
        let what = if meta.is_dir() { "a directory" } else { "not a regular file" };
        format!("it is {what}")
    };
    // Checked before opening too: opening a FIFO would wait for a writer.
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err(not_regular(&meta));
    }
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err(not_regular(&meta));
    }
    let too_large =
        || format!("it is larger than the {} MiB limit for a source file", MAX_SOURCE_BYTES >> 20);
    if meta.len() > MAX_SOURCE_BYTES {
        return Err(too_large());
    }
    // The file may grow while it is read: never read more than the limit.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_SOURCE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_SOURCE_BYTES {
        return Err(too_large());
    }
    String::from_utf8(bytes).map_err(|e| {
        format!("it is not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to())
    })
}

/// Reads files from disk, relative to the importing file (and to `root`, if set).
#[derive(Clone, Debug, Default)]
pub struct FsLoader {
    root: Option<PathBuf>,
}

impl FsLoader {
    /// Paths relative to the current directory.
    pub fn new() -> FsLoader {
        FsLoader::default()
    }

    /// Paths (and display names) relative to `root`.
    pub fn rooted(root: impl Into<PathBuf>) -> FsLoader {
        FsLoader { root: Some(root.into()) }
    }

    /// Where the file displayed as `display` is on disk.
    fn on_disk(&self, display: &str) -> PathBuf {
        match &self.root {
            Some(root) => root.join(display),
            None => PathBuf::from(display),
        }
    }
}

impl SourceLoader for FsLoader {
    fn load(&self, path: &str, from: Option<&str>) -> Result<(String, String), String> {
        if let Some(std) = std_source(path) {
            return Ok(std);
        }
        if let Some(why) = unknown_std(path) {
            return Err(why);
        }
        let display = resolve_path(path, from);
        let text = read_source_file(&self.on_disk(&display))?;
        Ok((display, text))
    }

    /// The file's real path (symbolic links resolved), or its display name if it has none.
    fn identity(&self, display: &str) -> String {
        match std::fs::canonicalize(self.on_disk(display)) {
            Ok(real) => real.to_string_lossy().into_owned(),
            Err(_) => display.to_string(),
        }
    }
}

/// Serves files from memory (tests, `Session::load_str`); unknown paths fail.
#[derive(Clone, Debug, Default)]
pub struct MemLoader {
    pub files: BTreeMap<String, String>,
}

impl MemLoader {
    pub fn new() -> MemLoader {
        MemLoader::default()
    }

    pub fn with(mut self, name: &str, text: &str) -> MemLoader {
        self.files.insert(name.to_string(), text.to_string());
        self
    }
}

impl SourceLoader for MemLoader {
    fn load(&self, path: &str, from: Option<&str>) -> Result<(String, String), String> {
        if let Some(std) = std_source(path) {
            return Ok(std);
        }
        if let Some(why) = unknown_std(path) {
            return Err(why);
        }
        let display = resolve_path(path, from);
        match self.files.get(&display) {
            Some(text) => Ok((display, text.clone())),
            None => Err("no such file".to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_relative_to_the_importer() {
        assert_eq!(resolve_path("b.tfn", Some("models/a.tfn")), "models/b.tfn");
        assert_eq!(resolve_path("../c.tfn", Some("models/a.tfn")), "c.tfn");
        assert_eq!(resolve_path("./b.tfn", None), "b.tfn");
        assert_eq!(resolve_path("b.tfn", Some("a.tfn")), "b.tfn");
        assert_eq!(resolve_path(".", Some("a.tfn")), ".");
        assert_eq!(resolve_path("./", None), ".");
    }
}
