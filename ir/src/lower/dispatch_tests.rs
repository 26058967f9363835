//! Dispatcher tests against the real prelude: which overload each call picks, and why the
//! others were rejected.

use super::test_lib::library;
use crate::attr::Attr;
use crate::dispatch::{dispatch, overlap, ArgKind, AttrType, Overlap, RejectionKind};
use crate::dtype::DType;

fn t(d: &str) -> ArgKind {
    ArgKind::Tensor { dtype: d.parse().ok(), rank: None }
}
fn int(i: i64) -> ArgKind {
    ArgKind::of_attr(Attr::Int(i))
}
fn float(f: f64) -> ArgKind {
    ArgKind::of_attr(Attr::Float(f))
}

/// (name, positional, keywords, the overload picked or the last candidate's rejection)
type Case =
    (&'static str, Vec<ArgKind>, Vec<(&'static str, ArgKind)>, Result<&'static str, &'static str>);

#[test]
fn picks_overloads_in_declaration_order() {
    let lib = library("fn f(Float x) -> Tensor { return full([1], x) }\nfn f.i(Int x) -> Tensor { return full([1], x) }");
    let scalar_attr = ArgKind::Attr { ty: AttrType::Scalar, value: None };
    let cases: Vec<Case> = vec![
        ("add", vec![t("f32"), t("f32")], vec![], Ok("add")),
        ("add", vec![t("f32"), int(2)], vec![], Ok("add.scalar")),
        ("add", vec![int(2), t("i32")], vec![], Ok("add")),
        ("mul", vec![float(0.5), t("f32")], vec![], Ok("mul")),
        ("mul", vec![scalar_attr.clone(), t("?")], vec![], Ok("mul")),
        ("add", vec![t("?"), t("f64")], vec![], Ok("add")),
        (
            "add",
            vec![int(1), int(2)],
            vec![],
            Err("argument `x` is a number where a tensor is expected, and no other argument gives its dtype: pass a tensor (for one value, a 0-d array)"),
        ),
        (
            "add",
            vec![t("bool"), t("bool")],
            vec![],
            Err(
                "argument `x` is bool but `T` must be one of i8, u8, i32, i64, f16, bf16, f32, f64",
            ),
        ),
        (
            "sum",
            vec![t("f32")],
            vec![("dims", ArgKind::of_attr(Attr::IntList(vec![0])))],
            Ok("sum"),
        ),
        (
            "sum",
            vec![t("f32")],
            vec![("keepdim", int(1))],
            Err("argument `keepdim` must be Bool, got Int `1`"),
        ),
        (
            "sum",
            vec![t("f32")],
            vec![("dims", int(0)), ("dims", int(1))],
            Err("argument `dims` given twice"),
        ),
        ("cast", vec![t("f32"), ArgKind::of_attr(Attr::DType(DType::I32))], vec![], Ok("cast")),
        ("transpose", vec![t("f32"), int(0), int(1)], vec![], Ok("transpose.swap")),
        ("transpose", vec![t("f32")], vec![], Ok("transpose")),
        (
            "concat",
            vec![ArgKind::TensorList { dtype: Some(DType::F32), len: Some(2) }],
            vec![],
            Ok("concat"),
        ),
        ("full", vec![ArgKind::of_attr(Attr::IntList(vec![2])), float(1.0)], vec![], Ok("full")),
        ("slice", vec![t("f32")], vec![("dim", int(0))], Ok("slice")),
        ("f", vec![int(1)], vec![], Ok("f")),
        ("f", vec![scalar_attr], vec![], Ok("f")),
        (
            "where",
            vec![t("f32"), t("f32"), t("f32")],
            vec![],
            Err("argument `cond` is f32 but must be bool"),
        ),
    ];
    for (name, pos, kw, want) in cases {
        let overloads = lib.overloads(name);
        let got = dispatch(overloads, &pos, &kw)
            .map(|r| overloads[r.overload].full_name())
            .map_err(|rej| rej.last().map(|r| r.reason.clone()).unwrap_or_default());
        let want = want.map(str::to_string).map_err(str::to_string);
        // Rejections of the last candidate are compared by prefix for brevity.
        match (&got, &want) {
            (Err(g), Err(w)) if g.starts_with(w.as_str()) || g.contains(w.as_str()) => {}
            _ => assert_eq!(got, want, "{name}({pos:?}, {kw:?})"),
        }
    }
}

/// (name, positional, keywords, the kind of the first candidate's rejection)
type KindCase = (&'static str, Vec<ArgKind>, Vec<(&'static str, ArgKind)>, RejectionKind);

#[test]
fn rejections_say_their_kind() {
    let lib = library("");
    use RejectionKind::*;
    let cases: Vec<KindCase> = vec![
        ("add", vec![t("bool"), t("bool")], vec![], DTypeConstraint),
        ("add", vec![t("f32"), t("f64")], vec![], DTypeMismatch),
        ("add", vec![int(1), int(2)], vec![], UninferableLiteral),
        ("where", vec![t("f32"), t("f32"), t("f32")], vec![], FixedDType),
        ("sum", vec![t("f32")], vec![("keepdim", int(1))], ArgumentKind),
        ("sum", vec![t("f32")], vec![("axis", int(1))], Arity),
        ("sum", vec![t("f32")], vec![("dims", int(0)), ("dims", int(1))], Arity),
        ("sum", vec![], vec![], Arity),
        ("neg", vec![t("f32"), t("f32")], vec![], Arity),
    ];
    for (name, pos, kw, want) in cases {
        let rejections = dispatch(lib.overloads(name), &pos, &kw).err();
        let first = rejections.as_ref().and_then(|r| r.first()).map(|r| r.kind);
        assert_eq!(first, Some(want), "{name}({pos:?}, {kw:?})");
    }
}

#[test]
fn binds_dtype_variables_and_defaults() {
    let lib = library("");
    let r = dispatch(
        lib.overloads("cast"),
        &[t("i32")],
        &[("dtype", ArgKind::of_attr(Attr::DType(DType::F64)))],
    )
    .unwrap();
    assert!(r.dtype_vars.contains(&("dtype".into(), Some(DType::F64))));
    let r =
        dispatch(lib.overloads("full"), &[ArgKind::of_attr(Attr::IntList(vec![])), int(0)], &[])
            .unwrap();
    assert!(r.dtype_vars.contains(&("dtype".into(), Some(DType::F32))), "default dtype binds");
    let r = dispatch(lib.overloads("mul"), &[int(2), t("f64")], &[]).unwrap();
    assert_eq!(r.promoted, vec![0]);
    assert_eq!(r.dtype_vars, vec![("T".to_string(), Some(DType::F64))]);
}

#[test]
fn overlap_of_overloads() {
    let src = "fn a(Float x) -> Tensor { return full([1], x) }\n\
               fn a.b(Int x) -> Tensor { return full([1], x) }\n\
               fn c(Tensor x, Scalar s) -> Tensor { return x }\n\
               fn c.d(Tensor<f32> y, Float t) -> Tensor { return y }\n\
               fn e<T>(Tensor<T> x, Tensor<T> y) -> Tensor { return x }\n\
               fn e.f(Tensor x, Tensor y) -> Tensor { return x }";
    let lib = library(src);
    let pair = |n: &str| (&lib.overloads(n)[0], &lib.overloads(n)[1]);
    let (a, ab) = pair("a");
    assert_eq!(overlap(a, ab), Overlap::Masks);
    assert_eq!(overlap(ab, a), Overlap::Distinct);
    let (c, cd) = pair("c");
    assert_eq!(overlap(c, cd), Overlap::Masks, "positional names do not matter");
    let (e, ef) = pair("e");
    assert_eq!(overlap(e, ef), Overlap::Distinct, "e requires equal dtypes, e.f does not");
    assert_eq!(overlap(ef, e), Overlap::Masks);
    assert_eq!(overlap(e, e), Overlap::Identical);
    // The prelude's overloads are all reachable.
    for overloads in lib.functions.values() {
        for (i, f) in overloads.iter().enumerate() {
            for g in &overloads[i + 1..] {
                if f.body == crate::library::Body::Primitive {
                    assert_eq!(
                        overlap(f, g),
                        Overlap::Distinct,
                        "{} vs {}",
                        f.full_name(),
                        g.full_name()
                    );
                }
            }
        }
    }
}

/// A value of no tfn type (a host language's string that is not a dtype) is rejected by every
/// overload, and the diagnostic names the function and lists each candidate with the reason.
#[test]
fn unsupported_arguments_are_rejected_by_every_candidate() {
    let lib = library(
        "fn scale(Tensor x, Tensor s) -> Tensor { return x * s }\n\
         fn scale.scalar(Tensor x, Scalar s) -> Tensor { return x * s }",
    );
    let what = "the string \"two\" (argument 2), which is not a dtype";
    let bad = ArgKind::Unsupported { what: what.into() };
    let overloads = lib.overloads("scale");
    let rejections = dispatch(overloads, &[t("f32"), bad], &[]).expect_err("no overload");
    assert_eq!(rejections.len(), 2);
    for r in &rejections {
        assert_eq!(r.kind, RejectionKind::ArgumentKind);
        assert!(r.reason.contains(what), "{}", r.reason);
    }
    let d = super::no_overload("scale", overloads, &rejections);
    assert_eq!(d.code, "E0502");
    assert!(d.message.contains("no overload of `scale`"), "{}", d.message);
    let notes = d.notes.join("\n");
    assert!(notes.contains("`scale(Tensor x, Tensor s)` is not a match"), "{notes}");
    assert!(notes.contains("`scale.scalar(Tensor x, Scalar s)` is not a match"), "{notes}");
}
