//! The ahead-of-time mode (feature `aot`): [`Aot`] compiles listed function signatures of a
//! `.tfn` file into an object in a build script (`tfn::aot::ModuleBuilder`, the code of
//! `tfnc build`), packs it into a static library (`ar_archive`), tells cargo to link it and
//! generates a module with the JIT bindings' methods over `tfn_rt::Module`: the program links
//! the runtime `tfn-rt` and no compiler. See docs/rust-api.md, "Ahead of time".

use crate::generate::{self, Aot as AotInput};
use crate::{load_checked, out_dir, write_atomically, Error};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use tfn_ir::library::{FunctionDef, ParamType};
use tfn_ir::Attr;

/// One signature to build.
struct Request {
    function: String,
    args: Vec<String>,
    vjp: bool,
}

/// Builds the listed signatures of a `.tfn` file ahead of time and generates their bindings:
///
/// ```no_run
/// // build.rs (tfn-build with the feature `aot` as a build-dependency, tfn-rt a dependency)
/// tfn_build::Aot::new("ops/nn.tfn")
///     .function("gelu", &["x=f32[?, ?]"])
///     .function("softmax", &["x=f32[?, ?]", "dim=0"])
///     .vjp("gelu", &["x=f32[?, ?]"])
///     .compile()
///     .unwrap();
/// ```
///
/// Each argument is `name=dtype[sizes]` (`?`: any size at the call; a number: exactly that
/// size) or `name=literal` (baked in; the call must pass that value), as `tfnc build --arg`;
/// a parameter with a default that is not given is built for its default. The same function
/// may be listed for several signatures: a call runs the first whose dtypes, ranks, fixed
/// sizes and values the arguments fit, and is an error naming the built signatures if none.
pub struct Aot {
    path: PathBuf,
    requests: Vec<Request>,
    out_dir: Option<PathBuf>,
    out_name: Option<String>,
    prefix: Option<String>,
}

impl Aot {
    pub fn new(path: impl AsRef<Path>) -> Aot {
        Aot {
            path: path.as_ref().to_path_buf(),
            requests: Vec::new(),
            out_dir: None,
            out_name: None,
            prefix: None,
        }
    }

    /// Builds `function` (`scale.scalar` for an overload) for `args`.
    pub fn function(mut self, function: &str, args: &[&str]) -> Aot {
        self.requests.push(Request {
            function: function.to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            vjp: false,
        });
        self
    }

    /// Builds the vector-Jacobian product of `function` for `args` (its `vjp_…` method).
    pub fn vjp(mut self, function: &str, args: &[&str]) -> Aot {
        self.requests.push(Request {
            function: function.to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            vjp: true,
        });
        self
    }

    /// Where to write the module, the object's library and header (default: `OUT_DIR`).
    pub fn out_dir(mut self, dir: impl AsRef<Path>) -> Aot {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// The module's file name (default: the source's stem + `.rs`).
    pub fn out_name(mut self, name: &str) -> Aot {
        self.out_name = Some(name.to_string());
        self
    }

    /// The object's symbol prefix (a C identifier; default: the crate's name and the
    /// source's stem, `my_crate_nn`). Two modules linked into one program need different ones.
    pub fn prefix(mut self, prefix: &str) -> Aot {
        self.prefix = Some(prefix.to_string());
        self
    }

    /// Builds the object, writes `lib<tfn_aot_PREFIX>.a` (and `PREFIX.h`, the C header, for
    /// reference) and the module, and prints the `cargo:` directives that link the library.
    /// Returns the module's path.
    pub fn compile(self) -> Result<PathBuf, Error> {
        let stdout = std::io::stdout();
        self.compile_to(&mut stdout.lock())
    }

    /// [`Aot::compile`], with the `cargo:` directives written to `directives`.
    pub fn compile_to(self, directives: &mut dyn std::io::Write) -> Result<PathBuf, Error> {
        let mut say = |line: String| {
            let _ = writeln!(directives, "{line}");
        };
        let checked = load_checked(&self.path, &mut say)?;
        let stem = self.path.file_stem().map_or("tfn".into(), |s| s.to_string_lossy());
        let prefix = match &self.prefix {
            Some(p) => p.clone(),
            None => c_ident(&format!(
                "{}_{stem}",
                std::env::var("CARGO_PKG_NAME").unwrap_or_else(|_| "tfn".into())
            )),
        };
        let aot = |m: String| Error::Aot(m);
        let mut builder =
            tfn::aot::ModuleBuilder::new(&self.path, &prefix).map_err(|e| aot(e.to_string()))?;
        let mut signatures = String::from("&[\n");
        let mut built = Vec::new();
        let mut names: Vec<String> = Vec::new();
        for r in &self.requests {
            let what = format!(
                "{}`{}`({})",
                if r.vjp { "the vjp of " } else { "" },
                r.function,
                r.args.join(", ")
            );
            let f = checked
                .library
                .functions
                .values()
                .flatten()
                .find(|f| f.full_name() == r.function)
                .ok_or_else(|| aot(format!("{what}: no function `{}`", r.function)))?;
            let mut args = Vec::new();
            for a in &r.args {
                let (n, v) = a.split_once('=').ok_or_else(|| {
                    aot(format!("{what}: `{a}` is not `name=type` or `name=value`"))
                })?;
                args.push((n.trim(), v.trim()));
            }
            // The exported name: the function's, then `_2`, `_3`, ... for more signatures.
            let base =
                format!("{}{}", r.function.replace('.', "_"), if r.vjp { "_vjp" } else { "" });
            let mut name = base.clone();
            let mut k = 1;
            while names.contains(&name) {
                k += 1;
                name = format!("{base}_{k}");
            }
            let added = builder
                .add(&r.function, &args, r.vjp, Some(&name))
                .map_err(|e| aot(format!("{what}: {e}")))?;
            names.push(name);
            signatures.push_str(&signature(f, r, &added).map_err(|e| aot(format!("{what}: {e}")))?);
            built.push((r.function.clone(), r.vjp));
        }
        signatures.push(']');
        let module = builder.finish().map_err(|e| aot(e.to_string()))?;

        let input = checked.input();
        let text =
            generate::aot_module(&input, &AotInput { prefix: prefix.clone(), built, signatures })
                .map_err(Error::Names)?;
        let out_dir = out_dir(self.out_dir)?;
        let library = format!("tfn_aot_{prefix}");
        let archive = ar_archive(&format!("{prefix}.o"), &module.object, &module.symbols);
        write_atomically(&out_dir.join(format!("lib{library}.a")), &archive)?;
        write_atomically(&out_dir.join(format!("{prefix}.h")), &module.header)?;
        let target = out_dir.join(self.out_name.unwrap_or_else(|| format!("{stem}.rs")));
        write_atomically(&target, &text)?;
        say(format!("cargo:rustc-link-search=native={}", out_dir.display()));
        say(format!("cargo:rustc-link-lib=static={library}"));
        Ok(target)
    }
}

/// `s` with every character that is not a C identifier's as `_`.
fn c_ident(s: &str) -> String {
    let mut out: String =
        s.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// An attribute as the runtime compares it, the parameter's type applied (an `Int` given to
/// a `Float` parameter is the float the Rust method passes).
fn attr_text(ty: &ParamType, a: Attr) -> String {
    let a = match (ty, a) {
        (ParamType::Float, Attr::Int(v)) => Attr::Float(v as f64),
        (ParamType::FloatList, Attr::IntList(v)) => {
            Attr::FloatList(v.into_iter().map(|x| x as f64).collect())
        }
        (_, a) => a,
    };
    format!("{} {a}", a.type_name())
}

/// The `tfn_rt::Signature` expression of one built signature.
fn signature(f: &FunctionDef, r: &Request, added: &tfn::aot::Added) -> Result<String, String> {
    let mut params = Vec::new();
    for p in &f.params {
        match &p.ty {
            ParamType::Tensor(_) => {
                let input =
                    added.inputs.iter().find(|i| i.name == p.name).ok_or_else(|| {
                        format!("the tensor parameter `{}` is not an input", p.name)
                    })?;
                let dims: Vec<String> = input.dims.iter().map(|d| format!("{d:?}")).collect();
                params.push(format!(
                    "tfn_rt::Param::Tensor {{ name: {:?}, dtype: tfn_rt::DType::{:?}, dims: &[{}] }}",
                    p.name,
                    input.dtype,
                    dims.join(", ")
                ));
            }
            ParamType::TensorList(_) => {
                return Err(format!(
                    "the tensor-list parameter `{}` is not supported ahead of time",
                    p.name
                ))
            }
            ty => {
                let given = added.literals.iter().find(|(n, _)| *n == p.name).map(|(_, a)| a);
                let value = match given {
                    Some(a) => a.clone(),
                    None => p
                        .default
                        .as_ref()
                        .and_then(crate::types::const_attr)
                        .ok_or_else(|| format!("give `{}=<value>`", p.name))?,
                };
                params.push(format!(
                    "tfn_rt::Param::Attr {{ name: {:?}, value: {:?} }}",
                    p.name,
                    attr_text(ty, value)
                ));
            }
        }
    }
    let inputs: Vec<String> = added
        .inputs
        .iter()
        .filter(|i| f.params.iter().any(|p| p.name == i.name))
        .map(|i| format!("{:?}", i.name))
        .collect();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "    tfn_rt::Signature {{\n        function: {:?},\n        vjp: {},\n        index: {},\n        \
         params: &[\n            {},\n        ],\n        inputs: &[{}],\n    }},",
        r.function,
        r.vjp,
        added.index,
        params.join(",\n            "),
        inputs.join(", ")
    );
    Ok(s)
}

/// A static library (GNU `ar` format) of one object, `member`, with the symbol index the
/// linker looks up (`symbols`, every global the object defines). Written here rather than by
/// the system `ar` (not installed everywhere a Rust toolchain is) or a crate: the format is a
/// signature, one index and one member.
fn ar_archive(member: &str, object: &[u8], symbols: &[String]) -> Vec<u8> {
    fn header(out: &mut Vec<u8>, name: &str, size: usize) {
        let text = format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{size:<10}`\n", 0, 0, 0, 644);
        out.extend_from_slice(text.as_bytes());
    }
    let mut names = Vec::new();
    for s in symbols {
        names.extend_from_slice(s.as_bytes());
        names.push(0);
    }
    let index_size = 4 + 4 * symbols.len() + names.len();
    let padded = |n: usize| n + n % 2;
    // The member's header follows the signature, the index's header and the index.
    let member_offset = (8 + 60 + padded(index_size)) as u32;
    let mut out = b"!<arch>\n".to_vec();
    header(&mut out, "/", index_size);
    out.extend_from_slice(&(symbols.len() as u32).to_be_bytes());
    for _ in symbols {
        out.extend_from_slice(&member_offset.to_be_bytes());
    }
    out.extend_from_slice(&names);
    if index_size % 2 == 1 {
        out.push(b'\n');
    }
    // A GNU short name ends in `/` (at most 15 characters); longer ones would need a name table.
    let short: String = member.chars().take(15).collect();
    header(&mut out, &format!("{short}/"), object.len());
    out.extend_from_slice(object);
    if object.len() % 2 == 1 {
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_layout() {
        let a = ar_archive("m.o", b"OBJ", &["p_module".into(), "p_f".into()]);
        assert!(a.starts_with(b"!<arch>\n/               0 "));
        // The index (25 bytes, padded to 26): 2 symbols, both in the member at 8 + 60 + 26.
        let index = &a[68..];
        assert_eq!(&index[..4], &2u32.to_be_bytes());
        assert_eq!(&index[4..8], &94u32.to_be_bytes());
        assert_eq!(&index[8..12], &94u32.to_be_bytes());
        assert_eq!(&index[12..26], b"p_module\0p_f\0\n");
        assert_eq!(&a[94..98], b"m.o/");
        assert_eq!(&a[94 + 58..94 + 60], b"`\n");
        assert_eq!(&a[154..], b"OBJ\n");
        assert_eq!(c_ident("tfn-example-typed-aot_nn"), "tfn_example_typed_aot_nn");
    }
}
