//! The overload environment of a batch: every function visible to it, by name.
//!
//! Names are global to a session: the library's functions (the prelude and earlier loads) come
//! first, then the batch's own `op`/`fn` items in load order (files a file `use`s before it).
//! Building the environment reports duplicate definitions of one name/overload (`E0115`, with
//! both spans), overloads no call could tell apart (`E0116`) and overloads masked by an earlier
//! one (`W0101`).

use crate::print::signature_text;
use std::collections::BTreeMap;
use tfn_ir::dispatch::{overlap, Overlap};
use tfn_ir::library::FunctionDef;
use tfn_ir::{Diagnostic, Library};

/// Facts about one overload beyond its signature.
#[derive(Clone, Copy, Debug, Default)]
pub struct Meta {
    /// Index among the batch's new `op`/`fn` items; `None` for library functions.
    pub new_item: Option<usize>,
    /// Its signature had errors: calls of it are not checked further.
    pub broken: bool,
}

#[derive(Debug, Default)]
pub struct Env {
    /// Each name's overloads in declaration (dispatch) order.
    pub defs: BTreeMap<String, Vec<FunctionDef>>,
    /// Parallel to `defs`.
    pub meta: BTreeMap<String, Vec<Meta>>,
}

impl Env {
    pub fn from_library(lib: &Library) -> Env {
        let mut env = Env::default();
        for (name, defs) in &lib.functions {
            env.defs.insert(name.clone(), defs.clone());
            env.meta.insert(name.clone(), vec![Meta::default(); defs.len()]);
        }
        env
    }

    pub fn overloads(&self, name: &str) -> &[FunctionDef] {
        self.defs.get(name).map_or(&[], |v| v.as_slice())
    }

    pub fn metas(&self, name: &str) -> &[Meta] {
        self.meta.get(name).map_or(&[], |v| v.as_slice())
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.defs.keys().map(|k| k.as_str())
    }

    /// Adds a new definition; returns `false` (and reports) when it is a duplicate.
    pub fn add(&mut self, def: FunctionDef, meta: Meta, diags: &mut Vec<Diagnostic>) -> bool {
        let existing = self.overloads(&def.name);
        if let Some(first) = existing.iter().find(|f| f.overload == def.overload) {
            diags.push(
                Diagnostic::error("E0115", format!("`{}` is defined twice", def.full_name()))
                    .at(def.name_span, "defined again")
                    .with_secondary(first.name_span, "first defined here")
                    .with_help("names are global to a session; rename one of them or give it an overload suffix (`name.suffix`)"),
            );
            return false;
        }
        if !meta.broken {
            // Each new overload is reported once, against the first earlier one it cannot be
            // told apart from (else the first that masks it): N copies of one overload give N
            // diagnostics, not N²/2.
            let metas = self.metas(&def.name);
            let mut masked_by = None;
            let mut identical_to = None;
            for (earlier, m) in existing.iter().zip(metas) {
                if m.broken {
                    continue;
                }
                match overlap(earlier, &def) {
                    Overlap::Identical => {
                        identical_to = Some(earlier);
                        break;
                    }
                    Overlap::Masks => {
                        masked_by = masked_by.or(Some(earlier));
                    }
                    Overlap::Distinct => {}
                }
            }
            if let Some(earlier) = identical_to {
                diags.push(
                    Diagnostic::error(
                        "E0116",
                        format!(
                            "overloads `{}` and `{}` cannot be told apart",
                            earlier.full_name(),
                            def.full_name()
                        ),
                    )
                    .at(def.name_span, "accepts exactly the same calls")
                    .with_secondary(earlier.name_span, "as this overload")
                    .with_note(format!("`{}`", signature_text(earlier)))
                    .with_help("change a parameter's kind or dtype so calls can choose"),
                );
            } else if let Some(earlier) = masked_by {
                diags.push(
                    Diagnostic::warning(
                        "W0101",
                        format!("overload `{}` is never chosen", def.full_name()),
                    )
                    .at(def.name_span, "masked")
                    .with_secondary(
                        earlier.name_span,
                        "this earlier overload accepts every call it does",
                    )
                    .with_help("declare the more specific overload first"),
                );
            }
        }
        self.defs.entry(def.name.clone()).or_default().push(def.clone());
        self.meta.entry(def.name).or_default().push(meta);
        true
    }
}
