//! Documentation generated from `.tfn` signatures: the docstring of each function
//! (`help(lib.softmax)`) and the `.pyi` type stubs of a library (`python -m tfn.stubs`).

use tfn_ir::dispatch::param_type_name;
use tfn_ir::library::{DTypeRef, FunctionDef, ParamType};
use tfn_ir::{DType, Library, Span};

/// The source text of a span (empty when the file is unknown).
fn text(lib: &Library, span: Span) -> &str {
    lib.sources.get(span.file).and_then(|f| f.text.get(span.range())).unwrap_or("")
}

/// `softmax(Tensor x, *, Int dim = -1) -> Tensor`, as declared.
pub fn signature(lib: &Library, f: &FunctionDef) -> String {
    let mut params = Vec::new();
    for (i, p) in f.params.iter().enumerate() {
        if p.keyword_only && (i == 0 || !f.params[i - 1].keyword_only) {
            params.push("*".to_string());
        }
        let default = p
            .default
            .as_ref()
            .map(|d| format!(" = {}", squash(text(lib, d.span))))
            .unwrap_or_default();
        params.push(format!("{} {}{default}", param_type_name(&p.ty), p.name));
    }
    let generics: Vec<String> = f
        .type_params
        .iter()
        .map(|t| match &t.allowed {
            Some(allowed) => {
                let names: Vec<&str> = allowed.iter().map(|d| d.name()).collect();
                format!("{}: {{{}}}", t.name, names.join(", "))
            }
            None => t.name.clone(),
        })
        .collect();
    let generics =
        if generics.is_empty() { String::new() } else { format!("<{}>", generics.join(", ")) };
    let returns: Vec<String> = f.returns.iter().map(param_type_name).collect();
    let returns = match returns.as_slice() {
        [one] => one.clone(),
        many => format!("({})", many.join(", ")),
    };
    format!("{}{generics}({}) -> {returns}", f.full_name(), params.join(", "))
}

/// Whitespace runs as one space.
fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The `//` comment lines right above a function's `fn` (its doc comment), without the
/// slashes.
pub fn doc_comment(lib: &Library, f: &FunctionDef) -> Option<String> {
    let file = lib.sources.get(f.span.file)?;
    let before = file.text.get(..f.span.start as usize)?;
    let mut lines: Vec<&str> = Vec::new();
    // The signature's span starts at the name: step back over `fn` / `op` / `extern op`.
    let mut rest = before.trim_end();
    for keyword in ["fn", "op", "extern"] {
        rest = rest.strip_suffix(keyword).map_or(rest, str::trim_end);
    }
    for line in rest.rsplit('\n') {
        let t = line.trim();
        let Some(body) = t.strip_prefix("//") else { break };
        let body = body.strip_prefix('/').unwrap_or(body);
        lines.push(body.strip_prefix(' ').unwrap_or(body));
    }
    if lines.is_empty() {
        return None;
    }
    lines.reverse();
    Some(lines.join("\n").trim().to_string())
}

/// The docstring of a function name: each overload's signature, then its doc comment.
pub fn docstring(lib: &Library, name: &str) -> String {
    let overloads = overloads_of(lib, name);
    let mut parts = Vec::new();
    for f in overloads {
        let mut part = signature(lib, f);
        if let Some(doc) = doc_comment(lib, f) {
            part.push_str("\n\n");
            part.push_str(&doc);
        }
        parts.push(part);
    }
    if parts.len() > 1 {
        parts.insert(0, format!("Overloads of `{name}`, tried in this order:"));
    }
    parts.push(
        "Tensors are NumPy arrays (any strides); `out=` writes the results into preallocated \
         arrays; `weights=` (`tfn.weights(path or dict, mapping)`, or a dict of arrays) binds \
         the tensor parameters not given, by name; `lib.vjp(name, args, cotangents)` \
         differentiates."
            .to_string(),
    );
    parts.join("\n\n")
}

/// The overloads `name` stands for: all of a base name, or the one `name.overload`.
pub fn overloads_of<'a>(lib: &'a Library, name: &str) -> &'a [FunctionDef] {
    let all = lib.overloads(name);
    if !all.is_empty() {
        return all;
    }
    if let Some((base, ov)) = name.split_once('.') {
        let all = lib.overloads(base);
        if let Some(i) = all.iter().position(|f| f.overload.as_deref() == Some(ov)) {
            return &all[i..=i];
        }
    }
    &[]
}

fn np_dtype(d: DType) -> &'static str {
    match d {
        DType::F32 => "np.float32",
        DType::F64 => "np.float64",
        DType::I32 => "np.int32",
        DType::I64 => "np.int64",
        DType::Bool => "np.bool_",
        DType::F16 => "np.float16",
        // NumPy has no bfloat16: such tensors are not NumPy arrays (see `convert.rs`).
        DType::BF16 => "Any",
        DType::I8 => "np.int8",
        DType::U8 => "np.uint8",
    }
}

/// The Python type of a parameter (`result`: of a result, where a tensor is always an array).
fn py_type(f: &FunctionDef, ty: &ParamType, result: bool) -> String {
    let elem = |d: &DTypeRef| -> String {
        match d {
            DTypeRef::Fixed(d) => np_dtype(*d).to_string(),
            DTypeRef::Var(v) => match f.type_params.iter().find(|t| &t.name == v) {
                Some(t) => match t.allowed.as_deref() {
                    Some([one]) => np_dtype(*one).to_string(),
                    _ => "Any".into(),
                },
                None => "Any".into(),
            },
            DTypeRef::Any => "Any".into(),
        }
    };
    match ty {
        ParamType::Tensor(d) if result => format!("npt.NDArray[{}]", elem(d)),
        // A number is accepted where its dtype is known without it: a fixed dtype, or one
        // another tensor argument binds (`x * s` with `T`); a lone generic tensor is not.
        ParamType::Tensor(d) if number_fits(f, d) => format!("npt.NDArray[{}] | float", elem(d)),
        ParamType::Tensor(d) => format!("npt.NDArray[{}]", elem(d)),
        ParamType::TensorList(d) => format!("Sequence[npt.NDArray[{}]]", elem(d)),
        ParamType::Scalar | ParamType::Float => "float".into(),
        ParamType::Int => "int".into(),
        ParamType::Bool => "bool".into(),
        ParamType::DType => "DTypeLike".into(),
        ParamType::IntList => "Sequence[int]".into(),
        ParamType::FloatList => "Sequence[float]".into(),
    }
}

/// Whether a Python number can be passed for a tensor parameter of dtype `d`: its dtype is
/// fixed (one allowed), or a type variable some other tensor parameter shares.
fn number_fits(f: &FunctionDef, d: &DTypeRef) -> bool {
    match d {
        DTypeRef::Fixed(_) => true,
        DTypeRef::Any => false,
        DTypeRef::Var(v) => {
            let single = f
                .type_params
                .iter()
                .any(|t| &t.name == v && t.allowed.as_deref().is_some_and(|a| a.len() == 1));
            let sharers = f
                .params
                .iter()
                .filter(|p| match &p.ty {
                    ParamType::Tensor(DTypeRef::Var(w))
                    | ParamType::TensorList(DTypeRef::Var(w)) => w == v,
                    _ => false,
                })
                .count();
            single || sharers > 1
        }
    }
}

fn is_identifier(s: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
        "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
        "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
        "try", "while", "with", "yield",
    ];
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.contains(&s)
}

/// Names a `Library` has as methods: a function of the same name is `lib["name"]`.
pub const LIBRARY_ATTRS: &[&str] =
    &["vjp", "value_and_vjp", "session", "functions", "file", "sources", "stub", "function"];

/// Names a generated module (`python -m tfn.stubs --module`) has of its own.
const MODULE_ATTRS: &[&str] = &["lib", "load"];

/// Whether a parameter cannot be written under its own name in a `def`: a Python keyword,
/// `self` (of the methods), or one of the call's own keywords (`out=`, `weights=`), which take
/// the keyword, so such a parameter is passed by position only.
fn reserved_param(name: &str) -> bool {
    !is_identifier(name) || matches!(name, "self" | "out" | "weights" | "kwargs")
}

/// The `def` parameters of one overload (after `self`): a positional parameter with a
/// reserved name is renamed `name_` and made positional-only; a keyword-only one, which
/// Python syntax cannot name (`f(x, **{"lambda": 1.0})` can), becomes `**kwargs: Any`.
fn stub_params(f: &FunctionDef) -> Vec<String> {
    let taken = |n: &str| reserved_param(n) || f.params.iter().any(|p| p.name == n);
    let mut params: Vec<String> = Vec::new();
    let mut positional_only = 0;
    let mut star = false;
    let mut hidden = false;
    for p in &f.params {
        let default = if p.default.is_some() { " = ..." } else { "" };
        let ty = py_type(f, &p.ty, false);
        if p.keyword_only {
            if reserved_param(&p.name) {
                hidden = true;
                continue;
            }
            if !star {
                params.push("*".into());
                star = true;
            }
            params.push(format!("{}: {ty}{default}", p.name));
            continue;
        }
        let mut name = p.name.clone();
        if reserved_param(&name) {
            name = format!("{}_", name.trim_matches(|c: char| !c.is_ascii_alphanumeric()));
            while taken(&name) {
                name.push('_');
            }
            positional_only = params.len() + 1;
        }
        params.push(format!("{name}: {ty}{default}"));
    }
    if positional_only > 0 {
        params.insert(positional_only, "/".into());
    }
    if !star {
        params.push("*".into());
    }
    if hidden {
        params.push("**kwargs: Any".into());
    }
    params
}

/// One `def` line (indented by `indent`, with `self` when `method`) per overload.
fn stub_defs(lib: &Library, name: &str, method: bool, indent: &str) -> String {
    let overloads = lib.overloads(name);
    let mut out = String::new();
    for f in overloads {
        let mut params: Vec<String> = Vec::new();
        if method {
            params.push("self".into());
        }
        let mut own = stub_params(f);
        // `**kwargs` goes last, after `out` and `weights`.
        let kwargs = own.last().is_some_and(|p| p.starts_with("**")).then(|| own.pop());
        params.extend(own);
        let results: Vec<String> = f.returns.iter().map(|r| py_type(f, r, true)).collect();
        let ret = match results.as_slice() {
            [one] => one.clone(),
            many => format!("tuple[{}]", many.join(", ")),
        };
        let out_ty = match results.as_slice() {
            [one] => format!("{one} | None"),
            many => format!("tuple[{}] | None", many.join(", ")),
        };
        params.push(format!("out: {out_ty} = None"));
        params.push("weights: tfn.Weights | dict[str, npt.NDArray[Any]] | None = None".into());
        params.extend(kwargs.flatten());
        if overloads.len() > 1 {
            out.push_str(&format!("{indent}@overload\n"));
        }
        let mut doc = signature(lib, f);
        if let Some(d) = doc_comment(lib, f) {
            doc.push_str("\n\n");
            doc.push_str(&d);
        }
        let doc = doc.replace('\\', "\\\\").replace("\"\"\"", "\\\"\\\"\\\"");
        out.push_str(&format!(
            "{indent}def {name}({}) -> {ret}:\n{indent}    \"\"\"{}\"\"\"\n{indent}    ...\n",
            params.join(", "),
            doc.replace('\n', &format!("\n{indent}    "))
        ));
    }
    out
}

/// The `.pyi` stub of a library: a `Library` subclass with one method per function (and
/// overload), so `lib: nn.Library = tfn.load("nn.tfn")` completes names and parameters, and
/// the same functions at module level for a module that re-exports them.
pub fn stub(lib: &Library, file: &str, names: &[String]) -> String {
    let mut out = format!(
        "# Type stubs of `{file}`, generated by `python -m tfn.stubs {file}`. Do not edit.\n\
         from __future__ import annotations\n\n\
         from typing import Any, Sequence, overload\n\n\
         import numpy as np\n\
         import numpy.typing as npt\n\
         from numpy.typing import DTypeLike\n\n\
         import tfn\n\n\n\
         class Library(tfn.Library):\n\
         \x20   \"\"\"The functions of `{file}`.\"\"\"\n\n"
    );
    let methods: Vec<&String> =
        names.iter().filter(|n| is_identifier(n) && !LIBRARY_ATTRS.contains(&n.as_str())).collect();
    let by_key: Vec<&String> = names.iter().filter(|n| !methods.contains(n)).collect();
    for name in &by_key {
        out.push_str(&format!("    # `{name}`: not an attribute; call it as `lib[{name:?}]`.\n"));
    }
    if methods.is_empty() {
        out.push_str("    ...\n");
    }
    for name in &methods {
        out.push_str(&stub_defs(lib, name, true, "    "));
        out.push('\n');
    }
    out.push_str(&format!(
        "\ndef load() -> Library:\n    \"\"\"`tfn.load` of `{file}`.\"\"\"\n    ...\n\n"
    ));
    for name in names.iter().filter(|n| MODULE_ATTRS.contains(&n.as_str())) {
        out.push_str(&format!("# `{name}`: the module's own; the function is `lib[{name:?}]`.\n"));
    }
    for name in names.iter().filter(|n| is_identifier(n) && !MODULE_ATTRS.contains(&n.as_str())) {
        out.push('\n');
        out.push_str(&stub_defs(lib, name, false, ""));
    }
    out
}
