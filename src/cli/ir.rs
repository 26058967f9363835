//! `tfnc ir FILE [--fn FN] [--stage parsed|lowered|optimized|fused] [--arg NAME=dtype[shape]]`:
//! the IR of each stage as text.

use super::args::{parse_value, ArgValue};
use super::{session_for, BackendArg, Outcome, Stage};
use std::path::Path;
use tfn_ir::lower::{ArgSpec, DimSpec};

/// The signature `--arg` describes: a tensor type or a literal.
pub(super) fn arg_specs(args: &[(String, String)]) -> Result<Vec<(String, ArgSpec)>, Outcome> {
    args.iter()
        .map(|(name, text)| {
            let spec = match parse_value(text)
                .map_err(|e| Outcome::UsageError(format!("--arg {name}: {e}")))?
            {
                ArgValue::TensorType(dtype, dims) => ArgSpec::Tensor {
                    dtype,
                    dims: dims.iter().map(|&d| if d == 1 { DimSpec::One } else { DimSpec::Dyn }).collect(),
                },
                ArgValue::Literal(a) => ArgSpec::Attr(a),
                ArgValue::NpyPath(p) => {
                    return Err(Outcome::UsageError(format!(
                        "--arg {name}: expected a tensor type like f32[1024, 1024] or a literal, got `{p}`"
                    )))
                }
            };
            Ok((name.clone(), spec))
        })
        .collect()
}

pub(super) fn ir(
    file: &Path,
    function: Option<&str>,
    stage: Stage,
    args: &[(String, String)],
    explain: bool,
) -> Outcome {
    let session = match session_for(file, BackendArg::Interp, None, true) {
        Ok(s) => s,
        Err(o) => return o,
    };
    let library = session.library();
    if stage == Stage::Parsed {
        let user_files: Vec<_> = library
            .sources
            .files()
            .filter(|(_, f)| !f.name.starts_with('<'))
            .map(|(id, _)| id)
            .collect();
        out!("{}", tfn_frontend::print_library(&library, Some(&user_files)));
        return Outcome::Ok;
    }
    let Some(function) = function else {
        return Outcome::UsageError(
            "--fn is required for the lowered, optimized and fused stages".into(),
        );
    };
    let specs = match arg_specs(args) {
        Ok(s) => s,
        Err(o) => return o,
    };
    let instance = match tfn_ir::lower::instantiate(&library, function, &[], &specs) {
        Ok(i) => i,
        Err(e) => {
            return Outcome::UserError(tfn_ir::diagnostic::render_all(
                &e.diagnostics,
                &library.sources,
            ))
        }
    };
    let text = match stage {
        Stage::Parsed | Stage::Lowered => tfn_ir::text::print_graph(&instance.graph),
        Stage::Optimized | Stage::Fused => {
            match crate::pipeline::optimize(&library, &instance.graph) {
                Ok((graph, report)) => {
                    let mut text = if stage == Stage::Optimized {
                        tfn_ir::text::print_graph(&graph)
                    } else {
                        crate::pipeline::print_fused(&graph)
                    };
                    if explain {
                        text.push_str(&format!("\n{report}\n"));
                    }
                    text
                }
                Err(e) => return Outcome::UserError(format!("error: {e}")),
            }
        }
    };
    out!("{}\n", text.trim_end());
    Outcome::Ok
}
