//! `tfnc gradcheck FILE [FN]`: finite-difference check (f64) of the derived gradients of every
//! differentiable function of a file, or of one; exit 1 on a failure, or when the one named
//! could not be checked (skipped).

use super::{session_for, BackendArg, Outcome};
use crate::gradcheck::{gradcheck as check, GradcheckOptions};
use std::path::Path;

pub(super) fn gradcheck(file: &Path, function: Option<&str>, tolerance: Option<f64>) -> Outcome {
    let session = match session_for(file, BackendArg::Interp, None, true, false) {
        Ok(s) => s,
        Err(o) => return o,
    };
    let library = session.library();
    let shown = crate::Session::source_name(file);
    let Some(&file_id) = tfn_frontend::file_ids(&library, &shown).first() else {
        return Outcome::UserError(format!("error: `{shown}` was not loaded"));
    };
    let mut options = GradcheckOptions::default();
    if let Some(t) = tolerance {
        options.tolerance = t;
    }
    match check(&library, file_id, function, &options) {
        Ok(report) => {
            out!("{}", report.render());
            let skipped = report
                .functions
                .iter()
                .any(|f| matches!(f.outcome, crate::gradcheck::Outcome::Skipped { .. }));
            if !report.passed() {
                Outcome::UserError("error: gradient check failed".into())
            } else if let (Some(name), true) = (function, skipped) {
                // Asked for by name, it was not checked: that is not a pass.
                Outcome::UserError(format!("error: `{name}` was not checked (see above)"))
            } else {
                Outcome::Ok
            }
        }
        Err(e) => Outcome::UserError(format!("error: {e}")),
    }
}
