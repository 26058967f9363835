//! `tfnc check FILE...`: parse and check, print every diagnostic rustc-style on stderr.

use super::Outcome;
use std::path::PathBuf;

pub(super) fn check(files: &[PathBuf]) -> Outcome {
    let mut failed = false;
    for file in files {
        // Each file is checked in a session of its own, so that one file's definitions
        // cannot clash with another's.
        let session = crate::Session::with_backend(crate::Backend::Interp);
        match session.load_file(file) {
            Ok(warnings) => {
                if !warnings.is_empty() {
                    let lib = session.library();
                    err!("{}", tfn_ir::diagnostic::render_all(&warnings, &lib.sources));
                }
            }
            Err(e) => {
                // Diagnostics arrive rendered; other errors (an unreadable file) get `error: `.
                if let super::Outcome::UserError(message) = super::Outcome::from(e) {
                    err!("{}\n", message.trim_end());
                }
                failed = true;
            }
        }
    }
    if failed {
        Outcome::UserError(String::new())
    } else {
        Outcome::Ok
    }
}
