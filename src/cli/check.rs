//! `tfnc check FILE...`: parse and check, print every diagnostic rustc-style on stderr, then
//! (unless `--quiet`) one line per file that checked saying what it holds:
//! `checked examples/nn.tfn: 8 functions, 0 warnings` (also on stderr, so stdout stays empty
//! for scripts).

use super::Outcome;
use std::path::PathBuf;
use tfn_ir::library::Library;

pub(super) fn check(files: &[PathBuf], quiet: bool) -> Outcome {
    let mut failed = false;
    for file in files {
        // Each file is checked in a session of its own, so that one file's definitions
        // cannot clash with another's.
        let session = crate::Session::with_backend(crate::Backend::Interp);
        let before = session.library();
        match session.load_file(file) {
            Ok(warnings) => {
                let lib = session.library();
                if !warnings.is_empty() {
                    err!("{}", tfn_ir::diagnostic::render_all(&warnings, &lib.sources));
                }
                if !quiet {
                    err!(
                        "{}\n",
                        summary(&file.display().to_string(), &before, &lib, warnings.len())
                    );
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

/// `checked FILE: 8 functions, 1 gradient, 0 warnings; uses std:nn (11 functions)`: what
/// loading `shown` added to `before` (the prelude). Overloads count one each; an `op`
/// declaration counts as a function.
fn summary(shown: &str, before: &Library, after: &Library, warnings: usize) -> String {
    let old_files = before.sources.files().count();
    let main = after.sources.files().nth(old_files).map(|(id, _)| id);
    let new_functions =
        || after.functions.values().flatten().filter(|f| (f.span.file.0 as usize) >= old_files);
    let own = new_functions().filter(|f| Some(f.span.file) == main).count();
    let used_functions = new_functions().count() - own;
    let grads = after.grads.len() - before.grads.len();
    let rules = after.rewrites.len() - before.rewrites.len();
    let mut line = format!("checked {shown}: {}", count(own, "function"));
    if grads > 0 {
        line.push_str(&format!(", {}", count(grads, "gradient")));
    }
    if rules > 0 {
        line.push_str(&format!(", {}", count(rules, "rewrite rule")));
    }
    line.push_str(&format!(", {}", count(warnings, "warning")));
    let used: Vec<String> = after
        .sources
        .files()
        .skip(old_files + 1)
        .map(|(_, f)| f.name.trim_start_matches('<').trim_end_matches('>').to_string())
        .collect();
    if !used.is_empty() {
        line.push_str(&format!(
            "; uses {} ({})",
            used.join(", "),
            count(used_functions, "function")
        ));
    }
    line
}

/// `1 function`, `2 functions`.
fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
