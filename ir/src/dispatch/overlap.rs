//! Static relations between overloads: whether a later overload can ever be chosen, for the
//! front end's load-time "indistinguishable overloads" error and "masked overload" warning.

use crate::dtype::DType;
use crate::library::{DTypeRef, FunctionDef, ParamDef, ParamType};
use std::fmt;

/// How two overloads of one name relate, for load-time checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlap {
    /// Some call picks each of them.
    Distinct,
    /// Every call the later overload accepts, the earlier one accepts first: it is unreachable.
    Masks,
    /// They accept exactly the same calls: no call can tell them apart.
    Identical,
}

impl fmt::Display for Overlap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Overlap::Distinct => "distinct",
            Overlap::Masks => "masks",
            Overlap::Identical => "identical",
        })
    }
}

/// How `earlier` (declared first) relates to `later`, judged on the exact dispatch pass.
///
/// Conservative: `Masks`/`Identical` are only reported when every call shape of `later`
/// (each number of positional arguments it allows, required keyword-only ones by name) fits
/// `earlier` parameter by parameter.
pub fn overlap(earlier: &FunctionDef, later: &FunctionDef) -> Overlap {
    match (covers(earlier, later), covers(later, earlier)) {
        (true, true) => Overlap::Identical,
        (true, false) => Overlap::Masks,
        _ => Overlap::Distinct,
    }
}

/// Whether every call accepted by `b` is accepted by `a`.
fn covers(a: &FunctionDef, b: &FunctionDef) -> bool {
    let b_positional = b.params.iter().take_while(|p| !p.keyword_only).count();
    let b_required = b.params.iter().take_while(|p| !p.keyword_only && p.default.is_none()).count();
    let a_positional = a.params.iter().take_while(|p| !p.keyword_only).count();
    (b_required..=b_positional).all(|k| {
        if k > a_positional {
            return false;
        }
        // Arguments given: b's first k positionally, b's required keyword-only ones by name.
        let mut given: Vec<(usize, &ParamDef)> = (0..k).map(|i| (i, &b.params[i])).collect();
        for p in b.params.iter().skip(b_positional).filter(|p| p.default.is_none()) {
            match a.param(&p.name) {
                Some((i, _)) if i >= k => given.push((i, p)),
                _ => return false,
            }
        }
        let all_filled = a
            .params
            .iter()
            .enumerate()
            .all(|(i, p)| p.default.is_some() || given.iter().any(|(gi, _)| *gi == i));
        // A call may also give any of b's optional keyword-only arguments: `a` must take
        // each by name (`f(x)` does not cover `f.b(x, *, Int k = 1)`: `f(x, k=3)` is f.b's).
        let optional_taken =
            b.params.iter().skip(b_positional).filter(|p| p.default.is_some()).all(|p| {
                match a.param(&p.name) {
                    Some((i, ap)) if i >= k => type_covers(a, &ap.ty, b, &p.ty),
                    _ => false,
                }
            });
        all_filled
            && optional_taken
            && given.iter().all(|(i, bp)| type_covers(a, &a.params[*i].ty, b, &bp.ty))
            && ties_respected(a, b, &given)
    })
}

fn dtype_set(f: &FunctionDef, d: &DTypeRef) -> Vec<DType> {
    match d {
        DTypeRef::Any => DType::ALL.to_vec(),
        DTypeRef::Fixed(d) => vec![*d],
        DTypeRef::Var(v) => f
            .type_params
            .iter()
            .find(|t| t.name == *v)
            .and_then(|t| t.allowed.clone())
            .unwrap_or_else(|| DType::ALL.to_vec()),
    }
}

fn type_covers(a: &FunctionDef, at: &ParamType, b: &FunctionDef, bt: &ParamType) -> bool {
    use ParamType as P;
    match (at, bt) {
        (P::Tensor(da), P::Tensor(db)) | (P::TensorList(da), P::TensorList(db)) => {
            let sa = dtype_set(a, da);
            dtype_set(b, db).iter().all(|d| sa.contains(d))
        }
        (P::Scalar | P::Float, P::Scalar | P::Float | P::Int) => true,
        (P::FloatList, P::IntList | P::FloatList) => true,
        (x, y) => x == y && !x.is_tensor(),
    }
}

/// Parameters that `a` ties to one dtype variable must be tied (or fixed alike) in `b` too.
fn ties_respected(a: &FunctionDef, b: &FunctionDef, given: &[(usize, &ParamDef)]) -> bool {
    let var_of = |ty: &ParamType| match ty {
        ParamType::Tensor(DTypeRef::Var(v)) | ParamType::TensorList(DTypeRef::Var(v)) => {
            Some(v.clone())
        }
        _ => None,
    };
    let dref = |ty: &ParamType| match ty {
        ParamType::Tensor(d) | ParamType::TensorList(d) => Some(d.clone()),
        _ => None,
    };
    for (x, (ia, pb)) in given.iter().enumerate() {
        for (ja, qb) in &given[x + 1..] {
            let (Some(va), Some(wa)) = (var_of(&a.params[*ia].ty), var_of(&a.params[*ja].ty))
            else {
                continue;
            };
            if va != wa {
                continue;
            }
            let tied = match (dref(&pb.ty), dref(&qb.ty)) {
                (Some(DTypeRef::Var(v)), Some(DTypeRef::Var(w))) => v == w,
                (Some(DTypeRef::Fixed(d)), Some(DTypeRef::Fixed(e))) => d == e,
                (Some(d), Some(e)) => {
                    let (sd, se) = (dtype_set(b, &d), dtype_set(b, &e));
                    sd.len() == 1 && sd == se
                }
                _ => false,
            };
            if !tied {
                return false;
            }
        }
    }
    true
}
