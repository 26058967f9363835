//! The prelude's dtype constraints and the IR's op table say the same thing.
//!
//! `core.tfn` declares what users may call (`op exp<T: {f16, bf16, f32, f64}>(...)`): the front end checks
//! calls against it. The IR's op table (`Op::operand_dtypes`) is what lowering, the verifier,
//! the optimiser's analysis and the interpreter enforce. This test fails as soon as one of the
//! two changes without the other.

use tfn_ir::library::{Body, DTypeRef, ParamType};
use tfn_ir::lower::{lookup_primitive, Prim};
use tfn_ir::{DTypeSet, Op};

#[test]
fn prelude_constraints_match_the_op_table() {
    let lib = tfn_frontend::prelude().expect("the prelude loads");
    let mut checked = 0;
    for defs in lib.functions.values() {
        for def in defs {
            if !matches!(def.body, Body::Primitive) {
                continue;
            }
            // (Gradient helpers such as `cast_like` lower through their own table.)
            let Some(prim) = lookup_primitive(&def.name, def.overload.as_deref()) else {
                continue;
            };
            let op = match prim {
                Prim::Unary(u) => Op::Unary(u),
                Prim::Binary(b) | Prim::BinaryScalar(b) => Op::Binary(b),
                Prim::Reduce(r) => Op::Reduce { op: r, axes: vec![], keepdim: false },
                Prim::ArgMax => Op::ArgMax { axis: 0, keepdim: false },
                Prim::ArgMin => Op::ArgMin { axis: 0, keepdim: false },
                Prim::Scan(op) => Op::Scan { op, axis: 0, exclusive: false, reverse: false },
                Prim::CumprodGrad => Op::CumprodGrad { axis: 0, exclusive: false, reverse: false },
                // `iota_like` reads only its operand's shape (any dtype), like `zeros_like`.
                Prim::IotaLike => Op::Iota { axis: 0 },
                Prim::MatMul => Op::MatMul,
                Prim::MulAdd => Op::MulAdd,
                Prim::Index(kind) => Op::Index { kind, axis: 0 },
                Prim::Window(kind, _) => Op::Window { kind, attrs: Default::default() },
                // Accept any dtype (shape ops, creation, `where`'s branches, `cast`) or lower
                // to several ops whose own rows are checked (`dropout`, `pad`, `arange`).
                Prim::Where
                | Prim::Cast
                | Prim::Arange
                | Prim::Reshape
                | Prim::Transpose
                | Prim::TransposeSwap
                | Prim::BroadcastTo
                | Prim::Unsqueeze
                | Prim::Squeeze
                | Prim::Concat
                | Prim::Slice
                | Prim::Full
                | Prim::ZerosLike
                | Prim::OnesLike
                | Prim::FullLike
                | Prim::Random(_)
                | Prim::Dropout
                | Prim::Pad => continue,
            };
            // The dtype variable of the first tensor parameter.
            let var = def.params.iter().find_map(|p| match &p.ty {
                ParamType::Tensor(DTypeRef::Var(v)) => Some(v.clone()),
                _ => None,
            });
            let declared = match var {
                Some(v) => {
                    let tp = def.type_params.iter().find(|t| t.name == v).expect("declared");
                    tp.allowed.as_ref().map_or(DTypeSet::ALL, |a| DTypeSet::of(a))
                }
                None => match def.params.first().map(|p| &p.ty) {
                    Some(ParamType::Tensor(DTypeRef::Fixed(d))) => DTypeSet::of(&[*d]),
                    _ => DTypeSet::ALL,
                },
            };
            assert_eq!(
                declared,
                op.accepted_dtypes(),
                "`{}`: the prelude allows {declared}, the op table {}",
                def.full_name(),
                op.accepted_dtypes()
            );
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} ops checked");

    // The `dtype` a creating op may be asked for (a dtype variable bound by its `DType`
    // parameter): the op table's created dtypes, so `tfnc check` accepts exactly what runs.
    let random = |dist| Op::Random { dist };
    for (name, op) in [
        ("iota_like", Op::Iota { axis: 0 }),
        ("arange", Op::Iota { axis: 0 }),
        ("rand_like", random(tfn_ir::RandomDist::Uniform)),
        ("randn_like", random(tfn_ir::RandomDist::Normal)),
    ] {
        let def = lib.function(name, None).unwrap_or_else(|| panic!("`{name}` is declared"));
        let tp = def.type_params.iter().find(|t| t.name == "dtype").expect("`dtype` variable");
        let declared = tp.allowed.as_ref().map_or(DTypeSet::ALL, |a| DTypeSet::of(a));
        assert_eq!(declared, op.accepted_created_dtypes(), "`{name}`'s `dtype`");
    }

    // The gradient helpers that compute (`grads.tfn`) accept what the op they lower to does:
    // `sum_to` is a `sum`, so an f16 `broadcast_to`'s gradient can be built.
    let sum = Op::Reduce { op: tfn_ir::ReduceOp::Sum, axes: vec![], keepdim: false };
    let def = lib.function("sum_to", None).expect("`sum_to` is declared");
    let tp = def.type_params.first().expect("a dtype variable");
    let declared = tp.allowed.as_ref().map_or(DTypeSet::ALL, |a| DTypeSet::of(a));
    assert_eq!(declared, sum.accepted_dtypes(), "`sum_to`");
}

/// Every op of the IR's tables is declared in the prelude under its table name, so that a new
/// row of `unary_ops!`/`binary_ops!` cannot reach the compiler without a signature users can
/// call (the declaration then meets `prelude_constraints_match_the_op_table`).
#[test]
fn every_table_op_is_declared_in_the_prelude() {
    let lib = tfn_frontend::prelude().expect("the prelude loads");
    let declared = |name: &str| {
        lib.functions
            .values()
            .flatten()
            .any(|d| d.name == name && matches!(d.body, Body::Primitive) && d.overload.is_none())
    };
    let names = tfn_ir::UnaryOp::ALL
        .iter()
        .map(|u| u.name())
        .chain(tfn_ir::BinaryOp::ALL.iter().map(|b| b.name()))
        .chain(tfn_ir::ReduceOp::ALL.iter().map(|r| r.name()));
    for name in names {
        assert!(declared(name), "`{name}` is in the op table but not declared in the prelude");
        assert!(lookup_primitive(name, None).is_some(), "`{name}` does not resolve to a primitive");
    }
}
