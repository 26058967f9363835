//! Scratch directories for tests ([`Scratch`]): created fresh, removed when the test that
//! made one ends — kept when it fails, so its files can be inspected.

use std::path::{Path, PathBuf};

/// A directory `$TMPDIR/tfn-<kind>-<pid>-<test>`, emptied when created and removed on drop
/// unless the thread is panicking (a failing test keeps its files). Dereferences to its path.
pub struct Scratch(PathBuf);

impl Scratch {
    /// A fresh directory for `test` of a test module `kind`.
    pub fn new(kind: &str, test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("tfn-{kind}-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create scratch dir");
        Scratch(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
